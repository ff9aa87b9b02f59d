"""Masks. One convention everywhere: a boolean mask is True where a query MAY attend to a key
(the same convention as torch.nn.functional.scaled_dot_product_attention)."""
from __future__ import annotations

import torch


def causal_mask(n: int, device=None) -> torch.Tensor:
    """(n, n) lower-triangular: position i sees keys 0..i and nothing after it."""
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, L) token ids -> (B, 1, 1, L): True for real tokens, False for padding keys."""
    return (ids != pad_id)[:, None, None, :]


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
