"""How long one full garbage collection holds the GIL in a server's process, with and without app.fast.heap's
gc.freeze (what the app has loaded by its first pages: torch, plotly, Streamlit, the chart builders, the model).

    python bench/gc_freeze.py

Prints the median of five full collections before and after freezing what is alive."""
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy  # noqa: E402,F401
import plotly.graph_objects  # noqa: E402,F401
import streamlit  # noqa: E402,F401
import torch  # noqa: E402,F401

import app.charts.curves  # noqa: E402,F401
import app.charts.headview  # noqa: E402,F401
import app.charts.heatmaps  # noqa: E402,F401
import model.nn.transformer  # noqa: E402,F401


def full_collection_ms() -> float:
    times = []
    for _ in range(5):
        t = time.perf_counter()
        gc.collect()
        times.append(time.perf_counter() - t)
    return sorted(times)[2] * 1000


if __name__ == "__main__":
    print(f"objects tracked: {len(gc.get_objects())}")
    print(f"full collection, nothing frozen: {full_collection_ms():.1f} ms")
    gc.freeze()
    print(f"full collection, after gc.freeze: {full_collection_ms():.1f} ms ({gc.get_freeze_count()} objects frozen)")
