"""Which charts each control redraws: a census in headless Chromium (where a control's browser time goes).

    python bench/redraws.py [--pages attention,masks,...] [--langs en,ko] [--name redraws-DATE]

Streamlit keys a Plotly chart by a hash of its figure: a rerun that sends the same figure keeps the chart as drawn,
one that sends a changed figure unmounts it and Plotly draws the new one from scratch. For every control of every
page (the controls bench/controls.py times, changed the same way) and for the language switch, this records how
many charts the page holds, how many were drawn anew, and how many of those came back with the same data and
layout as before (a redraw the learner cannot see: a figure whose JSON changes without its content, e.g. a
random id or an unfixed seed). Charts are told apart by a property set on each chart's element before the action;
content is compared by a hash of the chart's data and layout as Plotly holds them.

This census describes Streamlit's own chart element: run it with `ATLAS_CHARTS=streamlit` (the census in
docs/benchmarks.md, 2026-12-02, was taken before the app had its own). With the app's chart element
(app/fast/chart.py) a chart updated in place keeps its element, so it counts here as not drawn anew, and a
chart far below the screen is not drawn until it is scrolled near."""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import write  # noqa: E402
from bench.controls import (BY_URL, CHROMIUM, CHROMIUM_ARGS, LIST_JS, PAGES, ROOT, SKIP_KEYS, SKIP_TESTIDS,  # noqa: E402
                            WIDGETS, OneValue, PWError, Tab, act, failed, find_control, measure, open_page, reveal,
                            serve, switch_lang, sync_playwright)

# Each chart in the page body: [tag set before the last action (0 = drawn since), hash of its data and layout].
CENSUS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].map(d => {
  const s = JSON.stringify({data: d.data, layout: d.layout}, (k, v) => (ArrayBuffer.isView(v) ? Array.from(v) : v));
  let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  const t = d.__census || 0; d.__census = 1; return [t, h];
})"""


def census(tab: Tab, before: list, browser_ms: float) -> dict:
    after = tab.page.evaluate(CENSUS_JS)
    drawn = [j for j, (tag, _) in enumerate(after) if not tag]
    same = [j for j in drawn if len(before) == len(after) and before[j][1] == after[j][1]]
    return {"ms": round(browser_ms), "charts_before": len(before), "charts": len(after), "drawn": len(drawn),
            "drawn_unchanged": len(same)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default=",".join(p.url for p in PAGES))
    ap.add_argument("--langs", default="en,ko")
    ap.add_argument("--quiet-ms", type=int, default=250)
    ap.add_argument("--name", default=f"redraws-{date.today().isoformat()}")
    args = ap.parse_args()
    rows, errors = [], []
    logs = Path(tempfile.mkdtemp(prefix="atlas-redraws-"))
    q = args.quiet_ms
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        with serve(ROOT / "app" / "main.py", {"ATLAS_RUNS_DIR": str(logs / "runs")}, logs / "app.log") as (url, _):
            for lang in args.langs.split(","):
                other = "ko" if lang == "en" else "en"
                tab = Tab(browser, locale="ko-KR" if lang == "ko" else "en-US")
                tab.goto(f"{url}/?lang={lang}", q, 180)
                tab.page.wait_for_timeout(8000)  # the warm-up after the first page
                for url_name in args.pages.split(","):
                    info = BY_URL[url_name]
                    open_page(tab, info, lang, q, 180)
                    for to in (other, lang):
                        before = tab.page.evaluate(CENSUS_JS)
                        ms = switch_lang(tab, to, q, 120)[0]
                        rows.append({"page": info.url, "lang": lang, "control": f"(language → {to})",
                                     **census(tab, before, ms)})
                    for i, c in enumerate(tab.page.evaluate(LIST_JS, WIDGETS)):
                        if c["tid"] in SKIP_TESTIDS or c["key"] in SKIP_KEYS or c.get("inForm"):
                            continue
                        name = c["key"] or f"{c['tid']}:{c['label']}"
                        try:
                            el = find_control(tab, c, q, 60)
                            reveal(tab, el)
                            before = tab.page.evaluate(CENSUS_JS)
                            ms = measure(tab, act(tab, el, c, i), q, 60)[0]
                            tab.page.keyboard.press("Escape")
                            rows.append({"page": info.url, "lang": lang, "control": name, **census(tab, before, ms)})
                        except OneValue:
                            continue
                        except (PWError, RuntimeError, ValueError) as e:
                            errors.append(failed(info.url, lang, name, e))
                            with contextlib.suppress(PWError):
                                tab.page.keyboard.press("Escape")
                            continue
                        r = rows[-1]
                        print(f"{info.url:10} {lang} {name[:32]:32} {r['ms']:6} ms  charts {r['charts']:2}  drawn "
                              f"{r['drawn']:2}  unchanged {r['drawn_unchanged']}", flush=True)
                tab.close()
        browser.close()
    total = sum(r["drawn"] for r in rows)
    waste = sum(r["drawn_unchanged"] for r in rows)
    print(f"{len(rows)} actions, {total} charts drawn anew, {waste} of them unchanged; {len(errors)} errors")
    print("wrote", write(args.name, {"rows": rows, "errors": errors, "drawn": total, "drawn_unchanged": waste}))


if __name__ == "__main__":
    main()
