"""Regression tests from the model/ review: device safety (float64 never on the device, no CPU
tensors mixed into device computations), position bounds, MPS timing, atomic tokenizer writes,
3-D masks.

No GPU here, so device safety is checked on PyTorch's "meta" device: an op that mixes a CPU tensor
into a meta computation would mix it into a CUDA/MPS one too, and a float64 tensor made on meta
would be a float64 tensor made on MPS (which has no float64)."""
import os

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from model import PRESETS, Transformer
from model.layers import positional_encoding
from model.masks import as_key_mask


class DeviceWatch(TorchDispatchMode):
    """Records ops that mix tensors of several device types, and float64 tensors made off the CPU."""

    def __init__(self):
        super().__init__()
        self.mixed, self.float64 = [], []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor) and t.dim() > 0]
        if len({t.device.type for t in tensors}) > 1 and func is not torch.ops.aten._to_copy.default:
            self.mixed.append(str(func))
        out = func(*args, **kwargs)
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.device.type != "cpu" and t.dtype == torch.float64:
                self.float64.append(str(func))
        return out


def test_positional_encoding_makes_no_float64_on_the_device():
    with DeviceWatch() as w:
        pe = positional_encoding(16, 8, device="meta")
    assert pe.device.type == "meta" and pe.dtype == torch.float32
    assert not w.float64, f"float64 made on the device (fails on MPS): {w.float64}"
    with DeviceWatch() as w, torch.device("meta"):  # a model built under a device context
        Transformer(PRESETS["tiny"])
    assert not w.float64, w.float64
    # the numbers are unchanged: float64 on the CPU, then cast
    ref = positional_encoding(16, 8, dtype=torch.float64)
    torch.testing.assert_close(positional_encoding(16, 8), ref.float())


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_positions_beyond_max_len_raise_a_clear_error(positional):
    cfg = PRESETS["tiny"].replace(positional=positional, architecture="encoder-only", max_len=8)
    m = Transformer(cfg).eval()
    m(torch.full((1, 8), 5))  # exactly max_len is fine
    with pytest.raises(ValueError, match="max_len"):  # was a shape error, or an index error that
        m(torch.full((1, 9), 5))  # becomes a device-side assert (a dead CUDA context) on a GPU
    dec = Transformer(PRESETS["tiny"].replace(positional=positional, max_len=8)).eval()
    mem = dec.encode(torch.full((1, 3), 5))
    with pytest.raises(ValueError, match="max_len"):
        dec.decode(torch.full((1, 1), 2), mem, cache=[], offset=8)


def test_time_scoring_waits_for_the_device(monkeypatch):
    """MPS (like CUDA) runs asynchronously; lab.time_scoring synchronised only CUDA."""
    import model.lab as lab
    calls = []
    monkeypatch.setattr(lab, "_sync", lambda device: calls.append(torch.device(device).type))
    lab.time_scoring(8, 4, 4, device="cpu", repeats=2)
    assert calls and set(calls) == {"cpu"}
    from model.complexity import _sync
    mps = []
    monkeypatch.setattr(torch.mps, "synchronize", lambda: mps.append(1))
    _sync(torch.device("mps"))
    assert mps == [1]


def test_encode_with_attention_keeps_inputs_on_the_model_device():
    from model.positions import encode_with_attention, seeded_encoder
    model = seeded_encoder(vocab_size=16, d_model=8, n_heads=2, n_layers=1, max_len=8).to("meta")
    with DeviceWatch() as w:
        out, attn = encode_with_attention(model, [4, 5, 6], positions=True)
    assert out.device.type == "meta" and attn.shape == (1, 2, 3, 3)
    assert not w.mixed, f"CPU tensors mixed into device ops: {w.mixed}"


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_model_forward_and_cached_decoding_do_not_mix_devices(positional):
    """Guard (passes before the review too): every tensor the model makes follows the weights."""
    cfg = PRESETS["tiny"].replace(positional=positional)
    m = Transformer(cfg).to("meta").eval()
    src = torch.full((2, 5), 5, device="meta")
    tgt = torch.full((2, 4), 5, device="meta")
    mask = torch.ones(2, 5, dtype=torch.bool, device="meta")
    with DeviceWatch() as w, torch.no_grad():
        m(src, tgt, src_pad_mask=mask, return_attention=True, return_details=True)
        m(src, tgt)
        mem = m.encode(src, mask)
        cache = []
        for t in range(3):
            m.decode(tgt[:, :1], mem, mask, cache=cache, offset=t)
    assert not w.mixed, w.mixed
    assert not w.float64, w.float64


def test_tokenizer_save_is_atomic(tmp_path, monkeypatch):
    """A crash while saving must leave the previous tokenizer file whole (model dirs are atomic)."""
    from model.tokenizer import SentencePieceTokenizer, SymbolTokenizer, load_tokenizer
    d = tmp_path / "tok"
    SymbolTokenizer(list("abc")).save(d)
    before = (d / "tokenizer.json").read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        SymbolTokenizer(list("xyz")).save(d)
    assert (d / "tokenizer.json").read_bytes() == before
    assert sorted(p.name for p in d.iterdir()) == ["tokenizer.json"]  # no temp file left behind
    monkeypatch.undo()

    sp_dir = tmp_path / "sp"
    sp = load_tokenizer()  # the shipped sentencepiece model
    sp.save(sp_dir)
    good = (sp_dir / "tokenizer.model").read_bytes()
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        SentencePieceTokenizer(good).save(sp_dir)
    monkeypatch.undo()
    assert (sp_dir / "tokenizer.model").read_bytes() == good
    assert load_tokenizer(sp_dir).encode("I go to school.") == sp.encode("I go to school.")


def test_three_d_masks_get_a_head_axis():
    """(B, 1, L) (the Annotated Transformer's source mask) used to broadcast with its batch axis on
    the head axis: silently wrong when B == n_heads, an error otherwise."""
    torch.manual_seed(0)
    cfg = PRESETS["tiny"].replace(architecture="encoder-only")  # 4 heads
    m = Transformer(cfg).eval()
    B, L = cfg.n_heads, 6
    ids = torch.randint(4, cfg.vocab_size, (B, L))
    keep = torch.ones(B, L, dtype=torch.bool)
    keep[0, 3:] = False
    keep[2, 5:] = False
    assert as_key_mask(keep[:, None, :]).shape == (B, 1, 1, L)
    with torch.no_grad():
        ref = m(ids, src_pad_mask=keep).logits
        got = m(ids, src_pad_mask=keep[:, None, :]).logits
        odd = m(ids[:3], src_pad_mask=keep[:3, None, :]).logits  # B != H: was a broadcast error
    torch.testing.assert_close(got, ref)
    torch.testing.assert_close(odd, ref[:3], atol=1e-5, rtol=1e-5)
