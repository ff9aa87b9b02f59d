"""Which figures Plotly lays out twice in the browser.

    python bench/margins.py [--pages attention,masks,...] [--langs en,ko] [--out bench/results/margins.json]

Plotly's automatic margins (the `automargin` that Streamlit's chart theme turns on for every axis) draw a figure,
measure its tick labels, titles, colour bars and legends, and when they need more room than the figure's margins
give, draw the whole figure again with the larger margins: about a third of the browser's time on the chart pages
(bench/controls.py with automargin switched off, docs/benchmarks.md). A figure whose margins already hold what
it shows is drawn once. This opens every page in headless Chromium (in each language) and reads, for every Plotly
chart, the margins it was given (`_fullLayout.margin`) against the ones Plotly drew it with (`_fullLayout._size`):
a side that grew means a second layout pass. Prints one line a figure and writes the JSON."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from app.pages_list import PAGES  # noqa: E402
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, MARGINS_JS, grown, served, wait_idle  # noqa: E402

def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", default=",".join(p.url for p in PAGES))
    ap.add_argument("--langs", default="en,ko")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "margins.json"))
    args = ap.parse_args()
    pages = [p for p in PAGES if p.url in args.pages.split(",")]
    results = []
    with served(env_extra={"ATLAS_TRAINER_STANDBY": "0"}) as (url, _), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        for lang in args.langs.split(","):
            for p in pages:
                page.goto(f"{url}/{p.url}?lang={lang}")
                wait_idle(page)
                page.wait_for_timeout(1500)  # the last figures finish drawing
                for fig in page.evaluate(MARGINS_JS):
                    fig.update(page=p.url, lang=lang, grown=grown(fig))
                    results.append(fig)
                    mark = "TWICE " + json.dumps(fig["grown"]) if fig["grown"] else "once"
                    slack = " ".join(f"{k}{v}" for k, v in fig["slack"].items())
                    print(f"{lang} {p.url:<11} {fig['key'] or fig['title']:<40} {mark:<38} slack {slack}", flush=True)
        browser.close()
    twice = [r for r in results if r["grown"]]
    print(f"{len(twice)} of {len(results)} figures laid out twice")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"figures": results, "twice": len(twice), "total": len(results)},
                                         indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
