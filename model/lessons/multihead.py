"""Multi-head attention step by step, for the multi-head page: a seeded MultiHeadAttention run one
operation at a time with the shape of every tensor, its cost for every head count, and the page's demo
on a typed sentence. Plain PyTorch and numpy, no streamlit."""
from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass

import numpy as np
import torch

from model.messages import UserError
from model.nn.attention import MultiHeadAttention, attention_scores, masked_softmax
from model.nn.layers import positional_encoding


# ---------------------------------------------------------------- multi-head attention, step by step

@dataclass
class MHAStep:
    name: str  # short id, e.g. "scores"
    tensor: torch.Tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.tensor.shape)


def multihead_steps(mha: MultiHeadAttention, x: torch.Tensor) -> tuple[torch.Tensor, list[MHAStep]]:
    """Self-attention through `mha`'s own weights, one step at a time, keeping every tensor so the
    app can show its real shape. Mirrors MultiHeadAttention.forward (no mask); the output equals
    the module's output."""
    B, L, D = x.shape
    H, dh = mha.n_heads, mha.d_head
    steps = [MHAStep("input", x)]  # (B, L, D)
    qkv = mha.qkv(x)  # (B, L, 3D): one fused matmul for W^Q, W^K, W^V
    q, k, v = qkv.split(D, dim=-1)  # 3 x (B, L, D)
    steps += [MHAStep("q_proj", q), MHAStep("k_proj", k), MHAStep("v_proj", v)]
    qh = q.reshape(B, L, H, dh)  # (B, L, H, d_h)
    steps.append(MHAStep("split", qh))
    qh, kh, vh = (t.reshape(B, L, H, dh).transpose(1, 2) for t in (q, k, v))  # (B, H, L, d_h)
    steps.append(MHAStep("transpose", qh))
    scores = attention_scores(qh, kh)  # (B, H, L, L)
    steps.append(MHAStep("scores", scores))
    weights = masked_softmax(scores)  # (B, H, L, L)
    steps.append(MHAStep("weights", weights))
    heads = weights @ vh  # (B, H, L, d_h)
    steps.append(MHAStep("heads", heads))
    concat = heads.transpose(1, 2).reshape(B, L, D)  # (B, L, D)
    steps.append(MHAStep("concat", concat))
    out = mha.out(concat)  # (B, L, D): W^O mixes the heads
    steps.append(MHAStep("output", out))
    return out, steps


def step_tensor(steps: list[MHAStep], name: str) -> torch.Tensor:
    return next(s.tensor for s in steps if s.name == name)


def multihead_flops(steps: list[MHAStep], n_heads: int) -> dict[str, int]:
    """Matmul FLOPs (a multiply-add counts 2) read off the captured shapes, plus the number of
    softmax entries. Matmul work is the same for every H: H heads of width D/H do the work of one
    head of width D."""
    B, L, D = step_tensor(steps, "input").shape
    _, H, Lq, dh = step_tensor(steps, "transpose").shape
    Lk = step_tensor(steps, "scores").shape[-1]
    return {
        "projections": 2 * B * L * D * 3 * D,  # x (B, L, D) @ W_qkv (D, 3D)
        "scores": 2 * B * H * Lq * Lk * dh,  # (B, H, L, d_h) @ (B, H, d_h, L)
        "weighted_sum": 2 * B * H * Lq * Lk * dh,  # (B, H, L, L) @ (B, H, L, d_h)
        "output_projection": 2 * B * L * D * D,  # (B, L, D) @ W^O (D, D)
        "softmax_entries": B * H * Lq * Lk,
    }


def word_embeddings(words: list[str], d_model: int) -> torch.Tensor:
    """A simple deterministic embedding: each distinct word gets a unit-variance random vector
    seeded by a stable hash of its text (same word -> same vector, on every run). (L, D)."""
    rows = []
    for w in words:
        g = torch.Generator().manual_seed(zlib.crc32(w.encode("utf-8")))
        rows.append(torch.randn(d_model, generator=g))
    return torch.stack(rows) if rows else torch.zeros(0, d_model)


@functools.lru_cache(maxsize=4)
def seeded_weights(d_model: int, seed: int) -> dict[str, torch.Tensor]:
    """The parameters a MultiHeadAttention(d_model, ·) built right after torch.manual_seed(seed) gets, drawn
    once per (d_model, seed): their shapes and their draws do not depend on the number of heads. Only read."""
    with torch.random.fork_rng(devices=[]):  # leave the caller's global RNG alone
        torch.manual_seed(seed)
        return MultiHeadAttention(d_model, 1, self_attention=True).state_dict()


def seeded_mha(d_model: int, n_heads: int, seed: int = 0) -> MultiHeadAttention:
    """A MultiHeadAttention with seeded weights. The weight shapes do not depend on n_heads, so the
    same seed gives the very same parameters for every H: only the split into heads changes. Built without
    drawing its own weights (on the meta device), then given a copy of seeded_weights: the cost table builds one
    module per head count, and drawing 4·D² numbers each time was most of its time at large D."""
    return _with_weights(d_model, n_heads, {name: w.clone() for name, w in seeded_weights(d_model, seed).items()})


def _with_weights(d_model: int, n_heads: int, weights: dict[str, torch.Tensor]) -> MultiHeadAttention:
    """A MultiHeadAttention whose parameters are these very tensors (nothing drawn, nothing copied)."""
    with torch.device("meta"):
        mha = MultiHeadAttention(d_model, n_heads, self_attention=True)
    mha.load_state_dict(weights, assign=True)
    return mha.eval()


def parameter_count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


# ---------------------------------------------------------------- the multi-head page's demo

D_CHOICES = (8, 16, 24, 32, 48, 64, 96, 128, 256, 512)  # d_model values offered
MAX_TOKENS = 64  # longest sentence the page runs
MAX_HEADS = 64


def head_choices(d_model: int, max_heads: int = MAX_HEADS) -> list[int]:
    """The head counts H that split d_model evenly (d_h = D / H), at most max_heads."""
    return [h for h in range(1, min(d_model, max_heads) + 1) if d_model % h == 0]


def default_heads(choices: list[int], preferred: int = 8) -> int:
    """`preferred` when allowed, else the largest allowed count below it."""
    return preferred if preferred in choices else max(h for h in choices if h <= preferred)


def sentence_input(words: list[str], d_model: int, positions: bool = True) -> torch.Tensor:
    """(1, L, D): word_embeddings of the words, plus the sinusoidal positional encoding."""
    x = word_embeddings(words, d_model)
    if positions:
        x = x + positional_encoding(len(words), d_model)
    return x[None]


@dataclass
class HeadCost:
    """The work of one forward pass with `heads` heads (matmul FLOPs read off the real shapes)."""
    heads: int
    d_head: int
    scores_shape: tuple[int, ...]
    projections: int
    scores: int
    weighted_sum: int
    output_projection: int
    softmax_entries: int
    parameters: int

    @property
    def matmul(self) -> int:
        return self.projections + self.scores + self.weighted_sum + self.output_projection


def head_costs(x: torch.Tensor, d_model: int, heads, seed: int = 0) -> list[HeadCost]:
    """Run seeded_mha for every head count in `heads` on x (B, L, D) and count its work."""
    rows, weights = [], seeded_weights(d_model, seed)
    for h in heads:
        mha = _with_weights(d_model, h, weights)  # only run forward here: the shared weights are not copied
        with torch.no_grad():
            _, steps = multihead_steps(mha, x)
        f = multihead_flops(steps, h)
        rows.append(HeadCost(h, d_model // h, tuple(step_tensor(steps, "scores").shape), f["projections"],
                             f["scores"], f["weighted_sum"], f["output_projection"], f["softmax_entries"],
                             parameter_count(mha)))
    return rows


@dataclass
class MultiheadDemo:
    """Everything the multi-head page shows for one sentence, D, H and seed."""
    d_model: int
    n_heads: int
    length: int
    steps: list[MHAStep]
    module_gap: float  # max |step-by-step output - the module's own output|
    matches: bool  # ... within float32 tolerance
    weights: np.ndarray  # (H, L, L) attention of every head
    single_weights: np.ndarray  # (L, L) the one head of seeded_mha(D, 1) with the same seed
    single_gap: float  # max |output with H heads - output with 1 head|
    params_single: int
    params_multi: int
    same_params: bool  # the very same weights for 1 and H heads
    costs: list[HeadCost]  # one row per allowed H

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def mean_weights(self) -> np.ndarray:
        return self.weights.mean(0)

    @property
    def param_formula(self) -> int:
        """4·D² + 4·D: W_qkv (D × 3D) and W^O (D × D) with their biases."""
        return 4 * self.d_model ** 2 + 4 * self.d_model

    @property
    def matmul_totals(self) -> list[int]:
        """The distinct matmul FLOP totals over all H: a single value, since H does not change them."""
        return sorted({c.matmul for c in self.costs})


def multihead_demo(words: list[str], d_model: int, n_heads: int, seed: int = 0, positions: bool = True,
                   cost_heads=None) -> MultiheadDemo:
    """Self-attention of a seeded, untrained MultiHeadAttention over the words, step by step, checked
    against the module's own forward; the same with one head; and the cost for every H in
    cost_heads (default: head_choices(d_model)). No words raises UserError."""
    if not words:
        raise UserError("multihead.errors.no_words")
    x = sentence_input(words, d_model, positions)
    mha, single = seeded_mha(d_model, n_heads, seed), seeded_mha(d_model, 1, seed)
    with torch.no_grad():
        out, steps = multihead_steps(mha, x)
        module_out = mha(x)[0]  # the module's own (fused) path
        out1, steps1 = multihead_steps(single, x)
    return MultiheadDemo(
        d_model=d_model, n_heads=n_heads, length=len(words), steps=steps,
        module_gap=float((out - module_out).abs().max()),
        matches=bool(torch.allclose(out, module_out, atol=1e-5, rtol=1e-4)),
        weights=step_tensor(steps, "weights")[0].numpy(),
        single_weights=step_tensor(steps1, "weights")[0, 0].numpy(),
        single_gap=float((out - out1).abs().max()),
        params_single=parameter_count(single), params_multi=parameter_count(mha),
        same_params=all(torch.equal(a, b) for a, b in zip(single.parameters(), mha.parameters())),
        costs=head_costs(x, d_model, head_choices(d_model) if cost_heads is None else cost_heads, seed),
    )
