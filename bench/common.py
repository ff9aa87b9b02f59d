"""Shared bits of the benchmarks: machine description, matmul peak, JSON output."""
from __future__ import annotations

import json
import platform
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

OUT = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpu": platform.processor() or platform.machine(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_peak(device, dtype=torch.float32, n=1024, repeats=20) -> float:
    """Measured FLOP/s of a square matmul (the ceiling that training can approach)."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    sync(device)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        sync(device)
        times.append(time.perf_counter() - t0)
    return 2 * n ** 3 / statistics.median(times)


def write(name: str, payload: dict) -> Path:
    OUT.mkdir(exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
    return path


def table(rows: list[dict]) -> str:
    cols = list(rows[0])
    width = {c: max(len(str(c)), *(len(str(r[c])) for r in rows)) for c in cols}
    line = " | ".join(str(c).ljust(width[c]) for c in cols)
    sep = "-+-".join("-" * width[c] for c in cols)
    return "\n".join([line, sep] + [" | ".join(str(r[c]).ljust(width[c]) for c in cols) for r in rows])
