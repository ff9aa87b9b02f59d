"""What each fast path of model/nn/fast buys a training step: the trainer's step (bench/train_throughput.py's
`ours`) timed with every fast path on, with one of them off (its devices emptied in WHERE), and with all of them
off (FAST = False), the variants alternating in one process so that drift on a shared machine hits them alike.

    python bench/fast_paths.py [--sizes tiny,small] [--repeats 9] [--steps 5] [--device cpu]

Writes bench/results/fast_paths_<device>.json (`--name`) and prints a table: ms a step, and each variant's time
over the all-fast time (above 1: the path that variant turns off wins)."""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, sync, table, write  # noqa: E402
from bench.train_throughput import SIZES, batch, make_step, ours  # noqa: E402
from model.nn import fast  # noqa: E402

VARIANTS = ("all fast", *(f"{trick} off" for trick in fast.WHERE), "all plain")


def configure(variant: str, where: dict) -> None:
    fast.FAST = variant != "all plain"
    fast.WHERE.update(where)
    trick = variant.removesuffix(" off")
    if trick in where:
        fast.WHERE[trick] = frozenset()


def run(size: str, device: torch.device, repeats: int, steps: int) -> list[dict]:
    s = SIZES[size]
    src, tgt_in, tgt_out, _ = batch(s, device)
    module, loss_fn = ours(s)
    module.to(device).train()
    step = make_step(module, loss_fn, device, bf16=False)
    where = dict(fast.WHERE)
    times = {v: [] for v in VARIANTS}
    try:
        for v in VARIANTS:  # warm-up, every variant
            configure(v, where)
            for _ in range(2):
                step(src, tgt_in, tgt_out)
        for _ in range(repeats):
            for v in VARIANTS:
                configure(v, where)
                sync(device)
                t0 = time.perf_counter()
                for _ in range(steps):
                    step(src, tgt_in, tgt_out)
                sync(device)
                times[v].append((time.perf_counter() - t0) / steps)
    finally:
        fast.FAST = True
        fast.WHERE.update(where)
    base = statistics.median(times["all fast"])
    return [{"size": size, "variant": v, "ms/step": round(statistics.median(t) * 1e3, 2),
             "min ms/step": round(min(t) * 1e3, 2), "÷ all fast": round(statistics.median(t) / base, 3)}
            for v, t in times.items()]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--sizes", default="tiny,small")
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--name", default="")
    a = p.parse_args()
    device = torch.device(a.device)
    rows = [r for size in a.sizes.split(",") for r in run(size, device, a.repeats, a.steps)]
    print(table(rows))
    write(a.name or f"fast_paths_{device.type}", {"machine": machine(), "command": " ".join(sys.argv), "rows": rows})


if __name__ == "__main__":
    main()
