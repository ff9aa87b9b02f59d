"""Experiments on positional encoding (section 3.5), computed with the model's own code.

- each dimension of the sinusoidal encoding is a wave, and PE(p) . PE(q) depends only on q - p;
- a shift by k positions is a rotation of every (sin, cos) pair;
- a learned position table has max_len rows and nothing beyond;
- sinusoidal neighbours are alike from the start, a fresh learned table is noise;
- without positions, self-attention is permutation-equivariant: shuffling the words only
  shuffles the outputs. With positions it is not.

Every function the positional page draws from returns numpy arrays and plain numbers.
"""
from __future__ import annotations

import copy
import functools
import math

import numpy as np
import torch
import torch.nn as nn

from model.nn.config import TransformerConfig
from model.nn.layers import pe_frequencies, positional_encoding
from model.nn.transformer import Intermediates, Transformer

SINUSOIDAL_LOOKUP_LIMIT = 200_000  # the page computes PE(p) for a looked-up p only below this
EXTRAPOLATION_MAX_D = 64  # the extrapolation figures use min(d_model, 64) dimensions
SIMILARITY_MAX_LEN = 128  # the similarity maps use the first min(length, 128) positions
NEIGHBOUR_DISTANCES = 8  # extrapolation: compare PE(p).PE(p+delta) for delta = 1..8


def encoding_table(length: int, d_model: int) -> np.ndarray:
    """(length, d_model) float64: the sinusoidal encoding the model adds to its embeddings."""
    return positional_encoding(length, d_model, dtype=torch.float64).numpy()


def wavelength(i: int, d_model: int) -> float:
    """Positions per full turn of pair i: 2 pi / w_i, from 2 pi up to 10000 * 2 pi."""
    return 2 * math.pi / float(pe_frequencies(d_model)[i])


def dimension_waves(length: int, d_model: int, dims) -> list[dict]:
    """One wave per distinct dimension (in the order given): {"dim", "kind" ("sin" for even, "cos"
    for odd dimensions), "pair" i = dim // 2, "wavelength" of that pair, "values" (length,)}."""
    pe = encoding_table(length, d_model)
    out = []
    for dim in dict.fromkeys(dims):
        if not 0 <= dim < d_model:
            raise ValueError(f"dimension {dim} outside 0..{d_model - 1}")
        out.append({"dim": dim, "kind": "sin" if dim % 2 == 0 else "cos", "pair": dim // 2,
                    "wavelength": wavelength(dim // 2, d_model), "values": pe[:, dim]})
    return out


def dot_profile(length: int, d_model: int, anchor: int) -> dict:
    """PE(p) . PE(q) for p = anchor and every q < length, measured and from the distance-only
    formula. Returns {"q", "measured", "formula" (length,), "gap": max |difference|,
    "peak": PE(p) . PE(p) = d_model / 2 (even d_model)}: row `anchor` of dot_profiles."""
    every = dot_profiles(length, d_model)
    measured, formula = every["measured"][anchor], every["formula"][anchor]
    return {"q": every["q"], "measured": measured, "formula": formula,
            "gap": float(np.abs(measured - formula).max()), "peak": every["peak"]}


def dot_profiles(length: int, d_model: int) -> dict:
    """dot_profile for every anchor at once (what the page sends the browser, one row per anchor p):
    {"measured", "formula" (length, length): row p is PE(p) . PE(q) for every q, measured and from the
    distance-only formula; "gap": max |difference| over every p and q; "peak": d_model / 2 (even d_model)}."""
    pe = positional_encoding(length, d_model, dtype=torch.float64)
    measured = (pe @ pe.T).numpy()
    by_distance = dot_by_distance(torch.arange(-(length - 1), length), d_model).numpy()  # q - p = -(L-1) ... L-1
    q = np.arange(length)
    formula = by_distance[q[None, :] - q[:, None] + length - 1]
    return {"q": q, "measured": measured, "formula": formula, "gap": float(np.abs(measured - formula).max()),
            "peak": d_model / 2}


def rotation_matrix(k: float, i: int, d_model: int) -> torch.Tensor:
    """(2, 2) M with M @ [sin(p w), cos(p w)] = [sin((p+k) w), cos((p+k) w)], w = w_i.
    It does not depend on p: a shift by k is the same rotation at every position."""
    w = float(pe_frequencies(d_model)[i])
    c, s = math.cos(k * w), math.sin(k * w)
    return torch.tensor([[c, s], [-s, c]], dtype=torch.float64)


def shift_matrix(k: float, d_model: int) -> torch.Tensor:
    """(D, D) block-diagonal: one rotation per (sin, cos) pair. PE(p + k) = M_k @ PE(p).
    Block i is rotation_matrix(k, i, d_model), entry for entry (the same math.cos / math.sin of the same
    k * w_i), placed all at once instead of one pair at a time."""
    if d_model % 2:
        raise ValueError("d_model must be even for a full set of (sin, cos) pairs")
    kw = [k * w for w in pe_frequencies(d_model).tolist()]
    c = torch.tensor([math.cos(a) for a in kw], dtype=torch.float64)
    s = torch.tensor([math.sin(a) for a in kw], dtype=torch.float64)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    even = torch.arange(0, d_model, 2)
    m[even, even], m[even, even + 1], m[even + 1, even], m[even + 1, even + 1] = c, s, -s, c
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


def rotation_demo(length: int, d_model: int, k: int, pair: int, highlight: int) -> dict:
    """Everything the page shows about "a shift by k is a rotation" for one (sin, cos) pair:
    {"omega": w_pair, "matrix": (2, 2) M_k, "error_pair" / "error_all": max |M_k PE(p) - PE(p+k)|
    over `length` positions for this pair / all pairs at once, "positions": how many points the circle
    shows (enough to include highlight + k), "sin" / "cos": that pair's values at those positions}."""
    span = max(length, highlight + k + 1) if k >= 0 else length
    pe = encoding_table(span, d_model)
    return {"omega": float(pe_frequencies(d_model)[pair]), "matrix": rotation_matrix(k, pair, d_model).numpy(),
            "error_pair": rotation_check(length, d_model, k, pair), "error_all": rotation_check(length, d_model, k),
            "positions": span, "sin": pe[:, 2 * pair], "cos": pe[:, 2 * pair + 1]}


def dot_by_distance(distances: torch.Tensor, d_model: int) -> torch.Tensor:
    """PE(p) . PE(p + delta) = sum_i cos(delta * w_i): a function of delta alone (even d_model)."""
    delta = torch.as_tensor(distances, dtype=torch.float64)[:, None]
    return torch.cos(delta * pe_frequencies(d_model)[None, :]).sum(-1)


def cosine_similarity_matrix(table: torch.Tensor) -> torch.Tensor:
    """(L, D) -> (L, L) cosine similarity between every pair of position vectors."""
    t = table.to(torch.float64)
    t = t / t.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return t @ t.T


def learned_table(max_len: int, d_model: int, seed: int = 0) -> nn.Embedding:
    """A freshly initialised learned position table, exactly as model.nn.layers.Embedding makes it
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


def extrapolation_demo(max_len: int, d_model: int, position: int, seed: int = 0) -> dict:
    """Sinusoidal against learned positions past the training length max_len.

    Returns {"d": the dimensions used (at most EXTRAPOLATION_MAX_D), "sinusoidal": (2 max_len, d)
    encoding, "learned": (max_len, d) fresh table, "position": the looked-up position,
    "sin_vector": PE(position) (d,) or None beyond SINUSOIDAL_LOOKUP_LIMIT, "sin_norm",
    "lookup_error": the learned table's error text for that row or None when the row exists,
    "neighbour_gap": max over p >= max_len and delta = 1..8 of |PE(p).PE(p+delta) - PE(0).PE(delta)|}."""
    d = min(d_model, EXTRAPOLATION_MAX_D)
    sinusoidal = encoding_table(2 * max_len, d)
    table = learned_table(max_len, d, seed=seed)
    sin_vector = (encoding_table(position + 1, d)[position] if position < SINUSOIDAL_LOOKUP_LIMIT else None)
    beyond = positional_encoding(3 * max_len + NEIGHBOUR_DISTANCES, d, dtype=torch.float64)
    inside = beyond[max_len: 2 * max_len]
    gaps = [float((torch.einsum("pd,pd->p", inside, beyond[max_len + s: 2 * max_len + s])
                   - float(beyond[0] @ beyond[s])).abs().max()) for s in range(1, NEIGHBOUR_DISTANCES + 1)]
    return {"d": d, "sinusoidal": sinusoidal, "learned": table.weight.detach().numpy(), "position": position,
            "sin_vector": sin_vector, "sin_norm": None if sin_vector is None else float(np.linalg.norm(sin_vector)),
            "lookup_error": learned_lookup_error(table, position), "neighbour_gap": max(gaps)}


def similarity_demo(length: int, d_model: int, seed: int = 0) -> dict:
    """Cosine similarity between every pair of the first min(length, SIMILARITY_MAX_LEN) positions,
    for the sinusoidal encoding and for a fresh learned table. Returns {"n", "sinusoidal", "learned"
    (n, n), "neighbours": mean over |p - q| = 1 (sinusoidal, learned), "all": mean over p != q}."""
    n = min(length, SIMILARITY_MAX_LEN)
    sims = {"sinusoidal": cosine_similarity_matrix(positional_encoding(n, d_model, dtype=torch.float64)),
            "learned": cosine_similarity_matrix(learned_table(n, d_model, seed=seed).weight.detach())}
    off = ~torch.eye(n, dtype=torch.bool)
    near = torch.ones(n, n, dtype=torch.bool).triu(1).tril(1)
    return {"n": n, **{name: sim.numpy() for name, sim in sims.items()},
            "neighbours": tuple(float(sim[near].mean()) for sim in sims.values()),
            "all": tuple(float(sim[off].mean()) for sim in sims.values())}


# ----------------------------------------------------------------------------- permutation

ORDERS = ("reverse", "shuffle", "rotate")
EXPERIMENT_MODEL = dict(vocab_size=64, d_model=64, n_heads=4, n_layers=2, max_len=64)  # seeded, seed 0
EQUIVARIANT_TOL = 1e-4  # outputs closer than this after un-shuffling count as "the same up to order"


def permutation(n: int, order: str, seed: int = 0) -> list[int]:
    """A new order of n words: "reverse", "rotate" (first word to the end) or a seeded "shuffle"."""
    if order == "reverse":
        return list(range(n))[::-1]
    if order == "rotate":
        return list(range(1, n)) + [0]
    if order == "shuffle":
        g = torch.Generator().manual_seed(seed)
        return torch.randperm(n, generator=g).tolist()
    raise ValueError(f"unknown order {order!r}; expected one of {ORDERS}")

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


@functools.lru_cache(maxsize=1)
def _experiment_encoder() -> Transformer:
    """seeded_encoder(**EXPERIMENT_MODEL, seed=0), built once (a copy costs a fifth of building it)."""
    return seeded_encoder(**EXPERIMENT_MODEL, seed=0)


def word_order_experiment(words: list[str], order: str, seed: int = 0) -> dict:
    """The permutation experiment on a typed sentence, with the seeded EXPERIMENT_MODEL encoder.

    Returns {"perm", "shuffled": the words in the new order, "unchanged": whether the new order is
    the old one, "layers", "heads", "d_model", "runs": permutation_experiment's result, each run
    with "same_order" added (outputs equal up to order within EQUIVARIANT_TOL)}."""
    if len(words) < 2:
        raise ValueError("the experiment needs at least two words")
    perm = permutation(len(words), order, seed)
    vocab = word_vocab(words)
    model = copy.deepcopy(_experiment_encoder())  # its own copy: the experiment switches positions off and on
    runs = permutation_experiment(model, [vocab[w] for w in words], perm)
    for run in runs.values():
        run["same_order"] = run["out_diff"] < EQUIVARIANT_TOL
    return {"perm": perm, "shuffled": [words[j] for j in perm], "unchanged": perm == list(range(len(words))),
            "layers": EXPERIMENT_MODEL["n_layers"], "heads": EXPERIMENT_MODEL["n_heads"],
            "d_model": EXPERIMENT_MODEL["d_model"], "runs": runs}


def unshuffled_attention(run: dict, perm: list[int], layer: int, head: int) -> dict:
    """One head's attention (layer, head counted from 0) on the original order, on the shuffled
    input, and the shuffled run's map put back in the original order (rows and columns).
    Returns {"original", "shuffled", "back": (L, L) arrays, "gap": max |back - original|}."""
    inv = np.argsort(perm)
    original = run["attn"][layer, head].cpu().numpy()
    shuffled = run["attn_perm"][layer, head].cpu().numpy()
    back = shuffled[inv][:, inv]
    return {"original": original, "shuffled": shuffled, "back": back, "gap": float(np.abs(back - original).max())}


def per_word_differences(run: dict, perm: list[int], floor: float = 0.0) -> np.ndarray:
    """(L,) for each word (original position): max over the output dimensions of |output of the
    shuffled run, put back in order - output of the original run|. `floor` raises exact zeros
    (e.g. to 1e-12 so they stay visible on a log axis)."""
    inv = torch.as_tensor(np.argsort(perm), device=run["out"].device)
    diff = (run["out_perm"][inv] - run["out"]).abs().max(-1).values.cpu().numpy().astype(float)
    return np.maximum(diff, floor)
