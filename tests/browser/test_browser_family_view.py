"""The family page's text attention in Chromium, in both languages: the GPT section's causal maps of the `lm` and the
BERT section's `mlm` beside the `lm`, each in an attention view. A tile clicked or a layer picked changes what is
drawn with no script run; each view starts where the page's kept inputs say (a link's `gpt_layer`); the lm's later
keys are drawn masked, the mlm's are not."""
from __future__ import annotations

import pytest
from app.i18n import LANGS, catalogue

from tests.streamlit_server import ROOT, drawing_only, new_page, served_chromium, wait_idle

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")
SHOTS = ROOT / "test-artifacts" / "screenshots"
VIEW = ".atlas-view"
CHOICE = f"(i) => document.querySelectorAll('{VIEW}')[i].dataset.choice"
DRAWN = f"(i) => Number(document.querySelectorAll('{VIEW}')[i].dataset.drawn)"
PIXELS = f"(i) => document.querySelectorAll('{VIEW}')[i].querySelector('.atlas-view-detail').toDataURL()"
GREY = [217, 217, 222]  # the mask's grey (app/static/attention_view.js)


@pytest.fixture(scope="module")
def site():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_chromium() as got:
        yield got


def _open(site, query: str, views: int):
    url, browser = site
    page = new_page(browser, viewport={"width": 1400, "height": 1400})
    page.goto(f"{url}/family?{query}")
    wait_idle(page, draw_all=False)
    page.wait_for_function(f"(n) => document.querySelectorAll('{VIEW}').length === n && "
                           f"[...document.querySelectorAll('{VIEW}')].every((v) => v.dataset.choice)",
                           arg=views, timeout=60_000)
    page.locator(VIEW).first.scroll_into_view_if_needed()
    return page


def _view(page, i: int):
    return page.locator(VIEW).nth(i)


def _no_run(page, i: int, action) -> None:
    """`action()` changes the drawing of view i only: it draws again, and no script run reaches the page."""
    drawing_only(page, action, DRAWN, i)


def _cell(page, i: int, query: int, key: int) -> list[int]:
    """The colour of view i's enlarged map at (query, key), 0-based, read near the cell's corner (clear of a mark)."""
    canvas = _view(page, i).locator(".atlas-view-detail")
    d = {k: float(v) for k, v in canvas.evaluate("(c) => ({...c.dataset})").items()}
    x, y = int(d["left"] + key * d["cell"]) + 1, int(d["top"] + query * d["cell"]) + 1
    return canvas.evaluate("(c, [x, y]) => Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3))",
                           [x, y])


@pytest.mark.parametrize("lang", LANGS)
def test_the_gpt_view_answers_a_tile_and_a_layer_in_the_browser(site, lang):
    words = catalogue(lang)
    page = _open(site, f"member=gpt&lang={lang}", 1)
    tiles = _view(page, 0).locator(".atlas-view-tile")
    layers = int(tiles.last.get_attribute("data-layer"))
    assert tiles.count() == layers * int(tiles.last.get_attribute("data-head")) >= 4
    assert page.evaluate(CHOICE, 0) == f"lm.{layers}.0.0"  # the last layer's mean over heads, as the page kept it
    assert words["common.view.mean"] in _view(page, 0).locator(".atlas-view-title").inner_text()
    before = page.evaluate(PIXELS, 0)
    _no_run(page, 0, _view(page, 0).locator(".atlas-view-tile[data-layer='1'][data-head='2']").click)
    assert page.evaluate(CHOICE, 0) == "lm.1.2.0" and "gpt_view=lm.1.2.0" in page.url
    title = _view(page, 0).locator(".atlas-view-title").inner_text()
    assert f"{words['common.view.layer']} 1 · {words['common.view.head']} 2" in title, title
    assert title.startswith(words["family_gpt.view_label"])
    after_tile = page.evaluate(PIXELS, 0)
    assert after_tile != before
    _no_run(page, 0, _view(page, 0).locator(f"button[data-name='layer'][data-value='{layers}']").click)
    assert page.evaluate(CHOICE, 0) == f"lm.{layers}.2.0"
    assert page.evaluate(PIXELS, 0) != after_tile
    last = int(_view(page, 0).locator(".atlas-view-detail").get_attribute("data-cols")) - 1
    assert _cell(page, 0, 0, last) == GREY and _cell(page, 0, last, 0) != GREY  # causal: later keys masked
    _view(page, 0).scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"family-view-gpt-{lang}.png"), full_page=True)
    page.close()


def test_the_gpt_view_starts_at_the_layer_a_link_asks_for(site):
    page = _open(site, "member=gpt&lang=en&gpt_layer=1", 1)
    assert page.evaluate(CHOICE, 0) == "lm.1.0.0"
    page.close()


@pytest.mark.parametrize("lang", LANGS)
def test_the_bert_sections_two_views_answer_each_on_its_own(site, lang):
    words = catalogue(lang)
    page = _open(site, f"member=mlm&lang={lang}&mlm_layer=1&mlm_head=2", 2)
    assert page.evaluate(CHOICE, 0) == "mlm.1.2.0" and page.evaluate(CHOICE, 1) == "lm.1.2.0"
    assert _view(page, 0).locator(".atlas-view-title").inner_text().startswith(words["family_mlm.view_mlm"])
    assert _view(page, 1).locator(".atlas-view-title").inner_text().startswith(words["family_mlm.view_lm"])
    # the mlm sees both sides (no cell masked), the lm only the past
    last = int(_view(page, 0).locator(".atlas-view-detail").get_attribute("data-cols")) - 1
    assert _cell(page, 0, 0, last) != GREY and _cell(page, 1, 0, last) == GREY
    right, drawn_right = page.evaluate(PIXELS, 1), page.evaluate(DRAWN, 1)
    before = page.evaluate(PIXELS, 0)
    tile = _view(page, 0).locator(".atlas-view-tile").last
    layer, head = tile.get_attribute("data-layer"), tile.get_attribute("data-head")
    _no_run(page, 0, tile.click)
    assert page.evaluate(CHOICE, 0) == f"mlm.{layer}.{head}.0"
    assert page.evaluate(PIXELS, 0) != before
    assert page.evaluate(PIXELS, 1) == right and page.evaluate(DRAWN, 1) == drawn_right  # the lm's view stays
    _no_run(page, 1, _view(page, 1).locator("button[data-name='head'][data-value='0']").click)
    assert page.evaluate(CHOICE, 1) == "lm.1.0.0"
    assert words["common.view.mean"] in _view(page, 1).locator(".atlas-view-title").inner_text()
    _view(page, 0).scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"family-view-mlm-{lang}.png"), full_page=True)
    page.close()
