"""Unit tests of model/: the maths of the paper, checked so that a wrong formula fails, and device
safety. (Attention and masks: tests/model/test_attention.py; decoding: tests/model/test_decode.py.)

No GPU here, so device safety is checked on PyTorch's "meta" device: an op that mixes a CPU tensor
into a meta computation would mix it into a CUDA/MPS one too, and a float64 tensor made on meta
would be a float64 tensor made on MPS (which has no float64)."""
import math
import os

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from model import PAPER_PARAMS, PRESETS, Transformer, TransformerConfig, noam_lr, positional_encoding
from model.nn.device import best_device, describe_device
from model.training.schedule import noam_peak
from model.nn.transformer import count_parameters

TINY = PRESETS["tiny"]


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_config_dict_round_trip_and_validation():
    cfg = TINY.replace(architecture="decoder-only", positional="learned", norm_first=True)
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError):
        TransformerConfig.from_dict({**cfg.to_dict(), "bogus": 1})
    with pytest.raises(ValueError):
        TINY.replace(n_heads=5)  # 64 not divisible by 5
    with pytest.raises(ValueError):
        TINY.replace(architecture="rnn")


def test_permutation_equivariance_without_positions_only():
    cfg = TINY.replace(architecture="encoder-only", dropout=0.0)
    model = Transformer(cfg).eval()
    ids = torch.tensor([[7, 8, 9, 10, 11]])
    perm = torch.tensor([3, 0, 4, 1, 2])
    model.set_positional(False)
    a, b = model(ids).logits, model(ids[:, perm]).logits
    torch.testing.assert_close(a[:, perm], b, atol=1e-5, rtol=0)
    model.set_positional(True)
    a, b = model(ids).logits, model(ids[:, perm]).logits
    assert not torch.allclose(a[:, perm], b, atol=1e-3)


def test_positional_encoding_formula_and_linear_shift():
    L, D = 50, 16
    pe = positional_encoding(L, D, dtype=torch.float64)
    assert pe.shape == (L, D)
    for pos in (0, 1, 17, 49):
        for i in range(D // 2):
            angle = pos / 10000 ** (2 * i / D)
            assert math.isclose(pe[pos, 2 * i].item(), math.sin(angle), abs_tol=1e-12)
            assert math.isclose(pe[pos, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-12)
    # PE(pos + k) = M_k PE(pos) with M_k block-diagonal rotations that do not depend on pos
    k = 5
    M = torch.zeros(D, D, dtype=torch.float64)
    for i in range(D // 2):
        w = 1 / 10000 ** (2 * i / D)
        c, s = math.cos(k * w), math.sin(k * w)
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    torch.testing.assert_close(pe[:-k] @ M.T, pe[k:], atol=1e-9, rtol=0)
    # odd d_model works too
    assert positional_encoding(10, 7).shape == (10, 7)


def test_noam_schedule_peaks_at_warmup():
    d, w = 512, 4000
    lrs = [noam_lr(s, d, w) for s in range(1, 20001)]
    assert max(range(len(lrs)), key=lrs.__getitem__) + 1 == w
    assert noam_peak(d, w) == (w, pytest.approx(d ** -0.5 * w ** -0.5))
    assert noam_lr(100, d, w) == pytest.approx(d ** -0.5 * 100 * w ** -1.5)
    assert noam_lr(10000, d, w) == pytest.approx(d ** -0.5 * 10000 ** -0.5)


@pytest.mark.parametrize("name", ["paper_base", "paper_big"])
def test_parameter_counts_match_paper(name):
    with torch.device("meta"):
        n = Transformer(PRESETS[name]).num_parameters()
    assert abs(n - PAPER_PARAMS[name]) / PAPER_PARAMS[name] < 0.04, n


def test_parameter_count_by_hand():
    cfg = TINY
    D, F, V = cfg.d_model, cfg.d_ff, cfg.vocab_size
    attn = 4 * D * D + 4 * D
    ffn = 2 * D * F + F + D
    enc = cfg.n_encoder_layers * (attn + ffn + 2 * 2 * D)
    dec = cfg.n_decoder_layers * (2 * attn + ffn + 3 * 2 * D)
    assert Transformer(cfg).num_parameters() == V * D + enc + dec


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only", "encoder-only"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_shapes_for_all_architectures(arch, norm_first):
    cfg = TINY.replace(architecture=arch, norm_first=norm_first, positional="learned" if norm_first else "sinusoidal")
    model = Transformer(cfg).eval()
    src, tgt = torch.randint(1, 64, (3, 9)), torch.randint(1, 64, (3, 5))
    out = model(src, tgt if arch == "encoder-decoder" else None, return_attention=True, return_details=True)
    att = out.attention
    if arch == "encoder-decoder":
        assert out.logits.shape == (3, 5, 64)
        assert att.kinds() == ["encoder_self", "decoder_self", "cross"]
        assert att.cross[0].shape == (3, 4, 5, 9)
        assert att.details["cross"][0].q.shape == (3, 4, 5, 16)
        assert att.details["cross"][0].k.shape == (3, 4, 9, 16)
    elif arch == "decoder-only":
        assert out.logits.shape == (3, 9, 64) and att.kinds() == ["decoder_self"]
    else:
        assert out.logits.shape == (3, 9, 64) and att.kinds() == ["encoder_self"]
    for kind in att.kinds():
        assert len(getattr(att, kind)) == 2
        assert att.stack(kind).shape[:3] == (2, 3, 4)


def test_kv_cache_matches_full_decoding():
    model = Transformer(TINY).eval()
    src, tgt = torch.randint(4, 64, (2, 6)), torch.randint(4, 64, (2, 5))
    with torch.no_grad():
        memory = model.encode(src)
        full = model.project(model.decode(tgt, memory))
        cache, steps = [], []
        for t in range(5):
            steps.append(model.project(model.decode(tgt[:, t:t + 1], memory, cache=cache, offset=t)))
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=0)


def test_tied_embeddings_share_one_matrix():
    model = Transformer(TINY)
    assert model.src_embed.token.weight is model.tgt_embed.token.weight
    untied = Transformer(TINY.replace(tie_embeddings=False))
    assert untied.src_embed.token.weight is not untied.tgt_embed.token.weight
    assert untied.num_parameters() == model.num_parameters() + 2 * 64 * 64


def test_device_override_falls_back_when_absent(monkeypatch):
    monkeypatch.setenv("ATLAS_DEVICE", "cpu")
    assert best_device().type == "cpu"
    for bogus in ("not-a-device", "cuda:7" if not torch.cuda.is_available() else "not-a-device"):
        monkeypatch.setenv("ATLAS_DEVICE", bogus)
        assert best_device().type in ("cpu", "cuda", "mps")


def test_device_description():
    assert best_device().type in ("cpu", "cuda", "mps")
    assert "CPU" in describe_device(torch.device("cpu"))



def test_count_parameters_on_the_meta_device():
    for name in ("tiny", "paper_base"):
        with torch.device("meta"):
            expected = Transformer(PRESETS[name]).num_parameters()
        assert count_parameters(PRESETS[name]) == expected
    assert count_parameters(TINY.replace(architecture="encoder-only")) < count_parameters(TINY)


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


def test_encode_with_attention_keeps_inputs_on_the_model_device():
    from model.lessons.positions import encode_with_attention, seeded_encoder
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
    from model.data.tokenizer import SentencePieceTokenizer, SymbolTokenizer, load_tokenizer
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
