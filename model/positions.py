"""Experiments on positional encoding (section 3.5), computed with the model's own code.

- a shift by k positions is a rotation of every (sin, cos) pair of the sinusoidal encoding;
- PE(p) . PE(q) depends only on the distance q - p;
- a learned position table has max_len rows and nothing beyond;
- without positions, self-attention is permutation-equivariant: shuffling the words only
  shuffles the outputs. With positions it is not.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from .config import TransformerConfig
from .layers import positional_encoding
from .transformer import Intermediates, Transformer


def frequencies(d_model: int) -> torch.Tensor:
    """(ceil(D/2),) angular frequency w_i = 1 / 10000^(2i/D) of the i-th (sin, cos) pair."""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return 1.0 / torch.pow(10000.0, two_i / d_model)


def wavelength(i: int, d_model: int) -> float:
    """Positions per full turn of pair i: 2 pi * 10000^(2i/D), from 2 pi up to 10000 * 2 pi."""
    return 2 * math.pi * 10000.0 ** (2 * i / d_model)


def rotation_matrix(k: float, i: int, d_model: int) -> torch.Tensor:
    """(2, 2) M with M @ [sin(p w), cos(p w)] = [sin((p+k) w), cos((p+k) w)], w = w_i.
    It does not depend on p: a shift by k is the same rotation at every position."""
    w = float(frequencies(d_model)[i])
    c, s = math.cos(k * w), math.sin(k * w)
    return torch.tensor([[c, s], [-s, c]], dtype=torch.float64)


def shift_matrix(k: float, d_model: int) -> torch.Tensor:
    """(D, D) block-diagonal: one rotation per (sin, cos) pair. PE(p + k) = M_k @ PE(p)."""
    if d_model % 2:
        raise ValueError("d_model must be even for a full set of (sin, cos) pairs")
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        m[2 * i: 2 * i + 2, 2 * i: 2 * i + 2] = rotation_matrix(k, i, d_model)
    return m


def rotation_check(length: int, d_model: int, k: int, i: int | None = None) -> float:
    """max over positions p in [0, length) of |M_k PE(p) - PE(p + k)|, for pair i (or all pairs
    when i is None), using the model's positional_encoding in float64."""
    pe = positional_encoding(length + abs(k), d_model, dtype=torch.float64)  # (L+|k|, D)
    start = max(0, -k)
    base = pe[start: start + length]  # PE(p)
    shifted = pe[start + k: start + k + length]  # PE(p + k)
    if i is None:
        pred = base @ shift_matrix(k, d_model).T  # (L, D)
        return float((pred - shifted).abs().max())
    pred = base[:, 2 * i: 2 * i + 2] @ rotation_matrix(k, i, d_model).T  # (L, 2)
    return float((pred - shifted[:, 2 * i: 2 * i + 2]).abs().max())


def dot_by_distance(distances: torch.Tensor, d_model: int) -> torch.Tensor:
    """PE(p) . PE(p + delta) = sum_i cos(delta * w_i): a function of delta alone (even d_model)."""
    delta = torch.as_tensor(distances, dtype=torch.float64)[:, None]
    return torch.cos(delta * frequencies(d_model)[None, :]).sum(-1)


def cosine_similarity_matrix(table: torch.Tensor) -> torch.Tensor:
    """(L, D) -> (L, L) cosine similarity between every pair of position vectors."""
    t = table.to(torch.float64)
    t = t / t.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return t @ t.T


def learned_table(max_len: int, d_model: int, seed: int = 0) -> nn.Embedding:
    """A freshly initialised learned position table, exactly as model.layers.Embedding makes it
    for positional="learned": nn.Embedding(max_len, d_model), N(0, 1) entries."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Embedding(max_len, d_model)


def learned_lookup_error(table: nn.Embedding, position: int) -> str | None:
    """Look up one position; the error text if the table has no row for it, else None."""
    try:
        table(torch.tensor([position]))
    except (IndexError, RuntimeError) as e:
        return f"{type(e).__name__}: {e}"
    return None


# ----------------------------------------------------------------------------- permutation

def word_vocab(words: list[str]) -> dict[str, int]:
    """One id per distinct word, after the four special ids (pad, unk, bos, eos)."""
    vocab: dict[str, int] = {}
    for w in words:
        vocab.setdefault(w, 4 + len(vocab))
    return vocab


def seeded_encoder(vocab_size: int = 64, d_model: int = 64, n_heads: int = 4, n_layers: int = 2,
                   max_len: int = 64, positional: str = "sinusoidal", seed: int = 0) -> Transformer:
    """A small encoder-only model.Transformer, seeded, without dropout, in eval mode."""
    cfg = TransformerConfig(vocab_size=vocab_size, d_model=d_model, n_heads=n_heads, d_ff=4 * d_model,
                            n_encoder_layers=n_layers, n_decoder_layers=n_layers, dropout=0.0, max_len=max_len,
                            architecture="encoder-only", positional=positional)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Transformer(cfg)
    return model.eval()


@torch.no_grad()
def encode_with_attention(model: Transformer, ids: list[int], positions: bool):
    """Run the encoder on one sentence. Returns (output (L, D), attention (layers, H, L, L))."""
    model.set_positional(positions)
    try:
        rec = Intermediates()
        out = model.encode(torch.tensor([ids], device=model.device), None, rec)  # (1, L, D)
    finally:
        model.set_positional(True)
    return out[0], rec.stack("encoder_self")[:, 0]  # (L, D), (layers, H, L, L)


def permutation_experiment(model: Transformer, ids: list[int], perm: list[int]) -> dict:
    """Feed the sentence in its order and permuted (x'[j] = x[perm[j]]), with and without
    positional encoding. Un-permute and compare: without positions the permuted run is exactly
    the original run reordered (difference ~ float rounding); with positions it is not.

    Returns {False|True: {"out": (L,D), "out_perm": (L,D), "attn": (layers,H,L,L),
    "attn_perm": ..., "out_diff": float, "attn_diff": float}} keyed by 'positions used'."""
    if sorted(perm) != list(range(len(ids))):
        raise ValueError("perm must be a permutation of range(len(ids))")
    p = torch.tensor(perm, device=model.device)
    res = {}
    for use_pe in (False, True):
        out, attn = encode_with_attention(model, ids, use_pe)
        out_p, attn_p = encode_with_attention(model, [ids[j] for j in perm], use_pe)
        # If attention ignores order, the permuted run equals the original run permuted.
        expect_out = out[p]  # (L, D)
        expect_attn = attn[:, :, p][:, :, :, p]  # (layers, H, L, L): rows and columns reordered
        res[use_pe] = {
            "out": out, "out_perm": out_p, "attn": attn, "attn_perm": attn_p,
            "out_diff": float((out_p - expect_out).abs().max()),
            "attn_diff": float((attn_p - expect_attn).abs().max()),
        }
    return res
