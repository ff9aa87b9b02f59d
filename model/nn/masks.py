"""Masks and padding. One convention everywhere: a boolean mask is True where a query MAY attend
to a key (the same convention as torch.nn.functional.scaled_dot_product_attention)."""
from __future__ import annotations

from typing import Sequence

import torch


def causal_mask(n_queries: int, n_keys: int | None = None, device=None) -> torch.Tensor:
    """(n, m) True where query i may attend key j; square (n, n) lower-triangular when n_keys is
    None. The queries sit at the END of the key sequence (decoding with a KV cache: the new
    queries come after the cached keys), so query i sees keys 0 .. (m - n) + i."""
    m = n_queries if n_keys is None else n_keys
    return torch.ones(n_queries, m, dtype=torch.bool, device=device).tril(m - n_queries)


def window_mask(n_queries: int, n_keys: int, window: int, device=None) -> torch.Tensor:
    """(n, m) True where key j lies fewer than `window` positions from query i: |pos_i - j| < window, the
    queries at the END of the keys as in causal_mask. With the causal mask it leaves each query its last
    `window` keys, itself included (Mistral's sliding window); alone (an encoder) window - 1 on either side."""
    q_pos = torch.arange(n_keys - n_queries, n_keys, device=device)[:, None]  # (n, 1)
    k_pos = torch.arange(n_keys, device=device)[None, :]  # (1, m)
    return (q_pos - k_pos).abs() < window  # (n, m)


def longformer_mask(n_queries: int, n_keys: int, window: int, global_tokens: int = 0, device=None) -> torch.Tensor:
    """window_mask, plus Longformer's global tokens: the first `global_tokens` positions attend to every key and
    every query attends to them. With global_tokens = 0 it is window_mask."""
    keep = window_mask(n_queries, n_keys, window, device)  # (n, m)
    if global_tokens:
        q_pos = torch.arange(n_keys - n_queries, n_keys, device=device)[:, None]  # (n, 1)
        k_pos = torch.arange(n_keys, device=device)[None, :]  # (1, m)
        keep = keep | (q_pos < global_tokens) | (k_pos < global_tokens)
    return keep


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, L) token ids -> (B, 1, 1, L): True for real tokens, False for padding keys."""
    return (ids != pad_id)[:, None, None, :]


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad sequences of ids to the longest one. Returns (ids (B, L) long, keep (B, L) bool,
    True for real tokens), both on the CPU: move them to the model's device once."""
    if not seqs:
        raise ValueError("pad_batch needs at least one sequence")
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), pad_id, dtype=torch.long)  # (B, L)
    keep = torch.zeros(len(seqs), L, dtype=torch.bool)  # (B, L)
    for b, s in enumerate(seqs):
        ids[b, : len(s)] = torch.tensor(list(s), dtype=torch.long)
        keep[b, : len(s)] = True
    return ids, keep


def combine(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of broadcastable keep-masks; None means 'no constraint'."""
    out = None
    for m in masks:
        if m is None:
            continue
        out = m if out is None else (out & m)
    return out


def as_key_mask(mask: torch.Tensor | None) -> torch.Tensor | None:
    """Accept a (B, L) key mask (True = real token), a 3-D (B, Lq | 1, L) mask, or an already
    broadcastable 4-D mask. A 3-D mask gets its head axis here: left as it is, it would broadcast
    against (B, H, Lq, Lk) with its batch axis on the head axis (silently wrong when B == H)."""
    if mask is None:
        return None
    if mask.dim() == 2:
        return mask[:, None, None, :].bool()
    if mask.dim() == 3:
        return mask[:, None].bool()  # (B, 1, Lq | 1, Lk)
    return mask.bool()
