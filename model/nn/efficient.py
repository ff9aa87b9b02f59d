"""Answers since the paper to attention's quadratic cost, each beside the paper's formula it replaces.

Full attention builds the (n x n) scores of every query against every key: O(n^2 d) time and O(n^2) memory
per head. Three answers, each a `TransformerConfig` option whose default is the paper's full attention:

- block-wise exact attention (FlashAttention's idea, Dao et al. 2022): the keys a block at a time, with an
  online softmax (a running maximum and a running sum per query, the output rescaled as the maximum grows).
  The output is the same as full attention; the largest temporary is (n x block), not (n x n).
  `attention_impl="blockwise"`, `attn_block`.
- sliding window + global tokens (Longformer, Beltagy et al. 2020): each query sees keys fewer than `window`
  positions away, and the first `global_tokens` positions see and are seen by every position.
  `window` + `global_tokens` (masks.longformer_mask). Drawn here as a mask on the full scores, so it shows
  *which* scores are kept; a real implementation computes only those (O(n w)).
- low-rank keys and values (Linformer, Wang et al. 2020): the n keys and values projected to k rows by learned
  (k x n) matrices E and F before attention, so the scores are (n x k). `attention_impl="linformer"`,
  `linformer_k`. Non-causal (encoder) self-attention only: a projection mixes every position, the future too.
"""
from __future__ import annotations

import math

import torch


def blockwise_attention(q, k, v, mask=None, bias=None, *, block: int = 64, is_causal: bool = False):
    """softmax(Q K^T / sqrt(d_k) + bias) V with masked keys excluded, computed `block` keys at a time.

    q: (..., Lq, d_k), k: (..., Lk, d_k), v: (..., Lk, d_v); mask and bias broadcastable to (..., Lq, Lk)
    (sliced per block, never expanded whole); is_causal: query i sees keys up to (Lk - Lq) + i, built per
    block. A query whose keys are all masked gets zeros, as in attention.masked_softmax.

    Per query row it keeps the running maximum m, the running sum l of exp(s - m) and the running output
    acc = sum exp(s - m) v; a new block with a larger maximum m' rescales l and acc by exp(m - m')."""
    if block < 1:
        raise ValueError(f"block must be a positive integer, got {block}")
    Lq, Lk = q.size(-2), k.size(-2)
    scale = 1.0 / math.sqrt(q.size(-1))
    lead = q.shape[:-2]
    m = q.new_full((*lead, Lq, 1), float("-inf"))  # running maximum per query
    l = q.new_zeros((*lead, Lq, 1))  # running sum of exp(s - m)
    acc = q.new_zeros((*lead, Lq, v.size(-1)))  # running sum of exp(s - m) v
    q_pos = torch.arange(Lk - Lq, Lk, device=q.device)[:, None]  # (Lq, 1): the queries sit at the end of the keys
    for start in range(0, Lk, block):
        stop = min(start + block, Lk)
        s = (q @ k[..., start:stop, :].transpose(-2, -1)) * scale  # (..., Lq, b): the largest temporary
        if bias is not None:
            s = s + bias[..., start:stop]
        keep = None
        if mask is not None:
            keep = mask[..., start:stop]
        if is_causal:
            causal = torch.arange(start, stop, device=q.device)[None, :] <= q_pos  # (Lq, b)
            keep = causal if keep is None else keep & causal
        if keep is not None:
            s = s.masked_fill(~keep, float("-inf"))
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))  # (..., Lq, 1)
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # all masked so far: no shift
        p = torch.exp(s - safe)  # (..., Lq, b); masked keys give exp(-inf) = 0
        rescale = torch.exp(m - safe)  # (..., Lq, 1); 0 where nothing was seen before
        l = l * rescale + p.sum(-1, keepdim=True)
        acc = acc * rescale + p @ v[..., start:stop, :]
        m = m_new
    return torch.where(l > 0, acc / l.clamp_min(torch.finfo(l.dtype).tiny), torch.zeros_like(acc))


def linformer_project(k, v, e, f, key_mask=None):
    """Linformer: keys and values (..., n, d) projected to (..., k_rows, d) by E and F (k_rows, max_len),
    whose first n columns are used. Padding keys (key_mask False, broadcastable to (..., 1, n)) are zeroed
    first so they add nothing to the projected rows."""
    n = k.size(-2)
    if n > e.size(-1):
        raise ValueError(f"Linformer's projections cover {e.size(-1)} positions; the sequence has {n}")
    if key_mask is not None:
        keep = key_mask[..., -1:, :].transpose(-2, -1).to(k.dtype)  # (..., n, 1)
        k, v = k * keep, v * keep
    return e[:, :n] @ k, f[:, :n] @ v  # (..., k_rows, d_k), (..., k_rows, d_v)


def linformer_init(k_rows: int, max_len: int) -> torch.Tensor:
    """A (k_rows, max_len) projection, normal with std 1 / sqrt(k_rows), as in the Linformer paper's code."""
    return torch.randn(k_rows, max_len) / math.sqrt(k_rows)


def banded_attention(q, k, v, window: int, global_tokens: int = 0):
    """Full attention under masks.longformer_mask(n, n, window, global_tokens), computing only the kept scores:
    the queries `window` at a time, each block against its neighbouring keys (at most 3 window - 2 of them) and the
    global keys; the global queries against every key. The largest temporary is (window x 3 window) per head, so
    memory grows with n w, not n^2. q, k: (..., n, d_k), v: (..., n, d_v); self-attention (Lq = Lk)."""
    n, w, g = q.size(-2), window, min(global_tokens, q.size(-2))
    scale = 1.0 / math.sqrt(q.size(-1))
    out = q.new_zeros((*q.shape[:-1], v.size(-1)))  # (..., n, d_v)
    for start in range(0, n, w):
        stop = min(start + w, n)
        lo = max(g, start - w + 1)  # the band's keys beyond the global ones (none when the globals cover it)
        hi = max(lo, min(n, stop + w - 1))
        cols = torch.cat([torch.arange(g), torch.arange(lo, hi)]) if g else torch.arange(lo, hi)
        keep = _band_keep(start, stop, cols, w, g)  # (b, c): longformer_mask's cells, without the (n x n) mask
        s = (q[..., start:stop, :] @ k[..., cols, :].transpose(-2, -1)) * scale  # (..., b, c)
        p = torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1)  # (..., b, c); each row keeps itself
        out[..., start:stop, :] = p @ v[..., cols, :]
    if g:  # global queries see every key
        s = (q[..., :g, :] @ k.transpose(-2, -1)) * scale  # (..., g, n)
        out[..., :g, :] = torch.softmax(s, dim=-1) @ v
    return out


def _band_keep(start: int, stop: int, cols: torch.Tensor, window: int, global_tokens: int) -> torch.Tensor:
    """longformer_mask's rows start..stop-1 at the columns `cols`, built for those cells only."""
    rows = torch.arange(start, stop)[:, None]  # (b, 1)
    return ((rows - cols[None, :]).abs() < window) | (cols[None, :] < global_tokens) | (rows < global_tokens)
