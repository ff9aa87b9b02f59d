"""Server time of one rerun when a control moves, in AppTest: every slider (and select slider) of the chart pages
moved through up to `--values` of its values, each rerun timed (`at.run()`, which includes AppTest's own tens of ms, so an upper bound
on the server's time). The pages rerun a section (st.fragment) where a control feeds only that section.

    python bench/section_reruns.py [--pages attention,masks,multihead,positional,why] [--values 6] [--name NAME]

Prints p50 / p95 per page and writes bench/results/section_reruns.json (`--name`). The script only drives the app
through AppTest, so it runs the same way in another checkout (copy it there) for a before/after."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))

from tests.apptest_util import run_page  # noqa: E402


def quantile(xs: list[float], q: float) -> float:
    """bench.common.pct, written out: this script imports nothing of its own checkout's bench/, so that it runs
    unchanged when copied into an older checkout."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _spread(values: list, n: int) -> list:
    """Up to n of `values`, spread from the first to the last."""
    return [values[round(i * (len(values) - 1) / max(1, n - 1))] for i in range(min(n, len(values)))]


def page_times(page: str, n_values: int) -> dict:
    at = run_page(f"{page}.py")
    moves = []  # (kind, key, values): a number slider through its range, a select slider through its options
    for s in at.slider:
        if s.key and isinstance(s.value, (int, float)) and not isinstance(s.value, bool):
            step = s.step or 1
            count = int(round((s.max - s.min) / step)) + 1
            moves.append(("slider", s.key, [type(s.value)(s.min + step * i) for i in _spread(list(range(count)), n_values)]))
    for s in at.select_slider:
        if s.key and not isinstance(s.value, (tuple, list)):
            moves.append(("select_slider", s.key, _spread(list(s.options), n_values)))
    times = {}
    for kind, key, values in moves:
        for v in values:
            widget = getattr(at, kind)(key=key)
            if str(v) == str(widget.value):
                continue
            widget.set_value(v)
            t0 = time.perf_counter()
            at.run()
            times.setdefault(key, []).append(time.perf_counter() - t0)
            if at.exception:
                raise RuntimeError(f"{page} {key}={v}: {at.exception[0].value}")
    return times


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pages", default="attention,masks,multihead,positional,why")
    p.add_argument("--values", type=int, default=6)
    p.add_argument("--name", default="section_reruns")
    a = p.parse_args()
    rows = []
    for page in a.pages.split(","):
        times = page_times(page, a.values)
        every = [x for xs in times.values() for x in xs]
        if not every:
            print(f"{page:<11} no sliders")
            continue
        rows.append({"page": page, "sliders": len(times), "reruns": len(every),
                     "p50 ms": round(statistics.median(every) * 1e3), "p95 ms": round(quantile(every, 0.95) * 1e3),
                     "per slider p50 ms": {k: round(statistics.median(v) * 1e3) for k, v in times.items()}})
        print(f"{page:<11} sliders {len(times):>2}  reruns {len(every):>3}  p50 {rows[-1]['p50 ms']:>5} ms"
              f"  p95 {rows[-1]['p95 ms']:>5} ms", flush=True)
    out = ROOT / "bench" / "results" / f"{a.name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=2) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
