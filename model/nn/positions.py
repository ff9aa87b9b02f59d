"""Positions inside attention: the two answers since the paper to "where is each token?" that replace the
sinusoids added to the embeddings (section 3.5). Both act on the attention scores, so a score depends on
how far apart a query and a key are, not on where the sentence starts.

- Rotary positions (RoPE, Su et al. 2021; Llama, Mistral, Qwen2): each query and key is turned by an angle
  proportional to its position, pair of coordinates by pair of coordinates, with the paper's geometric
  frequencies 1 / theta^(2i/d). A dot product of two turned vectors depends only on the difference of their
  angles: q_m · k_n is a function of m - n. Coordinates are paired as Hugging Face's "rotate_half" does
  (coordinate i with i + d/2), so Llama's stored weights need no permutation.
- ALiBi (Press et al. 2022): no angle, a penalty. Head h adds -slope_h * |i - j| to the score of query i and
  key j, with slopes 2^(-8/h'), 2^(-16/h'), ... one per head (h' the power of two at or below the heads)."""
from __future__ import annotations

import math

import torch


def rope_frequencies(dim: int, theta: float) -> torch.Tensor:
    """(dim/2,) float64 on the CPU: w_i = 1 / theta^(2i/dim), the sinusoids' frequencies with base theta."""
    two_i = torch.arange(0, dim, 2, dtype=torch.float64)
    return 1.0 / torch.pow(float(theta), two_i / dim)


def rotary_cos_sin(start: int, length: int, dim: int, theta: float, device=None, dtype=torch.float32):
    """cos and sin of the angles pos * w_i for positions start .. start+length-1, each (length, dim): the
    half-width angles repeated twice ([w_0..w_{d/2-1} | w_0..w_{d/2-1}]), the rotate_half layout.
    Computed in float64 on the CPU, cast, then moved (MPS has no float64)."""
    pos = torch.arange(start, start + length, dtype=torch.float64)[:, None]  # (L, 1)
    angle = pos * rope_frequencies(dim, theta)[None, :]  # (L, dim/2)
    angle = torch.cat([angle, angle], dim=-1)  # (L, dim)
    return angle.cos().to(dtype).to(device), angle.sin().to(dtype).to(device)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last axis: a quarter turn of every pair (i, i + d/2)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Turn each pair of coordinates of x (..., L, d) by its angle. cos, sin: (L, r) with r <= d even; only
    the first r coordinates turn (partial rotary, GPT-NeoX / Phi), the rest pass unchanged."""
    r = cos.size(-1)
    turned, rest = x[..., :r], x[..., r:]  # (..., L, r), (..., L, d - r)
    turned = turned * cos + rotate_half(turned) * sin  # (..., L, r)
    return torch.cat([turned, rest], dim=-1) if rest.size(-1) else turned


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """(n_heads,) float32: ALiBi's geometric slopes. For a power of two h: 2^(-8/h), 2^(-16/h), ..., 2^(-8);
    otherwise the slopes of the power of two below, then every other slope of the next power of two."""
    p = 2 ** math.floor(math.log2(n_heads))
    slopes = [2 ** (-8 * (i + 1) / p) for i in range(p)]
    slopes += [2 ** (-4 * (2 * i + 1) / p) for i in range(n_heads - p)]  # the odd ones of 2p heads
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(n_heads: int, n_queries: int, n_keys: int, device=None) -> torch.Tensor:
    """(H, Lq, Lk): -slope_h * |i - j|, added to the scores. The queries sit at the END of the keys (decoding
    with a KV cache), as in masks.causal_mask: query i is at position (Lk - Lq) + i."""
    q_pos = torch.arange(n_keys - n_queries, n_keys, device=device)[:, None]  # (Lq, 1)
    k_pos = torch.arange(n_keys, device=device)[None, :]  # (1, Lk)
    distance = (q_pos - k_pos).abs().float()  # (Lq, Lk)
    return -alibi_slopes(n_heads).to(device)[:, None, None] * distance  # (H, Lq, Lk)
