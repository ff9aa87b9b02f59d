"""app.resources.in_background: calls run once per server in a measuring process of their own, and a process that
dies (killed, out of memory) is replaced, its calls run again, with no error for the page."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from streamlit.testing.v1 import AppTest


def process_id(tag: str) -> int:
    return os.getpid()


def dies_once(marker: str) -> str:
    """Ends its process the first time (as a kill would), answers the second."""
    if not Path(marker).exists():
        Path(marker).touch()
        os._exit(1)
    return "answered"


def _page():
    import os

    import streamlit as st

    from app.resources import in_background
    from tests.app.test_background import dies_once, process_id
    tag, marker = st.session_state.get("tag", "a"), st.session_state.get("marker")
    first = in_background("pid", [(process_id, (tag,)), (process_id, (tag,))], None)
    st.markdown(f"server={os.getpid()} measured={first[0]},{first[1]}")
    if marker:
        st.markdown("died=" + in_background("die", [(dies_once, (marker,))], None)[0])


def test_calls_run_in_a_process_of_their_own_once_and_a_dead_one_is_replaced():
    at = AppTest.from_function(_page, default_timeout=120)
    at.run()
    assert not at.exception
    server, measured = at.markdown[0].value.split()
    a, b = measured.split("=")[1].split(",")
    assert a == b and a != server.split("=")[1]  # the same call once, not in the server's process
    with tempfile.TemporaryDirectory() as d:
        at.session_state["marker"] = str(Path(d) / "died")
        at.run()
        assert not at.exception, at.exception
        assert at.markdown[1].value == "died=answered"
        at.session_state["tag"] = "b"
        at.run()  # a fresh process answers the next calls
        assert not at.exception
        assert at.markdown[0].value.split("=")[2].split(",")[0] != a


def naps(seconds: float, tag: int) -> int:
    import time
    time.sleep(seconds)
    return tag


def _asks_then_leaves():
    import streamlit as st

    from app.resources import in_background, leave_background
    from tests.app.test_background import naps
    if st.session_state.get("leave"):
        leave_background()
        st.markdown("left")
    else:
        in_background("naps", [(naps, (0.5, i)) for i in range(6)], 0.0)
        st.markdown("asked")


def test_a_session_that_leaves_the_page_drops_the_calls_it_asked_for_that_have_not_started():
    """A learner who leaves the limits page while its measurements are queued: those not started are dropped, so the
    next page's moves do not share the machine with measurements nobody looks at; those under way finish."""
    from app import measuring
    at = AppTest.from_function(_asks_then_leaves, default_timeout=60)
    at.run()
    assert not at.exception and at.markdown[0].value == "asked"
    keys = [("tests.app.test_background.naps", (0.5, i)) for i in range(6)]
    futures = [measuring._BACKGROUND.get(key) for key in keys]
    assert all(f is not None for f in futures)
    at.session_state["leave"] = True
    at.run()
    assert not at.exception and at.markdown[0].value == "left"
    assert futures[-1].cancelled() and measuring._BACKGROUND.get(keys[-1]) is None  # queued: dropped
    assert not futures[0].cancelled() and futures[0].result(timeout=30) == 0  # under way: it finishes
    assert "_background_naps" not in at.session_state


def test_a_queued_call_that_nobody_asks_about_any_more_is_not_started(monkeypatch):
    """A learner who closes the limits page (or its tab) while its measurements are queued: the page's watcher
    stops asking, and those calls are not started when their turn comes; a call a page still watches runs."""
    import time

    from app import measuring
    monkeypatch.setattr(measuring, "STALE_S", 0.5)
    tag, name = time.time_ns(), "tests.app.test_background.naps"
    _, busy = measuring.future_of(name, naps, (1.5, tag))  # the measurement under way
    _, closed = measuring.future_of(name, naps, (0.1, tag + 1))  # its session has gone: nobody asks again
    watched_key, watched = measuring.future_of(name, naps, (0.1, tag + 2))
    end = time.monotonic() + 30
    while not watched.done() and time.monotonic() < end:
        measuring.done([watched_key])  # an open page's watcher (app.ui.pending) asks every half second
        time.sleep(0.1)
    assert busy.result() == tag and watched.result() == tag + 2
    assert closed.cancelled()


def _waits_for_one():
    import streamlit as st

    from app.resources import in_background
    from tests.app.test_background import naps
    tag = st.session_state["tag"]
    in_background("busy", [(naps, (1.5, tag))], 0.0)  # under way
    st.markdown(f"got={in_background('one', [(naps, (0.1, tag + 1))], None)[0]}")  # queued behind it


def test_a_page_that_waits_for_a_queued_call_keeps_it_wanted(monkeypatch):
    """The first ask of a page waits until its values come: all that time it says it still wants them, and they
    are not taken for a closed page's."""
    import time

    from app import measuring
    monkeypatch.setattr(measuring, "STALE_S", 0.5)
    cancelled, cancel = [], measuring.Call.cancel
    monkeypatch.setattr(measuring.Call, "cancel", lambda fut: cancelled.append(fut) or cancel(fut))
    at = AppTest.from_function(_waits_for_one, default_timeout=60)
    at.session_state["tag"] = tag = time.time_ns()
    at.run()
    assert not at.exception, at.exception
    assert at.markdown[0].value == f"got={tag + 1}"
    assert not cancelled  # not dropped and asked again: kept while the page waited
