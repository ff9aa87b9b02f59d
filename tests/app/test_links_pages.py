"""Every choice a learner makes on a page that changes what is on screen is in the page's link and survives a
language switch (app.state.keep / open_tabs with `url=`). Before, a shared link left out the inspector's open
tab, the training page's settings and the attention page's reveal toggle, and the masks page's tabs were
plain st.tabs, which forget the open tab when the language changes their labels.

Two checks of the whole class: on the source, every keep() and open_tabs() call of pages/ names its link
parameter and no page draws st.tabs itself; on every page run with AppTest (each box and tab opened), every
keyed widget it draws is registered with a link name, and every slider's `valid=` says the slider's range
(a slider whose range changes is a new widget to Streamlit: keep sets its value again only when `valid`
says that the range changed)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.pages_list import PAGES
from app.state import PAGE, RANGES, URLS
from tests.apptest_util import assert_clean, each_view, run_page

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "pages").rglob("*.py"))

# Keyed controls that are not in a link, and why. Buttons are actions, not states, and are allowed by kind.
NOT_IN_LINK = {
    "lang": "the language: main.py keeps it in every link itself (`lang=`)",
    "insp_example": "picks an example into the sentence box (which is in the link) and is empty again",
    "insp_pal_": "the word palette: a click appends a word to the sentence (in the link); a tool for typing",
    "train_run_select": "a run's id: runs belong to the learner who started them (an owner token), so their ids "
                        "stay out of links",
    "train_compare_select": "runs' ids, as above",
    "fam_vit_real_folder": "a folder on the server's disk: a link must not make the app open a path the person "
                           "who opens it did not type",
    "att_guess_": "the learner's answers to the printed example's exercise: a link that filled them in would give "
                  "the exercise away",
    "tour_a_": "the tour's answers: the tour writes every stop's answer into its link itself (`a1`…, with the stops "
               "checked), not only the answer of the stop it draws",
}
# Known gaps, each to be removed from here when its control is linked (the test fails while a listed key is
# linked, so the list cannot go stale): the inspector is being extended by another session, and only its open
# tab was made part of the link here.
PENDING: set[str] = set()
KINDS = ("selectbox", "radio", "select_slider", "button_group", "multiselect", "slider", "number_input", "toggle",
         "checkbox", "text_input", "text_area", "color_picker", "date_input")


def _allowed(key: str) -> bool:
    return any(key == k or (k.endswith("_") and key.startswith(k)) for k in NOT_IN_LINK) or key in PENDING


def _keyword(call: ast.Call, name: str):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _literal_prefix(key) -> str:
    """A key's text up to its first computed part (f"att_guess_{slug}" -> "att_guess_")."""
    if isinstance(key, ast.Constant):
        return str(key.value)
    prefix = ""
    for part in key.values if isinstance(key, ast.JoinedStr) else []:
        if not isinstance(part, ast.Constant):
            break
        prefix += str(part.value)
    return prefix


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_kept_input_and_every_tab_group_names_its_link_parameter(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if func == "tabs":
            bad.append(f"line {node.lineno}: st.tabs (use app.state.open_tabs(..., url=...))")
        if func not in ("keep", "open_tabs"):
            continue
        if func == "keep" and isinstance(node.func, ast.Attribute):
            continue  # a declared input's keep (app.page_inputs.Input): its link name is declared there
        key = node.args[0] if func == "keep" and node.args else _keyword(node, "key")
        if _keyword(node, "url") is None and not _allowed(_literal_prefix(key)):
            bad.append(f"line {node.lineno}: {func}({ast.unparse(key) if key is not None else ''}) without url=")
    assert bad == [], "; ".join(bad)


def test_the_pending_list_holds_only_unlinked_keys():
    """A key listed as a known gap that has since been linked must leave the list."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in SOURCES)
    for key in PENDING:
        tree_calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                      and getattr(n.func, "id", "") == "keep" and n.args and isinstance(n.args[0], ast.Constant)
                      and n.args[0].value == key]
        assert tree_calls, f"{key}: no such input any more"
        assert all(_keyword(c, "url") is None for c in tree_calls), f"{key} is linked now: take it off PENDING"


def _slider_range(w) -> tuple:
    if isinstance(w.min, float) and not float(w.min).is_integer() or isinstance(w.value, float) or \
            (isinstance(w.step, float) and not float(w.step).is_integer()):
        return ("between", w.min, w.max)
    return ("range", int(w.min), int(w.max) + int(w.step), int(w.step))


@pytest.mark.slow
@pytest.mark.parametrize("info", [p for p in PAGES if p.file != "overview.py"], ids=lambda p: p.url)
def test_every_control_a_page_draws_is_in_its_link(info):
    at = run_page(info.file, "en")
    assert_clean(at)
    page = at.session_state[PAGE]
    seen = 0
    for view in each_view(at):
        assert_clean(view)
        urls = view.session_state[URLS].get(page, {})
        ranges = view.session_state[RANGES]
        for kind in KINDS:
            for w in view.get(kind):
                if not w.key or _allowed(w.key):
                    continue
                seen += 1
                assert urls.get(w.key) is not None, f"{info.file}: {kind} {w.key} is not in the page's link"
                if kind == "slider" and not isinstance(w.value, (tuple, list)):
                    sig = ranges.get(w.key)
                    want = _slider_range(w)
                    if want[0] == "between":
                        assert sig is not None and sig[0] == "between" and \
                            (sig[1], sig[2]) == pytest.approx((w.min, w.max)), f"{w.key}: valid={sig}, slider {want}"
                    else:
                        assert sig is not None and sig[0] == "range" and range(*sig[1:]) == range(*want[1:]), \
                            f"{info.file}: slider {w.key} ranges {want[1:]} but valid= says {sig}"
                elif kind == "slider":
                    assert ranges.get(w.key) == ("between", w.min, w.max), f"{w.key}: valid= must say its range"
        for key, url in urls.items():  # the open tab groups drawn in this view
            if key.endswith("_tab") and not _allowed(key):
                assert url is not None, f"{info.file}: tabs {key} are not in the page's link"
    assert seen, f"{info.file}: no control found"
