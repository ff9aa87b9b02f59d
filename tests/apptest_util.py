"""Helpers for streamlit.testing AppTest: start from app/main.py, switch page, set language."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from app.pages_list import PAGES

ROOT = Path(__file__).resolve().parent.parent
MAIN = str(ROOT / "app" / "main.py")


def run_page(file: str | None = None, lang: str = "en", timeout: float = 120, setup=None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=timeout)
    at.session_state["lang"] = lang
    if setup:
        setup(at)
    at.run()
    if file is not None and file != PAGES[0].file:
        at.switch_page(f"../pages/{file}")
        at.run()
    return at


def pretrained_runner(folder: Path, monkeypatch, cache: Path):
    """run(name, text=None, lang="en"): the inspector on the pretrained model `name` of `folder` (where a learner
    puts them, $ATLAS_PRETRAINED_DIR), with `text` as its sentence (None: the model's first example), and no Hugging
    Face cache (`cache` an empty folder)."""
    monkeypatch.setenv("ATLAS_PRETRAINED_DIR", str(folder))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))

    def run(name: str, text: str | None = None, lang: str = "en") -> AppTest:
        def setup(at):
            at.session_state["insp_model"] = f"pretrained: {name}"
            if text is not None:
                at.session_state["insp_for"] = f"pretrained: {name}"
                at.session_state["insp_text"] = text
        return run_page("inspector.py", lang, setup=setup, timeout=180)
    return run


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def open_link(file: str, params: dict, lang: str | None = None, timeout: float = 120) -> AppTest:
    """A page opened from a shared link, as a new visitor: the address's query parameters are there
    before the first run (`lang`, when given, unless the parameters name their own)."""
    at = AppTest.from_file(MAIN, default_timeout=timeout)
    at.query_params.update({**({"lang": lang} if lang else {}), **params})
    at.switch_page(f"../pages/{file}")
    at.run()
    return at


def toasts(at: AppTest) -> list[str]:
    """The texts of the page's toasts (a link's ignored values are named there)."""
    return [x.value for x in at.toast]


def section_script(body: str) -> str:
    """An AppTest script (to `.format(lang=...)`) that runs `body` (a family member: pages/family/<member>.py)
    outside the app. Its concept-page links need the app's registered pages, so page_link is stubbed for
    this run only and restored afterwards, even when the body fails (tests/conftest.py checks that). As
    main.py does, the run ends by sending its changes to the link (app.state.send_link)."""
    inner = "".join("    " + line + "\n" for line in body.strip("\n").splitlines())
    return ("import streamlit as st\n"
            "from streamlit.delta_generator import DeltaGenerator\n"
            "_saved = DeltaGenerator.page_link, st.page_link\n"
            "DeltaGenerator.page_link = st.page_link = lambda *a, **k: None\n"
            "st.session_state.setdefault('lang', '{lang}')\n"
            "try:\n" + inner +
            "finally:\n"
            "    DeltaGenerator.page_link, st.page_link = _saved\n"
            "    from app.state import send_link\n"
            "    send_link()\n")


def trace_types_in_app() -> set[str]:
    """The plotly trace types app/ draws: every go.<Trace>(...) in its source (go.Heatmap, go.Scatter...) and
    every trace written as a dict for style.figure (dict(type="bar", ...)), by plotly's class names."""
    import re

    import plotly.graph_objects as go
    from plotly.basedatatypes import BaseTraceType
    traces = {name.lower(): name for name in dir(go)
              if isinstance(getattr(go, name), type) and issubclass(getattr(go, name), BaseTraceType)}
    used = set()
    for path in (ROOT / "app").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        used |= {name for name in re.findall(r"\bgo\.([A-Z][A-Za-z]+)\(", source) if name in traces.values()}
        used |= {traces[kind] for kind in re.findall(r"""\btype=["']([a-z0-9]+)["']""", source) if kind in traces}
    return used


def each_view(at: AppTest):
    """The page as it shows each of its views: every box opened (app.state.open_box), then each tab of every
    open_tabs group in turn (what the page draws only in an open box or tab). Yields `at` after each run;
    a check over the page's text belongs inside the loop, or it sees only the default tab."""
    from app.state import BOXES, TABS, open_tab
    memos = [m for m in BOXES if m.removesuffix("__open") in at.session_state]
    for memo in memos:
        at.session_state[memo] = True
    if memos:
        at.run()
    yield at
    for key, names in dict(TABS).items():
        if key not in at.session_state:  # drawn by another page
            continue
        for name in names[1:]:
            open_tab(at.session_state, key, name)
            at.run()
            yield at
