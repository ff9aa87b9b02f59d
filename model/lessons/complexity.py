"""Section 4 of the paper, "Why self-attention": Table 1's formulas evaluated, and a small timing
harness that measures one self-attention, one recurrent and one convolutional layer on the same
batch. Plain PyTorch, no streamlit.

Table 1 (n = sequence length, d = representation size, k = kernel width, r = neighbourhood size):

    layer type                    per-layer cost   sequential ops   maximum path length
    self-attention                O(n^2 d)         O(1)             O(1)
    recurrent                     O(n d^2)         O(n)             O(n)
    convolutional                 O(k n d^2)       O(1)             O(log_k n)
    self-attention (restricted)   O(r n d)         O(1)             O(n / r)
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

from model.nn.attention import MultiHeadAttention

LAYERS = ("self_attention", "recurrent", "convolutional", "restricted")


@dataclass(frozen=True)
class Row:
    layer: str
    cost_formula: str
    sequential_formula: str
    path_formula: str
    cost: float  # the formula evaluated (constant factors dropped, as in the paper)
    sequential: float
    path: float


def per_layer_cost(layer: str, n: float, d: float, k: float = 3, r: float = 16) -> float:
    """Operations per layer, up to a constant: the 'Complexity per Layer' column."""
    if layer == "self_attention":
        return n * n * d
    if layer == "recurrent":
        return n * d * d
    if layer == "convolutional":
        return k * n * d * d
    if layer == "restricted":
        return min(r, n) * n * d  # a neighbourhood cannot hold more than the whole sequence
    raise ValueError(f"unknown layer {layer!r}")


def sequential_ops(layer: str, n: float) -> float:
    """Operations that must run one after another: only recurrence grows with n."""
    if layer == "recurrent":
        return n
    if layer in LAYERS:
        return 1.0
    raise ValueError(f"unknown layer {layer!r}")


def max_path_length(layer: str, n: float, k: float = 3, r: float = 16) -> float:
    """Longest path a signal travels between two positions. For convolutions: a stack of dilated
    convolutions needs log_k(n) layers (contiguous kernels need n/k); at least one layer."""
    if layer == "self_attention":
        return 1.0
    if layer == "recurrent":
        return float(n)
    if layer == "convolutional":
        return max(1.0, math.log(n) / math.log(k)) if k > 1 else float(n)
    if layer == "restricted":
        return max(1.0, n / r)
    raise ValueError(f"unknown layer {layer!r}")


FORMULAS = {
    "self_attention": ("O(n²·d)", "O(1)", "O(1)"),
    "recurrent": ("O(n·d²)", "O(n)", "O(n)"),
    "convolutional": ("O(k·n·d²)", "O(1)", "O(log_k n)"),
    "restricted": ("O(r·n·d)", "O(1)", "O(n/r)"),
}


def complexity_table(n: int, d: int, k: int = 3, r: int = 16) -> list[Row]:
    """Table 1 with every formula evaluated at (n, d, k, r)."""
    for name, v in (("n", n), ("d", d), ("k", k), ("r", r)):
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    return [Row(layer, *FORMULAS[layer], per_layer_cost(layer, n, d, k, r), sequential_ops(layer, n),
                max_path_length(layer, n, k, r)) for layer in LAYERS]


def curves_over_n(n: int, d: int, k: int = 3, r: int = 16, points: int = 300) -> dict:
    """The cost and path columns of Table 1 for every layer type over a log-spaced range of n, from
    1 to max(10 n, 10 d, 100) (so both the chosen n and the crossover n = d are inside).
    Returns {"n": (m,), "cost": {layer: (m,)}, "path": {layer: (m,)}}."""
    ns = _over_n(n, d, points)
    return {"n": ns,
            "cost": {layer: np.array([per_layer_cost(layer, x, d, k, r) for x in ns]) for layer in LAYERS},
            "path": {layer: np.array([max_path_length(layer, x, k, r) for x in ns]) for layer in LAYERS}}


def _over_n(n: int, d: int, points: int) -> np.ndarray:
    """The sizes the curves are drawn at: log-spaced whole numbers from 1 to max(10 n, 10 d, 100)."""
    return np.unique(np.geomspace(1, max(10 * n, 10 * d, 100), points).round())


def convolutional_over_n(n: int, d: int, ks: tuple[int, ...], points: int = 300) -> dict:
    """curves_over_n's convolutional cost and path for each kernel width in `ks` (they read neither r nor the other
    layers): {"n": (m,), "cost": (len(ks), m), "path": (len(ks), m)}, row i for ks[i]."""
    ns = _over_n(n, d, points)
    return {"n": ns,
            "cost": np.array([[per_layer_cost("convolutional", x, d, k) for x in ns] for k in ks]),
            "path": np.array([[max_path_length("convolutional", x, k) for x in ns] for k in ks])}


# ----------------------------------------------------------------------------- measured

def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def _median_time(fn, device: torch.device, repeats: int, tick=None) -> float:
    """Median seconds of `repeats` runs of fn after one warm-up run; tick(), when given, is called after
    each run (outside the timed part)."""
    fn()  # warm-up: kernels, allocator, lazy init
    _sync(device)
    times = []
    for _ in range(repeats):
        if tick:
            tick()
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def make_layers(d: int, n_heads: int = 4, kernel: int = 3, recurrent: str = "gru", device=None, seed: int = 0):
    """One layer of each kind with d inputs and d outputs, seeded, in eval mode."""
    if d % n_heads:
        n_heads = 1
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        attn = MultiHeadAttention(d, n_heads)
        rnn = (nn.LSTM if recurrent == "lstm" else nn.GRU)(d, d, batch_first=True)
        conv = nn.Conv1d(d, d, kernel, padding=kernel // 2)
    return {name: m.to(device).eval() for name, m in
            (("self_attention", attn), ("recurrent", rnn), ("convolutional", conv))}


MAX_SCORE_BYTES = 512 * 2**20  # protects the server's memory (and time) on the largest sizes


@torch.inference_mode()
def time_layers(n_values, d: int = 64, batch: int = 2, device=None, repeats: int = 3, *,
                n_heads: int = 4, kernel: int = 3, recurrent: str = "gru", budget_s: float = 3.0,
                seed: int = 0, threads: int | None = None, progress=None) -> dict:
    """Median seconds of one forward pass of each layer over the same (batch, n, d) input, per n.

    Returns {"n": [...], "self_attention": [...], "recurrent": [...], "convolutional": [...],
    "skipped": [n values not measured because the time budget ran out], "device": str}.
    Sizes are measured in increasing order; once `budget_s` seconds have been spent the larger
    sizes are skipped rather than letting a page hang. `threads` (CPU only) runs the measurement
    with that many intra-op threads and restores the previous setting afterwards. `progress(done, n)`,
    when given, is called after each layer of each size (and for each skipped size) with the share of the
    work done (0 < done <= 1) and the size n; an exception it raises stops the measurement there."""
    device = torch.device(device) if device is not None else torch.device("cpu")
    if d < 1 or batch < 1 or repeats < 1:
        raise ValueError("d, batch and repeats must be >= 1")
    ns = sorted({int(n) for n in n_values})
    if not ns or ns[0] < 1:
        raise ValueError("n values must be positive integers")
    previous = torch.get_num_threads()
    if threads and device.type == "cpu":
        torch.set_num_threads(int(threads))
    try:
        return _time_layers(ns, d, batch, device, repeats, n_heads, kernel, recurrent, budget_s, seed, progress)
    finally:
        if torch.get_num_threads() != previous:
            torch.set_num_threads(previous)


def _time_layers(ns, d, batch, device, repeats, n_heads, kernel, recurrent, budget_s, seed, progress) -> dict:
    layers = make_layers(d, n_heads, kernel, recurrent, device, seed)
    gen = torch.Generator().manual_seed(seed)
    out = {"n": [], "self_attention": [], "recurrent": [], "convolutional": [], "skipped": [],
           "device": str(device), "threads": torch.get_num_threads() if device.type == "cpu" else None,
           "d": d, "batch": batch, "repeats": repeats, "recurrent_kind": recurrent}
    start = time.perf_counter()
    last = None  # (n, seconds of its steady runs) of the previous size, to predict the next one
    per_layer = repeats + 1  # the warm-up and each timed run
    steps, done = len(ns) * len(TIMED) * per_layer, 0

    def tick(n):
        nonlocal done
        done += 1
        if progress:
            progress(done / steps, n)

    for n in ns:
        elapsed = time.perf_counter() - start
        # attention grows like n^2: skip a size that would overrun the budget (the smallest always runs)
        predicted = last[1] * (n / last[0]) ** 2 if last else 0.0
        # and never a size whose (B, H, n, n) score matrix alone would take more than MAX_SCORE_BYTES
        if batch * n_heads * n * n * 4 > MAX_SCORE_BYTES or (last and elapsed + predicted > budget_s):
            out["skipped"].append(n)
            done += len(TIMED) * per_layer
            if progress:
                progress(done / steps, n)
            continue
        x = torch.randn(batch, n, d, generator=gen).to(device)  # (B, n, d)
        xt = x.transpose(1, 2).contiguous()  # (B, d, n): Conv1d wants channels first
        runs = {
            "self_attention": lambda: layers["self_attention"](x),  # all n positions at once
            "recurrent": lambda: layers["recurrent"](x),  # n steps, each waits for the last
            "convolutional": lambda: layers["convolutional"](xt),
        }
        out["n"].append(n)
        for name, fn in runs.items():
            out[name].append(_median_time(fn, device, repeats, tick=lambda: tick(n)))
            tick(n)
        # from the medians, not the wall time: a kernel's first call pays one-time costs the next size won't
        last = (n, per_layer * sum(out[name][-1] for name in runs))
    out["total_s"] = time.perf_counter() - start
    return out


TIMED = ("self_attention", "recurrent", "convolutional")


def timing_summary(res: dict) -> dict:
    """time_layers' result in the units the page shows. Returns {"ms": {layer: [ms per n]}, "rows":
    [{"n", "recurrent_us_per_position", "ratio": recurrent / attention}], "growth": None or
    {"length": n_last / n_first, "recurrent", "self_attention": time_last / time_first}}."""
    ms = {layer: [t * 1e3 for t in res[layer]] for layer in TIMED}
    rows = [{"n": n, "recurrent_us_per_position": res["recurrent"][i] / n * 1e6,
             "ratio": res["recurrent"][i] / res["self_attention"][i]} for i, n in enumerate(res["n"])]
    growth = None
    if len(res["n"]) >= 2:
        growth = {"length": res["n"][-1] / res["n"][0], **{layer: res[layer][-1] / res[layer][0]
                                                           for layer in ("recurrent", "self_attention")}}
    return {"ms": ms, "rows": rows, "growth": growth}
