"""The multi-head page's heads in Chromium, in both languages: one layer of H heads in the attention view. A tile
clicked or a query picked changes what is drawn with no script run; the view has no layer to choose (one layer);
it opens on the head a link names; a move of d_model sends the new heads and the view draws them."""
from __future__ import annotations

import pytest
from app.i18n import LANGS, catalogue, fill

from tests.streamlit_server import ROOT, drawing_only, new_page, served_chromium, wait_idle

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")
SHOTS = ROOT / "test-artifacts" / "screenshots"
VIEW = ".atlas-view"
CHOICE = f"() => document.querySelector('{VIEW}').dataset.choice"
DRAWN = f"() => Number(document.querySelector('{VIEW}').dataset.drawn)"
PIXELS = f"() => document.querySelector('{VIEW} .atlas-view-detail').toDataURL()"


@pytest.fixture(scope="module")
def site():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_chromium() as got:
        yield got


def _open(site, query: str):
    url, browser = site
    page = new_page(browser, viewport={"width": 1400, "height": 1200})
    page.goto(f"{url}/multihead?{query}")
    wait_idle(page, draw_all=False)
    page.wait_for_function(f"() => !!(document.querySelector('{VIEW}') || {{}}).dataset?.choice", timeout=60_000)
    page.locator(VIEW).scroll_into_view_if_needed()
    return page


def _no_run(page, action) -> None:
    drawing_only(page, action, DRAWN)


@pytest.mark.parametrize("lang", LANGS)
def test_a_tile_and_a_query_answer_in_the_browser(site, lang):
    words = catalogue(lang)
    page = _open(site, f"lang={lang}&d_model=64&heads=8")
    view = page.locator(VIEW)
    assert view.locator(".atlas-view-tile").count() == 8
    assert view.locator("button[data-name='layer']").count() == 0  # one layer: nothing to choose
    assert view.locator("button[data-name='head']").count() == 8 + 1  # every head and their mean
    assert view.locator(".atlas-view-hint").first.inner_text() == words["common.view.grid_hint_heads"]
    assert page.evaluate(CHOICE) == "self.1.1.0"
    before = page.evaluate(PIXELS)
    _no_run(page, view.locator(".atlas-view-tile[data-head='6']").click)
    assert page.evaluate(CHOICE) == "self.1.6.0" and "view=self.1.6.0" in page.url
    title = view.locator(".atlas-view-title").inner_text()
    assert title.startswith(fill(words["multihead.maps.kind"], {"H": 8})), title
    assert f"{words['common.view.head']} 6" in title, title
    assert page.evaluate(PIXELS) != before
    _no_run(page, lambda: view.locator("input[data-name='query']").fill("2"))
    assert page.evaluate(CHOICE) == "self.1.6.2"
    page.screenshot(path=str(SHOTS / f"multihead-view-{lang}.png"), full_page=True)
    page.close()


def test_small_weights_are_drawn_on_a_stretched_scale(site):
    """Every weight of the page's first view is below 0.5 (untrained, 8 heads of 8 dimensions): the largest is drawn
    in the scale's darkest colour, as the page's caption says, not in the middle of a 0…1 scale."""
    import numpy as np
    from app.charts.style import ATTN_SCALE, named_scale
    from app.charts.heatmaps import scale_top
    from model.lessons.multihead import multihead_demo
    w = multihead_demo("the cat sat on the mat".split(), 64, 8, 0, positions=True).weights
    assert scale_top(w) < 1
    head, query, key = np.unravel_index(int(np.argmax(w)), w.shape)
    page = _open(site, "lang=en&d_model=64&heads=8&sentence=the+cat+sat+on+the+mat&seed=0")
    _no_run(page, page.locator(f".atlas-view-tile[data-head='{head + 1}']").click)
    canvas = page.locator(f"{VIEW} .atlas-view-detail")
    d = {k: float(v) for k, v in canvas.evaluate("(c) => ({...c.dataset})").items()}
    x, y = int(d["left"] + key * d["cell"]) + 1, int(d["top"] + query * d["cell"]) + 1
    drawn = canvas.evaluate("(c, [x, y]) => Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3))",
                            [x, y])
    darkest = [int(v) for v in named_scale(ATTN_SCALE)[-1][1].strip("rgb()").split(",")]
    assert max(abs(a - b) for a, b in zip(drawn, darkest)) <= 8, (drawn, darkest)
    page.close()


def test_the_view_opens_on_a_linked_head_and_follows_the_head_count(site):
    page = _open(site, "lang=en&d_model=64&heads=8&head=3")
    assert page.evaluate(CHOICE) == "self.1.3.0"
    drawn = page.evaluate(DRAWN)
    box = page.locator(".st-key-mh_h input")  # the head count's select box: typed into, as a learner may
    box.click()
    box.press_sequentially("16")
    box.press("Enter")  # new heads: the server sends them, the view draws them
    page.wait_for_function(f"(n) => ({DRAWN})() > n && document.querySelectorAll('{VIEW} .atlas-view-tile').length "
                           "=== 16", arg=drawn, timeout=30_000)
    page.close()
