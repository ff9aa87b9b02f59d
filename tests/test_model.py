"""Unit tests of model/: the maths of the paper, checked so that a wrong formula fails."""
import math

import pytest
import torch

from model import (PAPER_PARAMS, PRESETS, Transformer, TransformerConfig, causal_mask, noam_lr,
                   padding_mask, positional_encoding, scaled_dot_product_attention)
from model.attention import MultiHeadAttention, fused_attention
from model.device import best_device, describe_device
from model.schedule import noam_peak

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


def test_explicit_and_fused_paths_agree():
    q, k, v = (torch.randn(2, 4, 7, 16) for _ in range(3))
    mask = torch.rand(2, 1, 7, 7) > 0.3
    mask[..., 0] = True  # keep every row attendable
    for m in (None, mask):
        out, w = scaled_dot_product_attention(q, k, v, m)
        torch.testing.assert_close(out, fused_attention(q, k, v, m), atol=1e-5, rtol=0)
    out, _ = scaled_dot_product_attention(q, k, v, causal_mask(7))
    torch.testing.assert_close(out, fused_attention(q, k, v, is_causal=True), atol=1e-5, rtol=0)


def test_explicit_path_matches_formula():
    q, k, v = torch.randn(3, 5, dtype=torch.float64), torch.randn(4, 5, dtype=torch.float64), torch.randn(4, 2, dtype=torch.float64)
    out, w, s = scaled_dot_product_attention(q, k, v, return_scores=True)
    expected_s = (q @ k.T) / math.sqrt(5)
    torch.testing.assert_close(s, expected_s)
    e = torch.exp(expected_s - expected_s.max(-1, keepdim=True).values)
    torch.testing.assert_close(w, e / e.sum(-1, keepdim=True))
    torch.testing.assert_close(out, w @ v)


def test_rows_sum_to_one_and_huge_scores_stay_finite():
    q = torch.tensor([[1e30, 1.0], [0.0, 0.0]])
    k = torch.tensor([[1.0, 0.0], [2.0, 0.0], [-1.0, 0.0]])
    out, w = scaled_dot_product_attention(q, k, torch.eye(3))
    assert torch.isfinite(w).all() and torch.isfinite(out).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(2))
    assert w[0, 1] == 1.0  # the largest score takes all the weight


def test_multihead_rows_sum_to_one():
    mha = MultiHeadAttention(32, 4)
    x = torch.randn(2, 6, 32)
    _, w, _ = mha(x, need_weights=True)
    assert w.shape == (2, 4, 6, 6)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 6))


def test_causal_mask_exact_zeros_and_no_future_leak():
    assert torch.equal(causal_mask(3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    model = Transformer(TINY.replace(architecture="decoder-only")).eval()
    seq = torch.randint(4, 64, (1, 8))
    out = model(seq, return_attention=True)
    for w in out.attention.decoder_self:
        upper = torch.triu(torch.ones(8, 8, dtype=torch.bool), 1)
        assert (w[..., upper] == 0).all()  # exact zeros, not just small
    changed = seq.clone()
    changed[0, 5:] = (changed[0, 5:] + 7) % 60 + 4
    out2 = model(changed)
    torch.testing.assert_close(out.logits[0, :5], out2.logits[0, :5], atol=1e-5, rtol=0)
    assert not torch.allclose(out.logits[0, 5:], out2.logits[0, 5:])


def test_encoder_decoder_future_target_tokens_do_not_leak():
    model = Transformer(TINY).eval()
    src, tgt = torch.randint(4, 64, (1, 6)), torch.randint(4, 64, (1, 7))
    a = model(src, tgt).logits
    tgt2 = tgt.clone()
    tgt2[0, 4:] = 5
    b = model(src, tgt2).logits
    torch.testing.assert_close(a[0, :4], b[0, :4], atol=1e-5, rtol=0)


def test_padding_mask_zero_weight_on_padded_keys():
    ids = torch.tensor([[5, 6, 7, 0, 0], [5, 6, 7, 8, 9]])
    m = padding_mask(ids, 0)
    assert m.shape == (2, 1, 1, 5)
    model = Transformer(TINY).eval()
    out = model(ids, torch.tensor([[2, 5, 6], [2, 7, 8]]), src_pad_mask=ids != 0, return_attention=True)
    for w in out.attention.encoder_self + out.attention.cross:
        assert (w[0, :, :, 3:] == 0).all()
        torch.testing.assert_close(w.sum(-1), torch.ones_like(w.sum(-1)))
    # fused path agrees with the recorded path on padded input
    plain = model(ids, torch.tensor([[2, 5, 6], [2, 7, 8]]), src_pad_mask=ids != 0)
    torch.testing.assert_close(plain.logits, out.logits, atol=1e-5, rtol=0)


def test_fully_masked_row_gives_no_nan():
    q = torch.randn(1, 2, 3, 4)
    mask = torch.ones(1, 1, 3, 3, dtype=torch.bool)
    mask[..., 1, :] = False  # query 1 may attend nowhere
    out, w = scaled_dot_product_attention(q, q, q, mask)
    assert not torch.isnan(out).any() and not torch.isnan(w).any()
    assert (w[..., 1, :] == 0).all()
    assert not torch.isnan(fused_attention(q, q, q, mask)).any()
    model = Transformer(TINY.replace(architecture="encoder-only")).eval()
    ids = torch.zeros(1, 4, dtype=torch.long)  # all padding
    out = model(ids, src_pad_mask=ids != 0, return_attention=True)
    assert torch.isfinite(out.logits).all()


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
