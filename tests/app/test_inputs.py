"""app/inputs.py: the parsers behind the concept pages' text inputs, and their messages."""
import pytest
from app.i18n import LANGS

from app.i18n import Message, UserError, catalogue, say
from app.inputs import parse_int, parse_int_list, parse_pairs, piece_label, split_words

LIMITS = ((1, 10**6), (1, 10**7))


def test_parsers_read_good_input():
    assert parse_int_list("16, 64;256  1024", 1, 4096, 6) == [16, 64, 256, 1024]
    assert parse_pairs("(512, 4000); 256:4000\n1024 x 8000", LIMITS, 6) == [(512, 4000), (256, 4000), (1024, 8000)]
    assert parse_int("4e3", 1, 10**4) == 4000
    assert parse_int("4_000", 1, 10**4) == 4000


@pytest.mark.parametrize("bad, code", [
    ("512, abc", "not_whole"), ("", "empty_list"), ("1e400", "not_whole"), ("nan", "not_whole"),
    ("3.5", "not_whole"), ("99999999999999999999999", "out_of_range"), ("1e30", "too_large"),
    ("1, 2, 3, 4, 5, 6, 7", "too_many_numbers")])
def test_bad_numbers_raise_a_user_error(bad, code):
    with pytest.raises(UserError) as e:
        parse_int_list(bad, 1, 10**6, 6)
    assert e.value.message.code == f"inputs.errors.{code}"


def test_bad_pairs_and_sentences():
    with pytest.raises(UserError) as e:
        parse_pairs("512, 4000; 512", LIMITS, 6)
    assert e.value.message.code == "inputs.errors.not_a_pair"
    for lang in LANGS:  # every message exists in both languages
        assert e.value.message.code in catalogue(lang)
    with pytest.raises(UserError, match="empty_pairs"):
        parse_pairs("  ;  ", LIMITS, 6)
    with pytest.raises(UserError, match="too_many_pairs"):
        parse_pairs("1 1; 2 2; 3 3", LIMITS, 2)
    with pytest.raises(UserError, match="empty_sentence"):
        split_words("   ", 5)
    assert split_words(" a  b c ", 2) == (["a", "b"], True)


def test_messages_name_the_value_in_the_current_language():
    with pytest.raises(UserError) as e:
        parse_int_list("2, 7", 1, 5, 6, Message("positional.dimension"))
    text = say(e.value.message)
    assert text.startswith("dimension = 7") and "1…5" in text
    with pytest.raises(UserError) as e:
        parse_int_list("4,,x", 1, 5, 6, "n")
    assert "“x”" in say(e.value.message)


def test_piece_label():
    assert piece_label("▁hello") == "hello" and piece_label("▁") == "▁" and piece_label("ing") == "ing"
