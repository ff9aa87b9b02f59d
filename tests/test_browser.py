"""A real browser: start `streamlit run app/main.py`, open every page in headless Chromium in both
languages, check that no Streamlit exception box is shown, and save screenshots."""
from __future__ import annotations

import os
import shutil

import pytest

from app.pages_list import PAGES
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, streamlit_server, wait_idle

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")

if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (install Debian's chromium)", allow_module_level=True)

SHOTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory):
    SHOTS.mkdir(exist_ok=True)
    # an empty runs folder: no live training run keeps the page refreshing
    with streamlit_server({"ATLAS_RUNS_DIR": str(tmp_path_factory.mktemp("runs"))}) as url, \
            playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        yield url, page
        browser.close()


def set_language(page, lang):
    label = "한국어" if lang == "ko" else "English"
    page.locator("[data-testid='stSidebar'] [data-testid='stRadio'] label").filter(has_text=label).click()
    wait_idle(page)


def open_page(page, lang, info):
    """Click the page's link in the sidebar navigation (the session, and its language, stay)."""
    title = info.ko if lang == "ko" else info.en
    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name=title, exact=True).click()
    wait_idle(page)
    assert page.locator("[role='dialog']").count() == 0, page.locator("[role='dialog']").first.inner_text()


def assert_no_exception(page, where):
    boxes = page.locator("[data-testid='stException']")
    assert boxes.count() == 0, f"{where}: {boxes.first.inner_text()[:500]}"


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_page_in_browser(browser_page, lang):
    url, page = browser_page
    page.goto(url)
    wait_idle(page)
    set_language(page, lang)
    for info in PAGES:
        open_page(page, lang, info)
        assert_no_exception(page, f"{info.file} ({lang})")
        heading = page.locator("[data-testid='stMain'] h1").first.inner_text()
        assert heading.strip()
        if lang == "ko":
            assert any("\uac00" <= ch <= "\ud7a3" for ch in heading) or info.url == "overview", heading
        page.screenshot(path=str(SHOTS / f"browser-{info.url}-{lang}.png"), full_page=True)
