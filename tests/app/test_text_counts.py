"""A count of training steps is written as every other large number is, with thousands separators ("6,000
steps", never "6000 steps" beside "6,000"): the family page's masked-LM card line."""
from pages.family.mlm import _count


def test_step_counts_have_thousands_separators():
    assert _count(6000) == "6,000" and _count(None) == "?" and _count(True) == "?"
