"""The TransformerConfig options real models added after the paper (model/nn/config.py, positions.py,
attention.py, layers.py): RMSNorm, gated feed-forward, rotary positions, ALiBi, grouped-query attention,
sliding windows, q/k/v and output biases, an untied output layer. Each default is the paper's; each option is
checked against its formula, and the plain path (which returns the weights) against the fused one.
Parity with transformers' Llama, Mistral and Qwen2: tests/model/test_since_paper_parity.py."""
import math

import pytest
import torch
import torch.nn.functional as F

from model import PRESETS, Transformer, TransformerConfig
from model.nn.attention import MultiHeadAttention
from model.nn.config import parameter_formula
from model.nn.layers import FeedForward, RMSNorm
from model.nn.masks import causal_mask, window_mask
from model.nn.positions import alibi_bias, alibi_slopes, apply_rotary, rotary_cos_sin
from model.nn.transformer import count_parameters

TINY = PRESETS["tiny"]
LLAMA_LIKE = dict(architecture="decoder-only", norm="rmsnorm", norm_first=True, ffn_gated=True, activation="swish",
                  ffn_bias=False, qkv_bias=False, attn_out_bias=False, positional="rotary", embed_scale=False,
                  n_kv_heads=2, tie_embeddings=False, dropout=0.0)
ARCHS = ("encoder-decoder", "decoder-only", "encoder-only")
OPTIONS = {
    "rmsnorm": dict(norm="rmsnorm", norm_first=True, norm_eps=1e-6),
    "swiglu": dict(ffn_gated=True, activation="swish", ffn_bias=False),
    "geglu": dict(ffn_gated=True, activation="gelu"),
    "rotary": dict(positional="rotary", rope_theta=500000.0),
    "partial_rotary": dict(positional="rotary", rotary_dim=8),
    "alibi": dict(positional="alibi"),
    "gqa": dict(n_kv_heads=2),
    "mqa": dict(n_kv_heads=1),
    "window": dict(window=3),
    "no_biases": dict(qkv_bias=False, attn_out_bias=False),
    "qkv_bias_only": dict(qkv_bias=True, attn_out_bias=False),
    "llama": LLAMA_LIKE,
    "mistral": {**LLAMA_LIKE, "window": 3},
}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _inputs(n_src=9, n_tgt=7):
    return torch.randint(1, 64, (2, n_src)), torch.randint(1, 64, (2, n_tgt))


def test_defaults_are_the_paper_and_name_no_difference():
    cfg = TransformerConfig()
    assert (cfg.norm, cfg.ffn_gated, cfg.ffn_bias, cfg.qkv_bias, cfg.attn_out_bias) == ("layernorm", False, True, True, True)
    assert (cfg.n_kv_heads, cfg.window, cfg.positional, cfg.tie_embeddings) == (None, None, "sinusoidal", True)
    assert cfg.differences_from_paper() == {}
    assert TINY.replace(n_kv_heads=TINY.n_heads).differences_from_paper() == {}


@pytest.mark.parametrize("arch", ARCHS)
def test_options_at_the_papers_values_change_nothing_bit_for_bit(arch):
    """Naming the paper's values explicitly builds the same parameters (same names, same draws from the seed)
    and gives the same outputs, bit for bit."""
    src, tgt = _inputs()
    outs = []
    for extra in ({}, dict(n_kv_heads=TINY.n_heads, window=None, qkv_bias=True, attn_out_bias=True, ffn_bias=True,
                           norm="layernorm", ffn_gated=False, rotary_dim=None)):
        torch.manual_seed(3)
        model = Transformer(TINY.replace(architecture=arch, **extra)).eval()
        out = model(src, tgt, return_attention=True)
        outs.append((model.state_dict(), out.logits, [w for k in out.attention.kinds() for w in getattr(out.attention, k)]))
    (sd0, l0, a0), (sd1, l1, a1) = outs
    assert list(sd0) == list(sd1) and all(torch.equal(sd0[k], sd1[k]) for k in sd0)
    assert torch.equal(l0, l1) and all(torch.equal(x, y) for x, y in zip(a0, a1))


@pytest.mark.parametrize("name", OPTIONS)
@pytest.mark.parametrize("arch", ARCHS)
def test_plain_and_fused_paths_agree_and_the_count_is_the_formula(arch, name):
    cfg = TINY.replace(**{**OPTIONS[name], "architecture": arch, "dropout": 0.0})
    model = Transformer(cfg).eval()
    src, tgt = _inputs()
    pad = torch.ones(2, 9, dtype=torch.bool)
    pad[1, 6:] = False  # a padded sentence too
    with torch.no_grad():
        fused = model(src, tgt, src_pad_mask=pad).logits
        plain = model(src, tgt, src_pad_mask=pad, return_attention=True, return_details=True)
    torch.testing.assert_close(plain.logits, fused, atol=1e-5, rtol=0)
    for kind in plain.attention.kinds():
        for w in getattr(plain.attention, kind):
            assert w.shape[1] == cfg.n_heads  # one map per query head, grouped or not
            rows = w.sum(-1)  # 1, or 0 for a padding query whose window holds only padding
            assert torch.all(((rows - 1).abs() < 1e-5) | (rows == 0)) and torch.all((rows - 1).abs()[0] < 1e-5)
    assert model.num_parameters() == parameter_formula(cfg) == count_parameters(cfg)
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize("name", ["rotary", "partial_rotary", "alibi", "gqa", "mqa", "window", "llama", "mistral"])
def test_kv_cache_decoding_equals_the_whole_sequence(name):
    """One token at a time with the cache (keys turned once, at their own positions; n_kv_heads cached) gives
    the logits of the whole sequence at once."""
    for arch in ("encoder-decoder", "decoder-only"):
        model = Transformer(TINY.replace(**{**OPTIONS[name], "architecture": arch})).eval()
        src, tgt = _inputs()
        with torch.no_grad():
            memory = model.encode(src) if arch == "encoder-decoder" else None
            full = model.project(model.decode(tgt, memory))
            cache, steps = [], []
            for t in range(tgt.size(1)):
                steps.append(model.project(model.decode(tgt[:, t:t + 1], memory, cache=cache, offset=t)))
        torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=0)
        assert cache[0]["self"]["k"].shape[1] == model.config.kv_heads  # the cache holds only the shared heads


# ------------------------------------------------------------------ RMSNorm and gated feed-forward

def test_rmsnorm_formula():
    norm = RMSNorm(6, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.arange(1.0, 7.0))
    x = torch.randn(2, 3, 6) * 5 + 2
    expected = x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + 1e-6) * torch.arange(1.0, 7.0)
    torch.testing.assert_close(norm(x), expected)
    assert [n for n, _ in norm.named_parameters()] == ["weight"]  # no bias, no mean
    model = Transformer(TINY.replace(norm="rmsnorm", norm_first=True))
    assert all(not isinstance(m, torch.nn.LayerNorm) for m in model.modules())


@pytest.mark.parametrize("act,fn", [("swish", F.silu), ("gelu", F.gelu), ("relu", torch.relu)])
def test_gated_feed_forward_formula(act, fn):
    """SwiGLU (swish), GeGLU (gelu): FFN(x) = (act(x W_gate + b) * (x W1 + b1)) W2 + b2."""
    for bias in (True, False):
        ffn = FeedForward(8, 12, act, gated=True, bias=bias)
        x = torch.randn(2, 5, 8)
        g, up, down = ffn.gate, ffn.w1, ffn.w2
        b = (lambda layer: layer.bias) if bias else (lambda layer: 0)
        expected = (fn(x @ g.weight.T + b(g)) * (x @ up.weight.T + b(up))) @ down.weight.T + b(down)
        torch.testing.assert_close(ffn(x), expected)
        assert (g.bias is None) == (up.bias is None) == (down.bias is None) == (not bias)


# ------------------------------------------------------------------ rotary positions and ALiBi

def test_rotary_scores_depend_only_on_the_offset():
    """RoPE's point: q turned to position m and k turned to position n score q·k as a function of m - n.
    The whole block of scores is the same wherever the sentence starts, and not the same without RoPE."""
    mha = MultiHeadAttention(32, 4, positional="rotary", rope_theta=10000.0)
    x = torch.randn(1, 6, 32)
    q, k, _ = mha.project(x)
    at0, at7 = mha.rotate(q, k, 0), mha.rotate(q, k, 7)
    torch.testing.assert_close(at0[0] @ at0[1].transpose(-2, -1), at7[0] @ at7[1].transpose(-2, -1), atol=1e-5, rtol=0)
    assert not torch.allclose(at0[0] @ at0[1].transpose(-2, -1), q @ k.transpose(-2, -1), atol=1e-3)
    # one pair by hand: the same two vectors, 3 apart, at two places
    qv, kv = torch.randn(16), torch.randn(16)
    def score(m, n):
        cq, sq = rotary_cos_sin(m, 1, 16, 10000.0)
        ck, sk = rotary_cos_sin(n, 1, 16, 10000.0)
        return (apply_rotary(qv[None], cq, sq) * apply_rotary(kv[None], ck, sk)).sum()
    torch.testing.assert_close(score(5, 2), score(105, 102), atol=1e-4, rtol=0)


def test_rotary_pairs_coordinate_i_with_i_plus_half_and_keeps_the_norm():
    cos, sin = rotary_cos_sin(1, 1, 4, 100.0)
    x = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    turned = apply_rotary(x, cos, sin)  # position 1, frequency 1 for pair (0, 2): angle 1 rad
    torch.testing.assert_close(turned, torch.tensor([[math.cos(1.0), 0.0, math.sin(1.0), 0.0]]))
    y = torch.randn(3, 10)
    c, s = rotary_cos_sin(0, 3, 6, 10000.0)  # partial: 6 of 10 coordinates turn
    out = apply_rotary(y, c, s)
    assert torch.equal(out[:, 6:], y[:, 6:])
    torch.testing.assert_close(out[:, :6].norm(dim=-1), y[:, :6].norm(dim=-1))


def test_alibi_slopes_and_bias():
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0 ** -(i + 1) for i in range(8)]))
    # 6 heads: the 4-head slopes, then the 1st and 3rd of the 8-head ones
    torch.testing.assert_close(alibi_slopes(6), torch.tensor([2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3]))
    bias = alibi_bias(2, 2, 4)  # queries at positions 2, 3 of 4 keys
    torch.testing.assert_close(bias[0], -0.0625 * torch.tensor([[2.0, 1.0, 0.0, 1.0], [3.0, 2.0, 1.0, 0.0]]))
    mha = MultiHeadAttention(16, 2, positional="alibi")
    x = torch.randn(1, 4, 16)
    _, _, d = mha(x, need_details=True)
    q, k, _ = mha.project(x)
    torch.testing.assert_close(d.scores, q @ k.transpose(-2, -1) / math.sqrt(8) + alibi_bias(2, 4, 4))


def test_without_positions_a_rotary_or_alibi_model_is_permutation_equivariant():
    for positional in ("rotary", "alibi"):
        model = Transformer(TINY.replace(architecture="encoder-only", positional=positional)).eval()
        x, perm = torch.randint(1, 64, (1, 8)), torch.randperm(8)
        with torch.no_grad():
            assert not torch.allclose(model(x).logits[:, perm], model(x[:, perm]).logits, atol=1e-4)
            model.set_positional(False)
            torch.testing.assert_close(model(x).logits[:, perm], model(x[:, perm]).logits, atol=1e-5, rtol=0)


# ------------------------------------------------------------------ grouped-query attention

def test_grouped_query_attention_equals_mha_with_keys_and_values_repeated():
    """n_kv_heads = 2 of 8: query head i reads key/value head i // 4, so it equals plain multi-head attention
    whose K and V weights repeat each shared head four times."""
    gqa = MultiHeadAttention(32, 8, n_kv_heads=2, d_k=4, d_v=4)
    mha = MultiHeadAttention(32, 8, d_k=4, d_v=4)
    wq, wk, wv = gqa.qkv.weight.split((32, 8, 8))
    bq, bk, bv = gqa.qkv.bias.split((32, 8, 8))
    rep = lambda t: t.view(2, 4, *t.shape[1:]).repeat_interleave(4, dim=0).reshape(32, *t.shape[1:])  # noqa: E731
    with torch.no_grad():
        mha.qkv.weight.copy_(torch.cat([wq, rep(wk), rep(wv)]))
        mha.qkv.bias.copy_(torch.cat([bq, rep(bk), rep(bv)]))
        mha.out.load_state_dict(gqa.out.state_dict())
    x = torch.randn(2, 5, 32)
    for causal in (False, True):
        og, wg, _ = gqa(x, is_causal=causal, need_weights=True)
        om, wm, _ = mha(x, is_causal=causal, need_weights=True)
        torch.testing.assert_close(og, om)
        torch.testing.assert_close(wg, wm)
        torch.testing.assert_close(gqa(x, is_causal=causal)[0], om, atol=1e-6, rtol=0)
    assert gqa.qkv.weight.shape == (32 + 8 + 8, 32)


def test_grouped_query_with_as_many_kv_heads_as_heads_is_plain_mha():
    torch.manual_seed(1)
    a = MultiHeadAttention(32, 4)
    torch.manual_seed(1)
    b = MultiHeadAttention(32, 4, n_kv_heads=4)
    x = torch.randn(2, 5, 32)
    assert torch.equal(a(x, need_weights=True)[1], b(x, need_weights=True)[1])


# ------------------------------------------------------------------ sliding window

def test_window_mask_keeps_the_last_window_keys():
    causal_window = window_mask(5, 5, 2) & causal_mask(5)
    assert causal_window.sum(-1).tolist() == [1, 2, 2, 2, 2]
    assert causal_window[4].tolist() == [False, False, False, True, True]
    assert window_mask(1, 5, 3).tolist() == [[False, False, True, True, True]]  # the newest query, cached keys


@pytest.mark.parametrize("n", [1, 4, 9])
def test_a_window_at_least_the_sentence_is_full_causal_attention(n):
    torch.manual_seed(2)
    full = Transformer(TINY.replace(architecture="decoder-only")).eval()
    windowed = Transformer(TINY.replace(architecture="decoder-only", window=n)).eval()
    windowed.load_state_dict(full.state_dict())
    ids = torch.randint(1, 64, (2, n))
    a, b = full(ids, return_attention=True), windowed(ids, return_attention=True)
    torch.testing.assert_close(a.logits, b.logits, atol=0, rtol=0)
    assert all(torch.equal(x, y) for x, y in zip(a.attention.decoder_self, b.attention.decoder_self))


def test_a_short_window_gives_zero_weight_outside_it():
    model = Transformer(TINY.replace(architecture="decoder-only", window=3)).eval()
    w = model(torch.randint(1, 64, (1, 8)), return_attention=True).attention.decoder_self[0][0]  # (H, 8, 8)
    allowed = window_mask(8, 8, 3) & causal_mask(8)
    assert torch.all(w[:, ~allowed] == 0) and torch.all(w[:, allowed] > 0)


# ------------------------------------------------------------------ biases and the output layer

def test_biases_on_and_off_separately():
    mha = MultiHeadAttention(16, 2, qkv_bias=False, out_bias=True)
    assert mha.qkv.bias is None and mha.out.bias is not None
    mha = MultiHeadAttention(16, 2, self_attention=False, qkv_bias=True, out_bias=False)
    assert mha.q.bias is not None and mha.kv.bias is not None and mha.out.bias is None


def test_untied_output_layer_of_a_decoder_only_model():
    """The paper ties (section 3.4) and so does the default; tie_embeddings=False gives a decoder-only model its
    own output matrix (Llama), still one token table."""
    tied = Transformer(TINY.replace(architecture="decoder-only"))
    untied = Transformer(TINY.replace(architecture="decoder-only", tie_embeddings=False))
    assert tied.output_weight() is tied.tgt_embed.token.weight
    assert untied.output_weight() is untied.generator.weight is not untied.tgt_embed.token.weight
    assert untied.num_parameters() == tied.num_parameters() + 64 * 64


# ------------------------------------------------------------------ validation

@pytest.mark.parametrize("changes,words", [
    (dict(n_kv_heads=3), "n_kv_heads (3) must divide n_heads (4)"),
    (dict(n_kv_heads=0), "n_kv_heads must be a positive integer"),
    (dict(window=0), "window must be a positive integer"),
    (dict(window=2.5), "window must be a positive integer"),
    (dict(rope_theta=0.0), "rope_theta must be a finite number above 1"),
    (dict(rope_theta=float("inf")), "rope_theta must be a finite number above 1"),
    (dict(rope_theta=float("nan")), "rope_theta must be a finite number above 1"),
    (dict(rope_theta="big"), "rope_theta must be a finite number above 1"),
    (dict(rotary_dim=7), "rotary_dim must be even and at most the head size d_k (16)"),
    (dict(rotary_dim=32), "rotary_dim must be even and at most the head size d_k (16)"),
    (dict(positional="rotary", d_k=5, d_v=8), "d_k must be even"),
    (dict(norm="batchnorm"), "norm must be one of"),
    (dict(positional="relative"), "positional must be one of"),
    (dict(qkv_bias="no"), "qkv_bias must be true or false"),
])
def test_bad_options_are_refused_with_a_clear_message(changes, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        TINY.replace(**changes)


def test_differences_name_the_new_options():
    cfg = TINY.replace(**{**LLAMA_LIKE, "rope_theta": 500000.0, "window": 16, "rotary_dim": 8})
    assert cfg.differences_from_paper() == {
        "norm": "rmsnorm", "ffn_gated": True, "ffn_bias": False, "qkv_bias": False, "attn_out_bias": False,
        "activation": "swish", "embed_scale": False, "norm_first": True, "positional": "rotary",
        "rope_theta": 500000.0, "rotary_dim": 8, "n_kv_heads": 2, "window": 16, "tie_embeddings": False}
