"""Where a training step's time goes, op by op: the wall time of every aten op of the trainer's step on one of
bench/train_throughput.py's sizes, and each matrix product's shape and achieved GFLOP/s.

    python bench/train_ops.py [--size small] [--steps 5] [--top 25]

Why not torch.profiler: on this CPU it inflates small elementwise ops several-fold (a ReLU of the FFN's hidden
units read 4.6 ms a call under it, 0.66 ms timed here), which points at the wrong levers. Here each op is timed by
a TorchDispatchMode around the call itself: what runs outside aten (numpy's dropout bits, Python) is not in the
sum, and the step under the timer is a few percent slower than without it."""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.train_throughput import SIZES, make_step, ours  # noqa: E402  (first: it sets the trainer's environment)
from model.training.allocator import keep_freed_memory  # noqa: E402

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

MATMULS = {"mm": (0, 1), "addmm": (1, 2)}  # op: positions of its two matrices


class OpTimer(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = collections.defaultdict(lambda: [0.0, 0])  # name: seconds, calls
        self.products = collections.defaultdict(lambda: [0.0, 0, 0])  # (op, shapes): seconds, calls, FLOPs

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        t0 = time.perf_counter()
        out = func(*args, **(kwargs or {}))
        dt = time.perf_counter() - t0
        name = func.overloadpacket.__name__
        self.ops[name][0] += dt
        self.ops[name][1] += 1
        if name in MATMULS:
            a, b = (args[i] for i in MATMULS[name])
            key = (name, tuple(a.shape), "ᵀ" if a.stride(0) == 1 and a.size(1) > 1 else "",
                   tuple(b.shape), "ᵀ" if b.stride(0) == 1 and b.size(1) > 1 else "")
            rec = self.products[key]
            rec[0] += dt
            rec[1] += 1
            rec[2] += 2 * a.size(0) * a.size(1) * b.size(1)
        return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", default="small", choices=sorted(SIZES))
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    keep_freed_memory()
    torch.manual_seed(0)
    s = SIZES[args.size]
    module, loss_fn = ours(s)
    module.train()
    step = make_step(module, loss_fn, torch.device("cpu"), False)
    B, L, V = s["batch"], s["length"], s["vocab"]
    src, tgt = torch.randint(4, V, (B, L)), torch.randint(4, V, (B, L + 1))
    for _ in range(3):
        step(src, tgt[:, :-1], tgt[:, 1:])
    timer = OpTimer()
    with timer:
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step(src, tgt[:, :-1], tgt[:, 1:])
        wall = (time.perf_counter() - t0) / args.steps
    n = args.steps
    total = sum(v[0] for v in timer.ops.values()) / n
    mm = sum(timer.ops[k][0] for k in MATMULS) / n
    print(f"{args.size}: step {wall * 1e3:.1f} ms under the timer; aten ops {total * 1e3:.1f} ms, "
          f"of which matrix products {mm * 1e3:.1f} ms ({mm / total:.0%})\n")
    print(f"{'op':<48} {'ms/step':>8} {'calls':>6}")
    for name, (sec, calls) in sorted(timer.ops.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"{name:<48} {sec / n * 1e3:8.2f} {calls // n:6d}")
    print(f"\n{'matrix product (ᵀ: a transposed view)':<48} {'ms/step':>8} {'calls':>6} {'GFLOP/s':>8}")
    for (name, a, at, b, bt), (sec, calls, flops) in sorted(timer.products.items(), key=lambda kv: -kv[1][0]):
        print(f"{f'{name} {a}{at} @ {b}{bt}':<48} {sec / n * 1e3:8.2f} {calls // n:6d} {flops / sec / 1e9:8.0f}")


if __name__ == "__main__":
    main()
