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
ROOT = OUT.parents[1]


def _count_cpu_flash_attention():
    """torch's FlopCounterMode knows the CUDA attention kernels but not the CPU's fused one, which the trainer's
    step runs: without this, a step on that path is credited ~4% fewer FLOPs than the same step done with explicit
    matmuls (tests/model/test_bench_flops.py). Counted as the model's math, as on the explicit path: QKᵀ and ×V forward,
    dV, dP, dQ, dK backward (not the kernel's recomputation of QKᵀ, which torch counts for its CUDA kernels);
    a causal mask is counted in full, as everywhere else."""
    from torch.utils import flop_counter as fc
    aten = torch.ops.aten

    def forward(query, key, value, *args, out_shape=None, **kwargs):
        return fc.sdpa_flop_count(query, key, value)

    def backward(grad_out, query, key, value, *args, out_shape=None, **kwargs):
        return 2 * fc.sdpa_flop_count(query, key, value)

    for name, formula in (("_scaled_dot_product_flash_attention_for_cpu", forward),
                          ("_scaled_dot_product_flash_attention_for_cpu_backward", backward)):
        op = getattr(aten, name, None)
        if op is not None and op not in fc.flop_registry:
            fc.register_flop_formula(op)(formula)


_count_cpu_flash_attention()


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


def pct(xs: list[float], q: float) -> float:
    """The nearest-rank q-quantile of xs (q = 0.95: the value 95% of the list lies below); NaN for an empty list."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def control_latency():
    """../shared/tools/control_latency.py as a module: its server, settle, watch_runs, move, pct and BARE page, for the
    benches that time slider moves its way."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("control_latency", ROOT.parent / "shared" / "tools" / "control_latency.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bare_moves(cl, browser, folder: Path, move, count: int, init_script: str | None = None) -> list:
    """`count` moves of control_latency's bare Streamlit page's slider (its script written to `folder`), each timed
    by move(page, slider); init_script runs in the page before it loads."""
    bare = folder / "bare.py"
    bare.write_text(cl.BARE)
    with cl.server(str(bare)) as url:
        pg = cl.watch_runs(browser.new_page(viewport={"width": 1400, "height": 1000}))
        if init_script:
            pg.add_init_script(init_script)
        pg.goto(url)
        pg.wait_for_selector("[data-testid='stSlider']", timeout=90_000)
        cl.settle(pg)
        moves = [move(pg, pg.locator("[data-testid='stSlider']").first) for _ in range(count)]
        pg.close()
    return moves


def page_sliders(cl, pg, url: str, path: str):
    """Opens the app's page `path` and lets it settle; yields (label, locator) for each slider of its main area."""
    pg.goto(f"{url}/{path}")
    pg.wait_for_selector("[data-testid='stMain'] h1", timeout=90_000)
    cl.settle(pg)
    sliders = pg.locator("[data-testid='stMain'] [data-testid='stSlider']")
    for i in range(sliders.count()):
        yield sliders.nth(i).locator("[data-testid='stWidgetLabel']").inner_text().strip()[:40], sliders.nth(i)


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
