"""Helpers for streamlit.testing AppTest: start from app/main.py, switch page, set language."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from app.pages_list import PAGES

MAIN = str(Path(__file__).resolve().parent.parent / "app" / "main.py")


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
