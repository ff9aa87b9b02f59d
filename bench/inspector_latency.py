"""Inspector latency with the shipped en-ko model.

    python bench/inspector_latency.py [--device cpu] [--repeats 30]

1. tokenize + encode + greedy decode of a 12-word sentence with all attention recorded (p50, p90);
2. the explicit path (weights kept) against the fused path (no weights) for one forward pass;
3. building the layers × heads figure (app.charts.heatmaps.head_grid) and the detail heatmap."""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from app.charts.heatmaps import attention_heatmap, head_grid  # noqa: E402
from bench.common import machine, pct, sync, table, write  # noqa: E402
from model.training.checkpoint import load_model_dir  # noqa: E402
from model.inference.decode import greedy_decode  # noqa: E402

SENTENCE = "My friend did not buy a red apple at the market today ."  # 12 words (some out of domain)
IN_DOMAIN = "The teacher did not buy a red apple yesterday."


def timed(fn, repeats, device):
    out = []
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        out.append(time.perf_counter() - t0)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--model", default=str(Path(__file__).resolve().parent.parent / "assets" / "models" / "en-ko"))
    args = p.parse_args()
    device = torch.device(args.device)
    loaded = load_model_dir(args.model, device=device)
    tok, model = loaded.tokenizer, loaded.model
    rows = []

    for name, text in (("12-word sentence", SENTENCE), ("in-domain sentence", IN_DOMAIN)):
        def full():
            ids = tok.encode(text) + [tok.eos_id]
            return greedy_decode(model, ids, bos_id=tok.bos_id, eos_id=tok.eos_id, max_len=40, record=True)
        full()
        ts = timed(full, args.repeats, device)
        res = full()
        rows.append({"what": f"tokenize+encode+greedy+attention ({name}, {len(res.tokens)} tokens out)",
                     "p50 ms": round(statistics.median(ts) * 1e3, 2), "p90 ms": round(pct(ts, 0.9) * 1e3, 2)})

    ids = tok.encode(SENTENCE) + [tok.eos_id]
    res = greedy_decode(model, ids, bos_id=tok.bos_id, eos_id=tok.eos_id, max_len=40)
    src = torch.tensor([ids], device=device)
    tgt = torch.tensor([[tok.bos_id] + res.tokens], device=device)
    with torch.inference_mode():
        fused = lambda: model(src, tgt)
        explicit = lambda: model(src, tgt, return_attention=True)
        fused(), explicit()
        tf, te = [], []
        for _ in range(args.repeats):  # alternate the two paths
            tf += timed(fused, 1, device)
            te += timed(explicit, 1, device)
    f50, e50 = statistics.median(tf), statistics.median(te)
    rows.append({"what": "forward, fused path (no weights)", "p50 ms": round(f50 * 1e3, 3), "p90 ms": round(pct(tf, 0.9) * 1e3, 3)})
    rows.append({"what": f"forward, explicit path (all weights) — {e50 / f50:.2f}× fused", "p50 ms": round(e50 * 1e3, 3),
                 "p90 ms": round(pct(te, 0.9) * 1e3, 3)})

    att = res.attention
    w = att.stack("encoder_self")[:, 0].float().cpu()
    labels = [tok.id_to_piece(i) for i in ids]
    head_grid(w)
    tg = timed(lambda: head_grid(w), args.repeats, torch.device("cpu"))
    rows.append({"what": f"build layers×heads figure ({w.shape[0]}×{w.shape[1]} heads)", "p50 ms": round(statistics.median(tg) * 1e3, 2),
                 "p90 ms": round(pct(tg, 0.9) * 1e3, 2)})
    td = timed(lambda: attention_heatmap(w[0, 0], labels, labels), args.repeats, torch.device("cpu"))
    rows.append({"what": "build one detail heatmap", "p50 ms": round(statistics.median(td) * 1e3, 2), "p90 ms": round(pct(td, 0.9) * 1e3, 2)})
    print(table(rows))
    print("wrote", write(f"inspector_latency_{device.type}", {"machine": machine(), "rows": rows}))


if __name__ == "__main__":
    main()
