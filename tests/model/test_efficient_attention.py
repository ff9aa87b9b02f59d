"""The answers to attention's quadratic cost against the paper's full attention: block-wise (online softmax)
equal to full attention, a window wider than the sequence equal to full attention, Linformer with k = n and
identity projections equal to full attention; each a TransformerConfig option defaulting to the paper's."""
import pytest
import torch

from model.nn.attention import MultiHeadAttention, scaled_dot_product_attention
from model.nn.config import TransformerConfig
from model.nn.efficient import blockwise_attention
from model.nn.masks import causal_mask, longformer_mask, window_mask
from model.nn.positions import alibi_bias
from model.nn.transformer import Transformer


def _qkv(n, seed=0, B=2, H=3, d=8, lq=None):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, lq or n, d, generator=g, dtype=torch.float64)
    return q, torch.randn(B, H, n, d, generator=g, dtype=torch.float64), torch.randn(B, H, n, 5, generator=g,
                                                                                     dtype=torch.float64)


@pytest.mark.parametrize("n", [1, 7, 33, 100])
@pytest.mark.parametrize("block", [1, 4, 16, 128])
@pytest.mark.parametrize("masking", ["none", "causal", "padding", "both"])
def test_blockwise_equals_full(n, block, masking):
    q, k, v = _qkv(n, seed=n + block)
    keep = torch.ones(2, n, dtype=torch.bool)
    keep[1, max(1, n // 2):] = False  # the second sentence is padded from its middle
    pad = keep[:, None, None, :]  # (B, 1, 1, n)
    mask = {"none": None, "causal": causal_mask(n), "padding": pad, "both": pad & causal_mask(n)}[masking]
    want, _ = scaled_dot_product_attention(q, k, v, mask)
    got = blockwise_attention(q, k, v, mask, block=block)
    assert (got - want).abs().max() < 1e-6
    if masking == "causal":  # the causal mask built block by block, never whole
        assert (blockwise_attention(q, k, v, block=block, is_causal=True) - want).abs().max() < 1e-6


def test_blockwise_with_alibi_and_queries_at_the_end():
    q, k, v = _qkv(20, lq=3)  # decoding: 3 new queries after 17 cached keys
    bias = alibi_bias(3, 3, 20).to(torch.float64)
    want, _ = scaled_dot_product_attention(q, k, v, causal_mask(3, 20), bias=bias)
    got = blockwise_attention(q, k, v, bias=bias, block=6, is_causal=True)
    assert (got - want).abs().max() < 1e-6


def test_blockwise_fully_masked_rows_are_zero_and_bad_block_refused():
    q, k, v = _qkv(6)
    mask = torch.zeros(2, 1, 1, 6, dtype=torch.bool)
    assert blockwise_attention(q, k, v, mask, block=4).abs().max() == 0
    with pytest.raises(ValueError, match="block"):
        blockwise_attention(q, k, v, block=0)


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only"])
def test_blockwise_model_equals_full_model(arch):
    cfg = TransformerConfig(vocab_size=30, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=2,
                            dropout=0.0, max_len=40, architecture=arch)
    torch.manual_seed(0)
    full = Transformer(cfg).eval()
    block = Transformer(cfg.replace(attention_impl="blockwise", attn_block=3)).eval()
    block.load_state_dict(full.state_dict())
    src, tgt = torch.randint(1, 30, (2, 11)), torch.randint(1, 30, (2, 9))
    pad = torch.ones(2, 11, dtype=torch.bool)
    pad[0, 7:] = False
    with torch.no_grad():
        a = full(src, tgt, src_pad_mask=pad).logits
        b = block(src, tgt, src_pad_mask=pad).logits
    assert (a - b).abs().max() < 1e-5  # float32 through two layers


@pytest.mark.parametrize("n", [5, 12])
def test_window_at_least_n_equals_full(n):
    for causal in (False, True):
        mha = MultiHeadAttention(16, 4, window=n)
        torch.manual_seed(1)
        full = MultiHeadAttention(16, 4)
        mha.load_state_dict(full.state_dict())
        x = torch.randn(2, n, 16)
        a = full(x, is_causal=causal, need_weights=True)
        b = mha(x, is_causal=causal, need_weights=True)
        assert (a[0] - b[0]).abs().max() < 1e-6 and (a[1] - b[1]).abs().max() < 1e-6


def test_global_tokens_see_and_are_seen():
    keep = longformer_mask(8, 8, window=2, global_tokens=1)
    assert keep[0].all() and keep[:, 0].all()  # the global token: its row and its column
    assert not keep[5, 2] and keep[5, 4] and keep[5, 6]
    assert torch.equal(longformer_mask(8, 8, 2), window_mask(8, 8, 2))


@pytest.mark.parametrize("n", [4, 9])
def test_linformer_k_n_identity_equals_full(n):
    torch.manual_seed(2)
    full = MultiHeadAttention(16, 4)
    lin = MultiHeadAttention(16, 4, impl="linformer", linformer=(n, n))
    state = {**full.state_dict(), "lin_e": torch.eye(n), "lin_f": torch.eye(n)}
    lin.load_state_dict(state)
    x = torch.randn(2, n, 16)
    assert (full(x)[0] - lin(x)[0]).abs().max() < 1e-6
    with pytest.raises(ValueError, match="causal"):
        lin(x, is_causal=True)


def test_linformer_model_only_projects_the_encoder():
    cfg = TransformerConfig(vocab_size=30, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1,
                            dropout=0.0, max_len=20, attention_impl="linformer", linformer_k=6)
    model = Transformer(cfg)
    names = [k for k in model.state_dict() if "lin_" in k]
    assert names and all(k.startswith("encoder.") for k in names)
    from model.nn.config import parameter_formula
    assert parameter_formula(cfg) == model.num_parameters()
    out = model(torch.randint(1, 30, (2, 13)), torch.randint(1, 30, (2, 5))).logits
    assert out.shape == (2, 5, 30)


def test_defaults_are_the_papers_and_options_are_validated():
    cfg = TransformerConfig()
    assert cfg.attention_impl == "full" and cfg.global_tokens == 0 and cfg.linformer_k is None
    assert "attention_impl" not in cfg.differences_from_paper()
    assert cfg.replace(attention_impl="blockwise").differences_from_paper() == {"attention_impl": "blockwise",
                                                                                 "attn_block": 64}
    bad = [(dict(attention_impl="flash"), "attention_impl"), (dict(attn_block=0), "attn_block"),
           (dict(global_tokens=2), "window"), (dict(global_tokens=-1, window=4), "global_tokens"),
           (dict(attention_impl="linformer"), "linformer_k"),
           (dict(attention_impl="linformer", linformer_k=600), "linformer_k"), (dict(linformer_k=8), "linformer_k"),
           (dict(attention_impl="linformer", linformer_k=8, architecture="decoder-only"), "no encoder")]
    for changes, named in bad:
        with pytest.raises(ValueError, match=named):
            TransformerConfig(**changes)


@pytest.mark.parametrize("n,window,global_tokens", [(10, 3, 0), (10, 3, 2), (50, 4, 1), (64, 64, 0), (7, 20, 3),
                                                    (16, 2, 8), (5, 1, 9)])
def test_banded_attention_equals_the_masked_full_attention(n, window, global_tokens):
    from model.nn.efficient import banded_attention
    q, k, v = _qkv(n, seed=n)
    want, _ = scaled_dot_product_attention(q, k, v, longformer_mask(n, n, window, global_tokens))
    assert (banded_attention(q, k, v, window, global_tokens) - want).abs().max() < 1e-6
