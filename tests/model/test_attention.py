"""model/nn/attention.py and model/nn/masks.py: scaled dot-product attention (explicit and fused paths),
multi-head attention, the causal and padding masks, padding a batch, and timing the scoring."""
import math

import pytest
import torch

from model import PRESETS, Transformer, causal_mask, padding_mask, scaled_dot_product_attention
from model.nn.attention import MultiHeadAttention, fused_attention
from model.nn.masks import as_key_mask, combine, pad_batch

TINY = PRESETS["tiny"]


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


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


@pytest.mark.parametrize("n, m", [(1, 1), (3, 3), (2, 5), (5, 2), (4, 1)])
def test_causal_mask_puts_the_queries_at_the_end_of_the_keys(n, m):
    """The one causal mask (model/nn/masks.py), square or not: query i sees keys 0 .. (m - n) + i, as
    when decoding with a KV cache. MultiHeadAttention uses it for Lq != Lk."""
    keep = causal_mask(n, m)
    expected = torch.tensor([[j <= i + (m - n) for j in range(m)] for i in range(n)])
    assert torch.equal(keep, expected)
    assert torch.equal(causal_mask(n), causal_mask(n, n))
    assert causal_mask(2, 3, device="meta").device.type == "meta"


def test_cached_queries_see_the_same_keys_as_the_full_causal_pass():
    mha = MultiHeadAttention(16, 2).eval()
    x = torch.randn(1, 5, 16)
    with torch.no_grad():
        _, full, _ = mha(x, is_causal=True, need_weights=True)  # (1, 2, 5, 5)
        cache: dict = {}
        mha(x[:, :3], is_causal=True, kv_cache=cache)
        _, last, _ = mha(x[:, 3:], is_causal=True, need_weights=True, kv_cache=cache)  # (1, 2, 2, 5)
    torch.testing.assert_close(last, full[:, :, 3:], atol=1e-6, rtol=0)


def test_pad_batch_right_pads_and_marks_real_tokens():
    ids, keep = pad_batch([[5, 6, 7], [8], [9, 10]], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0], [9, 10, 0]] and ids.dtype == torch.long
    assert keep.tolist() == [[True, True, True], [True, False, False], [True, True, False]]
    assert torch.equal(padding_mask(ids, 0)[:, 0, 0], keep)  # same as the padding mask when ids avoid pad_id
    ids, keep = pad_batch([(1, 0, 2)], pad_id=0)  # a pad id inside a sentence stays a real token
    assert keep.tolist() == [[True, True, True]]
    with pytest.raises(ValueError):
        pad_batch([], pad_id=0)


def test_combine_is_a_logical_and_that_skips_none():
    a = causal_mask(3)
    b = torch.tensor([True, True, False])[None, :]
    assert torch.equal(combine(a, None, b), a & b)
    assert combine(None, None) is None


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



def test_time_scoring_waits_for_the_device(monkeypatch):
    """MPS (like CUDA) runs asynchronously; lab.time_scoring synchronised only CUDA."""
    import model.lessons.lab as lab
    calls = []
    monkeypatch.setattr(lab, "_sync", lambda device: calls.append(torch.device(device).type))
    lab.time_scoring(8, 4, 4, device="cpu", repeats=2)
    assert calls and set(calls) == {"cpu"}
    from model.lessons.complexity import _sync
    mps = []
    monkeypatch.setattr(torch.mps, "synchronize", lambda: mps.append(1))
    _sync(torch.device("mps"))
    assert mps == [1]
