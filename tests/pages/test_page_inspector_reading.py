"""What the inspector's translation model reads of the learner's text: every sentence (it was trained on single
sentences), never the words past its positions (and they are not called unknown), and a plain word on letters it
never read."""
import pytest

from app.i18n import LANGS, catalogue
from app.resources import SHIPPED
from tests.apptest_util import assert_clean, run_page
from tests.pages.test_page_inspector import translation_of, with_text

pytestmark = pytest.mark.skipif(not (SHIPPED["en-ko"] / "model.safetensors").is_file(),
                                reason="the shipped en-ko model is not built")


def shown(at) -> str:
    return "\n".join(x.value for x in [*at.info, *at.warning, *at.caption, *at.markdown])


@pytest.mark.parametrize("lang", list(LANGS))
def test_every_sentence_is_translated_and_the_learner_is_told(lang):
    at = run_page("inspector.py", lang, setup=with_text("I love flowers. the cat sees the sky."))
    assert_clean(at)
    assert translation_of(at) == "나는 꽃을 사랑한다. 고양이는 하늘을 본다."
    c = catalogue(lang)
    assert c["inspector.sentences_each"].split("{n}")[0] in shown(at)
    pick = at.selectbox(key="insp_sentence")
    assert pick.options[1].endswith("the cat sees the sky.")
    pick.set_value(2).run()
    assert_clean(at)
    assert at.query_params["sentence"] == "2"


def test_words_past_the_cut_are_named_as_not_read_and_never_as_unknown():
    long = "I go to school. " .replace(".", "") * 20 + "zebra"  # 81 pieces: the unknown "zebra" is past the cut
    at = run_page("inspector.py", "en", setup=with_text(long))
    assert_clean(at)
    warnings = "\n".join(w.value for w in at.warning)
    assert "only the first 62 are used" in warnings and "Not read:" in warnings and "zebra" in warnings
    assert "never saw" not in warnings, "a word the model never read is not called unknown"


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_map_size_is_explained_by_the_end_token(lang):
    at = run_page("inspector.py", lang, setup=with_text("I go to school."))
    assert_clean(at)
    assert "`</s>`" in "\n".join(c.value for c in at.caption), "the encoder's end token makes its maps one wider"


def test_korean_typed_into_the_english_model_is_told_it_reads_english():
    at = run_page("inspector.py", "en", setup=with_text("나는 학교에 간다."))
    assert_clean(at)
    warnings = "\n".join(w.value for w in at.warning)
    assert "Hangul" in warnings and "reads English" in warnings
