"""The app's chart element in headless Chromium (app/fast/chart.py, app/static/atlas_chart.js): a chart is
drawn when it comes near the screen, a control's new figure updates the same plot in place, a language switch
redraws what is seen, and a chart looks exactly as Streamlit's own chart element draws it."""
from __future__ import annotations

import io
import time

import numpy as np
import pytest

from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, rerun, served, wait_idle

pytestmark = pytest.mark.slow
SHOTS = ROOT / "test-artifacts"

# the page's charts (not the off-screen warm-up's, app/static/atlas_chart.js)
CHARTS = '[data-testid="stMain"] .js-plotly-plot'
# drawn: a Plotly plot, or a map drawn by app/static/atlas_map.js
DRAWN = f"() => document.querySelectorAll('{CHARTS}, [data-testid=\"stMain\"] .atlas-map').length"
ELEMENTS = "() => document.querySelectorAll(\"[class*='st-key-atlas-chart-']\").length"
# what draws a chart: a Plotly plot, or a map's canvas (app/static/atlas_map.js keeps its canvas across redraws)
PLOTS = f'{CHARTS}, [data-testid="stMain"] .atlas-map canvas'
MARK = f"() => document.querySelectorAll('{PLOTS}').forEach((gd) => {{ gd.__atlasMark = 1; }})"
MARKED = f"() => [...document.querySelectorAll('{PLOTS}')].filter((gd) => gd.__atlasMark).length"
FIRST_CHART = "PE: 100 positions × 128 dimensions"
# the page's first chart's title, as Plotly or the map wrote it
FIRST_TITLE = """() => { const box = document.querySelector('[data-testid="stMain"] .atlas-chart');
  if (!box) return ''; if (box.atlasDrawn) return box.atlasDrawn.title;
  const t = box.querySelector('.gtitle'); return t ? t.textContent : ''; }"""


# the inspector's grid, map and head view drawn by the server (as where the browser cannot draw the attention view,
# app.fast.attention_view.available); tests/browser/test_browser_attention_view.py drives the browser's view
SERVER_MAPS = {"ATLAS_ATTENTION_VIEW": "server"}


def _browser(p):
    return p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def _settle(page, ms: int = 1500):
    wait_idle(page, draw_all=False)
    page.wait_for_timeout(ms)


def test_charts_drawn_near_the_screen_and_updated_in_place():
    from playwright.sync_api import sync_playwright
    with served() as (url, _), sync_playwright() as p:
        browser = _browser(p)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/positional?lang=en")
        _settle(page)
        page.wait_for_function(f"() => ({DRAWN})() >= 1", timeout=60_000)
        n_elements, n_drawn = page.evaluate(ELEMENTS), page.evaluate(DRAWN)
        assert n_elements >= 12 and 1 <= n_drawn < n_elements  # the first screen's charts only
        assert page.evaluate(FIRST_TITLE).startswith("PE: 100 positions × 128 dimensions")

        # a control's new figure: the same plot, redrawn with the new numbers
        page.evaluate(MARK)
        thumb = page.locator("[data-testid='stSlider'] input[type='range']").nth(1)  # d_model
        thumb.focus()
        with rerun(page, draw_all=False):
            page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => ({FIRST_TITLE})().startsWith('PE: 100 positions × 132 dimensions')",
                               timeout=60_000)
        assert page.evaluate(MARKED) == n_drawn  # not one plot built anew
        # the charts only near the screen are drawn when the browser is idle, not left with the old figure: the
        # waves' wavelengths follow d_model
        page.wait_for_function("() => window.atlasCharts.waiting() === 0", timeout=10_000)
        waves = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] .atlas-chart')].flatMap(
            (gd) => ((gd.atlasDrawn && gd.atlasDrawn.curves) || gd.data || []).map(
            (d) => [d.name || '', gd.getBoundingClientRect().top > innerHeight])).filter(([n]) => n.startsWith('6 ('))""")
        assert waves == [["6 (sin, λ≈9.5)", True]], waves  # 2π·10000^(6/132), below the screen; at 128 it was 9.7
        page.screenshot(path=str(SHOTS / "charts-in-place-en.png"))

        # the toolbar's fullscreen button: the chart fills the window; Escape gives it back its place
        box = "() => { const r = document.querySelector('.atlas-chart').getBoundingClientRect(); return [r.width, r.height]; }"
        before = page.evaluate(box)
        first = page.locator(".atlas-chart").first
        first.hover()
        first.locator(".modebar-btn[data-title='Fullscreen'], .atlas-map-bar button[title='Fullscreen']").first.click()
        page.wait_for_function(f"() => ({box})()[1] === window.innerHeight", timeout=10_000)
        assert page.evaluate(box) == [1400, 1000]
        page.keyboard.press("Escape")  # no run follows
        page.wait_for_function(f"() => ({box})()[1] < window.innerHeight", timeout=10_000)
        assert page.evaluate(box) == before

        # the language: the charts on screen redrawn in Korean, in place
        with rerun(page, draw_all=False):
            page.locator("[data-testid='stSidebar'] label").filter(has_text="한국어").click()
        page.wait_for_function(f"() => ({FIRST_TITLE})().includes('위치')", timeout=60_000)
        assert page.evaluate(MARKED) == n_drawn

        # scrolled to the end, every chart on the way has been drawn
        page.evaluate("""async () => { const main = document.querySelector('[data-testid="stMain"]');
            for (let y = 0; y <= main.scrollHeight; y += 600) { main.scrollTop = y;
              await new Promise((r) => setTimeout(r, 120)); } }""")
        page.wait_for_function(f"() => ({DRAWN})() === ({ELEMENTS})()", timeout=60_000)
        page.screenshot(path=str(SHOTS / "charts-scrolled-ko.png"))
        failed = page.evaluate("() => [...document.querySelectorAll('.atlas-chart-failed')]"
                               ".filter((e) => !e.hidden).length")
        assert failed == 0
        browser.close()


def _first_chart_png(url: str, p) -> bytes:
    browser = _browser(p)
    page = new_page(browser, viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/positional?lang=en")
    wait_idle(page)
    # the same chart in both (Streamlit's element may draw a later chart before the first): found by its title
    chart = page.locator(CHARTS).filter(has=page.locator(".gtitle", has_text=FIRST_CHART)).first
    chart.wait_for(timeout=60_000)
    page.wait_for_timeout(1000)
    png = chart.screenshot()
    browser.close()
    return png


def test_a_chart_looks_as_streamlits_own_chart_draws_it():
    """The same figure drawn by st.plotly_chart (ATLAS_CHARTS=streamlit) and by the app's chart element: the
    two pictures are the same, pixel for pixel (the theme, the fonts, the title, the margins, the toolbar)."""
    from PIL import Image
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        with served(env_extra={"ATLAS_MAPS": "plotly"}) as (url, _):  # Plotly draws both (the map is our own else)
            ours = _first_chart_png(url, p)
        with served(env_extra={"ATLAS_CHARTS": "streamlit"}) as (url, _):
            theirs = _first_chart_png(url, p)
    a = np.asarray(Image.open(io.BytesIO(ours)).convert("RGB"), dtype=int)
    b = np.asarray(Image.open(io.BytesIO(theirs)).convert("RGB"), dtype=int)
    assert a.shape == b.shape
    differ = (np.abs(a - b).sum(axis=2) > 30).mean()
    assert differ < 0.002, f"{differ:.2%} of the pixels differ"


def test_a_chart_that_cannot_load_plotly_says_so_in_the_pages_language():
    """Plotly's file blocked (a proxy that drops it, a broken install): each chart on screen shows the catalogue's
    message in the page's language instead of an empty box, and the rest of the page works."""
    from playwright.sync_api import sync_playwright

    from app.i18n import catalogue
    with served() as (url, _), sync_playwright() as p:
        browser = _browser(p)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        page.route("**/app/static/plotly.min.js*", lambda route: route.abort())
        page.goto(f"{url}/attention?lang=ko")  # maps and curves of our own, a histogram and bars of Plotly's
        _settle(page)
        shown = "() => [...document.querySelectorAll('.atlas-chart-failed')].filter((e) => !e.hidden).map((e) => e.textContent)"
        page.evaluate("() => window.atlasCharts && window.atlasCharts.drawAll()")
        page.wait_for_function(f"() => ({shown})().length > 0", timeout=30_000)
        texts = page.evaluate(shown)
        page.locator(".atlas-chart-failed:not([hidden])").first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "charts-failed-ko.png"))
        assert all(t.startswith(catalogue("ko")["common.chart_failed"]) for t in texts), texts
        assert page.locator(CHARTS).count() == 0
        # the maps and plain curves need no Plotly (app/static/atlas_map.js): drawn all the same
        assert page.locator("[data-testid='stMain'] .atlas-map canvas").count() >= 1
        assert page.locator("[data-testid='stException']").count() == 0
        browser.close()


def test_a_chart_in_a_tab_is_drawn_when_its_tab_opens():
    """Streamlit keeps only the open tab's content on screen: a chart of another tab is drawn when the learner
    opens that tab, at the tab's full width (the inspector's four tabs: maps, head view, decoding steps)."""
    from playwright.sync_api import sync_playwright
    panel = """() => { const p = [...document.querySelectorAll("[role='tabpanel']")]
        .filter((e) => e.getBoundingClientRect().height > 0).pop();
      return [p.querySelectorAll("[class*='st-key-atlas-chart-']").length,
              [...p.querySelectorAll('.js-plotly-plot, .atlas-map')].map((g) => Math.round(g.getBoundingClientRect().width)),
              p.querySelectorAll("[data-testid='stDataFrame']").length]; }"""
    with served(env_extra=SERVER_MAPS) as (url, _), sync_playwright() as p:
        browser = _browser(p)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/inspector?lang=en")
        _settle(page)
        tabs = page.locator("[role='tablist']").last.locator("[role='tab']")
        seen = []
        for i in range(tabs.count()):
            tabs.nth(i).scroll_into_view_if_needed()
            if tabs.nth(i).get_attribute("aria-selected") == "true":
                tabs.nth(i).click()  # no run follows: the open tab
            else:
                with rerun(page, draw_all=False):  # a click reruns the section; the open tab's panel is empty until then
                    tabs.nth(i).click()
            # the tab's own content: charts in the first three, the statistics table in the last
            ready = "n > 0 && w.length === n" if i < 3 else "grids > 0"
            page.wait_for_function(f"() => {{ const [n, w, grids] = ({panel})(); return {ready}; }}", timeout=30_000)
            n, widths, _ = page.evaluate(panel)
            seen.append(n)
            assert all(w > 300 for w in widths), (i, widths)
        assert sum(seen) >= 4, seen  # maps, head view, decoding steps hold charts
        browser.close()


# the chart boxes drawn now: by our canvas, or by Plotly
DRAWN_BOXES = """() => [...document.querySelectorAll('[data-testid="stMain"] .atlas-chart')]
  .filter((b) => b.atlasDrawn || b._fullLayout)"""


def test_charts_follow_the_pages_theme_dark_then_light():
    """A browser that asks for dark pages gets Streamlit's dark theme, and the charts its dark chart template;
    when the system turns light, Streamlit's page turns light and every drawn chart is redrawn light."""
    from playwright.sync_api import sync_playwright
    # each drawn chart's paper: Plotly's, or the colour of a canvas of our own at its corner
    colour = """(b) => { if (!b.atlasDrawn) return b._fullLayout.paper_bgcolor.toLowerCase();
        const d = b.querySelector('canvas').getContext('2d').getImageData(1, 1, 1, 1).data;
        return '#' + [d[0], d[1], d[2]].map((v) => v.toString(16).padStart(2, '0')).join(''); }"""
    paper = f"() => ({DRAWN_BOXES})().map({colour})"
    # the same, marking the boxes drawn now: another chart may come near the screen and be drawn later
    paper_marked = f"() => ({DRAWN_BOXES})().map((b) => {{ b.__atlasDark = 1; return ({colour})(b); }})"
    with served() as (url, _), sync_playwright() as p:
        browser = _browser(p)
        page = new_page(browser, viewport={"width": 1400, "height": 1000}, color_scheme="dark")
        page.goto(f"{url}/positional?lang=en")
        _settle(page)
        page.wait_for_function(f"() => ({DRAWN})() >= 1", timeout=60_000)
        dark = page.evaluate(paper_marked)
        assert dark and all(c != "#ffffff" and c != "white" for c in dark), dark
        page.emulate_media(color_scheme="light")
        page.wait_for_function(f"() => ({paper})().every((c) => c === '#ffffff')", timeout=30_000)
        # redrawn in place, none lost: every box drawn dark is still drawn, now light
        assert page.evaluate(f"() => ({DRAWN_BOXES})().filter((b) => b.__atlasDark).length") == len(dark)
        browser.close()


# Streamlit's side of the chart element (its BidiComponent, 1.67): it calls the component's script with each new
# figure on the same element, and keeps the cleanup the script returns for when the element goes; a call that a
# newer figure overtook while the script was loading gets its cleanup called at once, before or after the newer
# call. Each scenario: steps of ("call", figure) and ("cleanup", which call), on one element.
CALLS_JS = """async ([stub, figures, scenarios, module]) => {
  // a copy of the module of its own, which has not loaded Plotly yet (the page's warm-up may have)
  window.__atlasChartModule = import(new URL(module + "&fresh=" + Date.now(), document.baseURI).href);
  const url = URL.createObjectURL(new Blob([stub], {type: "text/javascript"}));
  const script = (await import(url)).default;
  const main = document.querySelector('[data-testid="stMain"]');
  const seen = {};
  for (const [name, steps] of Object.entries(scenarios)) {
    const parent = main.insertBefore(document.createElement("div"), main.firstChild);
    const cleanups = [];
    for (const [step, arg] of steps) {
      if (step === "call") cleanups.push(script({parentElement: parent, data: figures[arg]}));
      else cleanups[arg]();
    }
    // the stub hands each call to the module in a promise callback: let those run before drawing, then draw
    // whatever is on the element now and wait for Plotly itself (its first load is slow on a busy machine)
    await window.__atlasChartModule;
    await new Promise((r) => setTimeout(r, 0));
    await window.atlasCharts.drawAll();
    await new Promise((r) => setTimeout(r, 500));  // whatever a stale call still draws, it has drawn
    seen[name] = {boxes: parent.querySelectorAll('.atlas-chart').length,
                  plots: [...parent.querySelectorAll('.js-plotly-plot')].map((gd) => gd.data ? Array.from(gd.data[0].y) : null)};
    parent.remove();
  }
  return seen;
}"""


def test_a_chart_called_again_while_loading_keeps_one_plot_of_the_newest_figure():
    """The recipe page once held, in CI, two empty plots: the schedule's slider moved twice, Streamlit
    called the chart's script again before the first call had returned, and the first call's cleanup, run at
    once, emptied the element's plot and left it on the page beside the new one. Whatever order the calls and
    their cleanups come in, the element holds one plot, of the newest figure, and none once it is gone."""
    from playwright.sync_api import sync_playwright

    from app.fast.chart import MODULE, payload, stub_js
    from app.fast.chart import url as url_of
    figures = [payload({"data": [{"type": "scatter", "y": y}], "layout": {"height": 200}}, {}, "failed").decode()
               for y in ([1, 2, 3], [3, 2, 1])]
    scenarios = {
        "overtaken": [("call", 0), ("cleanup", 0), ("call", 1)],
        "late cleanup": [("call", 0), ("call", 1), ("cleanup", 0)],
        "gone": [("call", 0), ("call", 1), ("cleanup", 1)],
    }
    with served() as (url, _), sync_playwright() as p:
        browser = _browser(p)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        slow = []  # Plotly's file comes late once the scenarios run, as on a busy machine's first chart

        def late(route):
            if slow:
                time.sleep(1.5)
            route.continue_()
        page.route("**/app/static/plotly.min.js*", late)
        page.goto(f"{url}/?lang=en")
        _settle(page)
        slow.append(True)
        seen = page.evaluate(CALLS_JS, [stub_js(), figures, scenarios, url_of(MODULE)])
        browser.close()
    assert seen == {"overtaken": {"boxes": 1, "plots": [[3, 2, 1]]},
                    "late cleanup": {"boxes": 1, "plots": [[3, 2, 1]]},
                    "gone": {"boxes": 0, "plots": []}}, seen


# A Markdown table's scroller (app.ui.table): how far it is wider than its box, where it is scrolled, and the fade
# each edge shows (app/ui.py's _TABLE_CSS: the custom properties the scroll-driven animation sets).
TABLE_JS = """(key) => { const el = document.querySelector(`.st-key-atlas-table-${key} [data-testid='stMarkdownContainer']`);
  const css = getComputedStyle(el);
  return {over: el.scrollWidth - el.clientWidth, left: el.scrollLeft, mask: css.maskImage || css.webkitMaskImage,
          fadeLeft: parseFloat(css.getPropertyValue('--atlas-fade-left')),
          fadeRight: parseFloat(css.getPropertyValue('--atlas-fade-right'))}; }"""


def test_a_wide_table_on_a_narrow_screen_shows_that_it_scrolls():
    """The multi-head page's cost table on a phone-wide window: its right edge fades while more columns lie
    beyond it, it scrolls sideways, and scrolled to the end the fade moves to the left edge; a table that fits
    (the same page on a wide window) shows no fade."""
    from playwright.sync_api import sync_playwright
    with served() as (url, _), sync_playwright() as p:
        browser = _browser(p)
        page = new_page(browser, viewport={"width": 420, "height": 900})
        page.goto(f"{url}/multihead?lang=en")
        _settle(page, 500)
        box = page.locator(".st-key-atlas-table-mh-costs")
        box.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        start = page.evaluate(TABLE_JS, "mh-costs")
        assert start["over"] > 100 and start["left"] == 0, start
        assert start["fadeRight"] >= 40 and start["fadeLeft"] == 0 and "gradient" in start["mask"], start
        box.screenshot(path=str(SHOTS / "table-wide-start-en.png"))
        box.locator("table").hover()
        page.mouse.wheel(2000, 0)  # a sideways scroll (a trackpad, shift + wheel)
        page.wait_for_timeout(500)
        end = page.evaluate(TABLE_JS, "mh-costs")
        assert end["left"] >= start["over"] - 2, end  # scrolled to its end
        assert end["fadeRight"] == 0 and end["fadeLeft"] >= 40, end
        box.screenshot(path=str(SHOTS / "table-wide-end-en.png"))
        page.set_viewport_size({"width": 1400, "height": 900})
        page.wait_for_timeout(800)
        fits = page.evaluate(TABLE_JS, "mh-shapes")
        assert fits["over"] <= 0 and fits["fadeLeft"] == fits["fadeRight"] == 0, fits
        browser.close()


# Every tick label and tile title of the chart element `key`: its box and font size; and the pairs of labels whose
# boxes overlap (more than half a pixel both ways). Labels are the tick texts of both axes and the annotations.
LABELS_JS = """(key) => { const gd = document.querySelector(`.st-key-atlas-chart-${key} .js-plotly-plot, .st-key-atlas-chart-${key} .atlas-map`);
  if (!gd) return null;
  const read = (sel) => [...gd.querySelectorAll(sel)].filter((e) => e.textContent.trim()).map((e) => {
    const r = e.getBoundingClientRect();
    return {text: e.textContent, x0: r.left, x1: r.right, y0: r.top, y1: r.bottom,
            size: parseFloat(getComputedStyle(e).fontSize)}; }).filter((b) => b.x1 > b.x0 && b.y1 > b.y0);
  // a map drawn by app/static/atlas_map.js: its labels' boxes as it drew them on its canvas
  const drawn = (which) => { const c = gd.querySelector('canvas').getBoundingClientRect();
    return gd.atlasDrawn.labels[which].map((b) => ({...b, x0: c.left + b.x0, x1: c.left + b.x1, y0: c.top + b.y0, y1: c.top + b.y1})); };
  const groups = gd.atlasDrawn ? {x: drawn('x'), y: drawn('y'), titles: []}
                               : {x: read('g.xtick text'), y: read('g.ytick text'), titles: read('g.annotation text')};
  const overlaps = [];
  for (const [name, boxes] of Object.entries(groups)) {
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > 0.5 && Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > 0.5)
        overlaps.push(`${name}: ${a.text} / ${b.text}`);
    } }
  const box = gd.closest(`.st-key-atlas-chart-${key}`);
  return {x: groups.x.length, y: groups.y.length, titles: groups.titles.length, overlaps,
          scrolls: [box, ...box.querySelectorAll('*')].some((e) => e.scrollWidth > e.clientWidth + 1
                                                               && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)),
          smallest: Math.min(...[...groups.x, ...groups.y, ...groups.titles].map((b) => b.size))}; }"""

LONG_EN = ("the old man walked slowly to the small park near the river and sat under a tall tree "
           "to read his favourite book about the sea")  # 24 words, more pieces


def _readable(page, key: str, at_least: int, what: str) -> dict:
    """The chart `key` drawn, every label counted, none overlapping, none under 10 px."""
    el = page.locator(f".st-key-atlas-chart-{key}")
    el.scroll_into_view_if_needed()
    page.wait_for_function(f"() => !!document.querySelector('.st-key-atlas-chart-{key} .js-plotly-plot g.xtick, "
                           f".st-key-atlas-chart-{key} .js-plotly-plot g.annotation') || "
                           f"!!(document.querySelector('.st-key-atlas-chart-{key} .atlas-map') || {{}}).atlasDrawn",
                           timeout=60_000)
    page.wait_for_timeout(500)
    got = page.evaluate(LABELS_JS, key)
    el.screenshot(path=str(SHOTS / f"labels-{what}.png"))
    assert got and max(got["x"], got["titles"]) >= at_least, (what, got)
    assert got["overlaps"] == [], (what, got["overlaps"][:10])
    assert got["smallest"] >= 10, (what, got)
    return got


def test_dense_heatmaps_draw_every_label_readable():
    """Maps of many tokens and many heads (app/charts/heatmaps.py): the masks page's padding tab with its longest
    sentence (20 tokens), the family page's masked-LM map of a 24-word sentence (more pieces: the map grows wider
    than its column and scrolls), and the multi-head page at H = 64 (small multiples of every head, and one
    enlarged with its 24 tokens): every label drawn, none overlapping another, at 10 px or more, on a laptop's
    window. The family page's map as the server draws it (ATLAS_ATTENTION_VIEW=server; the attention view draws
    its tokens itself)."""
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright
    with served(env_extra=SERVER_MAPS) as (url, _), sync_playwright() as p:
        browser = _browser(p)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/masks?lang=en&tab=padding&batch={quote(LONG_EN)}%0A{quote('a short one')}")
        wait_idle(page)
        _readable(page, "m-pad-w", 20, "masks-padding-weights")
        _readable(page, "m-pad-s", 20, "masks-padding-scores")
        _readable(page, "pad-mask", 20, "masks-padding-mask")

        masked = " ".join(LONG_EN.split()[:22]).replace("park", "[MASK]")  # a map needs a mask to fill
        page.goto(f"{url}/family?lang=en&member=mlm&mlm_pair=&mlm_text={quote(masked)}")
        wait_idle(page)
        wide = _readable(page, "fam-mlm-map", 24, "family-mlm-map")
        assert wide["scrolls"], wide  # wider than its column: it scrolls sideways

        page.goto(f"{url}/multihead?lang=en&d_model=64&heads=64&sentence={quote(LONG_EN)}")
        wait_idle(page)
        tiles = _readable(page, "mh-grid", 64, "multihead-64-heads")
        assert tiles["titles"] == 64, tiles
        _readable(page, "mh-one-head", 24, "multihead-64-one-head")
        browser.close()


# The centre of the head grid's tile (layer, head), 0-based, in the page's pixels: its tick values are the tiles'
# centres (app.charts.heatmaps.head_grid).
TILE_JS = """([layer, head]) => { const gd = document.querySelector('.st-key-atlas-chart-grid .js-plotly-plot');
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  return {x: box.left + xa._offset + xa.d2p(xa.tickvals[head]), y: box.top + ya._offset + ya.d2p(ya.tickvals[layer]),
          layers: ya.tickvals.length, heads: xa.tickvals.length}; }"""
PICKED_JS = """() => [...document.querySelectorAll("[data-testid='stSelectbox']")].map((b) =>
  [b.querySelector("[data-testid='stWidgetLabel']").innerText.trim(), b.querySelector("input").value || b.innerText.split("\\n").pop()])"""


def test_a_click_on_a_tile_of_the_head_grid_opens_that_head_below():
    """The inspector's grid of every layer × head: a click on a tile sets the layer and head pickers below it to
    that tile's, draws its map and writes them to the link; they stay after a language switch."""
    from playwright.sync_api import sync_playwright

    from app.i18n import catalogue
    with served(env_extra=SERVER_MAPS) as (url, _), sync_playwright() as p:
        browser = _browser(p)
        page = new_page(browser, viewport={"width": 1400, "height": 1800})
        page.goto(f"{url}/inspector?lang=en")
        _settle(page)
        page.locator(".st-key-atlas-chart-grid").scroll_into_view_if_needed()
        page.wait_for_function("() => document.querySelector('.st-key-atlas-chart-grid .js-plotly-plot')", timeout=60_000)
        assert page.get_by_text(catalogue("en")["inspector.grid_click"]).count() == 1
        tile = page.evaluate(TILE_JS, [0, 0])
        layer, head = tile["layers"] - 1, tile["heads"] - 1  # the last tile: far from the default (1, 1)
        assert (layer, head) != (0, 0)
        tile = page.evaluate(TILE_JS, [layer, head])
        with rerun(page, draw_all=False):
            page.mouse.click(tile["x"], tile["y"])
        wait_idle(page)
        picked = dict(page.evaluate(PICKED_JS))
        assert picked.get("layer") == str(layer + 1) and picked.get("head") == str(head + 1), picked
        assert f"layer={layer + 1}" in page.url and f"head={head + 1}" in page.url, page.url
        detail = page.evaluate("() => document.querySelector('.st-key-atlas-chart-detail .atlas-map').atlasDrawn.title")
        assert f"layer {layer + 1} · head {head + 1}" in detail, detail
        page.locator(".st-key-atlas-chart-grid").screenshot(path=str(SHOTS / "inspector-grid-clicked-en.png"))
        with rerun(page):
            page.locator("[data-testid='stSidebar'] [data-testid='stRadio'] label").filter(has_text="한국어").click()
        picked = dict(page.evaluate(PICKED_JS))
        ko = catalogue("ko")
        assert picked.get(ko["common.layer"]) == str(layer + 1) and picked.get(ko["common.head"]) == str(head + 1), picked
        assert page.get_by_text(ko["inspector.grid_click"]).count() == 1
        page.screenshot(path=str(SHOTS / "inspector-grid-clicked-ko.png"), full_page=True)
        assert page.locator("[data-testid='stException']").count() == 0
        browser.close()
