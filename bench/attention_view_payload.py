"""Bytes the browser gets for the attention view (app/fast/attention_view.py) against the grid figure it replaces
(app.charts.heatmaps.head_grid through the chart element), and the time to build each.

    python bench/attention_view_payload.py

Cases: the shipped en-ko model (2 layers x 4 heads) on a 24-token sentence, each kind of its attention; a
12-layer x 12-head model on 64 tokens (BERT-base's shape). Weights are random softmax rows of those shapes (the
payload's size depends on the shapes and the tokens' text only). Writes bench/results/attention_view_payload.json."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, table, write  # noqa: E402


def rows_softmax(shape, seed=0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(shape) * 3
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def case(name: str, layers: int, heads: int, n: int) -> dict:
    from app.charts.heatmaps import head_grid
    from app.charts.style import ATTN_SCALE, PALETTE, named_scale, ready_figure
    from app.fast import attention_view as av
    from app.fast.chart import PLOT_CONFIG, payload as chart_payload
    w = rows_softmax((layers, heads, n, n))
    tokens = [f"▁word{i}" for i in range(n)]
    one = {"id": "encoder_self", "label": "encoder self-attention", "weights": w, "q": tokens, "k": tokens,
           "q_title": "query", "k_title": "key", "groups": None, "decoder": False}
    t0 = time.perf_counter()
    data = av.payload([one], {}, named_scale(ATTN_SCALE), PALETTE, "grid")
    view_s = time.perf_counter() - t0
    _, back = av.read_payload(data)
    t0 = time.perf_counter()
    fig = ready_figure(head_grid(w, layer_title="layer", head_title="head"))
    grid = chart_payload(fig, PLOT_CONFIG, "")
    grid_s = time.perf_counter() - t0
    return {"case": name, "layers": layers, "heads": heads, "tokens": n, "view_bytes": len(data),
            "view_build_ms": round(view_s * 1000, 1), "max_error": float(np.abs(back - w.ravel()).max()),
            "grid_figure_bytes": len(grid), "grid_build_ms": round(grid_s * 1000, 1)}


def main() -> None:
    rows = [case("shipped en-ko, one kind", 2, 4, 24), case("12 x 12 heads, 64 tokens", 12, 12, 64)]
    print(table(rows))
    write("attention_view_payload", {"machine": machine(), "rows": rows})
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
