"""model/nn/fast/output_loss.py: the output layer's loss a block at a time is torch's cross-entropy of the whole
logits, to float64 rounding, with the same gradients and the same matrix products; the trainer uses it on the CPU
(Transformer.forward(labels=...)), and the plain loss of the whole logits elsewhere or with the fast paths off."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from model import Transformer, TransformerConfig
from model.nn import fast
from model.nn.fast.output_loss import projected_cross_entropy, rows_per_block


def _case(n=37, d=6, v=11, seed=0, dtype=torch.float64, pad=0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(n, d, generator=g, dtype=dtype, requires_grad=True)
    w = torch.randn(v, d, generator=g, dtype=dtype, requires_grad=True)
    b = torch.randn(v, generator=g, dtype=dtype, requires_grad=True)
    y = torch.randint(0, v, (n,), generator=g)
    y[::5] = pad
    return h, w, b, y


def _grads(loss, *ts):
    return torch.autograd.grad(loss, ts)


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.37])
@pytest.mark.parametrize("block", [1, 7, 37, 1000])
@pytest.mark.parametrize("with_bias", [False, True])
def test_equals_torch_cross_entropy(eps, block, with_bias):
    h, w, b, y = _case()
    bias = b if with_bias else None
    ref = F.cross_entropy(F.linear(h, w, bias), y, label_smoothing=eps, ignore_index=0)
    got = projected_cross_entropy(h, w, y, bias=bias, label_smoothing=eps, ignore_index=0, block=block)
    assert torch.allclose(got, ref, rtol=0, atol=1e-13)
    ts = (h, w, b) if with_bias else (h, w)
    for a, r in zip(_grads(got, *ts), _grads(ref, *ts)):
        assert torch.allclose(a, r, rtol=0, atol=1e-13)


def test_scaled_upstream_gradient_and_batched_shapes():
    h, w, _, y = _case(n=24)
    h3 = h.detach().reshape(4, 6, -1).requires_grad_()
    ref = 3.5 * F.cross_entropy(F.linear(h3, w).reshape(-1, w.size(0)), y, label_smoothing=0.1, ignore_index=0)
    got = 3.5 * projected_cross_entropy(h3, w, y.reshape(4, 6), label_smoothing=0.1, ignore_index=0, block=5)
    assert torch.allclose(got, ref, atol=1e-13)
    for a, r in zip(_grads(got, h3, w), _grads(ref, h3, w)):
        assert a.shape == r.shape and torch.allclose(a, r, atol=1e-13)


def test_float32_close_to_torch():
    h, w, _, y = _case(n=300, d=32, v=500, dtype=torch.float32)
    ref = F.cross_entropy(F.linear(h, w), y, label_smoothing=0.1, ignore_index=0)
    got = projected_cross_entropy(h, w, y, label_smoothing=0.1, ignore_index=0, block=64)
    assert abs(got.item() - ref.item()) < 1e-5
    for a, r in zip(_grads(got, h, w), _grads(ref, h, w)):
        assert (a - r).abs().max() < 1e-6


def test_every_row_ignored_gives_zero_not_nan():
    h, w, _, y = _case()
    got = projected_cross_entropy(h, w, torch.zeros_like(y), label_smoothing=0.1, ignore_index=0)
    assert got.item() == 0.0
    assert all(float(g.abs().max()) == 0.0 for g in _grads(got, h, w))


def test_ignored_rows_may_hold_any_id_but_counted_rows_must_be_in_range():
    h, w, _, y = _case(v=11)
    y2 = y.clone()
    y2[y == 0] = -100
    ref = F.cross_entropy(F.linear(h, w), y, label_smoothing=0.1, ignore_index=0)
    got = projected_cross_entropy(h, w, y2, label_smoothing=0.1)  # torch's default ignore_index, -100
    assert torch.allclose(got, ref, atol=1e-13)
    y2[1] = 11
    with pytest.raises(IndexError):
        projected_cross_entropy(h, w, y2, label_smoothing=0.1)
    with pytest.raises(ValueError):
        projected_cross_entropy(h, w, y, label_smoothing=1.5)


def test_no_grad_gives_the_same_loss():
    h, w, _, y = _case()
    with torch.no_grad():
        got = projected_cross_entropy(h, w, y, label_smoothing=0.1, ignore_index=0)
    assert not got.requires_grad
    assert torch.allclose(got, F.cross_entropy(F.linear(h, w), y, label_smoothing=0.1, ignore_index=0), atol=1e-13)


def test_same_matrix_products_as_the_whole_logits():
    """Same FLOPs (torch's counter) as projection + cross-entropy: nothing is recomputed or skipped."""
    h, w, _, y = _case(n=100, d=16, v=300, dtype=torch.float32)

    def count(f):
        with FlopCounterMode(display=False) as fc:
            f().backward()
        return fc.get_total_flops()
    whole = count(lambda: F.cross_entropy(F.linear(h, w), y, label_smoothing=0.1, ignore_index=0))
    blocks = count(lambda: projected_cross_entropy(h, w, y, label_smoothing=0.1, ignore_index=0, block=16))
    assert whole == blocks == 3 * 2 * 100 * 16 * 300


def test_block_size_keeps_a_block_in_cache():
    assert rows_per_block(8000) * 8000 <= 1 << 21 and rows_per_block(8000) >= 200
    assert rows_per_block(10 ** 9) == 16


def _model(**kw):
    cfg = TransformerConfig(vocab_size=23, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=2,
                            dropout=0.0, max_len=32, label_smoothing=0.1, **kw)
    torch.manual_seed(0)
    return Transformer(cfg).double()


@pytest.mark.parametrize("fast_paths", [True, False])
@pytest.mark.parametrize("kw", [{}, {"tie_embeddings": False}, {"architecture": "decoder-only"},
                                {"architecture": "encoder-only", "output_bias": True, "mlm_transform": True}])
def test_transformer_labels_give_the_loss_of_its_logits(kw, fast_paths):
    """forward(labels=...) is model.loss(forward().logits): same value and the same gradient on every parameter,
    with the fast path (the blocks, on the CPU) and without it (the plain loss)."""
    with fast.switched(fast_paths):
        _labels_give_the_loss_of_the_logits(kw)


def _labels_give_the_loss_of_the_logits(kw):
    m = _model(**kw)
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, 23, (3, 7), generator=g)
    tgt = torch.randint(4, 23, (3, 5), generator=g)
    tgt[0, 3:] = m.config.pad_id
    enc_only = m.config.architecture == "encoder-only"
    dec_only = m.config.architecture == "decoder-only"
    inp, lab = (src, src) if enc_only else (tgt, tgt) if dec_only else (src, tgt)
    run = (lambda **k: m(inp, **k)) if (enc_only or dec_only) else (lambda **k: m(src, tgt, **k))
    ref = m.loss(run().logits, lab)
    ref_g = torch.autograd.grad(ref, list(m.parameters()), allow_unused=True)
    out = run(labels=lab)
    assert out.logits is None
    got_g = torch.autograd.grad(out.loss, list(m.parameters()), allow_unused=True)
    assert torch.allclose(out.loss, ref, atol=1e-12)
    for a, r in zip(got_g, ref_g):
        assert (a is None) == (r is None)
        if a is not None:
            assert torch.allclose(a, r, atol=1e-12)


def test_the_trainer_takes_its_loss_from_forward_with_labels():
    """The en-ko trainer's loss is the model's label-smoothed loss of its logits (same batch, same value)."""
    from model.training.tasks import Seq2Seq

    class Job(Seq2Seq):
        def __init__(self):  # only what loss() reads
            self.tok = type("Tok", (), {"pad_id": 0})()
    m = _model()
    g = torch.Generator().manual_seed(2)
    src, tin, tout = (torch.randint(1, 23, s, generator=g) for s in ((2, 6), (2, 5), (2, 5)))
    loss, n_tok = Job().loss(m, m, (src, tin, tout))
    assert n_tok == 22
    assert torch.allclose(loss, m.loss(m(src, tin, src_pad_mask=src != 0).logits, tout), atol=1e-12)


def test_under_autocast_the_loss_is_float32():
    h, w, _, y = _case(n=40, d=8, v=30, dtype=torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = projected_cross_entropy(h.bfloat16(), w, y, label_smoothing=0.1, ignore_index=0)
    assert got.dtype == torch.float32
    ref = F.cross_entropy(F.linear(h.bfloat16().float(), w), y, label_smoothing=0.1, ignore_index=0)
    assert abs(got.item() - ref.item()) < 1e-5
    gh, gw = _grads(got, h, w)
    assert gh.dtype == h.dtype and gw.dtype == w.dtype


@pytest.mark.parametrize("scale", [0.3, 3.0, 30.0, 300.0])
def test_float32_logits_small_and_huge(scale):
    """Logits up to ±1.5 and ±15 stay under the bound that lets the loss skip the max-shift; ±150 and ±1,500
    exceed it and are shifted first (unshifted, exp overflows there). Both give torch's loss and gradients."""
    g = torch.Generator().manual_seed(3)
    h = (torch.randn(90, 16, generator=g) * scale).requires_grad_()
    w = (torch.randn(700, 16, generator=g) / 4).requires_grad_()
    y = torch.randint(0, 700, (90,), generator=g)
    ref = F.cross_entropy(F.linear(h, w), y, label_smoothing=0.1)
    got = projected_cross_entropy(h, w, y, label_smoothing=0.1, block=32)
    assert torch.isfinite(got) and abs(got.item() - ref.item()) <= 1e-5 * max(1.0, abs(ref.item()))
    # float32 sums over 700 logits, in blocks of 32 here and in one pass in torch: the order differs, and so do the
    # CPU's kernels (an AMD EPYC differs from torch by 1.1e-6 of the largest gradient at scale 30); a wrong gradient
    # is off by far more than 1e-5 of it
    for a, r in zip(_grads(got, h, w), _grads(ref, h, w)):
        assert torch.isfinite(a).all() and (a - r).abs().max() <= 1e-5 * max(1.0, r.abs().max().item())


def test_blocks_on_the_cpu_the_plain_loss_on_an_accelerator():
    """On a GPU the blocks cost more than they save (a Python loop of small kernels; measured on an H200, the
    whole logits trained 1.1-1.3x faster): there forward(labels=...) takes the plain loss of the whole logits."""
    assert fast.use("loss", torch.device("cpu"))
    assert not fast.use("loss", torch.device("cuda")) and not fast.use("loss", torch.device("mps"))
    with fast.switched(False):
        assert not fast.use("loss", torch.device("cpu"))


@pytest.mark.parametrize("fast_paths", [True, False])
def test_under_autocast_the_models_loss_is_float32(fast_paths):
    """bf16 training: the loss from forward(labels=...) is float32 either way, and the two agree to bf16's
    precision (the plain loss reads bf16 logits, the blocks compute them in float32)."""
    m = _model().float()
    g = torch.Generator().manual_seed(4)
    src, tin, tout = (torch.randint(4, 23, s, generator=g) for s in ((2, 6), (2, 5), (2, 5)))
    with fast.switched(fast_paths), torch.autocast("cpu", dtype=torch.bfloat16):
        got = m(src, tin, labels=tout).loss
    assert got.dtype == torch.float32
    with fast.switched(not fast_paths), torch.autocast("cpu", dtype=torch.bfloat16):
        other = m(src, tin, labels=tout).loss
    assert other.dtype == torch.float32 and abs(got.item() - other.item()) < 2 ** -8 * other.item()
