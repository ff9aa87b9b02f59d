"""The attention and masks pages: a control inside a section reruns that section only (a
Streamlit fragment), never the rest of the page, and what a section shows is the same whether the whole
page ran or only the section, with a cold or a warm figure cache. The "Time both" demonstration runs one
timed run per rerun of its section, with a progress bar, and can be cancelled. (Speed itself is a
benchmark, not a test: docs/benchmarks.md.)"""
from __future__ import annotations

import contextlib
import json
import sys

import pytest

from tests.apptest_read import figures
from tests.apptest_util import assert_clean, run_page


@pytest.fixture(autouse=True)
def server_drawn_choices(monkeypatch):
    """Sliders that only change the drawing as Streamlit sliders (where the browser cannot answer them): the fragment
    each reruns is the subject here; tests/pages/test_page_positional_choices.py and test_page_masks_choices.py
    cover the browser's answer."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")


@contextlib.contextmanager
def fragment_reruns(at, key: str):
    """Inside the block, at.run() reruns only the fragment `key` (`@st.fragment(key=...)`), as Streamlit does
    when a browser reports a change of a widget inside it. AppTest itself always reruns the whole script, so
    the rerun request it builds gets the fragment's id (restored afterwards)."""
    from streamlit.testing.v1 import local_script_runner as lsr

    ids = at._fragment_storage.resolve_target(key)  # AppTest keeps the fragments of its last runs here
    saved = lsr.RerunData

    def rerun_data(*args, **kwargs):
        return saved(*args, **kwargs, fragment_id_queue=list(ids))

    lsr.RerunData = rerun_data
    try:
        yield
    finally:
        lsr.RerunData = saved


@contextlib.contextmanager
def keep_calls():
    """Record the key of every input a run draws (app.state.keep is called once per input). Pages import
    keep on every run; modules under app/ and pages/ (the family members, imported once) hold their own name
    for it, so theirs is swapped too."""
    import app.state

    seen: list[str] = []
    saved = app.state.keep

    def recording(key, *args, **kwargs):
        seen.append(key)
        return saved(key, *args, **kwargs)

    app.state.keep = recording
    for name, m in list(sys.modules.items()):
        if name.startswith(("app.", "pages.")) and getattr(m, "keep", None) is saved:
            m.keep = recording
    try:
        yield seen
    finally:
        app.state.keep = saved
        for name, m in list(sys.modules.items()):  # also those first imported inside the block
            if name.startswith(("app.", "pages.")) and getattr(m, "keep", None) is recording:
                m.keep = saved


def shown(at) -> dict:
    """Every figure (as parsed JSON: key order aside), text, metric and table the run drew."""
    out = {"figures": sorted(json.dumps(f, sort_keys=True) for f in figures(at))}
    for kind in ("markdown", "caption", "info", "warning", "error", "metric", "header", "subheader"):
        out[kind] = sorted(f"{getattr(e, 'label', '')}|{e.value}" for e in getattr(at, kind))
    out["tables"] = sorted(e.value.to_csv() for e in at.dataframe)
    return out


def drop_cached_views():
    from app.resources import _shared_view
    _shared_view.clear()


# ---------------------------------------------------------------- each control reruns its section only

# (page, fragment key, what the learner does, the inputs of that section: app.state.keep keys)
SECTIONS = [
    ("attention.py", "att-stages", lambda at: at.toggle(key="att_all").set_value(True), {"att_all", "att_stage"}),
    ("attention.py", "att-stages", lambda at: at.button_group(key="att_stage").set_value("weights"),
     {"att_all", "att_stage"}),
    ("attention.py", "att-cell", lambda at: at.selectbox(key="att_row").set_value(2), {"att_row", "att_col"}),
    ("attention.py", "att-printed", lambda at: at.toggle(key="att_reveal").set_value(True),
     {"att_reveal", "att_guess_S", "att_guess_S-prime", "att_guess_A", "att_guess_O"}),
    ("attention.py", "att-additive", lambda at: at.slider(key="att_hidden").set_value(40),
     {"att_hidden", "att_add_seed", "att_time_n"}),
    ("attention.py", "att-scaling", lambda at: at.slider(key="att_dk").set_value(200), {"att_dk", "att_dk_seed"}),
    ("masks.py", "mask-batch", lambda at: at.selectbox(key="mask_which").set_value(1),
     {"mask_batch", "mask_which", "mask_head"}),
    ("masks.py", "mask-batch", lambda at: at.slider(key="mask_head").set_value(3),
     {"mask_batch", "mask_which", "mask_head"}),
    ("masks.py", "mask-kinds", lambda at: at.radio(key="kind").set_value("cross"),
     {"kind_src", "kind_tgt", "kind", "kind_layer", "kind_head"}),
    ("masks.py", "mask-kinds", lambda at: at.text_input(key="kind_src").set_value("you read a book."),
     {"kind_src", "kind_tgt", "kind", "kind_layer", "kind_head"}),
    ("masks.py", "mask-arch", lambda at: at.selectbox(key="arch_preset").set_value(
        at.selectbox(key="arch_preset").options[1]), {"arch_preset"}),
]


@pytest.mark.slow
@pytest.mark.parametrize("page, fragment, act, inputs", SECTIONS,
                         ids=[f"{p[:-3]}-{f}-{i}" for i, (p, f, _, _) in enumerate(SECTIONS)])
def test_a_control_reruns_its_section_only_and_shows_the_same(page, fragment, act, inputs):
    with keep_calls() as drawn:
        at = run_page(page, "en")
        assert_clean(at)
        assert not set(drawn) <= inputs  # a full run draws the other sections' inputs too
        act(at)
        drawn.clear()
        with fragment_reruns(at, fragment):
            at.run()
        assert_clean(at)
    # only this section's inputs were drawn: nothing above it (the matrices, the model) nor beside it ran
    assert drawn and set(drawn) <= inputs, drawn
    section = shown(at)
    at.run()  # the whole page with the same inputs
    assert_clean(at)
    page_now = shown(at)
    for kind, items in section.items():  # everything the section drew is what the whole page draws
        assert set(items) <= set(page_now[kind]), kind
    drop_cached_views()  # built again from nothing: the very same figures and numbers
    at.run()
    assert shown(at) == page_now


# ---------------------------------------------------------------- the "Time both" demonstration

def test_timing_steps_are_time_scoring_one_run_at_a_time(monkeypatch):
    """The page's timing goes one timed run per rerun; together the runs are time_scoring's, and a closed
    generator (Cancel) makes no further run."""
    from model.lessons import lab as mlab

    steps = list(mlab.time_scoring_steps(16, 8, 4, repeats=3))
    assert [s.done for s in steps] == [1, 2, 3, 4, 5, 6] and {s.total for s in steps} == {6}
    assert all(s.result is None for s in steps[:-1])
    result = steps[-1].result
    assert result["dot"] > 0 and result["additive"] > 0
    assert result["ratio"] == pytest.approx(result["additive"] / result["dot"])

    runs = []
    real = mlab.attention_scores
    monkeypatch.setattr(mlab, "attention_scores", lambda *a: runs.append(1) or real(*a))
    gen = mlab.time_scoring_steps(16, 8, 4, repeats=3)
    next(gen)
    assert len(runs) == 2  # the warm-up and one timed run
    gen.close()
    with pytest.raises(StopIteration):
        next(gen)
    assert len(runs) == 2
    # a slice: at least one run, then more while they fit in the time given (here none, then all)
    gen = mlab.time_scoring_steps(16, 8, 4, repeats=3)
    assert mlab.timing_slice(gen, 0.0).done == 1
    assert mlab.timing_slice(gen, 60.0).result is not None


@pytest.mark.slow
def test_time_both_shows_its_progress_and_the_result(monkeypatch):
    """Clicking "Time both" draws a progress bar, advances a slice of the timed runs per rerun of its section
    (here one run a slice, as at a large n), then shows both times."""
    from streamlit.delta_generator import DeltaGenerator
    from model.lessons import lab as mlab

    monkeypatch.setattr(mlab, "timing_slice", lambda steps, seconds: next(steps))

    progress = []
    saved = DeltaGenerator.progress

    def recording(self, value, text=None):
        progress.append((round(value, 3), text))
        return saved(self, value, text=text)

    at = run_page("attention.py", "en")
    at.select_slider(key="att_time_n").set_value(64)
    DeltaGenerator.progress = recording
    try:
        at.button(key="att_time_btn").click()
        with fragment_reruns(at, "att-timing"):
            at.run()
    finally:
        DeltaGenerator.progress = saved
    assert_clean(at)
    assert [p for p, _ in progress] == [i / 10 for i in range(10)]
    assert progress[3][1].startswith("Timing… 3 of 10 runs done (n = 64)")
    labels = [m.label for m in at.metric]
    assert "dot-product" in labels and "additive (h = 16)" in labels
    assert "att_timing_run" not in at.session_state


@pytest.mark.slow
def test_cancel_stops_the_timing(monkeypatch):
    """A timing under way (after its third run) shows its progress and a Cancel button; Cancel closes it: no
    further run, no result, a note."""
    import streamlit as st
    from model.lessons import lab as mlab

    made = []

    def fake_steps():
        for i in range(1, 10):
            made.append(i)
            yield mlab.TimingStep(i, 10)

    gen = fake_steps()
    last = [next(gen) for _ in range(3)][-1]
    monkeypatch.setattr(mlab, "timing_slice", lambda steps, seconds: next(steps))  # a slice: one (slow) run
    at = run_page("attention.py", "en")
    at.session_state["att_timing_run"] = [64, 16, gen, last]
    saved = st.rerun
    st.rerun = lambda *a, **k: None  # the page as a browser sees it between two slices
    try:
        at.run()
    finally:
        st.rerun = saved
    assert made == [1, 2, 3, 4]
    assert [p.value for p in at.get("progress")] == [30]  # (percent)
    at.button(key="att_time_cancel").click()
    at.run()
    assert_clean(at)
    assert made == [1, 2, 3, 4]  # nothing ran after the cancel
    assert not at.get("progress") and "att_timing_run" not in at.session_state
    assert "Timing cancelled." in [c.value for c in at.caption]
    assert "dot-product" not in [m.label for m in at.metric]


# ---------------------------------------------------------------- in a real browser

SLOW_TIMING_MAIN = """\
import runpy, sys, time
sys.path.insert(0, {root!r})
from model.lessons import lab
if not getattr(lab.timing_slice, "slowed", False):
    def one_run_then_pause(steps, seconds):
        step = next(steps)
        time.sleep(1.0)
        return step
    one_run_then_pause.slowed = True
    lab.timing_slice = one_run_then_pause
runpy.run_path({root!r} + "/app/main.py", run_name="__main__")
"""


@pytest.mark.browser
def test_time_both_at_large_n_shows_progress_and_cancels_in_a_browser(tmp_path):
    """In Chromium: at n = 1024 "Time both" shows its progress between slices, and Cancel (a click inside the
    timing's fragment, which Streamlit queues until the slice under way ends) stops it with a note."""
    playwright = pytest.importorskip("playwright.sync_api")
    from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, served, wait_idle
    import os
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}")
    # A quiet machine makes the ten timed runs at n = 1024 in about 1.5 s, which can end before the Cancel click
    # lands. So the server runs the app through a script that makes each slice one timed run followed by a
    # pause: the same page and code path, just slow enough that the click always arrives during the timing.
    script = tmp_path / "slow_timing_main.py"
    script.write_text(SLOW_TIMING_MAIN.format(root=str(ROOT)))
    (tmp_path / "static").symlink_to(ROOT / "app" / "static")  # Streamlit serves the static folder beside the script
    with served(env_extra={"ATLAS_RUNS_DIR": str(tmp_path)}, script=script) as (url, _), \
            playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = new_page(browser, viewport={"width": 1400, "height": 1000})
            page.goto(url + "/attention?lang=en")
            wait_idle(page)
            n = page.locator(".st-key-att_time_n input[type='range']").first
            n.scroll_into_view_if_needed()
            n.focus()
            n.press("End")  # n = 1024
            wait_idle(page)
            page.locator(".st-key-att_time_btn button").click()
            page.wait_for_selector("[data-testid='stProgress']", timeout=60_000)
            assert "of 10 runs done (n = 1024)" in page.locator("[data-testid='stProgress']").inner_text()
            page.locator(".st-key-att_time_cancel button").click()
            page.get_by_text("Timing cancelled.").wait_for(timeout=60_000)
            wait_idle(page)
            assert page.locator("[data-testid='stProgress']").count() == 0
            assert page.locator("[data-testid='stException']").count() == 0
            assert "dot-product" not in " ".join(page.locator("[data-testid='stMetric']").all_inner_texts())
        finally:
            browser.close()
