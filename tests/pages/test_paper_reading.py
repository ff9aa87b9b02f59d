"""Fixes from a read of the pages against the paper, on pages whose scripts other work owns:
the prose each page draws (app/content/<lang>/<page>.md, drawn by `text("page.section")`) and the
inspector's score labels, in both languages."""
from pathlib import Path

import pytest
from app.i18n import LANGS

from app.i18n import catalogue, content

ROOT = Path(__file__).resolve().parents[2]


def drawn(page: str, section: str) -> None:
    """The page script draws the section (so the text checked here is the text the learner reads)."""
    assert f'text("{page}.{section}"' in (ROOT / "pages" / f"{page}.py").read_text(encoding="utf-8")


# Section 3.5: "We chose this function because we hypothesized it would allow the model to easily learn to
# attend by relative positions": the rotation is a fact, "look k words back once, use it everywhere" is not.
ROTATION_SAYS = {"en": ["hypothes", "section 3.5", "row E"], "ko": ["가설", "3.5절", "E행"]}
ROTATION_NEVER = {"en": "so attention can learn “look k words back” once and use it everywhere",
                  "ko": "그래서 어텐션은 “k 단어 앞을 보라”를 한 번 배워 어디서나 쓸 수 있습니다"}


def says(page: str, section: str, lang: str, phrases: list[str], never: str) -> str:
    """The drawn section's text in `lang`: it holds every phrase and not the old wording."""
    drawn(page, section)
    body = content(lang)[f"{page}.{section}"]
    for phrase in phrases:
        assert phrase in body, phrase
    assert never not in body
    return body


@pytest.mark.parametrize("lang", list(LANGS))
def test_relative_positions_are_the_papers_hypothesis(lang):
    says("positional", "rotation", lang, ROTATION_SAYS[lang], ROTATION_NEVER[lang])


# The paper gives no reason for its warm-up (section 5.3 only states the schedule).
WARMUP_SAYS = {"en": ["common explanation", "not the paper's"], "ko": ["흔히 드는 설명", "논문의 설명이 아닙니다"]}
WARMUP_NEVER = {"en": "(Adam's statistics are still unreliable, so big steps would be risky)",
                "ko": "(Adam의 통계가 아직 믿을 만하지 않아서 큰 스텝은 위험합니다)"}


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_warmup_reason_is_marked_as_not_the_papers(lang):
    says("recipe", "schedule", lang, WARMUP_SAYS[lang], WARMUP_NEVER[lang])
    assert WARMUP_SAYS[lang][0] in content(lang)["recipe.adam_result"]  # the later echo says so too


# The score beside the model's name must not read as comparable with the paper's BLEU 28.4.
SCORE_SAYS = {
    "en": {"score_translation": ["character BLEU", "synthetic", "not comparable"],
           "score_translation_plain": ["not comparable"]},  # a copy / reverse task: no corpus to name
    "ko": {"score_translation": ["문자 단위 BLEU", "합성 코퍼스", "비교할 수 없음"],
           "score_translation_plain": ["비교할 수 없음"]},
}


@pytest.mark.parametrize("lang", list(LANGS))
def test_inspector_bleu_is_labelled_as_the_synthetic_test_split(lang):
    words = catalogue(lang)
    for key, phrases in SCORE_SAYS[lang].items():
        label = words[f"inspector.card.{key}"]
        for phrase in phrases:
            assert phrase in label, (key, phrase)
