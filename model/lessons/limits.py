"""The paper's first limit, measured: one attention layer's time and peak memory as the sequence grows, for
full attention and the three answers beside it (model/nn/efficient.py).

Memory is measured, not asserted: torch's CPU allocator reports every allocation and free to the profiler
(`profile_memory=True`); the peak is the largest sum of live bytes allocated during the call, in the order they
happened (the inputs, made before, are not counted). Before anything is allocated, `estimate_bytes` says what a
size will need and `refusal` refuses one past the memory this machine has free."""
from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass

import torch

from model.nn.attention import scaled_dot_product_attention
from model.nn.efficient import banded_attention, blockwise_attention, linformer_project
from model.nn.masks import longformer_mask

IMPLS = ("full", "blockwise", "window", "linformer")
FLOAT = 4  # bytes of a float32
_PROFILER = threading.Lock()  # one profiler at a time in a process


@dataclass(frozen=True)
class Setting:
    """One attention layer: n tokens, width d, `heads` heads (d_k = d / heads); each answer's own knob."""
    n: int
    d: int = 512
    heads: int = 8
    block: int = 64      # blockwise: keys per block
    window: int = 64     # sliding window: keys fewer than `window` positions away
    global_tokens: int = 1
    k: int = 64          # Linformer: rows the keys and values are projected to

    @property
    def d_k(self) -> int:
        return self.d // self.heads


def estimate_bytes(impl: str, s: Setting) -> int:
    """The largest live float32 bytes a call holds, counted from the shapes before anything is allocated:
    the output, and the scores with their softmax at their widest (full: n x n per head; block-wise: n x block;
    window: each block of `window` queries against at most 3 window keys; Linformer: n x k, plus the projected
    keys and values)."""
    h, n, dk = s.heads, s.n, s.d_k
    out = h * n * dk
    if impl == "full":
        temp = 2 * h * n * n
    elif impl == "blockwise":
        # per block: the scores, their exponentials and the shifted scores (n x block), the running output,
        # its rescaled copy and the block's contribution (n x d_k), and m, l, the rescale per query
        temp = 3 * h * n * min(s.block, n) + 3 * h * n * dk + 3 * h * n
    elif impl == "window":
        w = min(s.window, n)
        temp = 3 * h * w * min(n, 3 * w) + 2 * h * s.global_tokens * n + h * w * dk  # a block's scores, its output
    elif impl == "linformer":
        temp = 2 * h * n * min(s.k, n) + 2 * h * min(s.k, n) * dk
    else:
        raise ValueError(f"unknown attention {impl!r}; known: {', '.join(IMPLS)}")
    return (out + temp) * FLOAT


def available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo (None where there is none: then nothing is refused on memory)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def estimate_flops(impl: str, s: Setting) -> int:
    """Multiply-adds x 2 of one call: Q K^T and the weights times V over the scores each answer computes."""
    h, n, dk = s.heads, s.n, s.d_k
    keys = {"full": n, "blockwise": n, "window": min(n, 3 * s.window) + s.global_tokens,
            "linformer": 2 * min(s.k, n)}[impl]  # Linformer: the scores over k rows, and projecting K and V
    return 4 * h * n * keys * dk


def steps(impl: str, s: Setting) -> int:
    """The Python loop's steps of one call: block-wise attention walks the keys `block` at a time, the window walks
    the queries `window` at a time; full attention and Linformer are one batched call. Each step is a handful of
    tensor operations whose fixed cost (and the memory profiler's, per operation) does not shrink with the block,
    so a tiny block over a long sequence is slow however little arithmetic it does."""
    if impl == "blockwise":
        return -(-s.n // s.block)
    if impl == "window":
        return -(-s.n // s.window)
    return 1


def refusal(impl: str, s: Setting, budget: int | None = None, share: float = 0.25,
            max_flops: int | None = None, max_steps: int | None = None, max_bytes: int | None = None) -> dict | None:
    """None when the call fits; else {"kind": "memory", "needed": bytes, "allowed": bytes} when it would take more
    than `share` of the memory free now or than `max_bytes` (or more than `budget` bytes when given), {"kind":
    "time", "needed": flops, "allowed": max_flops} when it would compute more than `max_flops`, or {"kind": "steps",
    ...} when its loop would take more than `max_steps` steps; either way it is not run."""
    allowed = budget if budget is not None else available_bytes()
    if allowed is not None:
        allowed = int(allowed * (1.0 if budget is not None else share))
    if max_bytes is not None and budget is None:
        allowed = max_bytes if allowed is None else min(allowed, max_bytes)
    if allowed is not None:
        needed = estimate_bytes(impl, s)
        if needed > allowed:
            return {"kind": "memory", "needed": needed, "allowed": allowed}
    if max_flops is not None and estimate_flops(impl, s) > max_flops:
        return {"kind": "time", "needed": estimate_flops(impl, s), "allowed": max_flops}
    if max_steps is not None and steps(impl, s) > max_steps:
        return {"kind": "steps", "needed": steps(impl, s), "allowed": max_steps}
    return None


def pooling(k: int, n: int) -> torch.Tensor:
    """(k, n): row r averages the positions floor(r n / k) .. floor((r + 1) n / k) - 1; the identity when k = n."""
    edges = [r * n // k for r in range(k + 1)]
    e = torch.zeros(k, n)
    for r in range(k):
        e[r, edges[r]: edges[r + 1]] = 1.0 / (edges[r + 1] - edges[r])
    return e


def inputs(s: Setting, seed: int = 0):
    """q, k, v (1, heads, n, d_k), random normal, and Linformer's E = F (k, n): fixed projections that average
    neighbouring positions (a trained Linformer learns its own)."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, s.heads, s.n, s.d_k, generator=g) for _ in range(3))
    e = pooling(min(s.k, s.n), s.n)
    return q, k, v, e, e


def run(impl: str, s: Setting, q, k, v, e=None, f=None) -> torch.Tensor:
    """One attention call: (1, heads, n, d_k) out."""
    if impl == "full":
        return scaled_dot_product_attention(q, k, v)[0]
    if impl == "blockwise":
        return blockwise_attention(q, k, v, block=s.block)
    if impl == "window":
        return banded_attention(q, k, v, s.window, s.global_tokens)
    if impl == "linformer":
        pk, pv = linformer_project(k, v, e, f)
        return scaled_dot_product_attention(q, pk, pv)[0]
    raise ValueError(f"unknown attention {impl!r}; known: {', '.join(IMPLS)}")


def peak_bytes(fn) -> int:
    """The largest sum of bytes live during fn() that fn allocated, from the CPU allocator's reports."""
    from torch.profiler import ProfilerActivity, profile
    with _PROFILER, torch.no_grad(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((ev for ev in prof.events() if ev.self_cpu_memory_usage),
                    key=lambda ev: ev.time_range.start)
    live = peak = 0
    for ev in events:
        live += ev.self_cpu_memory_usage
        peak = max(peak, live)
    return peak


def measure(impl: str, s: Setting, repeats: int = 3, max_flops: int | None = None,
            max_steps: int | None = None, max_bytes: int | None = None) -> dict:
    """Time (median of `repeats` calls, after one warm-up call) and measured peak memory of one call, beside
    the estimate; {"refused": {...}} instead when the estimate does not fit in memory. Timed on one thread,
    so the numbers do not depend on what else the machine runs (two threads on a busy machine spin-wait)."""
    refused = refusal(impl, s, max_flops=max_flops, max_steps=max_steps, max_bytes=max_bytes)
    if refused:
        return {"impl": impl, "n": s.n, "refused": refused}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _measure(impl, s, repeats)
    finally:
        torch.set_num_threads(threads)


def _measure(impl: str, s: Setting, repeats: int) -> dict:
    q, k, v, e, f = inputs(s)
    with torch.no_grad():
        run(impl, s, q, k, v, e, f)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            run(impl, s, q, k, v, e, f)
            times.append(time.perf_counter() - t0)
    peak = peak_bytes(lambda: run(impl, s, q, k, v, e, f))
    return {"impl": impl, "n": s.n, "seconds": statistics.median(times), "peak_bytes": peak,
            "estimate_bytes": estimate_bytes(impl, s), "refused": None}


# The knobs each answer reads; the others do not change its call (full attention reads none of them)
KNOBS = {"full": (), "blockwise": ("block",), "window": ("window", "global_tokens"), "linformer": ("k",)}


def relevant(impl: str, s: Setting) -> Setting:
    """s with the knobs `impl` does not read set to their defaults: equal settings, equal calls, so a measurement
    is made once per call that differs (moving Linformer's k does not measure full attention again)."""
    from dataclasses import fields, replace
    default = {f.name: f.default for f in fields(Setting) if f.name in ("block", "window", "global_tokens", "k")}
    return replace(s, **{name: value for name, value in default.items() if name not in KNOBS[impl]})


def sweep_point(impl: str, s: Setting, max_flops: int | None = None, max_steps: int | None = None,
                max_bytes: int | None = None) -> dict:
    """measure() as a sweep takes it: one timed call instead of three above a tenth of max_flops."""
    big = max_flops is not None and estimate_flops(impl, s) > max_flops // 10
    return measure(impl, s, repeats=1 if big else 3, max_flops=max_flops, max_steps=max_steps, max_bytes=max_bytes)


def sweep(s: Setting, sizes: tuple[int, ...], impls: tuple[str, ...] = IMPLS, max_flops: int | None = None,
          max_steps: int | None = None, max_bytes: int | None = None) -> list[dict]:
    """sweep_point() for every impl at every n in `sizes` (the other knobs from s, those an impl reads)."""
    from dataclasses import replace
    return [sweep_point(impl, relevant(impl, replace(s, n=n)), max_flops, max_steps, max_bytes)
            for n in sizes for impl in impls]


def difference_of(impl: str, s: Setting) -> dict:
    """One answer's largest and relative difference from full attention's output on the same inputs (relative: the
    Frobenius norm of the difference over full attention's). It reads n, d, the heads and the answer's own knobs
    (KNOBS) only."""
    q, k, v, e, f = inputs(s)
    with torch.no_grad():
        full = run("full", s, q, k, v)
        diff = run(impl, s, q, k, v, e, f) - full
    return {"max": float(diff.abs().max()), "relative": float(diff.norm() / full.norm())}


def difference_from_full(s: Setting) -> dict:
    """difference_of() for every answer but full attention."""
    return {impl: difference_of(impl, s) for impl in IMPLS[1:]}


def linformer_error(s: Setting, ks: tuple[int, ...]) -> list[dict]:
    """Linformer's relative error against full attention for each k (the averaging projections of `inputs`), as
    difference_from_full measures it: full attention once, then Linformer at each k. Only s.n, s.d and s.heads
    matter (the other answers' knobs and s.k do not)."""
    from dataclasses import replace
    q, k, v, _, _ = inputs(s)
    out = []
    with torch.no_grad():
        full = run("full", s, q, k, v)
        for kk in ks:
            if kk <= s.n:
                e = pooling(kk, s.n)
                err = float((run("linformer", replace(s, k=kk), q, k, v, e, e) - full).norm() / full.norm())
                out.append({"k": kk, "relative": err})
    return out


def window_demo(n: int, window: int, global_tokens: int):
    """(n, n) bool: which scores the sliding window with global tokens keeps, and their share of n^2."""
    keep = longformer_mask(n, n, window, global_tokens)
    return keep.numpy(), float(keep.float().mean())


def score_matrix(s: Setting, head: int = 0):
    """(n, n) softmax weights of one head of full attention, for drawing at small n."""
    q, k, v, _, _ = inputs(s)
    with torch.no_grad():
        return scaled_dot_product_attention(q, k, v)[1][0, head].numpy()
