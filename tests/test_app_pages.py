"""Every page runs in both languages without an exception (AppTest, no browser)."""
import pytest

from app.pages_list import PAGES
from tests.apptest_util import assert_clean, run_page


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("page", [p.file for p in PAGES])
def test_page_runs(page, lang):
    at = run_page(page, lang)
    assert_clean(at)
    assert at.title, "every page has a title"


def test_overview_counts_and_language():
    at = run_page("overview.py", "en")
    md = " ".join(m.value for m in at.markdown)
    assert "Three kinds of attention" in md
    table = at.dataframe[0].value
    assert list(table.iloc[:, 0]) == ["Transformer (base)", "Transformer (big)"]
    assert table.iloc[0, -3] == "63.1M" and table.iloc[1, -3] == "214.2M"
    ko = run_page("overview.py", "ko")
    assert ko.title[0].value == "어텐션 아틀라스"
