"""control_latency.py's method (../shared/tools/control_latency.py: a key press on a slider -> the run it started
has finished on the websocket, the status widget is gone, two frames drawn; a bare Streamlit slider in the same
run) for pages that compute in the background (app.resources.in_background): before each move the page is let
settle until no measurement is pending (app.ui.pending's note is gone), so the clock never stops at the watching
fragment's own run; and where a move leaves a measurement pending, the time until it lands (the note gone) is
printed beside it.

    python bench/settled_latency.py --pages limits --moves 3

Prints one line per slider and p50 / p95 over all moves; writes bench/results/settled_latency.json."""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import bare_moves as bare_page_moves, control_latency as tool, page_sliders, write  # noqa: E402

PENDING = "[class*='st-key-atlas-pending']"


def settled_move(cl, pg, slider) -> tuple[float, float | None]:
    """Waits until nothing is pending, then one move: (seconds to the move's answer, seconds until what it left
    pending landed, or None)."""
    while pg.locator(PENDING).count():
        pg.wait_for_timeout(50)
    cl.settle(pg)
    t0 = time.time()
    took = cl.move(pg, slider)
    if not pg.locator(PENDING).count():
        return took, None
    pg.wait_for_selector(PENDING, state="detached", timeout=180_000)
    return took, time.time() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", nargs="*", default=["limits"])
    ap.add_argument("--moves", type=int, default=3)
    args = ap.parse_args()
    cl = tool()
    from playwright.sync_api import sync_playwright
    rows, every = [], []
    with tempfile.TemporaryDirectory() as d, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=cl.shutil.which("chromium"), args=["--no-sandbox", "--disable-gpu"])
        bare_moves = bare_page_moves(cl, browser, Path(d), cl.move, 9)
        with cl.server("app/main.py") as url:
            pg = cl.watch_runs(browser.new_page(viewport={"width": 1400, "height": 1000}))
            for path in args.pages:
                for label, slider in page_sliders(cl, pg, url, path):
                    got = [settled_move(cl, pg, slider) for _ in range(args.moves)]
                    answers = [a for a, _ in got]
                    landed = [b for _, b in got if b is not None]
                    rows.append({"page": path, "slider": label, "answers_s": answers, "landed_s": landed})
                    every += answers
            pg.close()
        browser.close()
    b = statistics.median(bare_moves)
    print(f"bare Streamlit slider: median {b * 1000:.0f} ms")
    for r in sorted(rows, key=lambda r: -statistics.median(r["answers_s"])):
        med = statistics.median(r["answers_s"])
        land = (f"  landed after {statistics.median(r['landed_s']) * 1000:6.0f} ms ({len(r['landed_s'])} of "
                f"{len(r['answers_s'])})") if r["landed_s"] else ""
        print(f"{r['page']:10s} {r['slider']:40s} median {med * 1000:6.0f} ms ({med / b:4.1f}x bare)  worst "
              f"{max(r['answers_s']) * 1000:6.0f} ms{land}")
    p50, p95 = cl.pct(every, .5), cl.pct(every, .95)
    print(f"all moves: n={len(every)} p50 {p50 * 1000:.0f} ms ({p50 / b:.1f}x bare), p95 {p95 * 1000:.0f} ms "
          f"({p95 / b:.1f}x bare)")
    write("settled_latency", {"bare_s": bare_moves, "rows": rows, "p50_s": p50, "p95_s": p95})


if __name__ == "__main__":
    main()
