"""App timings in a real browser: cold start of `streamlit run app/main.py` to a healthy server and
the first page drawn, then a rerun of the inspector after a new sentence.

    python bench/app_start.py [--repeats 3]"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from playwright.sync_api import sync_playwright  # noqa: E402

from bench.common import machine, table, write  # noqa: E402
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402

IDLE = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"


# the text of the first code block on the page that is drawn and not empty: the inspector's output (the model card's
# code block is in a closed box)
SHOWN = ("(() => { const c = [...document.querySelectorAll(\"[data-testid='stMain'] [data-testid='stCode']\")]"
         ".find((e) => e.offsetParent && e.innerText.trim());"
         " return c ? c.innerText : null; })()")


def settle(page, timeout=120_000):
    """The page's heading is there and no script run is in progress (no fixed pauses)."""
    page.wait_for_selector("[data-testid='stMain'] h1", timeout=timeout)
    page.wait_for_function(IDLE, timeout=timeout)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    cold, first, insp_first, insp_rerun = [], [], [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        with streamlit_server() as url, sync_playwright() as pw:
            healthy = time.perf_counter()
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            t1 = time.perf_counter()
            page.goto(url)
            settle(page)
            drawn = time.perf_counter()
            cold.append(healthy - t0)
            first.append(drawn - t1)
            t2 = time.perf_counter()
            page.goto(f"{url}/inspector")
            page.wait_for_function(f"() => ({SHOWN}) !== null", timeout=120_000)
            settle(page)
            insp_first.append(time.perf_counter() - t2)
            box = page.locator("textarea").first
            for sentence in ("We see the sky.", "The cat drank milk yesterday.", "I go to school."):
                old = page.evaluate(f"() => {SHOWN}")
                box.fill(sentence)
                t3 = time.perf_counter()
                box.press("Control+Enter")  # submits the text area: one rerun of the page
                page.wait_for_function(f"(old) => {{ const now = {SHOWN}; return now !== null && now !== old; }}", arg=old,
                                       timeout=120_000)
                page.wait_for_function(IDLE, timeout=120_000)
                insp_rerun.append(time.perf_counter() - t3)
            browser.close()
    med = lambda xs: round(statistics.median(xs), 2)
    rows = [{"what": "cold start to healthy server", "median s": med(cold)},
            {"what": "first page drawn in the browser", "median s": med(first)},
            {"what": "inspector opened (model load + first decode)", "median s": med(insp_first)},
            {"what": "inspector rerun after a new sentence", "median s": med(insp_rerun)}]
    print(table(rows))
    print("wrote", write("app_start", {"machine": machine(), "rows": rows}))


if __name__ == "__main__":
    main()
