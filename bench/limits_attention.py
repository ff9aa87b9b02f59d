"""Peak memory and time of one attention layer, full against block-wise (online softmax), as n grows.

    python bench/limits_attention.py [--sizes 512,1024,2048,4096,8192] [--d 512] [--heads 8] [--block 128]
    python bench/limits_attention.py --device cuda      # also torch's scaled_dot_product_attention backends

CPU: model.lessons.limits.measure (one thread; peak = the CPU allocator's reports through torch.profiler;
one timed call after a warm-up). CUDA: torch.cuda.max_memory_allocated above what the inputs hold, median of
3 timed calls, our full and block-wise attention beside torch's flash, memory-efficient and math backends.
Writes bench/results/limits_attention_<device>.json."""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, table, write  # noqa: E402
from model.lessons import limits as lim  # noqa: E402


def cpu_rows(sizes, d, heads, block) -> list[dict]:
    rows = []
    for n in sizes:
        for impl in ("full", "blockwise"):
            s = lim.Setting(n=n, d=d, heads=heads, block=block)
            r = lim.measure(impl, s, repeats=1)
            rows.append({"n": n, "impl": impl, "ms": None if r["refused"] else round(r["seconds"] * 1000, 1),
                         "peak_MiB": None if r["refused"] else round(r["peak_bytes"] / 2**20, 1),
                         "estimate_MiB": round(lim.estimate_bytes(impl, s) / 2**20, 1)})
            print(rows[-1], flush=True)
    return rows


def cuda_rows(sizes, d, heads, block, dtype) -> list[dict]:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from model.nn.attention import scaled_dot_product_attention
    from model.nn.efficient import blockwise_attention
    dev = torch.device("cuda")
    impls = {"full (ours)": lambda q, k, v: scaled_dot_product_attention(q, k, v)[0],
             "blockwise (ours)": lambda q, k, v: blockwise_attention(q, k, v, block=block)}
    for name, backend in (("sdpa flash", SDPBackend.FLASH_ATTENTION), ("sdpa efficient", SDPBackend.EFFICIENT_ATTENTION),
                          ("sdpa math", SDPBackend.MATH)):
        impls[name] = (lambda b: lambda q, k, v: _sdpa(F, sdpa_kernel, b, q, k, v))(backend)
    rows = []
    for n in sizes:
        q, k, v = (torch.randn(1, heads, n, d // heads, device=dev, dtype=dtype) for _ in range(3))
        for name, fn in impls.items():
            try:
                torch.cuda.synchronize()
                base = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                with torch.no_grad():
                    fn(q, k, v)
                    torch.cuda.synchronize()
                    peak = torch.cuda.max_memory_allocated() - base
                    times = []
                    for _ in range(3):
                        t0 = time.perf_counter()
                        fn(q, k, v)
                        torch.cuda.synchronize()
                        times.append(time.perf_counter() - t0)
                rows.append({"n": n, "impl": name, "ms": round(statistics.median(times) * 1000, 3),
                             "peak_MiB": round(peak / 2**20, 1)})
            except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
                rows.append({"n": n, "impl": name, "ms": None, "peak_MiB": None, "error": str(e).split("\n")[0][:80]})
            print(rows[-1], flush=True)
    return rows


def _sdpa(F, sdpa_kernel, backend, q, k, v):
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="512,1024,2048,4096,8192")
    p.add_argument("--d", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--block", type=int, default=128)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--dtype", default="float16", help="CUDA only (flash attention needs 16-bit)")
    args = p.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    if args.device == "cuda":
        rows = cuda_rows(sizes, args.d, args.heads, args.block, getattr(torch, args.dtype))
    else:
        rows = cpu_rows(sizes, args.d, args.heads, args.block)
    print(table(rows))
    write(f"limits_attention_{args.device}", {"machine": machine(), "args": vars(args), "rows": rows})


if __name__ == "__main__":
    main()
