"""Every control of every page, in both languages, set to several non-default values in sequence —
growing and shrinking inputs, hostile text, switching language mid-page — and never a traceback.

Pages are usually tested in their default state; a learner is not. This drives every keyed widget the
page shows (and those that appear after a change), so a crash two clicks deep shows up here."""
from __future__ import annotations

import itertools
import pytest
from app.i18n import LANGS

from app.pages_list import PAGES
from tests.apptest_util import run_page

SELECTS = ("selectbox", "radio", "select_slider", "button_group", "multiselect")
TOGGLES = ("toggle", "checkbox")
NUMBERS = ("slider", "number_input")
TEXTS = ("text_input", "text_area")
KINDS = SELECTS + NUMBERS + TOGGLES + TEXTS + ("button",)
HOSTILE_TEXT = ["", "😀 <s> & **b** ![i](http://127.0.0.1/x.png) `x`",
                "1 2 3 4\n5 6 7 8\n9 1 2 3\n4 5 6 7", "0.5, 0.1\n0.2, 0.9", "a" * 3000]
NEVER = {"lang"}  # the language is switched on purpose, below
NO_BUTTONS = {"train.py", "study.py"}  # their buttons start real training processes (tested in test_page_train.py, test_page_study.py)


def _by_formatted_option(w):
    """AppTest sets select widgets by value; we only know the options as shown. Let the widget take the
    shown text as its value (the serializer then finds the option by that text)."""
    cls = w.__class__
    w.__class__ = type(cls.__name__ + "Shown", (cls,), {"format_func": property(lambda self: str)})
    return w


def _find(at, kind, key):
    for w in at.get(kind):
        if w.key == key:
            return w
    return None


def _keyed(at):
    out = []
    for kind in KINDS:
        for w in at.get(kind):
            in_form = bool(getattr(w, "form_id", ""))
            if kind in SELECTS and in_form:  # AppTest cannot set a form's select widgets by shown text
                continue
            if w.key and w.key not in NEVER and not getattr(w, "disabled", False):
                out.append((kind, w.key))
    return out


def _spread(items, n=3):
    if len(items) <= n:
        return list(items)
    return [items[0], items[len(items) // 2], items[-1]]


def _values(w, kind):
    if kind in SELECTS:
        opts = list(w.options)
        if kind == "multiselect":
            return [[], opts[:1], opts[: min(3, len(opts))]]
        current = None
        try:
            current = w.format_func(w.value) if kind != "button_group" else None
        except Exception:
            pass
        return _spread([o for o in opts if o != current])
    if kind == "slider":
        lo, hi = w.min, w.max
        if isinstance(w.value, (tuple, list)):
            return [(lo, hi), (lo, lo), (hi, hi)]
        return [hi, lo, type(lo)((lo + hi) / 2) if isinstance(lo, int) else (lo + hi) / 2]
    if kind == "number_input":
        vals = [v for v in (w.max, w.min) if v is not None]
        return vals or [w.value * 10 if w.value else 1, 0]
    if kind in TOGGLES:
        return [not w.value, bool(w.value)]
    if kind in TEXTS:
        return HOSTILE_TEXT
    return ["click"]


def _set(w, kind, value):
    if kind == "button":
        return w.click()
    if kind in SELECTS:
        return _by_formatted_option(w).set_value(value)
    return w.set_value(value)


def _errors(at) -> list[str]:
    return [e.value for e in at.error]


@pytest.mark.slow
@pytest.mark.parametrize("first,second", list(itertools.permutations(LANGS, 2)))
@pytest.mark.parametrize("page", [p.file for p in PAGES])
def test_every_control_in_sequence(page, first, second):
    at = run_page(page, first, timeout=180)
    _drive_every_control(at, page, second)


@pytest.mark.slow
@pytest.mark.parametrize("member", ["mlm", "gpt", "vit", "detr"])
def test_every_control_of_each_family_member(member):
    """The family page draws one member at a time: drive every control of each (then the member switch)."""
    at = run_page("family.py", "en", timeout=180, setup=lambda a: a.session_state.__setitem__("fam_member", member))
    _drive_every_control(at, "family.py", "ko")


def _drive_every_control(at, page: str, second: str) -> None:
    assert not at.exception, [e.value for e in at.exception]
    from app.state import BOXES
    if BOXES:  # what a page draws only inside an opened box (app.state.open_box): open every box first
        for memo in BOXES:
            at.session_state[memo] = True
        at.run()
        assert not at.exception, ("boxes opened", [e.value for e in at.exception])
    from app.state import TABS, open_tab
    done: set = set()
    switched = False
    # What a page draws only in an open tab (app.state.open_tabs): each tab in turn, then its new controls.
    turns = [None, None] + [(key, name) for key, names in dict(TABS).items() for name in names[1:]]
    for turn in turns:  # the second turn drives the widgets that appeared after the first
        if turn is not None:
            open_tab(at.session_state, *turn)
            at.run()
            assert not at.exception, ("tab opened", turn, [e.value for e in at.exception])
        todo = [kw for kw in _keyed(at) if kw not in done]
        if page in NO_BUTTONS:
            todo = [kw for kw in todo if kw[0] != "button"]
        for i, (kind, key) in enumerate(todo):
            done.add((kind, key))
            if not switched and i >= len(todo) // 2:  # language switch mid-page
                at.session_state["lang"] = second
                at.run()
                switched = True
                assert not at.exception, ("language switch", [e.value for e in at.exception])
            w = _find(at, kind, key)
            if w is None:
                continue
            before = _errors(at)
            for value in _values(w, kind):
                w = _find(at, kind, key)
                if w is None:
                    break
                _set(w, kind, value).run()
                where = f"{page} [{at.session_state['lang']}] {kind} {key!r} = {str(value)[:40]!r}"
                assert not at.exception, (where, [e.value for e in at.exception])
                if kind not in TEXTS:  # a valid choice never produces an error box
                    new = [e for e in _errors(at) if e not in before]
                    assert new == [], (where, new)


def _report_stale(w, label: str):
    """From now on this selectbox reports `label`, as a browser does when the options changed under a
    selection it still shows (Streamlit then hands the page that text instead of an option)."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    def stale(self):
        ws = WidgetState()
        ws.id, ws.string_value = self.id, label
        return ws
    w.__class__ = type("Stale" + w.__class__.__name__, (w.__class__,), {"_widget_state": property(stale)})


@pytest.mark.slow
@pytest.mark.parametrize("page", [p.file for p in PAGES])
def test_stale_selections_survive_changed_inputs(page):
    """Pick the last option of a selectbox, then change what its options are built from (every text box
    of the page): the browser keeps sending the old option's label, and the page must cope."""
    at = run_page(page, "en", timeout=180)
    boxes = [w.key for w in at.get("selectbox") if w.key and not getattr(w, "form_id", "")]
    texts = [(kind, key) for kind, key in _keyed(at) if kind in TEXTS]
    for key in boxes:
        w = _find(at, "selectbox", key)
        if w is None or len(w.options) < 2:
            continue
        label = w.options[-1]
        _by_formatted_option(w).set_value(label).run()
        for kind, tkey in texts:
            for value in ("1 2\n3 4", "x"):
                w = _find(at, "selectbox", key)
                if w is not None:
                    _report_stale(w, label)
                tw = _find(at, kind, tkey)
                if tw is None:
                    continue
                tw.set_value(value).run()
                assert not at.exception, (page, key, label, tkey, value, [e.value for e in at.exception])
        at = run_page(page, "en", timeout=180)  # a fresh session for the next selectbox
