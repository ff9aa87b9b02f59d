"""The Table 3 page in a real browser: a rerun started in one tab shows its progress and its stop button
within seconds in that tab and in a second open tab, without a reload; stopping it from the second tab
brings both back to the form with the study's real state. Screenshots: test-artifacts/browser-study-*.png."""
from __future__ import annotations

import os
import shutil
import time

import pytest

from app.i18n import catalogue
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, streamlit_server

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")

if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (install Debian's chromium)", allow_module_level=True)

SHOTS = ROOT / "test-artifacts"
EN = catalogue("en")
RUNNING = EN["study.rerun.running"].split(":")[0]  # "The study is training"
STOPPED = EN["study.rerun.stopped"].split(" after ")[0]  # "The study stopped"


def seconds_until(page, text: str, timeout: float = 30.0) -> float:
    """How long until the page's text contains `text` (no reload in between)."""
    t0 = time.time()
    page.wait_for_function("t => document.body.innerText.includes(t)", arg=text, timeout=timeout * 1000)
    return time.time() - t0


def test_a_rerun_shows_in_every_open_tab_at_once_and_stops_from_any(tmp_path):
    SHOTS.mkdir(exist_ok=True)
    with streamlit_server({"ATLAS_RUNS_DIR": str(tmp_path / "runs")}) as url, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1300, "height": 2400})
        first, second = new_page(context), new_page(context)
        try:
            for page in (first, second):
                page.goto(f"{url}/study")
                page.wait_for_selector("[data-testid='stMain'] h1", timeout=90_000)
                seconds_until(page, EN["study.rerun.start"], 90)
            first.get_by_role("button", name=EN["study.rerun.start"]).click()
            here = seconds_until(first, RUNNING)
            there = seconds_until(second, RUNNING)
            # the page polls every second; a loaded test machine adds its own delay on top
            assert here < 10 and there < 10, (here, there)
            for page in (first, second):
                assert page.get_by_role("button", name=EN["study.rerun.stop"]).count() == 1
                assert page.get_by_role("button", name=EN["study.rerun.start"]).count() == 0
            first.screenshot(path=str(SHOTS / "browser-study-running.png"), full_page=True)
            second.get_by_role("button", name=EN["study.rerun.stop"]).click()
            for page in (first, second):
                seconds_until(page, STOPPED, 60)
                assert page.get_by_role("button", name=EN["study.rerun.start"]).count() == 1
                assert page.locator("[data-testid='stException']").count() == 0
            second.screenshot(path=str(SHOTS / "browser-study-stopped.png"), full_page=True)
        finally:
            browser.close()
