"""The browser's half of the warm-up: while a learner reads the first page, their browser gets ready for the
next pages, so that opening them does not wait.

First it loads the app's chart element with Plotly and the chart theme (app/static, app.fast.chart) and draws
one small figure of each trace type off the screen (atlas_chart.js warmUp): every chart page needs them before
it can draw, and the first figure of each kind a tab draws costs the browser compiling Plotly's code for it.

Then it asks the server for `elements`: one element of each kind the pages draw, inside the sidebar's hidden
box, one group (GROUPS) a run. Drawing an element is what makes Streamlit's front end load that kind's code and
the browser compile it the first time; the page that later shows one finds it ready. It asks for each group when
the learner has not clicked or typed for QUIET_MS and no run of main.py is under way (our own element in the
hidden box, of class RUNNING, says so: main.py writes it early in its run and empties it last): drawn all at
once in the middle of their clicks, those elements slowed a language switch to 1-2 s. The learner sees nothing
of them; the next full run of the page removes them. Only public pieces: st.html with a script, st.* elements,
our own static files and elements."""
from __future__ import annotations

import streamlit as st

from app.i18n import t

# after the element mounts, wait this long (the first page finishes drawing), then the charts, then the elements
START_AFTER_MS = 2000
DWELL_MS = 600  # a group of hidden elements stays this long before the next (their code loads meanwhile)
QUIET_MS = 1500  # the hidden elements wait for this long without a click or key press (a learner reading)
MARKER = "__atlasWarm"  # window.__atlasWarm: {started, done, charts, drawn: [...], elements} (read by the tests):
# charts "loaded" or "failed", drawn the trace types drawn off the screen, elements "asked" once the hidden button below was clicked, "done" after its last group, "gave up" after three asks a group ("waiting" while the learner
# acts, "missing" without the button, "off" where NO_ELEMENTS is set)
ELEMENTS_KEY = "atlas_warm_elements"  # the hidden button that asks for `elements`
RUNNING = "atlas-run-under-way"  # the class of an element of main.py's, there while its run is under way (the
# script waits: a run of the hidden elements' own would wait for the learner's, or land among it)
NO_ELEMENTS = "__atlasWarmNoElements"  # window.__atlasWarmNoElements = true: the script does not click it (the
# browser tests set it: a run of its own, seconds after a page opens, would land among their actions)


_SCRIPT = """<script>
(() => {
  const w = window;
  if (w.%(marker)s) return;
  const state = w.%(marker)s = {started: false, done: false, charts: null, drawn: [], elements: null};
  const idle = w.requestIdleCallback ? (f) => w.requestIdleCallback(f, {timeout: 2000}) : (f) => setTimeout(f, 50);
  let lastInput = -1e9;  // the learner's last click or key press (this page's clock)
  for (const type of ["pointerdown", "keydown"]) {
    w.addEventListener(type, () => { lastInput = performance.now(); }, {capture: true, passive: true});
  }
  // the server decides which group comes next and names the one it drew in its box's key (atlas-warm-step-N,
  // or atlas-warm-done past the last): the script asks again once it is answered and its elements have had
  // DWELL ms to load their code, or once the answer is overdue (a run cut short, a full run removing the box)
  let asks = 0, askedAt = 0, answered = -1, shown = -1, shownAt = 0;
  const drawnStep = () => {
    if (document.querySelector('.st-key-atlas-warm-done')) return %(steps)d;
    const box = document.querySelector('.st-key-atlas-warm [class*="st-key-atlas-warm-step-"]');
    const m = box && box.className.match(/st-key-atlas-warm-step-(\\d+)/);
    return m ? parseInt(m[1], 10) : -1;
  };
  const elements = () => {  // last: one element of each kind, drawn hidden by the server (a fragment's run per
    // group), each group once the learner has not clicked or typed for a while and no run is under way
    if (w.%(no_elements)s) { state.elements = "off"; return; }
    const drawn = drawnStep(), now = performance.now();
    if (drawn !== shown) { shown = drawn; shownAt = now; }
    const dwelt = now - shownAt >= %(dwell)d;
    if (drawn >= %(steps)d || (drawn === %(steps)d - 1 && dwelt)) { state.elements = "done"; return; }
    if (asks >= 3 * %(steps)d) { state.elements = "gave up"; return; }
    const ready = asks === 0 || (drawn > answered && dwelt) || now - askedAt > 5000;
    if (!ready || performance.now() - lastInput < %(quiet)d || document.querySelector('.%(running)s')) {
      if (asks === 0) state.elements = "waiting";
      setTimeout(() => idle(elements), 250);
      return;
    }
    const button = document.querySelector('.st-key-%(elements_key)s button');
    if (!button) { state.elements = "missing"; return; }
    state.elements = "asked";
    answered = Math.max(answered, drawn);
    asks += 1;
    askedAt = performance.now();
    button.click();
    setTimeout(() => idle(elements), 250);
  };
  const next = () => { state.done = true; idle(elements); };
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
    from app.fast.chart import warm_js
    return _SCRIPT % {"marker": MARKER, "delay": START_AFTER_MS,
                      "charts_expr": warm_js("idle") or "null", "elements_key": ELEMENTS_KEY,
                      "no_elements": NO_ELEMENTS, "quiet": QUIET_MS, "dwell": DWELL_MS, "steps": len(GROUPS), "running": RUNNING}


STEP_KEY = "_atlas_warm_step"  # session state: the next group of hidden elements to draw


def _texts(label: str, options: list[str]) -> None:
    from app.fast.chart import mount_hidden
    mount_hidden("warm")  # the custom-component element the app's charts are drawn in
    st.title(label)
    st.header(label)
    st.subheader(label)
    st.latex(r"\mathrm{softmax}\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")
    st.markdown(f"$d_k$ **{label}** `{label}`\n\n- {label}\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    # a time of day as the pages print one (a measurement's "measured at"): Markdown reads its ":30:" as an emoji
    # shortcode and loads its emoji plugin and the emoji list for it
    st.caption(f"{label} · 09:30:00")
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
    st.dataframe([{label: 1, t("common.key"): options[0]}], hide_index=True)


# One group a run: all at once held the browser's main thread long enough to delay a learner who clicks
# meanwhile; one group at a time keeps each pause short.
GROUPS = (_texts, _fields, _choices, _numbers, _boxes, _grid)
# the data grid needs pandas: never imported here beside the server's warm-up importing it, nor waited for (the
# run would hold back the learner's next click while torch loads); until then its group is not drawn
AFTER_THE_WARM_UP = (_grid,)


@st.fragment
def elements() -> None:
    """The hidden button the script clicks, once per group of GROUPS; each click reruns this fragment only,
    which then draws the next group (one element of each kind the pages use: inputs, KaTeX, tabs, a form, the
    data grid...) in the hidden box it is called in, in place of the group before. tests/app/test_warm.py checks
    the groups against the pages. Interactive elements carry no key: their state goes with them at the next
    run. A full run draws the button alone."""
    if not st.button(t("common.warm_up"), key=ELEMENTS_KEY):
        return
    from app.fast.warmup import warm_up_done
    step = st.session_state.get(STEP_KEY, 0)
    # the script reads which group is drawn from its box's key; past the last, a box says "done"
    if step >= len(GROUPS) or (GROUPS[step] in AFTER_THE_WARM_UP and not warm_up_done()):
        with st.container(key="atlas-warm-done" if step >= len(GROUPS) else "atlas-warm-not-yet"):
            st.caption("·")  # a box needs an element to reach the page
        return  # not yet: the script asks again a few seconds later
    with st.container(key=f"atlas-warm-step-{step}"):
        GROUPS[step](t("common.warm_up"), [t("common.query"), t("common.key")])
    # only once the group is drawn: a run cut short (a second click, which the script sends once an answer is
    # overdue, interrupts it) draws the same group again at the next click instead of skipping it
    st.session_state[STEP_KEY] = step + 1
