"""The decoder-only member of the family page: the shipped lm's next-token candidates and causal maps."""
import numpy as np
import pytest
from app.i18n import LANGS

from tests.apptest_util import assert_clean, open_link
from model.training.checkpoint import load_model_dir
from model.family.gpt import MAX_TOKENS, future_weight, next_token_view
from model.messages import UserError
from app.resources import SHIPPED


@pytest.fixture(scope="module")
def lm():
    return load_model_dir(SHIPPED["lm"])


def test_view_is_causal_and_rows_sum_to_one(lm):
    view = next_token_view(lm, "I see the")
    L, H, T, T2 = view.attention.shape
    assert (L, H) == (lm.config.n_decoder_layers, lm.config.n_heads) and T == T2 == len(view.pieces)
    assert np.allclose(view.attention.sum(-1), 1.0, atol=1e-5)
    assert future_weight(view.attention) == 0.0
    probs = [p for _, p in view.top]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6


def test_future_weight_sees_a_non_causal_map():
    w = np.full((1, 1, 3, 3), 1 / 3)
    assert future_weight(w) == pytest.approx(1 / 3)


def test_long_text_keeps_the_last_tokens_and_empty_is_refused(lm):
    view = next_token_view(lm, " ".join(["water"] * 100))
    assert view.truncated and len(view.pieces) == MAX_TOKENS + 1
    with pytest.raises(UserError) as e:
        next_token_view(lm, "   ")
    assert e.value.message.code == "family_gpt.errors.empty"


@pytest.mark.parametrize("lang", list(LANGS))
def test_section_in_both_languages(lang):
    at = open_link("family.py", {"member": "gpt"}, lang=lang)
    assert_clean(at)
    assert at.text_input(key="fam_gpt_text").value
    at.text_input(key="fam_gpt_text").set_value("").run()
    assert_clean(at)
    assert at.error, "empty text must be explained"
    at.text_input(key="fam_gpt_text").set_value("나는 물을 🙂 <s>").run()
    assert_clean(at)
