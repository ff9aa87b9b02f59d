"""An input whose options depend on another control (a position below the table's length, a pair below
d_model / 2, a layer of the chosen model) keeps the value the learner gave whenever it fits the new options,
shows the nearest value that fits when it does not, and the link says what the input shows. Before, a slider
whose range changed was a new widget to Streamlit: it was drawn at its minimum (0) while the link and the
session kept the old value."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from app.state import between, fits
from tests.apptest_util import ROOT


@pytest.mark.parametrize("value, valid, default, expected", [
    (5, range(10), 0, 5),                    # fits: kept
    (50, range(40), 0, 39),                  # past the end: the last
    (-3, range(1, 9), 4, 1),                 # before the start: the first
    (130, range(4, 129, 4), 64, 128),        # onto the range's steps
    (9, range(4, 129, 4), 64, 8),            # the nearest step
    (0.7, between(0.0, 0.5), 0.1, 0.5),      # a float slider
    ((0, 300), between(1, 200), (1, 100), (1, 200)),  # a range slider: each end
    (5, [0, 1, 2, -1], 0, 2),                # layer 6 of 3 (and "mean"): the last layer
    (-1, [0, 1, 2, -1], 0, -1),              # the average stays the average
    ([1, 5, 2], range(3), [0], [1, 2]),      # a multiselect keeps the choices that still apply
    ([7, 8], range(3), [0], [0]),            # ... and none left: the default
    ("gone", ["a", "b"], "a", "a"),          # no nearest word: the default
    (3, {0: "#1", 1: "#2"}, 0, 1),           # options given as a dict: its keys
    (9, range(0), 0, 0),                     # nothing fits: the default, as before
])
def test_the_nearest_value_that_fits(value, valid, default, expected):
    from app.state import nearest
    got = nearest(value, valid, default)
    assert got == expected and type(got) is type(expected)
    if fits(expected, valid):
        assert fits(got, valid)


SCRIPT = '''
import sys
sys.path.insert(0, {root!r})
import streamlit as st
from app.state import keep, send_link
n = st.slider("n", 4, 40, step=4, **keep("n", 16, url="n", valid=range(4, 41, 4)))
p = st.slider("p", 0, n // 2 - 1, **keep("p", 0, url="p", valid=range(n // 2)))
layer = st.selectbox("layer", [*range(n // 4), -1], **keep("layer", 0, url="layer", valid=[*range(n // 4), -1]))
st.write(f"p={{p}} layer={{layer}}")
send_link()
'''


def _agree(at) -> tuple:
    """(p, layer) as the page computed with them, after checking that the widgets, the session and the link
    all say the same."""
    shown = at.markdown[0].value
    p, layer = at.slider(key="p").value, at.selectbox(key="layer").value
    assert shown == f"p={p} layer={layer}", "what the page computed with is what its inputs show"
    assert at.session_state["p"] == p and at.session_state["layer"] == layer
    assert at.query_params["p"] == str(p) and at.query_params["layer"] == str(layer), dict(at.query_params)
    return p, layer


def test_a_slider_keeps_its_value_when_another_control_changes_its_range():
    at = AppTest.from_string(SCRIPT.format(root=str(ROOT)))
    at.run()
    at.slider(key="p").set_value(5).run()
    at.selectbox(key="layer").set_value(3).run()
    assert _agree(at) == (5, 3)
    at.slider(key="n").set_value(20).run()  # p's range 0..7 → 0..9: 5 still fits
    assert _agree(at) == (5, 3), "a value that still fits is kept (it was 0 on the page, 5 in the link)"
    at.slider(key="n").set_value(8).run()  # p's range 0..3, layers 0..1: the nearest that fits
    assert _agree(at) == (3, 1)
    at.slider(key="n").set_value(24).run()  # room again: the learner's own values come back
    assert _agree(at) == (5, 3)
    at.slider(key="p").set_value(2).run()  # a move of the learner's is theirs from now on
    at.slider(key="n").set_value(8).run()
    at.slider(key="n").set_value(40).run()
    assert _agree(at) == (2, 3)


def test_a_seeded_random_sequence_of_moves_leaves_inputs_page_and_link_in_agreement():
    import random
    rng = random.Random(45)
    at = AppTest.from_string(SCRIPT.format(root=str(ROOT)))
    at.run()
    for _ in range(12):
        which = rng.choice(["n", "p", "layer"])
        if which == "n":
            at.slider(key="n").set_value(rng.randrange(4, 41, 4))
        elif which == "p":
            at.slider(key="p").set_value(rng.randrange(int(at.slider(key="p").max) + 1))
        else:
            at.selectbox(key="layer").set_value(rng.choice([*range(at.slider(key="n").value // 4), -1]))
        at.run()
        _agree(at)
