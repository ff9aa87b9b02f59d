"""Write app/static/plotly_theme.json: the Plotly template Streamlit's own chart element gives a figure in its
light and its dark theme, read back from a chart it drew in headless Chromium.

Streamlit's chart theme lives in its front end: the Python side registers a template of placeholder colours
(#000001...), and the browser swaps them for the theme's colours and merges the theme's fonts, axes and margins
into the template. The app's chart element (app/fast/chart.py, app/static/atlas_chart.js) draws charts with
Plotly itself, so it applies the template this script records, and a chart looks as st.plotly_chart drew it.
Run it again after upgrading Streamlit: `python3 tools/capture_plotly_theme.py`."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, served  # noqa: E402

SCRIPT = """
import plotly.graph_objects as go
import streamlit as st
st.title("theme")
st.plotly_chart(go.Figure(go.Scatter(y=[1, 2])))
"""
READ_JS = """() => { const gd = document.querySelector('.js-plotly-plot');
  return gd && gd.layout && gd.layout.template ? JSON.stringify(gd.layout.template) : null; }"""


def main() -> None:
    from playwright.sync_api import sync_playwright
    import streamlit
    out = {"streamlit": streamlit.__version__}
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "theme_page.py"
        script.write_text(SCRIPT)
        with served(root=Path(d), script=script) as (url, _), sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for scheme in ("light", "dark"):
                page = browser.new_page(color_scheme=scheme)
                page.goto(url)
                page.wait_for_function(READ_JS, timeout=60_000)
                out[scheme] = json.loads(page.evaluate(READ_JS))
                page.close()
            browser.close()
    for scheme in ("light", "dark"):
        leftover = [c for c in ("#000001", "#000011", "#000021", "#000038") if c in json.dumps(out[scheme])]
        if leftover:
            raise SystemExit(f"{scheme}: placeholder colours left in the template: {leftover}")
    path = ROOT / "app" / "static" / "plotly_theme.json"
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, sort_keys=True, separators=(",", ":")) + "\n")
    tmp.replace(path)
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
