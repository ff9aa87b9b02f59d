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
