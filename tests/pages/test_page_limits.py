"""The limits page in both languages: no error box at either end of every control, numbers computed on the spot
(a smaller n measures less memory), the shipped studies read with their verdicts; a move answers at once with the
last measurement, said to be so, and the new one shows when the server's background thread has measured it."""
import os
import tempfile
import time
from pathlib import Path

import pytest

from app.i18n import LANGS, catalogue
from tests.apptest_read import broken_emphasis, errors, figures, title
from tests.apptest_util import assert_clean, open_link, run_page

pytestmark = pytest.mark.slow


def peak_of_full(at, lang: str) -> str:
    """The measured peak memory of full attention, read off the cost table."""
    cat = catalogue(lang)
    header, full = cat["limits.cost.peak"], cat["limits.impl.full"]
    for md in at.markdown:
        lines = md.value.splitlines()
        if lines and header in lines[0]:
            cols = [c.strip() for c in lines[0].strip("|").split("|")]
            row = next(r for r in lines[2:] if r.strip("| ").startswith(full))
            return [c.strip() for c in row.strip("|").split("|")][cols.index(header)]
    raise AssertionError("no cost table")


def pending(at, lang: str) -> list[str]:
    """The page's notes that a measurement is under way (cost, decoding)."""
    cat = catalogue(lang)
    heads = [cat[f"limits.{part}.measuring"].split("{")[0][:12] for part in ("cost", "decode")]
    return [i.value for i in at.info if any(h and h in i.value for h in heads)]


def until_measured(at, lang: str, timeout: float = 240):
    """Runs the page again until nothing is being measured: what the page's small watching fragment does in the
    browser (AppTest does not run a fragment's timer)."""
    deadline = time.time() + timeout
    while pending(at, lang):
        assert time.time() < deadline, pending(at, lang)
        time.sleep(0.2)
        at.run()
    return at


@pytest.mark.parametrize("lang", LANGS)
def test_page_runs_and_measures_again_when_n_changes(lang):
    at = run_page("limits.py", lang, timeout=300)
    assert_clean(at)
    assert errors(at) == [] and broken_emphasis(at) == []
    cat = catalogue(lang)
    assert at.title[0].value == cat["pages.limits.title"]
    before = peak_of_full(at, lang)
    at.select_slider(key="lim_n").set_value(256).run()
    until_measured(at, lang)
    assert_clean(at)
    after = peak_of_full(at, lang)
    assert before != after and float(after.split()[0]) < float(before.split()[0]) / 8  # n / 4: scores / 16
    names = [title(f) for f in figures(at)]
    assert cat["limits.lengths.title"].format(L=8) in names and cat["limits.scale.title"] in names
    text = " ".join(m.value for m in at.markdown)
    assert cat["limits.outcome.contradicted"] in text and cat["limits.lengths.refused"] in text


@pytest.mark.parametrize("lang", LANGS)
def test_every_control_at_both_ends(lang):
    low = {"lim_n": 128, "lim_d": 64, "lim_heads": 8, "lim_block": 512, "lim_window": 2, "lim_global": 8,
           "lim_k": 256, "lim_steps": 4}
    high = {"lim_n": 1048576, "lim_d": 512, "lim_heads": 1, "lim_block": 16, "lim_window": 256, "lim_global": 0,
            "lim_k": 8, "lim_steps": 63}
    at = run_page("limits.py", lang, timeout=300)
    for values, sentence in ((low, ""), (high, "나는 학교에 간다 😀 <b>" * 30)):
        for key, value in values.items():
            widget = next(w for kind in (at.select_slider, at.slider) for w in kind if w.key == key)
            widget.set_value(value)
        at.text_input(key="lim_sentence").set_value(sentence)
        at.run()
        until_measured(at, lang)
        assert_clean(at)
        assert errors(at) == []
    cat = catalogue(lang)
    text = " ".join(m.value for m in at.markdown)
    assert cat["limits.refused.memory"].split(":")[0] in text  # a million tokens: refused from the estimate


def test_moving_another_answers_knob_computes_no_new_linformer_sweep(monkeypatch):
    """Linformer's error against k depends on n, d and the heads: a move of the block, the window, the global tokens
    or Linformer's own k must not run the sweep again in the control's run (six Linformer runs against full
    attention before the page answers)."""
    import functools
    from model.lessons import limits as lim
    at = run_page("limits.py", "en", timeout=300)
    real, calls = lim.linformer_error, []

    @functools.wraps(real)
    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(lim, "linformer_error", counted)
    for key, value in (("lim_block", 48), ("lim_window", 7), ("lim_global", 3), ("lim_k", 40)):
        at.slider(key=key).set_value(value).run()
        assert_clean(at)
    assert calls == []


def test_a_knob_recomputes_only_its_own_answers_difference(monkeypatch):
    """Each answer's difference from full attention reads its own knobs only (model.lessons.limits.KNOBS): a move
    of the block computes the block-wise answer's again, not the window's or Linformer's, and the window's and global
    tokens' moves only the window's."""
    import functools
    from model.lessons import limits as lim
    at = run_page("limits.py", "en", timeout=300)
    real, calls = lim.difference_of, []

    @functools.wraps(real)
    def counted(impl, s):
        calls.append(impl)
        return real(impl, s)

    monkeypatch.setattr(lim, "difference_of", counted)
    seen = []
    # values no other test of this server-wide cache asks for, so that each move computes something
    for key, value, answer in (("lim_block", 40, "blockwise"), ("lim_window", 9, "window"),
                               ("lim_global", 5, "window"), ("lim_k", 24, "linformer")):
        calls.clear()
        at.slider(key=key).set_value(value).run()
        assert_clean(at)
        assert set(calls) <= {answer}, key
        seen += calls
    assert seen, "no move computed a difference: the test saw nothing"


def test_a_link_opens_the_page_at_its_settings():
    at = open_link("limits.py", {"n": "512", "d": "128", "heads": "2", "steps": "8"}, lang="en", timeout=300)
    assert_clean(at)
    assert at.select_slider(key="lim_n").value == 512 and at.slider(key="lim_steps").value == 8


def test_the_tour_stops_on_this_page_answer_from_its_numbers():
    """The tour's three stops on this page: full attention's memory ×4 when n doubles (measured), the grouped-query
    cache's bytes per token from the configuration, ALiBi best at twice the training length in the shipped study."""
    from streamlit.testing.v1 import AppTest
    script = AppTest.from_function(_answers, default_timeout=300)  # a script run: the answers' caches work there
    script.run()
    assert_clean(script)
    got = dict(m.value.split("=") for m in script.markdown)
    assert got == {"memory": "4", "kv": "3072", "lengths": "alibi"}


def _answers():
    import streamlit as st

    from pages.views import tour as tv
    for step in tv.STEPS:
        if step.page == "limits":
            st.markdown(f"{step.id}={step.ask(tv.value_of(step, {})).truth}")


def _gate(server_pid: int) -> Path:
    return Path(tempfile.gettempdir()) / f"atlas-limits-gate-{server_pid}"


def _gated_point(*args):
    """model.lessons.limits.sweep_point once the test opens its gate (a file named for the server's process): a
    measurement that takes as long as the test says. Runs in the measuring process, whose parent is the test's."""
    from model.lessons import limits as lim
    deadline = time.time() + 120
    while not _gate(os.getppid()).exists() and time.time() < deadline:
        time.sleep(0.02)
    return lim.sweep_point(*args)


def test_a_move_answers_at_once_with_the_last_measurement_and_the_new_one_lands(monkeypatch):
    """The cost section's measurements run in the server's background thread: a move of a slider draws the page
    at once, with the last measurement under a note naming both settings, and the new table once it is measured.
    Sliding past a setting drops its measurements that had not started."""
    from app import measuring
    from model.lessons import limits as lim
    gate = _gate(os.getpid())
    gate.unlink(missing_ok=True)
    at = run_page("limits.py", "en", timeout=300)
    before = peak_of_full(at, "en")
    assert pending(at, "en") == []
    monkeypatch.setattr(lim, "sweep_point", _gated_point)
    try:
        at.select_slider(key="lim_n").set_value(256).run()
        assert_clean(at)
        notes = pending(at, "en")
        assert len(notes) == 1 and "n = 256" in notes[0] and "n = 1,024" in notes[0], notes
        assert peak_of_full(at, "en") == before  # the last measurement, said to be so
        at.slider(key="lim_window").set_value(40).run()  # slid past n = 256 at window 32
        passed = [fut for key, fut in measuring._BACKGROUND.items()
                  if key[0].endswith("_gated_point") and key[1][0] == "window" and key[1][1].window == 32]
        # only those already handed to the measuring process are left (the first call waits at the gate)
        assert all(fut.running() or fut.done() for fut in passed), passed
    finally:
        gate.touch()
    try:
        until_measured(at, "en")
    finally:
        gate.unlink(missing_ok=True)
    assert_clean(at)
    assert float(peak_of_full(at, "en").split()[0]) < float(before.split()[0]) / 8


def test_leaving_the_page_drops_its_measurements_that_have_not_started(monkeypatch):
    """A learner who moves d and goes to another page before the measurements land: those not yet handed to the
    measuring process are dropped (the next page's moves do not share the machine with them); coming back asks
    again, and the page shows the measurement once it lands."""
    from app import measuring
    from model.lessons import limits as lim
    gate = _gate(os.getpid())
    gate.unlink(missing_ok=True)
    at = run_page("limits.py", "en", timeout=300)
    monkeypatch.setattr(lim, "sweep_point", _gated_point)
    try:
        at.select_slider(key="lim_d").set_value(64).run()  # a d no other test measures: every call is new
        asked = [fut for key, fut in measuring._BACKGROUND.items()
                 if key[0].endswith("_gated_point") and key[1][1].d == 64]
        assert len(asked) > 2 and pending(at, "en")
        at.switch_page("../pages/overview.py").run()
        assert_clean(at)
        left = [fut for key, fut in measuring._BACKGROUND.items() if key[0].endswith("_gated_point")]
        assert sum(fut.cancelled() for fut in asked) >= len(asked) - 2  # the one running, the one handed over
        assert all(fut.running() or fut.done() for fut in left), left
    finally:
        gate.touch()
    try:
        at.switch_page("../pages/limits.py").run()
        until_measured(at, "en")
    finally:
        gate.unlink(missing_ok=True)
    assert_clean(at)
    assert at.select_slider(key="lim_d").value == 64
