"""model/lessons/multihead.py: multi-head attention step by step, its cost for every head count, and the
multi-head page's demo."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from model.lessons import multihead as mlab
from model.messages import UserError


# ---------------------------------------------------------------- multi-head attention

@pytest.mark.parametrize("D, H, L", [(8, 1, 1), (16, 4, 5), (48, 6, 7), (64, 64, 3)])
def test_step_by_step_equals_module(D, H, L):
    mha = mlab.seeded_mha(D, H, seed=3)
    x = torch.randn(2, L, D, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out, steps = mlab.multihead_steps(mha, x)
        fused, _, _ = mha(x)
        explicit, w, _ = mha(x, need_weights=True)
    assert torch.allclose(out, fused, atol=1e-5) and torch.allclose(out, explicit, atol=1e-6)
    assert torch.allclose(mlab.step_tensor(steps, "weights"), w)
    shapes = {s.name: s.shape for s in steps}
    dh = D // H
    assert shapes["split"] == (2, L, H, dh) and shapes["transpose"] == (2, H, L, dh)
    assert shapes["scores"] == (2, H, L, L) and shapes["heads"] == (2, H, L, dh) and shapes["output"] == (2, L, D)


def test_seeded_weights_do_not_depend_on_heads_or_touch_global_rng():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a, b = mlab.seeded_mha(32, 1, seed=7), mlab.seeded_mha(32, 8, seed=7)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert mlab.parameter_count(a) == mlab.parameter_count(b) == 4 * 32 * 32 + 4 * 32


def test_seeded_weights_are_drawn_once_and_each_module_owns_its_copy():
    """The page's cost table builds one module per head count: the weights are drawn once per (D, seed), each
    module gets the very values a module built under the seed has, in tensors of its own."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        built = mlab.MultiHeadAttention(48, 6, self_attention=True)
    mlab.seeded_weights.cache_clear()
    a, b = mlab.seeded_mha(48, 6, seed=5), mlab.seeded_mha(48, 2, seed=5)
    assert mlab.seeded_weights.cache_info().misses == 1 and mlab.seeded_weights.cache_info().hits == 1
    for (name, p), q in zip(built.named_parameters(), a.parameters()):
        assert torch.equal(p, q), name
    with torch.no_grad():
        next(a.parameters()).add_(1.0)  # one module changed in place: the other and the next are not
    assert all(torch.equal(p, q) for p, q in zip(built.parameters(), b.parameters()))
    assert all(torch.equal(p, q) for p, q in zip(built.parameters(), mlab.seeded_mha(48, 3, seed=5).parameters()))
    assert all(p.device.type == "cpu" and p.requires_grad for p in b.parameters())


def test_flops_do_not_change_with_heads():
    x = torch.randn(1, 9, 64)
    counts = []
    for h in (1, 2, 4, 8, 16, 64):
        with torch.no_grad():
            _, steps = mlab.multihead_steps(mlab.seeded_mha(64, h), x)
        f = mlab.multihead_flops(steps, h)
        counts.append(f["projections"] + f["scores"] + f["weighted_sum"] + f["output_projection"])
        assert f["scores"] == 2 * 9 * 9 * 64 and f["softmax_entries"] == h * 81
    assert len(set(counts)) == 1


def test_word_embeddings_are_deterministic():
    a = mlab.word_embeddings(["나는", "🙂", "나는"], 16)
    assert torch.equal(a[0], a[2]) and not torch.equal(a[0], a[1])
    assert torch.equal(a, mlab.word_embeddings(["나는", "🙂", "나는"], 16))


def test_head_choices_and_default():
    assert mlab.head_choices(48) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 48]
    assert mlab.head_choices(512) == [1, 2, 4, 8, 16, 32, 64]  # at most 64 heads
    assert mlab.default_heads(mlab.head_choices(64)) == 8
    assert mlab.default_heads(mlab.head_choices(24)) == 8
    assert mlab.default_heads([1, 2, 3, 6, 9]) == 6


def test_sentence_input_adds_positions():
    plain = mlab.sentence_input(["a", "b", "a"], 8, positions=False)
    assert plain.shape == (1, 3, 8) and torch.equal(plain[0, 0], plain[0, 2])
    with_pe = mlab.sentence_input(["a", "b", "a"], 8)
    assert not torch.equal(with_pe[0, 0], with_pe[0, 2])


def test_multihead_demo():
    d = mlab.multihead_demo(["나는", "학교에", "간다", "🙂"], 48, 12, seed=1)
    assert d.matches and d.module_gap < 1e-5
    assert (d.length, d.d_head) == (4, 4) and d.weights.shape == (12, 4, 4)
    assert np.allclose(d.weights.sum(-1), 1) and np.allclose(d.mean_weights, d.weights.mean(0))
    assert [s.name for s in d.steps][0] == "input" and d.steps[-1].shape == (1, 4, 48)
    assert d.single_weights.shape == (4, 4) and d.single_gap > 0
    assert d.same_params and d.params_single == d.params_multi == d.param_formula == 4 * 48 * 48 + 4 * 48
    assert [c.heads for c in d.costs] == mlab.head_choices(48)
    assert len(d.matmul_totals) == 1 and all(c.matmul == d.matmul_totals[0] for c in d.costs)
    assert d.costs[-1].scores_shape == (1, 48, 4, 4) and d.costs[-1].softmax_entries == 48 * 16
    few = mlab.multihead_demo(["a"], 8, 2, cost_heads=[2])
    assert [c.heads for c in few.costs] == [2]
    with pytest.raises(UserError) as e:
        mlab.multihead_demo([], 8, 2)
    assert e.value.message.code == "multihead.errors.no_words"
