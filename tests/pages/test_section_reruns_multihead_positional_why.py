"""The multi-head, positional and why pages: a control inside a section with its own inputs
reruns that section only (an st.fragment), and what the pages show is the same whether it was computed
now or came from a cache.

AppTest reruns the whole script on `at.run()`; a browser sends a fragment-scoped rerun instead. `fragment_run`
asks for exactly that: the fragment is found by its function's name (recorded while the page ran), and the
rerun request carries its id, as Streamlit's own frontend sends it. `plotted` records which figures were
drawn. Both patches are undone when the block ends."""
from __future__ import annotations

import contextlib
import functools
import json

import pytest

from tests.apptest_read import figures, metrics, tables, title
from tests.apptest_util import assert_clean, run_page


@pytest.fixture(autouse=True)
def server_drawn_choices(monkeypatch):
    """Sliders that only change the drawing as Streamlit sliders (where the browser cannot answer them): the fragment
    each reruns is the subject here; tests/pages/test_page_positional_choices.py and test_page_masks_choices.py
    cover the browser's answer."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")


@contextlib.contextmanager
def fragment_ids():
    """{fragment function name: fragment id} of every fragment the runs inside the block register."""
    from streamlit.runtime import fragment
    seen: dict[str, str] = {}
    original = fragment._make_fragment_identity

    def record(func, **kwargs):
        identity = original(func, **kwargs)
        seen[func.__name__] = identity.fragment_id
        return identity

    fragment._make_fragment_identity = record
    try:
        yield seen
    finally:
        fragment._make_fragment_identity = original


@contextlib.contextmanager
def plotted():
    """The key of every figure drawn (app.ui.plot) inside the block, in order."""
    import app.ui
    keys: list[str] = []
    original = app.ui.plot

    def plot(fig, *, key=None, **options):
        keys.append(key)
        return original(fig, key=key, **options)

    app.ui.plot = plot
    try:
        yield keys
    finally:
        app.ui.plot = original


def fragment_run(at, fragment_id: str) -> list[str]:
    """Rerun one fragment as a browser would after a change inside it; returns the figures it drew.
    A full `at.run()` afterwards brings back the whole page's element tree."""
    from streamlit.testing.v1 import local_script_runner
    original = local_script_runner.RerunData
    local_script_runner.RerunData = functools.partial(original, fragment_id_queue=[fragment_id],
                                                      is_fragment_scoped_rerun=True)
    try:
        with plotted() as keys:
            at.run()
    finally:
        local_script_runner.RerunData = original
    assert_clean(at)
    return keys


def shown(at) -> dict:
    """Every number the page shows: metrics, tables, Markdown and captions, each figure's data."""
    return {"metrics": metrics(at),
            "tables": [d.value.to_dict() for d in at.dataframe],
            "text": [m.value for m in (*at.markdown, *at.caption, *at.success, *at.info, *at.warning)],
            "figures": [json.dumps(f["data"], sort_keys=True) for f in figures(at)]}


# ----------------------------------------------------------------------------- positional

POSITIONAL_FIGURES = {"pe_heat", "pe_waves", "pe_dot", "rot_m", "rot_circle", "ext_sin", "ext_learned",
                      "similarity-sinusoidal", "similarity-learned", "perm_diff",
                      *(f"perm-{pe}-{tag}" for pe in (0, 1) for tag in ("orig", "perm", "back"))}
PERM_MAPS = {f"perm-{pe}-{tag}" for pe in (0, 1) for tag in ("orig", "perm", "back")}

# (fragment, widget kind, key, new value, the figures that fragment draws)
POSITIONAL_CONTROLS = [
    ("waves_section", "text_input", "pe_dims", "2, 3, 40", {"pe_waves"}),
    ("dot_section", "slider", "pe_anchor", 20, {"pe_dot"}),
    ("rotation_section", "number_input", "rot_k", -37, {"rot_m", "rot_circle"}),
    ("rotation_section", "slider", "rot_i", 10, {"rot_m", "rot_circle"}),
    ("extrapolation_section", "slider", "ext_len", 60, {"ext_sin", "ext_learned"}),
    ("extrapolation_section", "number_input", "ext_pos", 30, {"ext_sin", "ext_learned"}),
    ("permutation_section", "radio", "perm_order", "shuffle", PERM_MAPS | {"perm_diff"}),
    ("permutation_maps", "slider", "perm_head", 3, PERM_MAPS),
]


@pytest.mark.slow
def test_a_positional_control_reruns_only_its_section():
    with fragment_ids() as ids, plotted() as first:
        at = run_page("positional.py", "en")
    assert_clean(at)
    assert set(first) == POSITIONAL_FIGURES
    for fragment, kind, key, value, drawn in POSITIONAL_CONTROLS:
        getattr(at, kind)(key=key).set_value(value)
        assert set(fragment_run(at, ids[fragment])) == drawn, key
        at.run()  # the whole page again: the value moved in the fragment is kept
        assert_clean(at)
        assert getattr(at, kind)(key=key).value == value, key
    # length and d_model feed sections 1 to 6: those rerun, each figure in them drawn anew, and the word-order
    # experiment, which reads neither, is left as it is
    for key, value in (("pe_len", 64), ("pe_d", 96)):
        at.slider(key=key).set_value(value)
        assert set(fragment_run(at, ids["encoding_sections"])) == POSITIONAL_FIGURES - PERM_MAPS - {"perm_diff"}, key
        at.run()
        assert_clean(at)
        assert at.slider(key=key).value == value, key


@pytest.mark.slow
def test_positional_numbers_are_the_same_fresh_and_cached():
    """What a first visit computes equals what a learner sees after moving controls inside fragments and
    back (cached results, shared figures): every metric, table, text and figure."""
    from model.lessons.positions import rotation_demo
    state = dict(rot_k=-37, rot_i=10, pe_dims="2, 3, 40", ext_len=60, perm_order="shuffle", perm_head=3)

    def setup(at):
        for k, v in state.items():
            at.session_state[k] = v

    cold = run_page("positional.py", "en", setup=setup)
    assert_clean(cold)
    with fragment_ids() as ids:
        warm = run_page("positional.py", "en")
    for fragment, kind, key, value, _ in POSITIONAL_CONTROLS:
        if key in state:
            getattr(warm, kind)(key=key).set_value(state[key])
            fragment_run(warm, ids[fragment])
            warm.run()  # the whole page's elements again
    assert_clean(warm)
    assert shown(warm) == shown(cold)
    rot = rotation_demo(100, 128, -37, 10, 3)  # the model's numbers, computed here without any cache
    assert metrics(warm)["max |M_k·PE(pos) − PE(pos+k)|, pair 10, 100 positions"] == f"{rot['error_pair']:.2e}"


# ----------------------------------------------------------------------------- multi-head

def _many_heads(at):
    at.session_state["mh_h"] = 32  # more than 16 heads: the grid and a picker for one head (server-drawn)
    at.session_state["mh_sentence"] = "the cat sat on the mat"


@pytest.mark.slow
def test_picking_one_of_many_heads_reruns_only_that_map():
    with fragment_ids() as ids, plotted() as first:
        at = run_page("multihead.py", "en", setup=_many_heads)
    assert_clean(at)
    assert first == ["mh-grid", "mh-one-head", "mh-single", "mh-mean", "mh-layer-norms"]
    before = shown(at)
    at.selectbox(key="mh_pick").set_value(5)
    assert fragment_run(at, ids["one_head"]) == ["mh-one-head"]
    at.run()
    after = shown(at)
    assert after["metrics"] == before["metrics"] and after["tables"] == before["tables"]
    assert "head 6" in [title(f) for f in figures(at)]


@pytest.mark.slow
def test_multihead_numbers_are_the_same_fresh_and_cached():
    def setup(at):
        at.session_state["mh_sentence"] = "a dog ran in the park"
        at.session_state["mh_d"] = 32

    cold = run_page("multihead.py", "ko", setup=setup)
    again = run_page("multihead.py", "ko", setup=setup)  # every result and figure now from the caches
    assert_clean(cold)
    assert shown(again) == shown(cold)


# ----------------------------------------------------------------------------- why

def test_measuring_rebuilds_only_its_figure_and_moving_n_measures_nothing(monkeypatch):
    """The timing section is not a fragment (its Stop button must be able to interrupt the run), so Measure
    reruns the page: the table's curves come back from the shared figures, only the timing figure is new."""
    import app.charts.curves
    import model.lessons.complexity
    calls, built = [], []
    real_time, real_chart = model.lessons.complexity.time_layers, app.charts.curves.line_chart

    def timed(*args, **kwargs):
        calls.append(args[0])
        return real_time(*args, **kwargs)

    def chart(*args, **kwargs):
        built.append(kwargs.get("title"))
        return real_chart(*args, **kwargs)

    monkeypatch.setattr(model.lessons.complexity, "time_layers", timed)
    monkeypatch.setattr(app.charts.curves, "line_chart", chart)
    with plotted() as first:
        at = run_page("why.py", "en")
    assert_clean(at)
    assert first == ["cx_cost", "cx_path", "tm_fig"]
    assert len(calls) <= 1  # the first view: measured once for the server (or kept from an earlier test)
    made = len(calls)
    at.number_input(key="cx_n").set_value(2345)
    built.clear()
    at.run()
    assert len(built) == 2 and len(calls) == made  # the two curves; the timing kept, not measured again
    at.text_input(key="tm_ns").set_value("8, 16")
    at.button[0].click()
    built.clear()
    at.run()
    assert_clean(at)
    assert calls[-1] == [8, 16] and len(calls) == made + 1
    assert len(built) == 1 and built[0].startswith("Measured: batch 2")  # only the new timing figure
    assert list(tables(at)[1]["n"]) == [8, 16]
    at.number_input(key="cx_n").set_value(100)
    at.run()
    assert any("Kept from a measurement made on this server" in c.value for c in at.caption)
    assert len(calls) == made + 1


def test_a_complexity_control_reruns_its_two_sections_only():
    """n, d, k and r feed sections 1 and 2 only, one fragment: a move reruns those two sections and their two
    curves, not the measured section below (its form, table and figure stay as they were)."""
    with fragment_ids() as ids:
        at = run_page("why.py", "en")
    assert_clean(at)
    for kind, key, value in (("slider", "cx_r", 40), ("slider", "cx_k", 7), ("number_input", "cx_n", 2000),
                             ("number_input", "cx_d", 64)):
        getattr(at, kind)(key=key).set_value(value)
        assert fragment_run(at, ids["complexity_sections"]) == ["cx_cost", "cx_path"], key
        at.run()
        assert_clean(at)
        assert getattr(at, kind)(key=key).value == value, key


def test_time_layers_reports_progress_and_stops_when_asked():
    import torch
    from model.lessons.complexity import time_layers
    seen = []
    res = time_layers([4, 8], d=8, batch=1, repeats=1, progress=lambda done, n: seen.append((round(done, 3), n)))
    # after the warm-up and the one timed run of each of the three layers, at each size: 12 steps
    assert seen == [(round(i / 12, 3), 4 if i <= 6 else 8) for i in range(1, 13)]
    assert res["n"] == [4, 8]

    class Stop(Exception):
        pass

    def stop_at_half(done, n):
        if done >= 0.5:
            raise Stop

    threads = torch.get_num_threads()
    with pytest.raises(Stop):
        time_layers([4, 8], d=8, batch=1, repeats=1, threads=threads + 1, progress=stop_at_half)
    assert torch.get_num_threads() == threads  # put back as it was
