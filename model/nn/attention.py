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

from model.nn.linear import Linear
from model.nn.masks import causal_mask


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


def scaled_dot_product_attention(q, k, v, mask=None, return_scores: bool = False):
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, the explicit path.

    q: (..., Lq, d_k), k: (..., Lk, d_k), v: (..., Lk, d_v); mask broadcastable to (..., Lq, Lk),
    True where a query may attend. Returns (output (..., Lq, d_v), weights (..., Lq, Lk)) and the
    scaled scores as a third element when return_scores is true."""
    scores = attention_scores(q, k)  # (..., Lq, Lk)
    weights = masked_softmax(scores, mask)  # (..., Lq, Lk), rows sum to 1
    out = weights @ v  # (..., Lq, d_v)
    return (out, weights, scores) if return_scores else (out, weights)


def fused_attention(q, k, v, mask=None, is_causal: bool = False):
    """Same numbers as the explicit path through torch's fused kernel (no weights kept).
    Fully masked query rows are set to zero, as in `masked_softmax`."""
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
    if mask is not None:
        out = out.masked_fill(~mask.any(-1, keepdim=True), 0.0)
    return out


@dataclass
class HeadDetails:
    """Per-head tensors of one attention call, for the app to show. All (B, H, L, ·)."""
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scores: torch.Tensor  # Q K^T / sqrt(d_k), before the mask and softmax


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    Self-attention projects Q, K and V with one fused (d_model -> 3 d_model) matmul;
    cross-attention projects Q from the decoder and K, V (one fused matmul) from the encoder.
    Each head has queries and keys of size d_k and values of size d_v (both d_model / h unless given,
    Table 3 rows A and B); W^O maps the h·d_v concatenated values back to d_model. With the paper's
    d_k = d_v = d_model / h the parameter count is 4 d_model^2 + 4 d_model."""

    def __init__(self, d_model: int, n_heads: int, self_attention: bool = True,
                 d_k: int | None = None, d_v: int | None = None):
        super().__init__()
        if d_k is None or d_v is None:
            assert d_model % n_heads == 0
        self.d_model, self.n_heads = d_model, n_heads
        self.d_k = d_k if d_k is not None else d_model // n_heads
        self.d_v = d_v if d_v is not None else d_model // n_heads
        self.d_head = self.d_k
        hk, hv = n_heads * self.d_k, n_heads * self.d_v
        self.self_attention = self_attention
        if self_attention:
            self.qkv = Linear(d_model, 2 * hk + hv)  # [W^Q | W^K | W^V] side by side
        else:
            self.q = Linear(d_model, hk)
            self.kv = Linear(d_model, hk + hv)
        self.out = Linear(hv, d_model)  # W^O: (h d_v) -> d_model

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        B, L, width = x.shape
        return x.view(B, L, self.n_heads, width // self.n_heads).transpose(1, 2)  # (B, H, L, d_k or d_v)

    def project(self, x: torch.Tensor, memory: torch.Tensor | None = None):
        """Queries from x; keys and values from x (self) or from memory (cross)."""
        hk, hv = self.n_heads * self.d_k, self.n_heads * self.d_v
        if self.self_attention:
            q, k, v = self.qkv(x).split((hk, hk, hv), dim=-1)  # (B, L, h d_k) x 2, (B, L, h d_v)
        else:
            q = self.q(x)  # (B, Lq, h d_k)
            k, v = self.kv(memory).split((hk, hv), dim=-1)  # (B, Lk, h d_k), (B, Lk, h d_v)
        return self._split(q), self._split(k), self._split(v)  # (B, H, L, d_k / d_v)

    def forward(self, x, memory=None, mask=None, *, is_causal=False, need_weights=False,
                need_details=False, kv_cache: dict | None = None):
        """x: (B, Lq, D); memory: (B, Lk, D) for cross-attention. Returns (out (B, Lq, D),
        weights (B, H, Lq, Lk) or None, HeadDetails or None).

        kv_cache (decoding one token at a time): for self-attention, past keys and values are
        appended; for cross-attention the projected memory is computed once and reused."""
        if kv_cache is not None and not self.self_attention and "k" in kv_cache:
            q = self._split(self.q(x))
            k, v = kv_cache["k"], kv_cache["v"]
        else:
            q, k, v = self.project(x, memory)
            if kv_cache is not None:
                if self.self_attention and "k" in kv_cache:
                    k = torch.cat([kv_cache["k"], k], dim=2)  # (B, H, L_past + Lq, d_k)
                    v = torch.cat([kv_cache["v"], v], dim=2)
                kv_cache["k"], kv_cache["v"] = k, v
        Lq, Lk = q.size(2), k.size(2)
        if is_causal and (mask is not None or Lq != Lk or need_weights or need_details):
            # new queries sit at the end of the key sequence: query i sees keys up to Lk-Lq+i
            causal = causal_mask(Lq, Lk, device=q.device)  # (Lq, Lk)
            mask = causal if mask is None else (mask & causal)
            is_causal = False
        if need_weights or need_details:
            o, w, s = scaled_dot_product_attention(q, k, v, mask, return_scores=True)
            details = HeadDetails(q, k, v, s) if need_details else None
        else:
            o, w, details = fused_attention(q, k, v, mask, is_causal=is_causal), None, None
        B, H, Lq, dh = o.shape
        o = o.transpose(1, 2).reshape(B, Lq, H * dh)  # concat heads: (B, Lq, h d_v)
        return self.out(o), w, details
