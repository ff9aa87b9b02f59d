"""Choices that only change the drawing, answered in the browser (app/fast/choice.py), in Chromium and both languages:
a move of the positional page's anchor, highlighted position, layer or head redraws its charts and texts with no
script run, read off what was drawn; the value goes into the link, survives a language switch and a visit to
another page, "reset this page" brings the page's value back, and the link opens the same view in a fresh browser."""
from __future__ import annotations

import pytest
from app.i18n import LANGS, catalogue

from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, rerun, served, wait_idle

pytestmark = pytest.mark.browser
SHOTS = ROOT / "test-artifacts" / "screenshots"
INPUT = "[data-testid='stMain'] input[data-channel='{}']"
# the dot products' chart, drawn on our canvas (what it drew) or by Plotly (its figure): title, anchor line, a value
DOT_TITLE = """() => { const own = Array.from(document.querySelectorAll('.atlas-map'))
  .map(d => d.atlasDrawn).find(d => d && d.kind === 'lines' && d.curves.length >= 2 && (d.vlines || []).length === 1);
  if (own) return [own.titleText, own.vlines[0], own.curves[0].y[10]];
  const gd = Array.from(document.querySelectorAll('.js-plotly-plot'))
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


# the masks page's maps that follow the head, a pair per tab in the tabs' order: [on the screen, variant drawn, z]
# (a map that follows a choice is drawn by app/static/atlas_map.js, which keeps what it drew in atlasDrawn)
TAB_CHARTS = """() => { const c = Array.from(document.querySelectorAll('.atlas-chart[data-variant]')).map(d => [
  d.getBoundingClientRect().width > 0, d.dataset.variant, JSON.stringify(d.atlasDrawn && d.atlasDrawn.z)]);
  return [c.slice(0, 2), c.slice(2, 4), c.slice(4, 6)]; }"""


def test_a_chart_in_a_closed_tab_follows_a_choice_when_its_tab_opens():
    """The masks page's head: the open tab's two maps are drawn for the new head at once; the closed tabs' maps
    are not drawn then (a move pays for what is on the screen only), and show the new head when their tab opens."""
    from playwright.sync_api import sync_playwright
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/masks?lang=en")
        wait_idle(page)
        page.wait_for_selector(INPUT.format("mask-head"), timeout=60_000)
        page.locator(INPUT.format("mask-head")).scroll_into_view_if_needed()
        open_tab = "() => (%s)()[0].every(c => c[0] && c[1] === 'VARIANT')" % TAB_CHARTS
        page.wait_for_function(open_tab.replace("VARIANT", "0"), timeout=20_000)
        page.wait_for_timeout(1000)  # charts near the screen in the closed tabs drawn, if they are drawn at all
        before = page.evaluate(TAB_CHARTS)
        assert all(len(p) == 2 for p in before), before
        assert not any(shown for panel in before[1:] for shown, _, _ in panel)  # closed tabs: no box on the screen
        _move(page, "mask-head", "ArrowRight")
        page.wait_for_function(open_tab.replace("VARIANT", "1"), timeout=10_000)
        page.wait_for_timeout(500)
        after = page.evaluate(TAB_CHARTS)
        assert after[1:] == before[1:], "a closed tab's map was drawn again for a choice it does not show"
        with_tab = "() => (%s)()[1].every(c => c[0] && c[1] === '1')" % TAB_CHARTS
        page.locator("[role=tab]").nth(1).click()
        page.wait_for_function(with_tab, timeout=10_000)
        shown = page.evaluate(TAB_CHARTS)[1]
        assert all(z != old[2] for (_, _, z), old in zip(shown, before[1])), \
            "the opened tab's maps show the first head's numbers"
        assert "head=2" in page.url
        browser.close()


# the dropout maps' titles and outlines, and the metrics and texts that follow the rate
DROP = """() => { const maps = Array.from(document.querySelectorAll('.atlas-chart'))
  .map(d => d.atlasDrawn).filter(m => m && m.z && m.y.length <= 16 && Math.abs(m.zmin + m.zmax) < 1e-9);
  const after = maps.find(m => m.outlined || /P_drop/.test(m.title));
  return after ? [after.title, after.outlined, maps.length] : null; }"""
METRICS = "() => Array.from(document.querySelectorAll('.atlas-choice-text.metric')).map(e => e.innerText)"


@pytest.mark.parametrize("lang", LANGS)
def test_the_dropout_rate_answers_in_the_browser(lang):
    """The recipe page's P_drop picks one of the masks sent for the sentence and seed: the outlined map, its
    title, the four metrics and the texts under them change with no script run, and the rate goes into the link."""
    from playwright.sync_api import sync_playwright
    words = catalogue(lang)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/recipe?lang={lang}")
        wait_idle(page)
        page.wait_for_selector(INPUT.format("drop-p"), timeout=60_000)
        page.locator(INPUT.format("drop-p")).scroll_into_view_if_needed()
        page.evaluate("() => window.atlasCharts.drawAll()")
        page.wait_for_function(f"() => {{ const d = ({DROP})(); return d && d[0].includes('0.1,'); }}", timeout=20_000)
        title, outlined, maps = page.evaluate(DROP)
        assert maps == 2 and outlined > 0
        before = page.evaluate(METRICS)
        assert len(before) == 4 and "0.1" in before[0]
        _move(page, "drop-p", "End")
        page.wait_for_function(f"() => {{ const d = ({DROP})(); return d && d[0].includes('0.9,'); }}", timeout=10_000)
        _, outlined_09, _ = page.evaluate(DROP)
        assert outlined_09 > outlined  # more cells zeroed
        after = page.evaluate(METRICS)
        assert after[0] != before[0] and "0.9" in after[0]
        assert after[1].split("\n")[-1].strip() == "10"  # kept entries × 1/(1 − 0.9)
        assert words["recipe.dropout.scale"] in after[1]
        assert "p_drop=0.9" in page.url
        page.locator(".atlas-choice-text.metric").last.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"choices-dropout-{lang}.png"))
        # another language: the page runs again and keeps the learner's rate
        other = next(x for x in LANGS if x != lang)
        with rerun(page):
            page.locator("[data-testid='stSidebar'] [data-testid='stRadio'] label").filter(has_text=LANGS[other]).click()
        page.wait_for_function(f"() => {{ const d = ({DROP})(); return d && d[0].includes('0.9,'); }}", timeout=20_000)
        assert catalogue(other)["recipe.dropout.scale"] in page.evaluate(METRICS)[1]
        browser.close()


# the why page's table row of the convolutional layer, and the cost chart's title and convolutional curve
WHY = """() => { const rows = Array.from(document.querySelectorAll('.atlas-choice-text.table tbody tr'))
  .map(r => Array.from(r.cells).map(c => c.textContent));
  // the cost chart, the one with two vertical lines: as our canvas drew it, or Plotly
  const box = Array.from(document.querySelectorAll('.atlas-chart')).find(b => b.atlasDrawn ? (b.atlasDrawn.vlines || []).length === 2
    : b.layout && b.layout.shapes && b.layout.shapes.length === 2);
  if (!box) return [rows, null, null];
  const [title, curve] = box.atlasDrawn ? [box.atlasDrawn.titleText, box.atlasDrawn.curves[2].y] : [box.layout.title.text, box.data[2].y];
  return [rows, title, Array.from(curve).slice(-1)[0]]; }"""


@pytest.mark.parametrize("lang", LANGS)
def test_the_kernel_width_answers_in_the_browser(lang):
    """The why page's k picks the convolutional row of Table 1 and its curves: the table, the cost chart's title and
    its curve change with no script run, and k goes into the link."""
    from playwright.sync_api import sync_playwright
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/why?lang={lang}")
        wait_idle(page)
        page.wait_for_selector(INPUT.format("why-k"), timeout=60_000)
        page.evaluate("() => window.atlasCharts.drawAll()")
        page.wait_for_function(f"() => ({WHY})()[1] !== null", timeout=20_000)
        rows, title, last = page.evaluate(WHY)
        assert len(rows) == 4 and rows[2][2] == "7.86e+07" and "k = 3" in title  # 3 · 100 · 512²
        _move(page, "why-k", "End")
        page.evaluate("() => window.atlasCharts.drawAll()")
        page.wait_for_function(f"() => ({WHY})()[1].includes('k = 64')", timeout=10_000)
        rows64, _, last64 = page.evaluate(WHY)
        assert rows64[2][2] == "1.68e+09" and rows64[0] == rows[0]  # 64 · 100 · 512²; the other rows stay
        assert last64 == pytest.approx(last * 64 / 3, rel=1e-5)  # the curve: k · n · d², at the largest n
        assert "k=64" in page.url
        page.screenshot(path=str(SHOTS / f"choices-why-k-{lang}.png"))
        browser.close()
