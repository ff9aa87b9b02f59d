"""The guided tour in a real browser, in both languages: in English every stop answered (with the answer the live
model gives for the stop's inputs) and checked without an error box; in Korean every stop reached with the keyboard
(Alt+N) without an error box, the stops with a screenshot answered too; and a link to stop N opened in a fresh
browser context lands on stop N. Screenshots: test-artifacts/browser-tour-<lang>-<stop>.png."""
from __future__ import annotations

import contextlib
import os
import shutil
import time

import pytest
from app.i18n import LANGS

from app.i18n import catalogue
from app.format import number
from pages.views import tour as tv
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, rerun, streamlit_server, wait_idle

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect

if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (install Debian's chromium)", allow_module_level=True)

SHOTS = ROOT / "test-artifacts"
SHOT_STOPS = {n for n, s in enumerate(tv.STEPS, 1) if s.id in ("attentions", "cross", "table3", "family")}


def _asked(step):
    return step.ask({s.key: s.value for s in step.settings}.__getitem__)


@contextlib.contextmanager
def _ran(page, timeout: float = 120):
    """`with _ran(page): <a key or a click>`: wait until the server reports the run the action started finished
    (the run counter of tests.streamlit_server.new_page; a run cut short by a newer one does not count) and the
    browser has drawn it. rerun() adds fixed pauses for pages that draw late; this page draws with its run, and
    the checks below wait for what they read (expect), so the walk does without those pauses."""
    ends = page.__dict__["atlas_run_ends"]
    n = len(ends)
    yield
    deadline = time.time() + timeout
    while not [e for e in ends[n:] if "RERUN" not in e]:
        if time.time() > deadline:
            raise TimeoutError(f"no script run finished within {timeout:.0f} s of the action")
        page.wait_for_timeout(30)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                           timeout=timeout * 1000)
    page.wait_for_timeout(100)  # React draws the run's last messages on its next frame


def _answer(page, main, cat, step, shot: bool) -> None:
    asked = _asked(step)
    if asked.kind == "number" and asked.truth != 0:  # 0 is already there (no run would follow)
        box = main.get_by_label(cat["tour.answer"])
        box.fill(number(asked.truth) if isinstance(asked.truth, float) else str(asked.truth))
        with _ran(page):
            box.press("Enter")
    elif asked.kind == "choice" and asked.options.index(asked.truth) != 0:  # the first option is already chosen
        with _ran(page):
            main.locator("[data-testid='stRadio'] [role='radiogroup'] label").nth(asked.options.index(asked.truth)).click()
    with rerun(page, draw_all=True) if shot else _ran(page):  # a screenshot waits for every chart
        main.get_by_role("button", name=cat["tour.check"]).click()
    expect(main.locator("[data-testid='stAlertContentSuccess']")).to_have_count(1)


def _walk(page, url: str, lang: str, answer_all: bool) -> None:
    cat = catalogue(lang)
    page.goto(f"{url}/tour?lang={lang}")
    wait_idle(page, draw_all=False)
    main = page.locator("[data-testid='stMain']")
    answered = 0
    for n, step in enumerate(tv.STEPS, 1):
        expect(main.locator("h2").first).to_have_text(f"{n}. {cat[f'tour.{step.id}.title']}")
        if answer_all or n in SHOT_STOPS:
            _answer(page, main, cat, step, n in SHOT_STOPS)
            answered += 1
        assert main.locator("[data-testid='stException']").count() == 0, (lang, step.id)
        assert main.locator("[data-testid='stAlertContentError']").count() == 0, (lang, step.id)
        if n in SHOT_STOPS:
            page.screenshot(path=str(SHOTS / f"browser-tour-{lang}-{n}.png"), full_page=True)
        if n < len(tv.STEPS):
            with _ran(page):
                page.keyboard.press("Alt+N")
    assert f"**{answered}**".strip("*") in main.inner_text()


def test_walk_the_tour_in_both_languages_and_open_a_stop_from_its_link():
    SHOTS.mkdir(exist_ok=True)
    with streamlit_server() as url, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for lang in LANGS:
                context = browser.new_context(viewport={"width": 1300, "height": 1800})
                _walk(new_page(context), url, lang, answer_all=lang == "en")
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
