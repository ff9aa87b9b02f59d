"""The first opening of each page in a browser tab, two checkouts side by side.

    python bench/first_open.py --a /tmp/before/app/main.py [--b app/main.py] [--rounds 4] [--read-s 10]
                               [--pages attention,positional,why] [--langs en,ko] [--name first-open-<date>]

Starts both apps (`streamlit run`, an empty ATLAS_RUNS_DIR each) and, in each round, for A and B in turn (the
order alternates between rounds): a fresh browser context opens the first page in the language, stays on it for
--read-s seconds (a learner reading it, while the warm-up works), then opens the pages from the sidebar in the
given order. Each opening is timed as in bench/controls.py (the click -> the app idle). The first page's own
time is recorded too. The bench/controls.py run opens the pages right after the first page; this one asks what
a learner who reads the first page first gets, and is the measure of the browser's warm-up (app/fast/browser_warm.py).
Writes bench/results/<name>.json with every time and the medians."""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from bench.common import machine, table, write  # noqa: E402
from bench.controls import BY_URL, CHROMIUM, CHROMIUM_ARGS, Tab, load_average, open_page, serve  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--a", required=True, help="the app to compare against (its main.py)")
    ap.add_argument("--b", default=str(ROOT / "app" / "main.py"))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--read-s", type=float, default=10.0)
    ap.add_argument("--pages", default="attention,positional,why")
    ap.add_argument("--langs", default="en,ko")
    ap.add_argument("--quiet-ms", type=int, default=250)
    ap.add_argument("--name", default=f"first-open-{date.today().isoformat()}")
    args = ap.parse_args()
    pages, langs = args.pages.split(","), args.langs.split(",")
    times = {side: {"first_page": []} for side in "AB"}
    load_before, t_start = load_average(), time.time()
    logs = Path(tempfile.mkdtemp(prefix="atlas-first-open-"))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        with serve(Path(args.a), {"ATLAS_RUNS_DIR": tempfile.mkdtemp()}, logs / "a.log") as (url_a, _), \
                serve(Path(args.b), {"ATLAS_RUNS_DIR": tempfile.mkdtemp()}, logs / "b.log") as (url_b, _):
            for r in range(args.rounds):
                sides = (("A", url_a), ("B", url_b))
                for side, url in sides if r % 2 == 0 else sides[::-1]:
                    for lang in langs:
                        tab = Tab(browser, locale="ko-KR" if lang == "ko" else "en-US")
                        try:
                            first, _, _ = tab.goto(f"{url}/?lang={lang}", args.quiet_ms, 180)
                            times[side]["first_page"].append(round(first, 1))
                            tab.page.wait_for_timeout(args.read_s * 1000)
                            for page in pages:
                                ms = open_page(tab, BY_URL[page], lang, args.quiet_ms, 120)[0]
                                times[side].setdefault(f"{page} {lang}", []).append(round(ms, 1))
                        finally:
                            tab.close()
                print(f"round {r + 1}/{args.rounds} done", flush=True)
        browser.close()
    rows = [{"opening": k, "A p50": round(statistics.median(times["A"][k]), 1),
             "B p50": round(statistics.median(times["B"][k]), 1), "A": times["A"][k], "B": times["B"][k]}
            for k in times["A"]]
    payload = {"machine": machine(), "load_avg_before": load_before, "load_avg_after": load_average(),
               "minutes": round((time.time() - t_start) / 60, 1), "command": " ".join(["python bench/first_open.py"] + sys.argv[1:]),
               "a": args.a, "b": args.b, "read_s": args.read_s, "rows": rows}
    print(table([{k: v for k, v in row.items() if k not in ("A", "B")} for row in rows]))
    print("written:", write(args.name, payload))


if __name__ == "__main__":
    main()
