"""Choices that only change the drawing, answered in the browser (app/fast/choice.py), in Chromium and both languages:
a move of the positional page's anchor, highlighted position, layer or head redraws its charts and texts with no
script run, read off what Plotly drew; the value goes into the link, survives a language switch and a visit to
another page, "reset this page" brings the page's value back, and the link opens the same view in a fresh browser."""
from __future__ import annotations

import pytest
from app.i18n import LANGS, catalogue

from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, rerun, served, wait_idle

pytestmark = pytest.mark.browser
SHOTS = ROOT / "test-artifacts" / "screenshots"
INPUT = "[data-testid='stMain'] input[data-channel='{}']"
DOT_TITLE = """() => { const gd = Array.from(document.querySelectorAll('.js-plotly-plot'))
  .find(g => g.data && g.data.length >= 2 && g.layout.shapes && g.layout.shapes.length === 1);
  return gd ? [gd.layout.title.text, gd.layout.shapes[0].x0, gd.data[0].y[10]] : null; }"""
CAPTIONS = "() => Array.from(document.querySelectorAll('.atlas-choice-text')).map(e => e.textContent)"


def _open(page, url: str, lang: str, query: str = "") -> None:
    page.goto(f"{url}/positional?lang={lang}{query}")
    wait_idle(page)
    page.wait_for_selector(INPUT.format("pe-anchor"), timeout=60_000)


def _move(page, channel: str, key: str) -> None:
    """A key pressed on the choice's slider: answered in the browser, so no script run reaches the page."""
    thumb = page.locator(INPUT.format(channel))
    thumb.scroll_into_view_if_needed()
    thumb.focus()
    runs = page.__dict__["atlas_runs"][0]
    page.keyboard.press(key)
    page.wait_for_timeout(400)  # a run the key had started would have reached the page by now
    assert page.__dict__["atlas_runs"][0] == runs, f"{channel} {key} ran the script"


def _dot(page, anchor: int, timeout: float = 10_000) -> list:
    page.evaluate("() => window.atlasCharts.drawAll()")
    page.wait_for_function(f"() => {{ const d = ({DOT_TITLE})(); return d && d[1] === {anchor}; }}", timeout=timeout)
    return page.evaluate(DOT_TITLE)


@pytest.mark.parametrize("lang", LANGS)
def test_choices_answer_in_the_browser_and_keep_their_value(lang):
    from playwright.sync_api import sync_playwright
    words = catalogue(lang)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        _open(page, url, lang)
        title, line, y10 = _dot(page, 50)
        assert words["positional.dot.title"].split("{")[0] in title

        _move(page, "pe-anchor", "End")
        title99, line, y10_99 = _dot(page, 99)
        assert "99" in title99 and y10_99 != y10  # a new curve, from the numbers the server sent
        assert "anchor=99" in page.url
        page.screenshot(path=str(SHOTS / f"choices-anchor-{lang}.png"))

        # the permutation maps' layer and head: the maps and the captions under them follow
        captions = page.evaluate(CAPTIONS)
        _move(page, "pe-perm-layer", "ArrowRight")
        _move(page, "pe-perm-head", "ArrowRight")
        after = page.evaluate(CAPTIONS)
        assert after != captions and all(words["common.layer"] in c or "2" in c for c in after), after
        assert "layer=2" in page.url and "head=2" in page.url
        page.locator(INPUT.format("pe-perm-head")).scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"choices-maps-{lang}.png"))

        # another language: the page runs again, the choices keep the learner's values
        other = next(x for x in LANGS if x != lang)
        with rerun(page):
            page.locator("[data-testid='stSidebar'] [data-testid='stRadio'] label").filter(has_text=LANGS[other]).click()
        title_other, _, _ = _dot(page, 99)
        assert catalogue(other)["positional.dot.title"].split("{")[0] in title_other
        assert page.locator(INPUT.format("pe-perm-layer")).input_value() == "1"  # index 1: layer 2

        # another page and back: the tab's memory brings the learner's values back
        with rerun(page):
            page.locator("[data-testid='stSidebarNav'] a[href$='/masks']").click()
        with rerun(page):
            page.locator("[data-testid='stSidebarNav'] a[href$='/positional']").click()
        page.wait_for_selector(INPUT.format("pe-anchor"), timeout=60_000)
        _dot(page, 99)

        # the link in a fresh browser opens the same view
        _move(page, "pe-anchor", "ArrowLeft")
        _dot(page, 98)
        link = page.url
        assert "anchor=98" in link
        fresh = new_page(browser.new_context(viewport={"width": 1400, "height": 1000}))
        fresh.goto(link)
        wait_idle(fresh)
        fresh.wait_for_selector(INPUT.format("pe-anchor"), timeout=60_000)
        _dot(fresh, 98)

        # "reset this page": the page's own values again
        with rerun(page):
            page.locator(".st-key-reset_page button").first.click()
        _dot(page, 50)
        assert page.locator(INPUT.format("pe-perm-layer")).input_value() == "0"
        browser.close()
