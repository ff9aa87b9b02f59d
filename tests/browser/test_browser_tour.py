"""The guided tour in a real browser, in both languages, as a learner walks it: every stop reached with the keyboard
(Alt+N) without an error box; nothing chosen at first and Check disabled; stops answered wrong (the hint, no answer),
the real answer asked for, tried again and answered right; the tour's address opened in a fresh browser context
shows the same question and the same score; Reset clears the checks from the page and the address; Open takes the
learner to the stop's section of its page. Screenshots: test-artifacts/browser-tour-<lang>-<what>.png."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import time

import pytest

from app.i18n import LANGS, catalogue
from app.page_inputs import SECTIONS
from pages.views import tour as tv
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, streamlit_server, wait_idle

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect

if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (install Debian's chromium)", allow_module_level=True)

SHOTS = ROOT / "test-artifacts"
WRONG_FIRST = {"mask", "table3"}  # answered wrong, then the real answer asked for, then tried again
SHOT_STOPS = {"mask", "attentions", "cross", "table3", "family"}
VIEW = {"width": 1300, "height": 1400}


def _asked(step):
    return step.ask({s.key: s.value for s in step.settings}.__getitem__)


@contextlib.contextmanager
def _ran(page, timeout: float = 120):
    """`with _ran(page): <a key or a click>`: wait until the server reports the run the action started finished
    (the run counter of tests.streamlit_server.new_page; a run cut short by a newer one does not count) and the
    browser has drawn it."""
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


def _choose(page, main, cat, asked, value) -> None:
    if asked.kind == "number":
        box = main.get_by_label(cat["tour.answer"])
        box.fill(f"{value:.{asked.decimals}f}")
        with _ran(page):
            box.press("Enter")
    else:
        with _ran(page):
            main.locator("[data-testid='stRadio'] [role='radiogroup'] label").nth(asked.options.index(value)).click()


def _button(main, cat, key):
    return main.get_by_role("button", name=cat[key])


def _answer(page, main, cat, step) -> None:
    asked = _asked(step)
    expect(_button(main, cat, "tour.check")).to_be_disabled()  # nothing chosen yet
    if step.id in WRONG_FIRST:
        wrong = asked.truth + 1 if asked.kind == "number" else next(o for o in asked.options if not asked.right(o))
        _choose(page, main, cat, asked, wrong)
        with _ran(page):
            _button(main, cat, "tour.check").click()
        expect(main.locator("[data-testid='stAlertContentWarning']")).to_have_count(1)  # the hint
        expect(main.locator("[data-testid='stAlertContentInfo']")).to_have_count(0)  # no answer yet
        with _ran(page):
            _button(main, cat, "tour.show").click()
        expect(main.locator("[data-testid='stAlertContentInfo']")).to_have_count(1)
        with _ran(page):
            _button(main, cat, "tour.retry").click()
        expect(_button(main, cat, "tour.check")).to_be_disabled()
    _choose(page, main, cat, asked, asked.truth)
    with _ran(page):
        _button(main, cat, "tour.check").click()
    expect(main.locator("[data-testid='stAlertContentSuccess']")).to_have_count(1)


def _walk(page, url: str, lang: str, answer: set[str]) -> None:
    cat = catalogue(lang)
    page.goto(f"{url}/tour?lang={lang}")
    wait_idle(page, draw_all=False)
    main = page.locator("[data-testid='stMain']")
    for n, step in enumerate(tv.STEPS, 1):
        expect(main.locator("h2").first).to_have_text(f"{n}. {cat[f'tour.{step.id}.title']}")
        if step.id in answer:
            _answer(page, main, cat, step)
        assert main.locator("[data-testid='stException']").count() == 0, (lang, step.id)
        assert main.locator("[data-testid='stAlertContentError']").count() == 0, (lang, step.id)
        assert "▁" not in main.inner_text(), (lang, step.id)
        if step.id in SHOT_STOPS and step.id in answer:
            page.screenshot(path=str(SHOTS / f"browser-tour-{lang}-{step.id}.png"), full_page=True)
            # the stop's figure, drawn once it is near the screen: by Plotly, or a map on our canvas
            figure = main.locator(".js-plotly-plot, .atlas-map").last
            figure.scroll_into_view_if_needed()
            expect(figure.locator(".main-svg, canvas").first).to_be_visible()
            figure.screenshot(path=str(SHOTS / f"browser-tour-{lang}-{step.id}-figure.png"))
        if n < len(tv.STEPS):
            with _ran(page):
                page.keyboard.press("Alt+N")


def test_walk_the_tour_in_both_languages_send_its_link_reset_it_and_open_a_section():
    SHOTS.mkdir(exist_ok=True)
    with streamlit_server() as url, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for lang in LANGS:
                cat = catalogue(lang)
                context = browser.new_context(viewport=VIEW)
                page = new_page(context)
                answer = {s.id for s in tv.STEPS} if lang == "en" else {"mask", "attentions", "cross"}
                _walk(page, url, lang, answer)
                main = page.locator("[data-testid='stMain']")
                scored = len(answer - WRONG_FIRST)  # a stop whose real answer was shown scores nothing
                score = main.get_by_text(re.compile(re.escape(cat["tour.score"].split("{")[0].replace("*", "").strip())))
                expect(score.locator("strong").first).to_have_text(str(scored))
                link, seen = page.url, score.inner_text()
                numbers = [i for i, s in enumerate(tv.STEPS, 1) if s.id in answer]
                assert all(f"a{i}=" in link for i in numbers) and "checked=" in link, link

                fresh = browser.new_context(viewport=VIEW)  # the address, sent to someone else
                other = new_page(fresh)
                other.goto(link)
                wait_idle(other, draw_all=False)
                there = other.locator("[data-testid='stMain']")
                expect(there.locator("h2").first).to_have_text(main.locator("h2").first.inner_text())
                expect(there.get_by_text(re.compile(re.escape(cat["tour.score"].split("{")[0].replace("*", "").strip())))).to_have_text(seen)
                expect(there.locator("[data-testid='stAlertContentSuccess']")).to_have_count(
                    main.locator("[data-testid='stAlertContentSuccess']").count())
                other.screenshot(path=str(SHOTS / f"browser-tour-{lang}-fresh.png"), full_page=True)
                fresh.close()

                with _ran(page):
                    _button(main, cat, "tour.reset").click()
                expect(main.locator("h2").first).to_have_text(f"1. {cat['tour.qkv.title']}")
                expect(main.locator("[data-testid='stAlertContentWarning'], [data-testid='stAlertContentSuccess']"
                                    )).to_have_count(0)
                assert "checked=" not in page.url and "a1=" not in page.url, page.url
                page.screenshot(path=str(SHOTS / f"browser-tour-{lang}-reset.png"), full_page=True)

                n, step = next((i, s) for i, s in enumerate(tv.STEPS, 1) if s.id == "smoothing")
                page.goto(f"{url}/tour?lang={lang}&step={n}")  # a stop far down its page
                wait_idle(page, draw_all=False)
                with _ran(page):
                    main.get_by_role("button", name=re.compile("^" + re.escape(cat["tour.open"].split("{")[0]))).click()
                header = page.locator(f"[id='{SECTIONS[step.section]}']")
                expect(header).to_be_visible()
                page.wait_for_timeout(1500)  # the page settles its charts, the section is kept in view
                box = header.bounding_box()
                assert box is not None and 0 <= box["y"] < VIEW["height"] / 2, box
                page.screenshot(path=str(SHOTS / f"browser-tour-{lang}-open-section.png"))
                context.close()
        finally:
            browser.close()
