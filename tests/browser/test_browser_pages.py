"""A real browser: start `streamlit run app/main.py`, open every page in headless Chromium in both
languages, check that no Streamlit exception box is shown, and save screenshots."""
from __future__ import annotations

import os
import shutil
import time

import pytest
from app.i18n import LANGS

from app.pages_list import PAGES
from tests.apptest_util import trace_types_in_app
from tests.streamlit_server import (CHROMIUM, CHROMIUM_ARGS, MARGINS_JS, ROOT, cut_texts, grown, new_page, rerun,
                                    streamlit_server, wait_idle)

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
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        yield url, page
        browser.close()


def set_language(page, lang):
    label = "한국어" if lang == "ko" else "English"
    choice = page.locator("[data-testid='stSidebar'] [data-testid='stRadio'] label").filter(has_text=label)
    click_option(page, choice)


def click_option(page, option):
    """Click a radio option; unless it is the chosen one already (no run follows), wait for the run it starts."""
    if option.locator("input").is_checked():
        option.click()  # no run follows
        wait_idle(page)
    else:
        with rerun(page):
            option.click()


def open_page(page, lang, info):
    """Click the page's link in the sidebar navigation (the session, and its language, stay)."""
    title = info.title_in(lang)
    with rerun(page):
        page.locator("[data-testid='stSidebarNav']").get_by_role("link", name=title, exact=True).click()
    assert page.locator("[role='dialog']").count() == 0, page.locator("[role='dialog']").first.inner_text()


READABILITY_JS = r"""() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')).map((gd, i) => {
    const size = gd._fullLayout && gd._fullLayout._size;
    const ticks = Array.from(gd.querySelectorAll('.xtick text, .ytick text')).map(t => t.textContent);
    // the texts of a chart (tick labels, axis titles, the legend, point labels, annotations, the colour bar's):
    // two that cover each other are unreadable
    const labels = Array.from(gd.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, ' +
        '.legendtext, .textpoint text, .annotation-text-g text, .gtitle, .cbtitle text, .cbaxis text'))
      // a label turned by other than a right angle (slanted tick labels) has a box much larger than its text
      .filter(e => { const m = /rotate\((-?[\d.]+)/.exec(e.getAttribute('transform') || ''); return !m || +m[1] % 90 === 0; })
      .map(e => [e.textContent, e.getBoundingClientRect()]).filter(([t, b]) => t.trim() && b.width && b.height);
    const overlaps = [];
    labels.forEach(([ta, a], k) => labels.slice(k + 1).forEach(([tb, b]) => {
      if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1)
        overlaps.push(ta + ' / ' + tb); }));
    return {i, width: gd.clientWidth, plotW: size ? size.w : 0, plotH: size ? size.h : 0, overlaps,
            blankTicks: ticks.filter(t => t.trim() === '').length, ticks: ticks.length,
            title: (gd._fullLayout && gd._fullLayout.title && gd._fullLayout.title.text) || ''};
}).concat(Array.from(document.querySelectorAll('[data-testid="stMain"] .atlas-map'))
  .filter(d => d.atlasDrawn && d.atlasDrawn.kind === 'lines').map((d, i) => {
    // curves drawn by app/static/atlas_map.js: the boxes of the texts it wrote (tick labels, legend, point labels)
    const a = d.atlasDrawn, boxes = [...a.labels.x, ...a.labels.y, ...a.legend, ...a.noteBoxes];
    const overlaps = [];
    boxes.forEach((p, k) => boxes.slice(k + 1).forEach((q) => {
      if (Math.min(p.x1, q.x1) - Math.max(p.x0, q.x0) > 1 && Math.min(p.y1, q.y1) - Math.max(p.y0, q.y0) > 1)
        overlaps.push(p.text + ' / ' + q.text); }));
    const ticks = [...a.labels.x, ...a.labels.y].map(b => b.text);
    return {i: 'own ' + i, width: d.clientWidth, plotW: a.plot.w, plotH: a.plot.h, overlaps,
            blankTicks: ticks.filter(t => t.trim() === '').length, ticks: ticks.length, title: a.title};
}))"""


def assert_charts_readable(page, where):
    """Every Plotly chart has a plot area of a readable size, no blank tick label (a raw `<s>` token label is
    read as HTML by plotly: the label vanishes and the plot is squashed) and no two labels on the plot drawn
    over each other."""
    page.wait_for_timeout(300)
    for c in page.evaluate(READABILITY_JS):
        if c["width"] == 0:  # inside a collapsed expander or a hidden tab
            continue
        assert c["blankTicks"] == 0, f"{where}: chart {c['i']} ({c['title']}) has blank tick labels"
        assert c["plotH"] >= 60 and c["plotW"] >= 0.25 * c["width"], f"{where}: chart {c['i']} squashed: {c}"
        assert not c["overlaps"], f"{where}: chart {c['i']} ({c['title']}) has labels drawn over each other: {c['overlaps']}"
    assert_laid_out_once(page, where)


def assert_laid_out_once(page, where):
    """Every chart's margins already hold its tick labels, titles, colour bar and legend (app/charts/margins.py):
    a side Plotly had to widen means it drew the whole figure a second time, a third of the chart pages'
    time in the browser (docs/benchmarks.md)."""
    twice = [(f["key"] or f["title"], grown(f)) for f in page.evaluate(MARGINS_JS) if f["visible"] and grown(f)]
    assert not twice, f"{where}: figures Plotly laid out twice (sides widened, px): {twice}"


def assert_no_exception(page, where):
    boxes = page.locator("[data-testid='stException']")
    assert boxes.count() == 0, f"{where}: {boxes.first.inner_text()[:500]}"


@pytest.mark.parametrize("lang", list(LANGS))
@pytest.mark.parametrize("log", ["0", "1"])
def test_schedule_peaks_of_equal_height_keep_their_labels_apart(browser_page, lang, log):
    """The recipe page marks each schedule's peak with its step and rate. Schedules with d_model · warmup alike
    peak at the same rate: with d_model 1024 and the default extra curve (512, 8000) two labels were written over
    each other. Four such peaks, on a linear and on a logarithmic step axis: every label readable."""
    url, page = browser_page
    page.goto(f"{url}/recipe?lang={lang}&d_model=1024&pairs=512,8000;2048,2000;256,16000;128,20000&log={log}")
    wait_idle(page)
    assert_no_exception(page, f"recipe ({lang})")
    page.locator(".st-key-atlas-chart-sch_fig").first.screenshot(path=str(SHOTS / f"recipe-equal-peaks-{log}-{lang}.png"))
    assert_charts_readable(page, f"recipe, equal peaks, log={log} ({lang})")


@pytest.mark.parametrize("lang", list(LANGS))
def test_every_page_in_browser(browser_page, lang):
    url, page = browser_page
    page.goto(url)
    wait_idle(page)
    set_language(page, lang)
    for info in PAGES:
        open_page(page, lang, info)
        assert_no_exception(page, f"{info.file} ({lang})")
        assert_charts_readable(page, f"{info.file} ({lang})")
        assert cut_texts(page) == [], f"{info.file} ({lang}): texts cut short"
        heading = page.locator("[data-testid='stMain'] h1").first.inner_text()
        assert heading.strip()
        if lang == "ko":
            assert any("\uac00" <= ch <= "\ud7a3" for ch in heading) or info.url == "overview", heading
        page.screenshot(path=str(SHOTS / f"browser-{info.url}-{lang}.png"), full_page=True)


def test_first_visit_follows_the_browser_locale(browser_page):
    """A browser that asks for Korean gets the Korean app on its first visit; English otherwise."""
    url, page = browser_page
    browser = page.context.browser
    for locale, lang in (("ko-KR", "ko"), ("en-US", "en")):
        ctx = browser.new_context(locale=locale, viewport={"width": 1400, "height": 900})
        try:
            fresh = new_page(ctx)
            fresh.goto(url)
            wait_idle(fresh)
            nav = fresh.locator("[data-testid='stSidebarNav']")
            title = PAGES[1].title_in(lang)
            assert nav.get_by_role("link", name=title, exact=True).count() == 1, (locale, nav.inner_text())
        finally:
            ctx.close()


# What the warm-up's hidden box has held (each group replaces the one before): element kinds and KaTeX
SEEN_IN_WARM_BOX = """window.__warmSeen = new Set();
new MutationObserver(() => {
  const box = '.st-key-atlas-warm [class*="st-key-atlas-warm-step-"] ';
  for (const el of document.querySelectorAll(box + '[data-testid], ' + box + '.katex')) {
    window.__warmSeen.add(el.dataset.testid || 'katex');
  }
}).observe(document, {childList: true, subtree: true});"""


def test_the_first_page_loads_the_next_pages_code_while_the_browser_is_idle(browser_page):
    """app/fast/browser_warm.py: in a fresh tab, once the overview has drawn, the browser loads the app's chart
    element with Plotly and draws one element of each kind the pages use, hidden; opening every page afterwards
    fetches no script of its own, so a kind of element a page needs and the warm-up lacks fails here (the first
    chart page waited 1-1.5 s for its code)."""
    from app.fast import browser_warm as warm
    url, page = browser_page
    ctx = page.context.browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        fresh = new_page(ctx, warm_elements=True)
        fresh.add_init_script(SEEN_IN_WARM_BOX)
        fresh.goto(url)
        wait_idle(fresh)
        # last, one element of each kind drawn by the server in the sidebar's hidden box (app.fast.browser_warm.elements),
        # a group a run, but not while the learner keeps pressing keys: the charts load meanwhile, the elements wait
        hidden = ".st-key-atlas-warm "
        state = f"window.{warm.MARKER}"
        done_at, deadline = None, time.time() + 90
        while time.time() < deadline and (done_at is None or time.time() - done_at < 2 * warm.QUIET_MS / 1000):
            fresh.keyboard.press("Shift")  # no run follows
            fresh.wait_for_timeout(300)
            if done_at is None and fresh.evaluate(f"() => !!({state} && {state}.done)"):
                done_at = time.time()
        assert done_at is not None, fresh.evaluate(f"() => {state}")
        assert fresh.evaluate(f"() => {state}.elements") == "waiting"
        assert fresh.evaluate("() => window.__warmSeen.size") == 0
        fresh.wait_for_function(f"() => {state}.elements === 'done'", timeout=60_000)
        wait_idle(fresh)
        seen = set(fresh.evaluate("() => [...window.__warmSeen]"))
        for kind in ("stSlider", "stTextArea", "stMultiSelect", "stMetric", "stTabs", "stExpander", "stForm",
                     "stDataFrame", "katex"):
            assert kind in seen, (kind, sorted(seen))
        assert fresh.locator(hidden + "[data-testid='stDataFrame']").first.is_hidden()  # the last group's
        assert_no_exception(fresh, "the warm-up's elements")
        got = fresh.evaluate(f"window.{warm.MARKER}")
        assert got["charts"] == "loaded"  # the app's chart element, Plotly and the theme (app/fast/chart.py)
        # and one figure of each trace type app/ draws, drawn off the screen and removed (a first figure of a kind
        # in a tab cost the first chart page's opening 0.3-0.4 s of the browser's work)
        assert {t.lower() for t in trace_types_in_app()} <= set(got["drawn"]), got["drawn"]
        assert fresh.evaluate("() => document.querySelectorAll('.atlas-chart-warm, .js-plotly-plot').length") == 0
        scripts = []
        fresh.on("request", lambda r: scripts.append(r.url.rsplit("/", 1)[-1]) if r.url.endswith(".js") else None)
        for info in PAGES[1:]:
            open_page(fresh, "en", info)
            assert_no_exception(fresh, f"{info.file} after the warm-up")
            assert not scripts, f"{info.file}: scripts fetched after the warm-up: {scripts}"
            # the next full run removed them, and no run draws them again
            assert fresh.locator(hidden + "[data-testid='stDataFrame']").count() == 0, info.file
        assert fresh.locator(".st-key-atlas-warm").is_hidden()  # nothing of it shows in the sidebar
    finally:
        ctx.close()


def test_the_off_screen_warm_up_leaves_no_chart_in_the_page_between_its_figures(browser_page):
    """Between two figures the warm-up waits for the browser to be idle, for as long as the learner keeps it
    busy: meanwhile the document holds no Plotly chart of its own, so nothing that looks for the page's charts
    (the theme follows the system, a test) meets a half-drawn or purged one (CI: the dark-theme test read
    `_fullLayout` of the warm-up's purged chart)."""
    from app.fast import chart as ce
    url, page = browser_page
    stalled = """(resolve) => { window.__warmIdle = (window.__warmIdle || 0) + 1;
                                  if (window.__warmIdle <= 2) setTimeout(resolve, 0); }"""
    outside_main = """() => [...document.querySelectorAll('.js-plotly-plot, .atlas-chart-warm *')]
        .filter((g) => !g.closest('[data-testid="stMain"]')).length"""
    expr = ce.warm_js(stalled)
    page.goto(f"{url}/masks?lang=en")  # a page without charts: what the document holds is the warm-up's
    wait_idle(page)
    page.evaluate(f"() => {{ window.__warmIdle = 0; {expr}; }}")
    page.wait_for_function("() => window.__warmIdle === 3", timeout=60_000)  # two figures drawn, the third waits
    assert page.evaluate(outside_main) == 0


def cycle_radio(page, label: str, where: str) -> int:
    """Click every option of the radio group labelled `label`, checking the charts after each."""
    radios = page.locator("[data-testid='stRadio']")
    found = [radios.nth(i) for i in range(radios.count())
             if radios.nth(i).locator("[data-testid='stWidgetLabel']").first.inner_text().strip() == label]
    assert found, f"{where}: no radio group labelled {label!r}"
    group = found[0]
    options = group.locator("label:has(input)")
    n = options.count()
    for i in range(n):
        text = options.nth(i).inner_text()
        click_option(page, options.nth(i))
        assert_no_exception(page, f"{where}: {text}")
        assert_charts_readable(page, f"{where}: {text}")
    return n


@pytest.mark.parametrize("lang", list(LANGS))
def test_selectors_keep_every_chart_readable(browser_page, lang):
    """Switching the kind of attention (encoder self, masked decoder self, cross) on the masks page and
    in the inspector: token labels such as <s> must stay visible and the maps full size."""
    from app.i18n import catalogue
    words = catalogue(lang)
    url, page = browser_page
    page.goto(url)
    wait_idle(page)
    set_language(page, lang)
    for info, radio_key in ((next(p for p in PAGES if p.url == "masks"), "masks.attention"),
                            (next(p for p in PAGES if p.url == "inspector"), "inspector.which_attention")):
        open_page(page, lang, info)
        assert cycle_radio(page, words[radio_key], f"{info.url} ({lang})") == 3
        page.screenshot(path=str(SHOTS / f"browser-{info.url}-cross-{lang}.png"), full_page=True)
