"""Small pure functions for the attention page's labs: the stages of scaled dot-product attention,
why we divide by sqrt(d_k), and additive (Bahdanau) scoring with its cost and timing. Plain PyTorch and
numpy, no streamlit. (Multi-head attention step by step is model/lessons/multihead.py; the worked example
the learner types, and the article's printed one, are in model/lessons/worked_example.py.)"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from model.nn.attention import attention_scores, masked_softmax
from model.lessons.complexity import _sync
from model.nn.masks import causal_mask
from model.messages import UserError


# ---------------------------------------------------------------- scaled dot-product, stage by stage

STAGE_IDS = ("raw", "scaled", "masked", "weights", "output")  # in the order they are computed


def causal_keep(n_queries: int, n_keys: int) -> torch.Tensor:
    """(n, m) True where query i may attend key j, cut from model.nn.masks.causal_mask. The queries sit
    at the end of the key sequence, the convention of MultiHeadAttention: query i sees keys
    0 .. (m - n) + i (none at all when that is negative)."""
    size = max(n_queries, n_keys)
    return causal_mask(size)[size - n_queries:, size - n_keys:]


def visible_stages(causal: bool) -> list[str]:
    """The stage ids worth showing: the mask stage only when there is a mask."""
    return [s for s in STAGE_IDS if causal or s != "masked"]


@dataclass
class Stages:
    """Every intermediate of softmax(Q K^T / sqrt(d_k)) V for one (Q, K, V). float64 numpy arrays."""
    raw: np.ndarray  # S = Q K^T                      (n, m)
    scaled: np.ndarray  # S' = S / sqrt(d_k)           (n, m)
    masked: np.ndarray | None  # S' with -inf where masked (n, m), None without a mask
    weights: np.ndarray  # A = softmax(S') row by row   (n, m)
    output: np.ndarray  # O = A V                      (n, d_v)
    d_k: int

    def stage(self, stage_id: str) -> np.ndarray | None:
        """The matrix of one stage by its id (STAGE_IDS)."""
        if stage_id not in STAGE_IDS:
            raise KeyError(stage_id)
        return getattr(self, stage_id)

    @property
    def row_sums(self) -> np.ndarray:
        """Σ_j A_ij for every query: 1, or 0 for a query that may see no key."""
        return self.weights.sum(1)

    @property
    def finite(self) -> bool:
        return bool(np.isfinite(self.raw).all() and np.isfinite(self.scaled).all()
                    and np.isfinite(self.weights).all() and np.isfinite(self.output).all())


def attention_stages(q, k, v, causal: bool = False) -> Stages:
    """Run the textbook path through model.nn.attention and keep every stage."""
    q, k, v = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (q, k, v))
    raw = q @ k.transpose(-2, -1)  # (n, m)
    scaled = attention_scores(q, k)  # (n, m) = raw / sqrt(d_k)
    keep = causal_keep(q.size(0), k.size(0)) if causal else None
    masked = scaled.masked_fill(~keep, float("-inf")) if keep is not None else None
    weights = masked_softmax(scaled, keep)  # (n, m), rows sum to 1 (0 for a fully masked row)
    out = weights @ v  # (n, d_v)
    return Stages(raw.numpy(), scaled.numpy(), None if masked is None else masked.numpy(),
                  weights.numpy(), out.numpy(), int(q.size(-1)))


def checked_stages(q, k, v, causal: bool = False) -> Stages:
    """attention_stages for numbers the learner typed: a dot product or an output so large that it
    overflows float64 raises UserError("attention.errors.overflow") instead of showing NaNs."""
    with np.errstate(all="ignore"):
        st = attention_stages(q, k, v, causal=causal)
    if not st.finite:
        raise UserError("attention.errors.overflow")
    return st


def softmax_rows(x) -> np.ndarray:
    """Row-wise softmax through model.nn.attention.masked_softmax (stable for huge values)."""
    return masked_softmax(torch.as_tensor(np.asarray(x, dtype=np.float64))).numpy()


# ---------------------------------------------------------------- checking a printed worked example

@dataclass
class StageCheck:
    """Does a printed stage follow from the stage before? Compared cell by cell within the
    tolerance that rounding allows."""
    expected: np.ndarray  # recomputed from the previous (printed) stage, full precision
    printed: np.ndarray
    tolerance: np.ndarray  # per cell
    off: np.ndarray  # bool: |printed - expected| > tolerance

    @property
    def consistent(self) -> bool:
        return not bool(self.off.any())

    @property
    def n_off(self) -> int:
        return int(self.off.sum())

    @property
    def max_abs_diff(self) -> float:
        return float(np.abs(self.printed - self.expected).max())


def _check(expected, printed, tol) -> StageCheck:
    expected, printed = np.asarray(expected, float), np.asarray(printed, float)
    tol = np.broadcast_to(np.asarray(tol, float), expected.shape).copy()
    off = np.abs(printed - expected) > tol + 1e-12
    return StageCheck(expected, printed, tol, off)


def check_printed_chain(q, k, v, s, s_scaled, a, o, decimals: int = 2) -> dict[str, StageCheck]:
    """Check each printed stage against the one printed before it (not against the start):
    S vs Q K^T, S' vs printed S / sqrt(d_k), A vs softmax(printed S'), O vs printed A V.

    The tolerance of a cell is half a unit of the printed last digit (the rounding of the printed
    result) plus how far the rounding of the printed inputs can move it, to first order:
    S/sqrt(d): h/sqrt(d); softmax: sum_k |dA_ij/ds_k| h = 2 A_ij (1 - A_ij) h; A V: h sum_k |V_kj|.
    Q, K and V are the given inputs, taken as exact."""
    h = 0.5 * 10.0 ** (-decimals)
    q, k, v, s, s_scaled, a, o = (np.asarray(x, dtype=np.float64) for x in (q, k, v, s, s_scaled, a, o))
    d_k = q.shape[1]
    st = attention_stages(q, k, v)
    sm = softmax_rows(s_scaled)
    return {
        "S": _check(st.raw, s, h),
        "S'": _check(s / math.sqrt(d_k), s_scaled, h + h / math.sqrt(d_k)),
        "A": _check(sm, a, h + 2 * sm * (1 - sm) * h),
        "O": _check(a @ v, o, h + h * np.abs(v).sum(0, keepdims=True)),
    }


# ---------------------------------------------------------------- why divide by sqrt(d_k)

def sample_dot_products(d_k: int, n_samples: int = 4000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """q, k with independent unit-variance entries: q.k has variance d_k, q.k / sqrt(d_k) variance 1.
    The entries are drawn in float32 and each q.k is summed in float64: torch draws float32 normals several times
    faster than float64 ones on the CPU, and the page draws again on every move of its d_k slider."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n_samples, d_k, generator=g)
    k = torch.randn(n_samples, d_k, generator=g)
    dots = (q * k).sum(-1, dtype=torch.float64)  # (n_samples,)
    return dots.numpy(), (dots / math.sqrt(d_k)).numpy()


def softmax_jacobian(scores) -> np.ndarray:
    """d softmax(s) / d s = diag(p) - p p^T, closed form. scores: (m,) -> (m, m)."""
    p = softmax_rows(np.asarray(scores, dtype=np.float64)[None, :])[0]
    return np.diag(p) - np.outer(p, p)


def softmax_jacobian_autograd(scores) -> np.ndarray:
    """The same Jacobian from torch autograd (used to check the closed form)."""
    s = torch.as_tensor(np.asarray(scores, dtype=np.float64))
    return torch.autograd.functional.jacobian(lambda x: masked_softmax(x[None, :])[0], s).numpy()


def gradient_vs_scale(base, scales) -> dict[str, np.ndarray]:
    """For scores c * base, the largest entry |J_ij| and the Frobenius norm of the softmax
    Jacobian, and the largest weight, for each scale c. Big scores -> saturated softmax -> tiny gradient."""
    base = np.asarray(base, dtype=np.float64)
    max_abs, fro, top = [], [], []
    for c in scales:
        j = softmax_jacobian(c * base)
        max_abs.append(np.abs(j).max())
        fro.append(np.linalg.norm(j))
        top.append(softmax_rows((c * base)[None, :]).max())
    return {"scale": np.asarray(scales, float), "max_abs": np.array(max_abs), "frobenius": np.array(fro),
            "max_weight": np.array(top)}


@dataclass
class DotSamples:
    """Random dot products q·k (entries of q, k independent, mean 0, variance 1) and the same
    divided by sqrt(d_k)."""
    d_k: int
    raw: np.ndarray  # (n_samples,)
    scaled: np.ndarray  # (n_samples,)

    @property
    def var_raw(self) -> float:  # about d_k
        return float(self.raw.var())

    @property
    def var_scaled(self) -> float:  # about 1
        return float(self.scaled.var())

    @property
    def n_samples(self) -> int:
        return int(self.raw.size)


def dot_product_samples(d_k: int, n_samples: int = 4000, seed: int = 0) -> DotSamples:
    return DotSamples(d_k, *sample_dot_products(d_k, n_samples, seed))


@dataclass
class Saturation:
    """softmax of some scores and of the same scores multiplied by `factor`."""
    small: np.ndarray
    big: np.ndarray
    p_small: np.ndarray
    p_big: np.ndarray
    factor: float

    @property
    def top_small(self) -> float:
        return float(self.p_small.max())

    @property
    def top_big(self) -> float:
        return float(self.p_big.max())


def saturation_example(scores=(1.0, 2.0, 3.0), factor: float = 10.0) -> Saturation:
    """Big scores saturate the softmax: softmax([1, 2, 3]) against softmax([10, 20, 30])."""
    small = np.asarray(scores, dtype=np.float64)
    big = small * factor
    return Saturation(small, big, softmax_rows(small[None])[0], softmax_rows(big[None])[0], float(factor))


@dataclass
class GradientReport:
    """The softmax Jacobian of scores c·base over a range of scales c (log-spaced), and its largest
    entry at c = 1 and at c = sqrt(d_k), the factor by which unscaled scores are larger."""
    curve: dict[str, np.ndarray]  # gradient_vs_scale(base, scales)
    sqrt_dk: float
    at_one: float
    at_sqrt_dk: float


def gradient_report(d_k: int, base=(1.0, 2.0, 3.0), max_scale: float = 40.0, points: int = 61) -> GradientReport:
    scales = np.logspace(-1, np.log10(max_scale), points)
    root = math.sqrt(d_k)
    at = gradient_vs_scale(base, [1.0, root])["max_abs"]
    return GradientReport(gradient_vs_scale(base, scales), root, float(at[0]), float(at[1]))


# ---------------------------------------------------------------- additive (Bahdanau) scoring

def additive_params(d_q: int, d_k: int, hidden: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Seeded W_q (hidden, d_q), W_k (hidden, d_k), v (hidden,), Xavier-like scale."""
    g = torch.Generator().manual_seed(seed)
    return {"w_q": torch.randn(hidden, d_q, generator=g, dtype=torch.float64) / math.sqrt(d_q),
            "w_k": torch.randn(hidden, d_k, generator=g, dtype=torch.float64) / math.sqrt(d_k),
            "v": torch.randn(hidden, generator=g, dtype=torch.float64) / math.sqrt(hidden)}


def additive_scores(q, k, w_q, w_k, v, chunk: int | None = None) -> torch.Tensor:
    """e_ij = v^T tanh(W_q q_i + W_k k_j).  q: (n, d_q), k: (m, d_k) -> (n, m).
    The (n, m, hidden) intermediate is built `chunk` query rows at a time to bound memory."""
    q, k = q.to(w_q.dtype), k.to(w_k.dtype)
    pq = q @ w_q.T  # (n, hidden)
    pk = k @ w_k.T  # (m, hidden)
    if chunk is None:
        return torch.tanh(pq[:, None, :] + pk[None, :, :]) @ v  # (n, m, hidden) @ (hidden,) -> (n, m)
    return torch.cat([torch.tanh(pq[i:i + chunk, None, :] + pk[None, :, :]) @ v
                      for i in range(0, pq.size(0), chunk)])


def additive_weights(q, k, hidden: int, seed: int = 0, causal: bool = False) -> np.ndarray:
    """softmax over keys of the additive scores of q (n, d_k) against k (m, d_k), with seeded
    (untrained) W_q, W_k, v and optionally the causal mask of attention_stages. (n, m) float64."""
    q, k = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (q, k))
    p = additive_params(q.size(1), k.size(1), hidden, seed)
    keep = causal_keep(q.size(0), k.size(0)) if causal else None
    return masked_softmax(additive_scores(q, k, p["w_q"], p["w_k"], p["v"]), keep).numpy()


def scoring_flops(n: int, m: int, d: int, hidden: int) -> dict[str, int]:
    """Floating-point operations to score n queries against m keys (a multiply-add counts 2).
    dot: Q K^T -> 2 n m d, then n m divisions by sqrt(d).
    additive: W_q q for n queries (2 n d h), W_k k for m keys (2 m d h), n m h additions,
    n m h tanh, then v^T for every pair (2 n m h). The tanh alone is several FLOPs in practice."""
    dot = 2 * n * m * d + n * m
    additive = 2 * n * d * hidden + 2 * m * d * hidden + n * m * hidden + n * m * hidden + 2 * n * m * hidden
    return {"dot": dot, "additive": additive, "dot_memory": n * m, "additive_memory": n * m * hidden}


def time_scoring(n: int, d: int, hidden: int, device: torch.device | str = "cpu", repeats: int = 5,
                 seed: int = 0) -> dict[str, float]:
    """Median seconds to compute the (n, n) score matrix both ways on `device` (float32), and how
    many times slower the additive way is (`ratio`)."""
    for step in time_scoring_steps(n, d, hidden, device, repeats, seed):
        pass
    return step.result


@dataclass
class TimingStep:
    """Where time_scoring_steps stands: `done` of `total` timed runs; `result` once all are done."""
    done: int
    total: int
    result: dict[str, float] | None = None


def time_scoring_steps(n: int, d: int, hidden: int, device: torch.device | str = "cpu", repeats: int = 5,
                       seed: int = 0):
    """time_scoring one timed run at a time, so that a page can show its progress and stop it between
    runs: yields a TimingStep after each of the 2 * repeats timed runs (each scoring's untimed warm-up
    runs just before its first timed run); the last one carries the result. The same runs and the same
    medians as time_scoring, which is this generator run to its end."""
    device = torch.device(device)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n, d, generator=g).to(device)
    k = torch.randn(n, d, generator=g).to(device)
    p = {name: t.float().to(device) for name, t in additive_params(d, d, hidden, seed).items()}
    chunk = max(1, (1 << 23) // max(1, n * hidden))  # at most ~8M floats in the intermediate
    kinds = {"dot": lambda: attention_scores(q, k),
             "additive": lambda: additive_scores(q, k, p["w_q"], p["w_k"], p["v"], chunk=chunk)}
    total, done, medians = 2 * repeats, 0, {}
    for kind, fn in kinds.items():
        times = []
        with torch.no_grad():
            fn()  # warm-up
            _sync(device)  # CUDA and MPS run asynchronously: wait, or we time only the kernel launch
        for _ in range(repeats):
            with torch.no_grad():
                t0 = time.perf_counter()
                fn()
                _sync(device)
                times.append(time.perf_counter() - t0)
            done += 1
            if done < total:
                yield TimingStep(done, total)
        medians[kind] = float(np.median(times))
    yield TimingStep(total, total, {"dot": medians["dot"], "additive": medians["additive"],
                                    "ratio": medians["additive"] / max(medians["dot"], 1e-12)})


def timing_slice(steps, seconds: float) -> TimingStep:
    """Advance a time_scoring_steps generator by one timed run, then by more while they fit in about
    `seconds` in all; the last step reached (its result is set once every run is done)."""
    start = time.perf_counter()
    step = next(steps)
    while step.result is None and time.perf_counter() - start < seconds:
        step = next(steps)
    return step
