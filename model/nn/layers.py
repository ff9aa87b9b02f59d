"""Building blocks in the paper's order: embeddings + positional encoding (3.4, 3.5),
position-wise feed-forward (3.3), encoder and decoder layers (3.1). Since-the-paper options beside them:
RMSNorm instead of LayerNorm, gated feed-forward (SwiGLU, GeGLU)."""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from model.nn.attention import MultiHeadAttention
from model.nn.dropout import Dropout


def pe_frequencies(d_model: int) -> torch.Tensor:
    """(ceil(D/2),) float64 on the CPU: the angular frequency w_i = 1 / 10000^(2i/d_model) of the
    i-th (sin, cos) pair. The one formula behind the encoding and every experiment on it."""
    two_i = torch.arange(0, d_model, 2, device=torch.device("cpu"), dtype=torch.float64)
    return 1.0 / torch.pow(10000.0, two_i / d_model)


def positional_encoding(length: int, d_model: int, device=None, dtype=torch.float32,
                        layout: str = "interleaved") -> torch.Tensor:
    """PE(pos, 2i) = sin(pos * w_i), PE(pos, 2i+1) = cos(pos * w_i), w_i = 1 / 10000^(2i/d_model).
    Returns (length, d_model). Computed in float64 on the CPU (MPS has no float64), then cast to
    `dtype` and only then moved to `device` (default: torch's current default device).
    layout="halves" puts the same numbers as [all sines | all cosines] (Marian / opus-mt)."""
    device = torch.get_default_device() if device is None else torch.device(device)
    cpu = torch.device("cpu")
    pos = torch.arange(length, device=cpu, dtype=torch.float64)[:, None]  # (L, 1)
    angle = pos * pe_frequencies(d_model)[None, :]  # (L, ceil(D/2))
    pe = torch.zeros(length, d_model, device=cpu, dtype=torch.float64)
    if layout == "halves":
        half = (d_model + 1) // 2
        pe[:, :half] = torch.sin(angle)
        pe[:, half:] = torch.cos(angle[:, : d_model // 2])
    else:
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.to(dtype).to(device)  # cast on the CPU first: float64 never reaches the device


class Embedding(nn.Module):
    """Token embedding scaled by sqrt(d_model), plus positions, then dropout (section 3.4).
    Pretrained variants (config options): no scale (GPT-2, BERT), segment embeddings and a LayerNorm
    after the sum (BERT), sinusoids laid out in halves (Marian)."""

    def __init__(self, vocab_size, d_model, max_len, positional, dropout, token: nn.Embedding | None = None,
                 cfg=None):
        super().__init__()
        self.d_model, self.positional, self.max_len = d_model, positional, max_len
        self.scale = math.sqrt(d_model) if cfg is None or cfg.embed_scale else 1.0
        self.token = token if token is not None else nn.Embedding(vocab_size, d_model)
        if positional == "learned":
            self.position = nn.Embedding(max_len, d_model)
        elif positional in ("rotary", "alibi"):
            pass  # positions act inside attention (model/nn/positions.py): nothing is added here
        else:
            layout = cfg.pe_layout if cfg is not None else "interleaved"
            self.register_buffer("pe", positional_encoding(max_len, d_model, layout=layout), persistent=False)
        self.segment = nn.Embedding(cfg.segment_vocab, d_model) if cfg is not None and cfg.segment_vocab else None
        self.norm = make_norm(cfg, d_model) if cfg is not None and cfg.embed_norm else None
        self.drop = Dropout(dropout)
        self.use_positions = True  # the permutation experiment switches this off

    def positions(self, L: int, offset: int = 0) -> torch.Tensor:
        if offset < 0 or offset + L > self.max_len:
            # a clear error instead of a shape mismatch (sinusoidal) or, for the learned table on
            # CUDA, a device-side assert that breaks the whole process's CUDA context
            raise ValueError(f"positions {offset}..{offset + L - 1} exceed the model's max_len={self.max_len}")
        if self.positional in ("rotary", "alibi"):
            return None  # nothing to add: attention turns q and k (RoPE) or biases the scores (ALiBi)
        if self.positional == "learned":
            idx = torch.arange(offset, offset + L, device=self.position.weight.device)
            return self.position(idx)  # (L, D)
        return self.pe[offset: offset + L]  # (L, D)

    def forward(self, ids: torch.Tensor, offset: int = 0, segments: torch.Tensor | None = None) -> torch.Tensor:
        x = self.token(ids) * self.scale if self.scale != 1.0 else self.token(ids)  # (B, L, D)
        if self.use_positions:
            pe = self.positions(ids.size(1), offset)  # (L, D), or None for positions inside attention
            x = x + pe if pe is not None else x
        if self.segment is not None:  # BERT: every token belongs to segment 0 unless told otherwise
            x = x + self.segment(segments if segments is not None else torch.zeros_like(ids))
        if self.norm is not None:
            x = self.norm(x)
        return self.drop(x)


def activation(name: str):
    """The FFN's non-linearity: relu (the paper), gelu (BERT), gelu_tanh (GPT-2's gelu_new), swish (Marian)."""
    if name == "relu":
        return torch.relu
    if name == "gelu":
        return torch.nn.functional.gelu
    if name == "gelu_tanh":
        return lambda x: torch.nn.functional.gelu(x, approximate="tanh")
    if name == "swish":
        return torch.nn.functional.silu
    raise ValueError(f"unknown activation {name!r}")


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, applied at every position alike (another activation than
    max(0, ·) for pretrained models that use one).

    gated (Shazeer 2020; Llama, Mistral, Qwen2): FFN(x) = (act(x W_gate) ⊙ x W1) W2, three matrices: the gate,
    W1 "up" and W2 "down". act = swish is SwiGLU, gelu is GeGLU. bias=False drops b1, b2 (and the gate's)."""

    def __init__(self, d_model: int, d_ff: int, act: str = "relu", gated: bool = False, bias: bool = True):
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=bias) if gated else None
        self.w1 = nn.Linear(d_model, d_ff, bias=bias)
        self.w2 = nn.Linear(d_ff, d_model, bias=bias)
        self.act = activation(act)

    def forward(self, x):
        if self.gate is None:
            return self.w2(self.act(self.w1(x)))  # (B, L, D)
        return self.w2(self.act(self.gate(x)) * self.w1(x))  # (B, L, d_ff) gated, then (B, L, D)


class RMSNorm(nn.Module):
    """RMSNorm(x) = x / sqrt(mean(x²) + eps) * g (Zhang & Sennrich 2019; Llama): LayerNorm without subtracting
    the mean and without a bias."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)  # (B, L, 1)
        return self.weight * (x * rms)  # (B, L, D)


def make_norm(cfg, d_model: int) -> nn.Module:
    """The normalisation a config names: LayerNorm (the paper) or RMSNorm, with cfg.norm_eps."""
    if cfg is not None and cfg.norm == "rmsnorm":
        return RMSNorm(d_model, eps=cfg.norm_eps)
    return nn.LayerNorm(d_model, eps=cfg.norm_eps if cfg is not None else 1e-5)


def feed_forward(cfg) -> FeedForward:
    return FeedForward(cfg.d_model, cfg.d_ff, cfg.activation, gated=cfg.ffn_gated, bias=cfg.ffn_bias)


def self_attention(cfg, encoder: bool = False) -> MultiHeadAttention:
    """A layer's self-attention with every option the config names (Linformer's projections: the encoder's only)."""
    linformer = cfg.attention_impl == "linformer" and encoder
    return MultiHeadAttention(cfg.d_model, cfg.n_heads, self_attention=True, d_k=cfg.d_k, d_v=cfg.d_v,
                              n_kv_heads=cfg.n_kv_heads, qkv_bias=cfg.qkv_bias, out_bias=cfg.attn_out_bias,
                              positional=cfg.positional, rope_theta=cfg.rope_theta, rotary_dim=cfg.rotary_dim,
                              window=cfg.window, global_tokens=cfg.global_tokens,
                              impl="full" if cfg.attention_impl == "linformer" and not encoder else cfg.attention_impl,
                              block=cfg.attn_block, linformer=(cfg.linformer_k, cfg.max_len) if linformer else None)


def cross_attention(cfg) -> MultiHeadAttention:
    """The decoder's attention over the encoder's output (no positions inside, no window)."""
    return MultiHeadAttention(cfg.d_model, cfg.n_heads, self_attention=False, d_k=cfg.d_k, d_v=cfg.d_v,
                              n_kv_heads=cfg.n_kv_heads, qkv_bias=cfg.qkv_bias, out_bias=cfg.attn_out_bias)


class Residual(nn.Module):
    """Post-LN (paper): LN(x + Dropout(f(x))).  Pre-LN: x + Dropout(f(LN(x))). LN is RMSNorm where the config
    says so (cfg given)."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool, eps: float = 1e-5, cfg=None):
        super().__init__()
        self.norm = make_norm(cfg, d_model) if cfg is not None else nn.LayerNorm(d_model, eps=eps)
        self.drop = Dropout(dropout)
        self.norm_first = norm_first

    def pre(self, x):
        return self.norm(x) if self.norm_first else x

    def post(self, x, y):
        return x + self.drop(y) if self.norm_first else self.norm(x + self.drop(y))


class EncoderLayer(nn.Module):
    """Self-attention over the source, then the feed-forward network."""

    def __init__(self, cfg):
        super().__init__()
        self.self_attn = self_attention(cfg, encoder=True)
        self.ffn = feed_forward(cfg)
        self.res1 = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg=cfg)
        self.res2 = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg=cfg)

    def forward(self, x, mask=None, need_weights=False, need_details=False):
        y, w, d = self.self_attn(self.res1.pre(x), mask=mask, need_weights=need_weights, need_details=need_details)
        x = self.res1.post(x, y)
        x = self.res2.post(x, self.ffn(self.res2.pre(x)))
        return x, w, d


class DecoderLayer(nn.Module):
    """Masked self-attention, then (encoder-decoder only) cross-attention, then the FFN."""

    def __init__(self, cfg, cross: bool = True):
        super().__init__()
        self.self_attn = self_attention(cfg)
        self.cross_attn = cross_attention(cfg) if cross else None
        self.ffn = feed_forward(cfg)
        self.res1 = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg=cfg)
        self.res2 = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg=cfg) if cross else None
        self.res3 = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg=cfg)

    def forward(self, x, memory=None, self_mask=None, cross_mask=None, need_weights=False,
                need_details=False, cache: dict | None = None):
        c_self = cache.setdefault("self", {}) if cache is not None else None
        c_cross = cache.setdefault("cross", {}) if cache is not None else None
        y, w_self, d_self = self.self_attn(self.res1.pre(x), mask=self_mask, is_causal=True,
                                           need_weights=need_weights, need_details=need_details, kv_cache=c_self)
        x = self.res1.post(x, y)
        w_cross = d_cross = None
        if self.cross_attn is not None:
            y, w_cross, d_cross = self.cross_attn(self.res2.pre(x), memory, mask=cross_mask,
                                                  need_weights=need_weights, need_details=need_details,
                                                  kv_cache=c_cross)
            x = self.res2.post(x, y)
        x = self.res3.post(x, self.ffn(self.res3.pre(x)))
        return x, (w_self, d_self), (w_cross, d_cross)
