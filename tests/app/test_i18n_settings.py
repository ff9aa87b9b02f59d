"""Sentences that say what a figure shows agree with the learner's settings.

A page's prose beside a figure is chosen by what was computed, not written once for the default: at dₖ = 1
dividing by √dₖ changes nothing, so the attention page must not say that unscaled scores are larger and their
gradient vanishes; at label smoothing ε = 0 there is no smoothing, so the recipe page must not say that the loss
has its minimum inside (0, 1). Each setting is swept over its extremes and the default, in both languages."""
from __future__ import annotations

import pytest
from app.i18n import LANGS

from app.i18n import content
from tests.app.test_i18n_numbers import signed_zeros
from tests.apptest_util import assert_clean, run_page


def _said(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def _section_shown(at, lang: str, key: str) -> bool:
    """Whether the prose section is on the page: its longest stretch without a placeholder is."""
    import re
    body = content(lang)[key]
    fixed = max(re.split(r"\{[^{}]*\}", body), key=len).strip()
    return fixed in _said(at)


@pytest.mark.parametrize("lang", list(LANGS))
def test_sqrt_dk_note_follows_dk(lang):
    at = run_page("attention.py", lang)
    assert_clean(at)
    expected = {1: "attention.gradient_note_same", 2: "attention.gradient_note_partial",
                16: "attention.gradient_note_partial", 64: "attention.gradient_note", 512: "attention.gradient_note"}
    for dk, key in expected.items():
        at.slider(key="att_dk").set_value(dk).run()
        assert_clean(at)
        shown = [k for k in ("attention.gradient_note", "attention.gradient_note_same",
                             "attention.gradient_note_partial") if _section_shown(at, lang, k)]
        assert shown == [key], (dk, shown)


@pytest.mark.parametrize("lang", list(LANGS))
def test_smoothing_note_follows_epsilon(lang):
    at = run_page("recipe.py", lang)
    assert_clean(at)
    for eps, key in ((0.0, "recipe.smoothing_none"), (0.01, "recipe.smoothing_result"),
                     (0.1, "recipe.smoothing_result"), (0.5, "recipe.smoothing_result")):
        at.slider(key="ls_eps").set_value(eps).run()
        assert_clean(at)
        shown = [k for k in ("recipe.smoothing_result", "recipe.smoothing_none") if _section_shown(at, lang, k)]
        assert shown == [key], (eps, shown)
        # at ε = 0 the target's entropy is 0 (computed as a tiny negative): written 0.0000, not -0.0000
        assert [m.value for m in at.metric if signed_zeros(m.value)] == [], eps
