"""model/lessons/dropout_demo.py: residual dropout on a real sentence's sub-layer output, by the models' own Dropout (model/nn/dropout.py)."""
import numpy as np
import pytest
import torch

from model.lessons import dropout_demo as dd
from model.lessons import probe
from model.nn.config import PRESETS

VOCAB = 40
IDS = [5, 6, 7, 8, 9, 10]


@pytest.fixture(scope="module")
def demo():
    return probe.seeded_demo_model(VOCAB)


def test_the_sublayer_output_is_the_first_encoder_layers_self_attention(demo):
    y = dd.sublayer_output(demo, IDS)
    with torch.no_grad():
        x = demo.src_embed(torch.tensor([IDS]))
        layer = demo.encoder[0]
        expected = layer.self_attn(layer.res1.pre(x))[0][0]
    assert y.shape == (6, demo.config.d_model) and torch.allclose(y, expected)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_dropout_zeroes_entries_and_scales_the_rest(demo, p):
    r = dd.residual_dropout(demo, IDS, p, seed=3)
    y, kept = r.sublayer, r.kept
    assert r.scale == pytest.approx(1 / (1 - p))
    assert np.array_equal(r.dropped[~kept], np.zeros((~kept).sum()))  # dropped entries are exactly 0
    assert np.allclose(r.dropped[kept], y[kept] * r.scale, rtol=1e-6, atol=0)  # the rest scaled by 1/(1-p)
    assert r.kept_gap < 1e-6
    assert r.zero_share == pytest.approx(1 - kept.mean())
    assert abs(r.zero_share - p) < 0.06  # 384 entries: within a few standard deviations of p
    # the expectation is preserved: averaged over many masks, dropout(y) comes back to y
    assert r.masks_averaged == dd.MASKS_AVERAGED
    assert r.average_gap < 0.1 * np.abs(y).max()
    assert abs(r.mean_over_masks - r.mean_before) < 0.01 * np.abs(y).mean() + 1e-6
    assert r.eval_gap == 0.0  # nn.Dropout in eval mode hands y back unchanged


def test_seeds_repeat_and_differ_and_leave_the_global_rng_alone(demo):
    torch.manual_seed(7)
    before = torch.rand(3)
    torch.manual_seed(7)
    a, b = dd.residual_dropout(demo, IDS, 0.3, seed=1), dd.residual_dropout(demo, IDS, 0.3, seed=1)
    assert torch.equal(torch.rand(3), before)
    assert np.array_equal(a.kept, b.kept) and np.array_equal(a.dropped, b.dropped)
    assert not np.array_equal(a.kept, dd.residual_dropout(demo, IDS, 0.3, seed=2).kept)


def test_p_zero_is_the_identity_and_bad_p_is_refused(demo):
    r = dd.residual_dropout(demo, IDS, 0.0, seed=0)
    assert r.kept.all() and np.array_equal(r.dropped, r.sublayer) and r.scale == 1
    for bad in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError):
            dd.residual_dropout(demo, IDS, bad, seed=0)


def test_the_papers_rates():
    assert dd.PAPER_RATES["base"] == PRESETS["paper_base"].dropout == 0.1
    assert dd.PAPER_RATES["big_en_de"] == PRESETS["paper_big"].dropout == 0.3
    assert dd.PAPER_RATES["big_en_fr"] == 0.1
    # Table 3, rows (D) and the base row: P_drop, dev perplexity, dev BLEU (EN-DE newstest2013)
    assert dd.TABLE3_DROPOUT == ((0.0, 5.77, 24.6), (0.1, 4.92, 25.8), (0.2, 4.95, 25.5))
