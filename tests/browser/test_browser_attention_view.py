"""The inspector's attention view in Chromium, in both languages: a tile clicked opens its map, a layer or head
picked, a cell or a token pointed at — each answered in the browser with no script run, each read off what is
drawn; the choice in the link, kept across a language switch and reproduced by the link in a fresh browser."""
from __future__ import annotations

import re

import pytest
from app.i18n import LANGS, catalogue

from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, drawing_only, new_page, rerun, served, wait_idle

pytestmark = pytest.mark.browser
SHOTS = ROOT / "test-artifacts" / "screenshots"
VIEW = ".atlas-view"
CHOICE = f"() => document.querySelector('{VIEW}').dataset.choice"
DRAWN = f"() => Number(document.querySelector('{VIEW}').dataset.drawn)"
PIXELS = "(sel) => document.querySelector(sel).toDataURL()"


def _open(page, url: str, lang: str, query: str = "") -> None:
    page.goto(f"{url}/inspector?lang={lang}{query}")
    wait_idle(page, draw_all=False)
    page.wait_for_selector(VIEW, timeout=60_000)
    page.locator(VIEW).first.scroll_into_view_if_needed()


def _no_run(page, action) -> None:
    """`action()` changes the drawing only: the view draws again, and no script run reaches the page."""
    drawing_only(page, action, DRAWN)


@pytest.mark.parametrize("lang", LANGS)
def test_the_view_answers_in_the_browser_and_keeps_its_choice_in_the_link(lang):
    from playwright.sync_api import sync_playwright
    words = catalogue(lang)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1200, "height": 1400})
        _open(page, url, lang)
        tiles = page.locator(".atlas-view-tile")
        n = tiles.count()
        assert n >= 4
        last = tiles.nth(n - 1)
        layer, head = int(last.get_attribute("data-layer")), int(last.get_attribute("data-head"))
        _no_run(page, last.click)
        assert page.evaluate(CHOICE) == f"encoder_self.{layer}.{head}.0"
        assert f"view=encoder_self.{layer}.{head}.0" in page.url
        title = page.locator(".atlas-view-title").inner_text()
        assert f"{words['common.view.layer']} {layer} · {words['common.view.head']} {head}" in title, title
        assert page.locator(".atlas-view-chosen").get_attribute("data-layer") == str(layer)

        # the mean over heads, then layer 1, from the buttons
        _no_run(page, lambda: page.locator("button[data-name='head'][data-value='0']").click())
        _no_run(page, lambda: page.locator("button[data-name='layer'][data-value='1']").click())
        assert page.evaluate(CHOICE) == "encoder_self.1.0.0"
        assert words["common.view.mean"] in page.locator(".atlas-view-title").inner_text()

        # a cell pointed at: its query, key and weight read out
        box = page.locator(".atlas-view-detail").bounding_box()
        page.mouse.move(box["x"] + box["width"] - 5, box["y"] + box["height"] - 5)
        readout = page.locator(".atlas-view-detailbox .atlas-view-readout").inner_text()
        assert re.search(r"→ .+: [01]\.\d{3}$", readout), readout

        # a query picked by clicking its row: the others dimmed, the range input and the link follow
        before = page.evaluate(PIXELS, ".atlas-view-detail")
        _no_run(page, lambda: page.mouse.click(box["x"] + box["width"] - 5, box["y"] + box["height"] - 5))
        choice = page.evaluate(CHOICE)
        assert re.fullmatch(r"encoder_self\.1\.0\.[1-9]\d*", choice), choice
        assert page.evaluate(PIXELS, ".atlas-view-detail") != before
        page.locator(VIEW).screenshot(path=str(SHOTS / f"attention-view-grid-{lang}.png"))

        # from the keyboard: a tile reached by focus opens with Enter and keeps the focus
        page.locator(".atlas-view-tile").first.focus()
        _no_run(page, lambda: page.keyboard.press("Enter"))
        choice = page.evaluate(CHOICE)
        assert choice.startswith("encoder_self.1.1."), choice
        assert page.evaluate("() => document.activeElement.dataset.layer + '.' + document.activeElement.dataset.head") == "1.1"

        # another language: the page runs again, the view keeps the learner's choice
        other = next(x for x in LANGS if x != lang)
        with rerun(page, draw_all=False):
            page.locator("[data-testid='stSidebar'] [data-testid='stRadio'] label").filter(has_text=LANGS[other]).click()
        page.wait_for_selector(VIEW, timeout=60_000)
        page.wait_for_function(f"(c) => ({CHOICE})() === c", arg=choice, timeout=10_000)
        assert catalogue(other)["common.view.layer"] in page.locator(".atlas-view-title").inner_text()
        assert f"view={choice}" in page.url

        # the link in a fresh browser opens the same view
        link = page.url
        fresh = new_page(browser.new_context(viewport={"width": 1200, "height": 1400}))
        fresh.goto(link)
        wait_idle(fresh, draw_all=False)
        fresh.wait_for_selector(VIEW, timeout=60_000)
        assert fresh.evaluate(CHOICE) == choice
        browser.close()


@pytest.mark.parametrize("lang", LANGS)
def test_the_head_view_lights_a_tokens_lines_when_pointed_at(lang):
    from playwright.sync_api import sync_playwright
    words = catalogue(lang)
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1200, "height": 1400})
        _open(page, url, lang, "&tab=head")
        page.wait_for_selector(".atlas-view-lines", timeout=60_000)
        canvas = page.locator(".atlas-view-lines")
        every = page.evaluate(PIXELS, ".atlas-view-lines")
        box = canvas.bounding_box()
        page.mouse.move(box["x"] + 20, box["y"] + 12 + 22 * 2 + 11)  # the third query token
        readout = page.locator(".atlas-view-headbox .atlas-view-readout").inner_text()
        assert readout.startswith(words["common.query"]), readout
        only = page.evaluate(PIXELS, ".atlas-view-lines")
        assert only != every
        page.locator(VIEW).screenshot(path=str(SHOTS / f"attention-view-heads-{lang}.png"))
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] + 200)  # away: every line again
        assert page.evaluate(PIXELS, ".atlas-view-lines") == every
        # one head, then layer 2: the legend names the head, the title the layer
        _no_run(page, lambda: page.locator("button[data-name='head'][data-value='2']").click())
        assert page.locator(".atlas-view-legend").inner_text().strip() == f"{words['common.view.head']} 2"
        _no_run(page, lambda: page.locator("button[data-name='layer'][data-value='2']").click())
        assert f"{words['common.view.layer']} 2" in page.locator(".atlas-view-title").inner_text()
        browser.close()


def test_the_later_keys_of_a_causal_map_are_drawn_masked_and_said_so():
    """The decoder's self-attention: a later key's cell is the mask's grey (whatever its weight), an earlier one a
    colour of the scale; pointed at, the later key reads as masked."""
    from playwright.sync_api import sync_playwright
    words = catalogue("en")
    grey = [217, 217, 222]
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1200, "height": 1400})
        _open(page, url, "en", "&kind=decoder_self")
        canvas = page.locator(".atlas-view-detail")
        canvas.scroll_into_view_if_needed()
        d = {k: float(v) for k, v in canvas.evaluate("(c) => ({...c.dataset})").items()}
        assert d["rows"] == d["cols"] > 2

        def centre(i, j):  # canvas pixels of query i, key j (0-based)
            return [int(d["left"] + (j + 0.5) * d["cell"]), int(d["top"] + (i + 0.5) * d["cell"])]

        def colour(i, j):
            x, y = int(d["left"] + j * d["cell"]) + 1, int(d["top"] + i * d["cell"]) + 1  # a corner: clear of the ✕
            return canvas.evaluate("(c, [x, y]) => Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3))",
                                   [x, y])

        last = int(d["cols"]) - 1
        assert colour(0, last) == grey and colour(1, last) == grey  # later keys
        assert colour(last, 0) != grey and colour(last, last) != grey  # earlier keys and the query itself
        box = canvas.bounding_box()
        x, y = centre(0, last)
        page.mouse.move(box["x"] + x, box["y"] + y)
        assert page.locator(".atlas-view-detailbox .atlas-view-readout").inner_text().endswith(
            f"0 ({words['common.view.masked']})")
        assert words["common.view.masked_hint"] in page.locator(".atlas-view-detailbox").inner_text()
        browser.close()


def test_the_masks_page_view_starts_where_its_inputs_say_and_keeps_the_learners_choice_across_pages():
    """The masks page's view opens at the layer and head its link (or a tour stop) asks for; the learner's own
    choice after that survives a visit to another page; inputs asked anew (another link) win over it."""
    from playwright.sync_api import sync_playwright

    from app.pages_list import PAGES
    nav = "[data-testid='stSidebarNav']"
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1200, "height": 1400})
        page.goto(f"{url}/masks?lang=en&kind=cross&layer=2&kind_head=3")
        wait_idle(page, draw_all=False)
        page.wait_for_selector(VIEW, timeout=60_000)
        assert page.evaluate(CHOICE) == "cross.2.3.0"
        page.locator(VIEW).scroll_into_view_if_needed()
        _no_run(page, lambda: page.locator(".atlas-view-tile[data-layer='1'][data-head='1']").click())
        assert page.evaluate(CHOICE) == "cross.1.1.0" and "view=cross.1.1.0" in page.url
        for info in (next(x for x in PAGES if x.url == "attention"), next(x for x in PAGES if x.url == "masks")):
            with rerun(page, draw_all=False):
                page.locator(nav).get_by_role("link", name=info.title_in("en"), exact=True).click()
        page.wait_for_selector(VIEW, timeout=60_000)
        assert page.evaluate(CHOICE) == "cross.1.1.0"  # the learner's choice, back from another page
        page.goto(f"{url}/masks?lang=en&kind=cross&layer=1&kind_head=2")  # asked anew, in the same tab
        wait_idle(page, draw_all=False)
        page.wait_for_selector(VIEW, timeout=60_000)
        assert page.evaluate(CHOICE) == "cross.1.2.0"
        browser.close()


def test_a_map_wider_than_its_column_shows_that_it_scrolls():
    """A long sentence at 1000 px: the enlarged map is wider than the page's column, so its box shows a scroll bar
    and a faded right edge, until it is scrolled to the end (as the app's wide charts do)."""
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright
    text = "the teacher bought an apple yesterday and the cat sees the sky but I love flowers " * 5
    wide = "() => document.querySelector('.atlas-view-detailbox .atlas-view-scroll').className"
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1000, "height": 1200})
        _open(page, url, "en", f"&text={quote(text.strip())}")
        box = page.locator(".atlas-view-detailbox .atlas-view-scroll")
        assert box.evaluate("(b) => b.scrollWidth > b.clientWidth")
        assert "atlas-view-wide" in page.evaluate(wide) and "atlas-view-at-end" not in page.evaluate(wide)
        assert box.evaluate("(b) => getComputedStyle(b).overflowX") == "scroll"
        box.evaluate("(b) => { b.scrollLeft = b.scrollWidth; }")
        page.wait_for_function(f"() => ({wide})().includes('atlas-view-at-end')", timeout=5_000)
        browser.close()
