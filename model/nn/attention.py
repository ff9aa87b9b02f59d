"""Scaled dot-product attention (section 3.2.1) and multi-head attention (section 3.2.2).

Two paths give the same numbers:
- `scaled_dot_product_attention` is the textbook formula softmax(QK^T / sqrt(d_k)) V, step by
  step, and returns the weights (and, on request, the pre-softmax scores);
- `MultiHeadAttention` calls torch's fused kernel when nobody asked for the weights.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from model.nn.efficient import blockwise_attention, linformer_init, linformer_project
from model.nn.masks import causal_mask, combine, longformer_mask
from model.nn.positions import alibi_bias, apply_rotary, rotary_cos_sin


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """S = Q K^T / sqrt(d_k).   q: (..., Lq, d_k), k: (..., Lk, d_k) -> (..., Lq, Lk)."""
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Row-wise softmax with masked keys set to -inf first, so they get exactly 0 weight.
    torch.softmax subtracts each row's max, so huge scores (1e30) stay finite. A row whose
    keys are all masked has nothing to attend to: it gets all-zero weights instead of NaN."""
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.nan_to_num(0.0)  # (0/0 only on fully masked rows)
    return weights


def scaled_dot_product_attention(q, k, v, mask=None, return_scores: bool = False, bias=None):
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, the explicit path.

    q: (..., Lq, d_k), k: (..., Lk, d_k), v: (..., Lk, d_v); mask broadcastable to (..., Lq, Lk),
    True where a query may attend; bias (ALiBi) broadcastable to (..., Lq, Lk), added to the scaled scores.
    Returns (output (..., Lq, d_v), weights (..., Lq, Lk)) and the scaled scores (with the bias, before the
    mask) as a third element when return_scores is true."""
    scores = attention_scores(q, k)  # (..., Lq, Lk)
    if bias is not None:
        scores = scores + bias  # (..., Lq, Lk): a penalty growing with the distance
    weights = masked_softmax(scores, mask)  # (..., Lq, Lk), rows sum to 1
    out = weights @ v  # (..., Lq, d_v)
    return (out, weights, scores) if return_scores else (out, weights)


def fused_attention(q, k, v, mask=None, is_causal: bool = False, bias=None):
    """Same numbers as the explicit path through torch's fused kernel (no weights kept).
    Fully masked query rows are set to zero, as in `masked_softmax`. A bias goes in as a float mask, -inf
    where the boolean mask forbids (torch takes one or the other)."""
    attn_mask = mask
    if bias is not None:
        attn_mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))  # (..., Lq, Lk)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
    if mask is not None:
        out = out.masked_fill(~mask.any(-1, keepdim=True), 0.0)
    return out


@dataclass
class HeadDetails:
    """Per-head tensors of one attention call, for the app to show. All (B, H, L, ·), one per QUERY head
    (with grouped-query attention the shared keys and values are repeated for each query head)."""
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scores: torch.Tensor  # Q K^T / sqrt(d_k) (+ ALiBi's bias), before the mask and softmax


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    Self-attention projects Q, K and V with one fused (d_model -> 3 d_model) matmul;
    cross-attention projects Q from the decoder and K, V (one fused matmul) from the encoder.
    Each head has queries and keys of size d_k and values of size d_v (both d_model / h unless given,
    Table 3 rows A and B); W^O maps the h·d_v concatenated values back to d_model. With the paper's
    d_k = d_v = d_model / h the parameter count is 4 d_model^2 + 4 d_model.

    Options since the paper (defaults: the paper's attention):
    - n_kv_heads < n_heads: grouped-query attention (1: multi-query). Only n_kv_heads keys and values are
      projected (and cached); query head i reads key/value head i // (n_heads / n_kv_heads).
    - qkv_bias / out_bias: biases of W^Q, W^K, W^V and of W^O, each on (paper) or off (Llama; Qwen2 keeps q/k/v).
    - positional "rotary" (RoPE: q and k turned by their positions, base rope_theta, the first rotary_dim
      coordinates of each head) or "alibi" (a distance penalty on the scores); self-attention only.
    - window: each query sees only keys fewer than `window` positions away (with the causal mask: its last
      `window` keys, Mistral's sliding window); self-attention only. global_tokens: the first positions see and
      are seen by every position (Longformer).
    - impl "blockwise": the same output a `block` of keys at a time (model/nn/efficient.py) when no weights are
      asked for; "linformer" with linformer=(k, max_len): keys and values projected from n rows to k by learned
      E and F (non-causal self-attention only; the weights then are over the k projected rows)."""

    def __init__(self, d_model: int, n_heads: int, self_attention: bool = True,
                 d_k: int | None = None, d_v: int | None = None, *, n_kv_heads: int | None = None,
                 qkv_bias: bool = True, out_bias: bool = True, positional: str = "none",
                 rope_theta: float = 10000.0, rotary_dim: int | None = None, window: int | None = None,
                 global_tokens: int = 0, impl: str = "full", block: int = 64,
                 linformer: tuple[int, int] | None = None):
        super().__init__()
        if d_k is None or d_v is None:
            assert d_model % n_heads == 0
        self.d_model, self.n_heads = d_model, n_heads
        self.n_kv_heads = n_kv_heads if n_kv_heads is not None else n_heads
        assert n_heads % self.n_kv_heads == 0, "n_kv_heads must divide n_heads"
        self.d_k = d_k if d_k is not None else d_model // n_heads
        self.d_v = d_v if d_v is not None else d_model // n_heads
        self.d_head = self.d_k
        hk, hv = n_heads * self.d_k, n_heads * self.d_v
        gk, gv = self.n_kv_heads * self.d_k, self.n_kv_heads * self.d_v  # one key and value per key/value head
        self.self_attention = self_attention
        if self_attention:
            self.qkv = nn.Linear(d_model, hk + gk + gv, bias=qkv_bias)  # [W^Q | W^K | W^V] side by side
        else:
            self.q = nn.Linear(d_model, hk, bias=qkv_bias)
            self.kv = nn.Linear(d_model, gk + gv, bias=qkv_bias)
        self.out = nn.Linear(hv, d_model, bias=out_bias)  # W^O: (h d_v) -> d_model
        # Positions inside attention and the sliding window concern a sequence attending to itself.
        self.positional = positional if self_attention else "none"
        self.rotary_dim = (rotary_dim or self.d_k) if self.positional == "rotary" else 0
        self.rope_theta = rope_theta
        self.window = window if self_attention else None
        self.global_tokens = global_tokens
        self.impl, self.block = impl, block
        if impl == "linformer":
            assert self_attention and linformer is not None, "Linformer projects a self-attention's keys and values"
            self.lin_e = nn.Parameter(linformer_init(*linformer))  # E: (k, max_len), for the keys
            self.lin_f = nn.Parameter(linformer_init(*linformer))  # F: (k, max_len), for the values
        self.use_positions = True  # the permutation experiment switches this off

    def _split(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        B, L, width = x.shape
        return x.view(B, L, heads, width // heads).transpose(1, 2)  # (B, heads, L, d_k or d_v)

    def project(self, x: torch.Tensor, memory: torch.Tensor | None = None):
        """Queries from x; keys and values from x (self) or from memory (cross).
        Returns q (B, H, Lq, d_k), k (B, H_kv, Lk, d_k), v (B, H_kv, Lk, d_v)."""
        hk = self.n_heads * self.d_k
        gk, gv = self.n_kv_heads * self.d_k, self.n_kv_heads * self.d_v
        if self.self_attention:
            q, k, v = self.qkv(x).split((hk, gk, gv), dim=-1)  # (B, L, h d_k), (B, L, h_kv d_k), (B, L, h_kv d_v)
        else:
            q = self.q(x)  # (B, Lq, h d_k)
            k, v = self.kv(memory).split((gk, gv), dim=-1)  # (B, Lk, h_kv d_k), (B, Lk, h_kv d_v)
        return self._split(q, self.n_heads), self._split(k, self.n_kv_heads), self._split(v, self.n_kv_heads)

    def rotate(self, q: torch.Tensor, k: torch.Tensor, start: int):
        """RoPE: q and k (the new tokens, at positions start, start+1, ...) turned by their positions."""
        cos, sin = rotary_cos_sin(start, q.size(2), self.rotary_dim, self.rope_theta, q.device, q.dtype)  # (L, r)
        return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)

    def repeat_kv(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H_kv, L, d) -> (B, H, L, d): each key/value head repeated for the query heads of its group."""
        groups = self.n_heads // self.n_kv_heads
        return x if groups == 1 else x.repeat_interleave(groups, dim=1)

    def forward(self, x, memory=None, mask=None, *, is_causal=False, need_weights=False,
                need_details=False, kv_cache: dict | None = None):
        """x: (B, Lq, D); memory: (B, Lk, D) for cross-attention. Returns (out (B, Lq, D),
        weights (B, H, Lq, Lk) or None, HeadDetails or None).

        kv_cache (decoding one token at a time): for self-attention, past keys and values are
        appended (n_kv_heads of them, already turned by RoPE); for cross-attention the projected memory
        is computed once and reused."""
        if kv_cache is not None and not self.self_attention and "k" in kv_cache:
            q = self._split(self.q(x), self.n_heads)
            k, v = kv_cache["k"], kv_cache["v"]
        else:
            q, k, v = self.project(x, memory)  # (B, H, Lq, d_k), (B, H_kv, L, d_k), (B, H_kv, L, d_v)
            past = kv_cache["k"].size(2) if kv_cache is not None and "k" in kv_cache else 0
            if self.rotary_dim and self.use_positions:
                q, k = self.rotate(q, k, past)
            if kv_cache is not None:
                if self.self_attention and past:
                    k = torch.cat([kv_cache["k"], k], dim=2)  # (B, H_kv, L_past + Lq, d_k)
                    v = torch.cat([kv_cache["v"], v], dim=2)
                kv_cache["k"], kv_cache["v"] = k, v
        Lq, Lk = q.size(2), k.size(2)
        bias = None
        if self.positional == "alibi" and self.use_positions:
            bias = alibi_bias(self.n_heads, Lq, Lk, device=q.device).to(q.dtype)  # (H, Lq, Lk)
        if self.window is not None:
            mask = combine(mask, longformer_mask(Lq, Lk, self.window, self.global_tokens, device=q.device))
        if is_causal and (mask is not None or bias is not None or Lq != Lk or need_weights or need_details):
            # new queries sit at the end of the key sequence: query i sees keys up to Lk-Lq+i
            causal = causal_mask(Lq, Lk, device=q.device)  # (Lq, Lk)
            mask = causal if mask is None else (mask & causal)
            is_causal = False
        k, v = self.repeat_kv(k), self.repeat_kv(v)  # (B, H, Lk, d_k), (B, H, Lk, d_v)
        if self.impl == "linformer":
            if is_causal or bias is not None:
                raise ValueError("Linformer's projections mix every position: no causal mask, no ALiBi")
            k, v = linformer_project(k, v, self.lin_e, self.lin_f, mask)  # (B, H, k, d_k), (B, H, k, d_v)
            mask = None  # padding keys were zeroed before the projection
        if need_weights or need_details:
            o, w, s = scaled_dot_product_attention(q, k, v, mask, return_scores=True, bias=bias)
            details = HeadDetails(q, k, v, s) if need_details else None
        elif self.impl == "blockwise":
            o, w, details = blockwise_attention(q, k, v, mask, bias, block=self.block, is_causal=is_causal), None, None
        else:
            o, w, details = fused_attention(q, k, v, mask, is_causal=is_causal, bias=bias), None, None
        B, H, Lq, dh = o.shape
        o = o.transpose(1, 2).reshape(B, Lq, H * dh)  # concat heads: (B, Lq, h d_v)
        return self.out(o), w, details
