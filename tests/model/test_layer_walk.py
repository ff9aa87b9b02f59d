"""model/lessons/layer_walk.py: one encoder layer (model/nn/layers.py), step by step — attention, add & norm, FFN,
add & norm — checked against the layer's own forward output."""
import numpy as np
import pytest
import torch

from model.lessons import multihead as mlab
from model.lessons import layer_walk as lw
from model.messages import UserError

WORDS = "the cat sat on the mat".split()


@pytest.mark.parametrize("d_model, heads, positions", [(64, 8, True), (48, 12, False), (8, 1, True), (16, 16, True)])
def test_the_walk_ends_where_the_layer_ends(d_model, heads, positions):
    w = lw.layer_walk(WORDS, d_model, heads, seed=0, positions=positions)
    x = mlab.sentence_input(WORDS, d_model, positions)
    layer = lw.seeded_encoder_layer(d_model, heads, 4 * d_model, seed=0)
    with torch.no_grad():
        expected = layer(x)[0]
    assert torch.allclose(w.step("output").tensor, expected, atol=1e-6, rtol=0)
    assert w.layer_gap <= 1e-6 and w.matches
    assert torch.equal(w.step("input").tensor, x)


def test_shapes_and_steps():
    w = lw.layer_walk(WORDS, 64, 8, seed=0)
    assert [s.name for s in w.steps] == list(lw.STEP_IDS)
    assert [s.shape for s in w.steps] == [(1, 6, 64)] * 4 + [(1, 6, 256)] + [(1, 6, 64)] * 3
    assert (w.d_model, w.n_heads, w.d_ff, w.length) == (64, 8, 256, 6)


def test_the_attention_step_is_the_pages_multihead_module():
    x = mlab.sentence_input(WORDS, 32, True)
    w = lw.layer_walk(WORDS, 32, 4, seed=3)
    with torch.no_grad():
        a = mlab.seeded_mha(32, 4, 3)(x)[0]
    assert torch.allclose(w.step("attention").tensor, a, atol=1e-6)


def test_what_each_step_changes():
    w = lw.layer_walk(WORDS, 64, 8, seed=0)
    x, a, s1 = (w.step(n).tensor[0] for n in ("input", "attention", "sum1"))
    assert torch.allclose(s1, x + a)
    # the residual's share of the sum: x·s/‖s‖², and the sublayer's share, add up to 1 for every token
    share_x = (x * s1).sum(-1) / (s1 * s1).sum(-1)
    assert np.allclose(w.residual_share["attention"], share_x.numpy(), atol=1e-6)
    n1, f, s2 = (w.step(n).tensor[0] for n in ("norm1", "ffn", "sum2"))
    share_n1 = (n1 * s2).sum(-1) / (s2 * s2).sum(-1)
    assert np.allclose(w.residual_share["ffn"], share_n1.numpy(), atol=1e-6)
    # LayerNorm: every token mean 0, standard deviation 1 (γ = 1, β = 0 in an untrained layer)
    for name in ("norm1", "output"):
        st = w.step(name)
        assert np.abs(st.means).max() < 1e-5 and np.allclose(st.stds, 1, atol=1e-3)
        assert np.allclose(st.norms, w.normed_length, rtol=1e-3) and w.normed_length == 8.0  # √64
    assert np.abs(w.step("sum1").stds - 1).max() > 0.05  # before the norm they are not
    # per-token vector norms
    assert np.allclose(w.step("input").norms, torch.linalg.vector_norm(x, dim=-1).numpy(), rtol=1e-6)
    # the FFN's hidden layer: ReLU zeroes a share of the d_ff units
    h = w.step("hidden").tensor[0]
    assert (h >= 0).all()
    assert np.allclose(w.relu_zero_share, (h == 0).float().mean(-1).numpy())
    assert w.relu_zero_total == pytest.approx(float((h == 0).float().mean()))
    assert 0.2 < w.relu_zero_total < 0.8  # about half, for an untrained layer


def test_seeded_and_the_global_rng_left_alone():
    torch.manual_seed(5)
    before = torch.rand(2)
    torch.manual_seed(5)
    a, b = lw.layer_walk(WORDS, 16, 2, seed=1), lw.layer_walk(WORDS, 16, 2, seed=1)
    assert torch.equal(torch.rand(2), before)
    assert torch.equal(a.step("output").tensor, b.step("output").tensor)
    assert not torch.equal(a.step("output").tensor, lw.layer_walk(WORDS, 16, 2, seed=2).step("output").tensor)


def test_no_words_is_a_user_error():
    with pytest.raises(UserError) as e:
        lw.layer_walk([], 16, 2)
    assert e.value.message.code == "multihead.errors.no_words"
