"""The browser's half of the warm-up: while a learner reads the first page, their browser loads the code the
next pages draw with, so that opening them does not wait for it.

Streamlit's front end loads each kind of element's code (Plotly's 4.6 MB chunk, the data grid, sliders, the
KaTeX renderer...) the first time a page of the tab shows one. Measured in headless Chromium (bench notes,
docs/benchmarks.md 2026-12-02): the first chart page of a tab took 3.3-3.6 s to open, a second visit 0.3-0.5
s. This script imports the same modules, from the same URLs, when the browser is idle; the page that later
needs one finds it loaded (a module is loaded once per document and URL), and does the same work as before.
First of all it loads the app's chart element with Plotly (4.8 MB) and the chart theme, and draws one small
figure of each trace type off the screen (app.chart_element.warm_js): every chart page needs them before it can
draw, and the first figure of each kind a tab draws costs the browser compiling Plotly's code for it.

It touches no element of the page (the figures are drawn in a box of its own, off the screen, and removed).
A module name that this Streamlit version does not have is left out (the page then loads what it needs
itself, as without this script).

Loading a module does not compile the code that draws its element: the browser compiles that the first time an
element of the kind is drawn. Measured (docs/benchmarks.md, 2026-12-04): opening the attention page first in a
tab took 1,126 ms of the main thread against 442-577 ms the next times, the difference being the compiler, the
garbage collector and React, Markdown and styling code running for the first time. So, last, the script asks
the server for `elements`: one element of each kind the pages draw, inside the sidebar's hidden box, one group
(GROUPS) a run. It asks for each group when the learner has not clicked or typed for QUIET_MS and no run is
under way: drawn all at once in the middle of their clicks, those elements slowed a language switch to 1-2 s
(bench notes). The learner sees nothing of them; the next full run of the page removes them."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import streamlit as st

from app.i18n import t

# The element code our pages use, in the order a learner meets it (the first chart page needs the first ones;
# BidiComponent is the custom-component element the app's charts are drawn in, app/chart_element.py, and
# Streamlit's own chart element is left for the ViT page's drawing canvas, the one chart that still uses it)
ENTRY_CHUNKS = ("BidiComponent", "rehype-katex", "remark-emoji", "ButtonGroup", "Checkbox", "TextInput", "TextArea",
                "Slider", "Selectbox", "NumberInput", "DataFrame", "Metric", "DownloadButton", "Multiselect",
                "Progress", "StreamlitSyntaxHighlighter", "PlotlyChart")
# after the element mounts, wait this long (the first page finishes drawing), then one module per idle slot
START_AFTER_MS = 2000
QUIET_MS = 1500  # the hidden elements wait for this long without a click or key press (a learner reading)
MARKER = "__atlasWarm"  # window.__atlasWarm: {started, done, loaded: [...], failed: [...], charts, drawn: [...],
# elements} (read by the tests): charts "loaded" or "failed", drawn the trace types drawn off the screen, elements
# "asked" once the hidden button below was clicked, "done" after its last group ("waiting" while the learner
# acts, "missing" without the button, "off" where NO_ELEMENTS is set)
ELEMENTS_KEY = "atlas_warm_elements"  # the hidden button that asks for `elements`
NO_ELEMENTS = "__atlasWarmNoElements"  # window.__atlasWarmNoElements = true: the script does not click it (the
# browser tests set it: a run of its own, seconds after a page opens, would land among their actions)


def static_js_dir() -> Path:
    import streamlit
    return Path(streamlit.__file__).parent / "static" / "static" / "js"


@functools.lru_cache(maxsize=1)
def chunk_files() -> tuple[str, ...]:
    """The file names of ENTRY_CHUNKS in the installed Streamlit (`PlotlyChart.D9Z0_fxz.js`): each entry
    whose name matches exactly one file (a name with a content hash after it)."""
    folder = static_js_dir()
    try:
        files = [p.name for p in folder.iterdir() if p.suffix == ".js"]
    except OSError:
        return ()
    out = []
    for entry in ENTRY_CHUNKS:
        found = [f for f in files if f.startswith(entry + ".") and f.count(".") == 2]
        if len(found) == 1:
            out.append(found[0])
    return tuple(out)


_SCRIPT = """<script>
(() => {
  const w = window;
  if (w.%(marker)s) return;
  const names = %(names)s;
  const state = w.%(marker)s = {started: false, done: false, loaded: [], failed: [], charts: null, drawn: [],
                                elements: null};
  const main = document.querySelector('script[type="module"][src*="/static/js/index."]');
  if (!main) { state.done = true; return; }
  const idle = w.requestIdleCallback ? (f) => w.requestIdleCallback(f, {timeout: 2000}) : (f) => setTimeout(f, 50);
  let i = 0;
  let lastInput = -1e9;  // the learner's last click or key press (this page's clock)
  for (const type of ["pointerdown", "keydown"]) {
    w.addEventListener(type, () => { lastInput = performance.now(); }, {capture: true, passive: true});
  }
  let step = 0, askedAt = 0;  // the next group of hidden elements (app.warm.GROUPS), when the last was asked for
  const elements = () => {  // last: one element of each kind, drawn hidden by the server (a fragment's run per
    // group), each group once the learner has not clicked or typed for a while and no run is under way
    if (w.%(no_elements)s) { state.elements = "off"; return; }
    if (step >= %(steps)d) { state.elements = "done"; return; }
    // the group asked for is drawn (or long overdue: a full run of the learner's may have come first)
    const drawn = step === 0 || document.querySelector('.st-key-atlas-warm-step-' + (step - 1)) ||
                  performance.now() - askedAt > 5000;
    if (!drawn || performance.now() - lastInput < %(quiet)d ||
        document.querySelector('[data-testid="stStatusWidget"]')) {
      if (step === 0) state.elements = "waiting";
      setTimeout(() => idle(elements), 250);
      return;
    }
    const button = document.querySelector('.st-key-%(elements_key)s button');
    if (!button) { state.elements = "missing"; return; }
    state.elements = "asked";
    step += 1;
    askedAt = performance.now();
    button.click();
    setTimeout(() => idle(elements), 250);
  };
  const next = () => {
    if (i >= names.length) { state.done = true; idle(elements); return; }
    const name = names[i++];
    import(new URL(name, main.src).href)
      .then(() => state.loaded.push(name), () => state.failed.push(name))
      .finally(() => idle(next));
  };
  setTimeout(() => {
    state.started = true;
    idle(() => {
      try {  // the app's chart element first: the next chart page needs Plotly before anything else
        const p = (() => %(charts_expr)s)();
        if (p) p.then((drawn) => { state.charts = "loaded"; state.drawn = drawn; }, () => { state.charts = "failed"; })
                .finally(() => idle(next));
        else idle(next);
      } catch (e) { state.charts = "failed"; idle(next); }
    });
  }, %(delay)d);
})();
</script>"""


def script() -> str:
    """The <script> for st.html(..., unsafe_allow_javascript=True): idempotent per browser tab."""
    from app.chart_element import warm_js
    return _SCRIPT % {"marker": MARKER, "names": json.dumps(list(chunk_files())), "delay": START_AFTER_MS,
                      "charts_expr": warm_js("idle") or "null", "elements_key": ELEMENTS_KEY,
                      "no_elements": NO_ELEMENTS, "quiet": QUIET_MS, "steps": len(GROUPS)}


STEP_KEY = "_atlas_warm_step"  # session state: the next group of hidden elements to draw


def _texts(label: str, options: list[str]) -> None:
    st.title(label)
    st.header(label)
    st.subheader(label)
    st.latex(r"\mathrm{softmax}\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")
    st.markdown(f"$d_k$ **{label}** `{label}`\n\n- {label}\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    st.code(label, language=None)
    st.json({label: [1, 2]}, expanded=False)


def _fields(label: str, options: list[str]) -> None:
    left, right = st.columns([1, 2])
    left.text_input(label, label)
    right.text_area(label, label, height=68)
    st.toggle(label)
    st.checkbox(label)
    st.radio(label, options, horizontal=True)


def _choices(label: str, options: list[str]) -> None:
    st.segmented_control(label, options, default=options[0])
    st.pills(label, options)
    st.selectbox(label, options)
    st.multiselect(label, options, placeholder=t("common.choose_options"))


def _numbers(label: str, options: list[str]) -> None:
    st.slider(label, 0, 8, 1)
    st.select_slider(label, [1, 2, 4])
    st.number_input(label, 0, 8, 1)
    st.metric(label, "1", delta="×2", delta_color="off", help=label)
    st.progress(0.5, text=label)


def _boxes(label: str, options: list[str]) -> None:
    st.info(label)
    st.warning(label)
    st.success(label)
    st.error(label)
    st.download_button(label, label, file_name="warm.txt")
    st.file_uploader(label)
    for tab in st.tabs(options):
        tab.caption(label)
    with st.expander(label):
        st.caption(label)
    with st.form("atlas-warm-form"):
        st.form_submit_button(label)


def _grid(label: str, options: list[str]) -> None:
    from app.jobs import warm_up_done
    if warm_up_done():  # the data grid needs pandas: never imported here beside the server's warm-up importing
        # it, nor waited for (this run would hold back the learner's next click while torch loads)
        st.dataframe([{label: 1, t("common.key"): options[0]}], hide_index=True)


# One group a run: all at once took 460-600 ms of the browser's main thread (bench notes), a wait for a learner
# who clicks meanwhile; a group takes about a sixth of that.
GROUPS = (_texts, _fields, _choices, _numbers, _boxes, _grid)


@st.fragment
def elements() -> None:
    """The hidden button the script clicks, once per group of GROUPS; each click reruns this fragment only,
    which then draws the next group (one element of each kind the pages use: inputs, KaTeX, tabs, a form, the
    data grid...) in the hidden box it is called in, in place of the group before. tests/app/test_warm.py checks
    the groups against the pages. Interactive elements carry no key: their state goes with them at the next
    run. A full run draws the button alone."""
    if not st.button(t("common.warm_up"), key=ELEMENTS_KEY):
        return
    step = st.session_state.get(STEP_KEY, 0)
    if step >= len(GROUPS):
        return
    st.session_state[STEP_KEY] = step + 1
    with st.container(key=f"atlas-warm-step-{step}"):  # the script waits for it before the next click
        GROUPS[step](t("common.warm_up"), [t("common.query"), t("common.key")])
