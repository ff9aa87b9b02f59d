"""The guided tour in a real browser, in both languages: every stop answered (with the answer the live model
gives for the stop's inputs) and checked without an error box, the next stop reached with the keyboard (Alt+N),
and a link to stop N opened in a fresh browser context lands on stop N. Screenshots: test-artifacts/browser-tour-*.png."""
from __future__ import annotations

import os
import shutil

import pytest

from app.i18n import catalogue
from app.format import number
from pages.views import tour as tv
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, rerun, streamlit_server, wait_idle

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")

if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (install Debian's chromium)", allow_module_level=True)

SHOTS = ROOT / "test-artifacts"
SHOT_STOPS = {1, 4, len(tv.STEPS)}


def _asked(step):
    return step.ask({s.key: s.value for s in step.settings}.__getitem__)


def _walk(page, url: str, lang: str) -> None:
    cat = catalogue(lang)
    page.goto(f"{url}/tour?lang={lang}")
    wait_idle(page, draw_all=False)
    main = page.locator("[data-testid='stMain']")
    for n, step in enumerate(tv.STEPS, 1):
        assert main.locator("h2").first.inner_text().startswith(f"{n}. "), n
        asked = _asked(step)
        if asked.kind == "number" and asked.truth != 0:  # 0 is already there (no run would follow)
            box = main.get_by_label(cat["tour.answer"])
            box.fill(number(asked.truth) if isinstance(asked.truth, float) else str(asked.truth))
            with rerun(page, draw_all=False):
                box.press("Enter")
        elif asked.kind == "choice" and asked.options.index(asked.truth) != 0:  # the first option is already chosen
            with rerun(page, draw_all=False):
                main.locator("[data-testid='stRadio'] [role='radiogroup'] label").nth(asked.options.index(asked.truth)).click()
        with rerun(page, draw_all=n in SHOT_STOPS):
            main.get_by_role("button", name=cat["tour.check"]).click()
        assert main.locator("[data-testid='stException']").count() == 0
        assert main.locator("[data-testid='stAlertContentError']").count() == 0
        assert main.locator("[data-testid='stAlertContentSuccess']").count() == 1, (lang, step.id)
        if n in SHOT_STOPS:
            page.screenshot(path=str(SHOTS / f"browser-tour-{lang}-{n}.png"), full_page=True)
        if n < len(tv.STEPS):
            with rerun(page, draw_all=False):
                page.keyboard.press("Alt+N")
    assert f"**{len(tv.STEPS)}**".strip("*") in main.inner_text()


def test_walk_the_tour_in_both_languages_and_open_a_stop_from_its_link():
    SHOTS.mkdir(exist_ok=True)
    with streamlit_server() as url, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for lang in ("en", "ko"):
                context = browser.new_context(viewport={"width": 1300, "height": 1800})
                _walk(new_page(context), url, lang)
                context.close()
            fresh = browser.new_context(viewport={"width": 1300, "height": 1800})
            page = new_page(fresh)
            page.goto(f"{url}/tour?lang=ko&step=7")
            wait_idle(page, draw_all=False)
            main = page.locator("[data-testid='stMain']")
            assert main.locator("h2").first.inner_text() == f"7. {catalogue('ko')[f'tour.{tv.STEPS[6].id}.title']}"
            assert "step=7" in page.url
            fresh.close()
        finally:
            browser.close()
