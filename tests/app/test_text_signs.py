"""Numbers in sentences read as written: a signed shift is not "+-3", and a numbered noun takes no article or
paired particle ("The sentence 2 has", "문장 2은(는)")."""
import re

import pytest

from app.i18n import LANGS, catalogue
from app.i18n import t as translate

PAIRED = re.compile(r"\d\s*(은\(는\)|는\(은\)|이\(가\)|가\(이\)|을\(를\)|를\(을\)|와\(과\)|과\(와\)|\(으\)로)")


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_negative_shift_is_written_once_signed(lang, monkeypatch):
    monkeypatch.setattr("app.i18n.lang", lambda: lang)
    title = translate("positional.rotation.circle_title", pair=2, k=-3, angle=-3.0)
    assert "+-" not in title and "-3" in title


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_numbered_sentence_takes_no_article_and_no_paired_particle(lang, monkeypatch):
    monkeypatch.setattr("app.i18n.lang", lambda: lang)
    what = translate("masks.what.sentence", n=2)
    for key in ("masks.too_many_tokens", "masks.errors.empty"):
        text = translate(key, what=what, n=28, max=24)
        assert not PAIRED.search(text), text
        assert "The sentence 2" not in text and "the sentence 2" not in text, text
    assert catalogue(lang)  # the catalogue loads
