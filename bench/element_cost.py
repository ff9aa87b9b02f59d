"""What one Streamlit element costs the browser when a page opens (run by hand).

A scratch app with two pages: an empty one and one that draws N elements of one kind. The bench opens the second
page from the sidebar again and again in headless Chromium and records, with the DevTools CPU profiler, the
main thread's JavaScript time from the click to the app being idle (idle and "(program)" samples left out).
The median over the repeats, less the same page with no elements, divided by N, is one element's cost.

    python3 bench/element_cost.py                       # every kind, N = 30, 4 repeats
    python3 bench/element_cost.py dataframe markdown     # some kinds

Results: bench/results/element-cost-<date>.json, the table in docs/benchmarks.md. This is what told us to draw
small tables as Markdown (a data grid costs ~15 ms to open, a Markdown table ~1 ms)."""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from bench.common import machine, table, write  # noqa: E402
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, served, wait_idle  # noqa: E402

APP = '''
import os
import sys
sys.path.insert(0, os.environ["ATLAS_ROOT"])
import streamlit as st
KIND, N = os.environ["KIND"], int(os.environ["N"])

def empty():
    st.title("empty")

def elements():
    st.title("elements")
    for i in range(N):
        if KIND == "markdown": st.markdown(f"Some **text** number {i} with `code` and more words.")
        elif KIND == "caption": st.caption(f"caption {i} with words")
        elif KIND == "header": st.header(f"Header {i}")
        elif KIND == "columns(2)+2 markdown":
            a, b = st.columns(2); a.markdown(f"left {i}"); b.markdown(f"right {i}")
        elif KIND == "slider": st.slider(f"slider {i}", 0, 10, 5, key=f"w{i}")
        elif KIND == "selectbox": st.selectbox(f"select {i}", ["a", "b", "c"], key=f"w{i}")
        elif KIND == "multiselect": st.multiselect(f"pick {i}", ["a", "b", "c"], key=f"w{i}")
        elif KIND == "number_input": st.number_input(f"number {i}", 0, 10, 3, key=f"w{i}")
        elif KIND == "text_area": st.text_area(f"area {i}", "1 2 3", key=f"w{i}")
        elif KIND == "toggle": st.toggle(f"toggle {i}", key=f"w{i}")
        elif KIND == "button": st.button(f"button {i}", key=f"w{i}")
        elif KIND == "download_button": st.download_button(f"Download {i}", "a,b", file_name="x.csv", key=f"w{i}")
        elif KIND == "metric": st.metric(f"metric {i}", "1.23")
        elif KIND == "info": st.info(f"info {i}")
        elif KIND == "pills(10 options)": st.pills(f"pills {i}", [f"word {j}" for j in range(10)], key=f"w{i}")
        elif KIND == "dataframe(2x2)": st.dataframe([{"a": 1, "b": 2}, {"a": 3, "b": 4}], hide_index=True)
        elif KIND == "markdown table(2x2)": st.markdown("| a | b |\\n|---:|---:|\\n| 1 | 2 |\\n| 3 | 4 |")
        elif KIND.startswith("chart"):  # the app's chart element (a bar chart; most of the 30 below the screen)
            from app.charts.curves import bar_chart
            from app.fast import plot
            from app.ui import show_figure
            fig = bar_chart(["a", "b", "c"], [0.2, 0.5, 0.3], title=f"chart {i}")
            if KIND == "chart element":
                plot(fig, key=f"w{i}")
            else:
                show_figure(fig, name=f"chart{i}", csv="a,b", key=f"w{i}")

st.navigation([st.Page(empty, title="Empty", default=True), st.Page(elements, title="Elements", url_path="elements")]).run()
'''
KINDS = ["none", "markdown", "caption", "header", "columns(2)+2 markdown", "slider", "selectbox", "multiselect",
         "number_input", "text_area", "toggle", "button", "download_button", "metric", "info", "pills(10 options)",
         "dataframe(2x2)", "markdown table(2x2)", "chart element", "chart element + CSV button (show_figure)"]


def js_ms(page, cdp, link) -> float:
    """Main-thread JavaScript ms of one click on `link` until the app is idle."""
    cdp.send("Profiler.start")
    link.click()
    page.wait_for_timeout(150)
    wait_idle(page, draw_all=False)
    prof = cdp.send("Profiler.stop")["profile"]
    names = {n["id"]: n["callFrame"]["functionName"] for n in prof["nodes"]}
    return sum(d for sid, d in zip(prof["samples"], prof["timeDeltas"])
               if names[sid] not in ("(idle)", "(program)")) / 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kinds", nargs="*", default=KINDS[1:])
    ap.add_argument("--n", type=int, default=30, help="elements on the page")
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--name", default=f"element-cost-{date.today().isoformat()}")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="atlas-elements-"))
    app = folder / "app.py"
    app.write_text(APP, encoding="utf-8")
    (folder / "static").symlink_to(ROOT / "app" / "static")  # the app's chart element draws from app/static
    medians: dict[str, float] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for kind in ["none", *[k for k in args.kinds if k != "none"]]:
            with served(script=app, env_extra={"KIND": kind, "N": str(args.n), "ATLAS_ROOT": str(ROOT)}) as (url, _):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(f"{url}/")
                wait_idle(page, draw_all=False)
                page.wait_for_timeout(1500)
                cdp = page.context.new_cdp_session(page)
                cdp.send("Profiler.enable")
                cdp.send("Profiler.setSamplingInterval", {"interval": 200})
                nav = page.locator("[data-testid='stSidebarNav']")
                times = []
                for i in range(args.repeats + 1):  # the first visit loads the element's code: not counted
                    ms = js_ms(page, cdp, nav.get_by_role("link", name="Elements", exact=True))
                    if i:
                        times.append(ms)
                    nav.get_by_role("link", name="Empty", exact=True).click()
                    page.wait_for_timeout(150)
                    wait_idle(page, draw_all=False)
                    page.wait_for_timeout(500)
                page.close()
            medians[kind] = statistics.median(times)
            print(f"{kind:24} {medians[kind]:7.1f} ms for {args.n}", flush=True)
        browser.close()
    rows = [{"element": k, f"page of {args.n} (JS ms)": round(v, 1),
             "one element (ms)": round((v - medians["none"]) / args.n, 2)} for k, v in medians.items() if k != "none"]
    rows.sort(key=lambda r: -r["one element (ms)"])
    print(table(rows))
    write(args.name, {"machine": machine(), "n": args.n, "repeats": args.repeats, "empty_page_ms": medians["none"],
                      "rows": rows})


if __name__ == "__main__":
    main()
