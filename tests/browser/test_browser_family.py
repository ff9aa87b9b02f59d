"""The family page in a real browser: a learner draws on the ViT canvas by clicking pixels and masks a
word for the BERT-style model; the predictions and maps follow, in both languages, with no exception box."""
from __future__ import annotations

import contextlib

import pytest
from app.i18n import LANGS

from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, rerun, streamlit_server, wait_idle

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")
SHOTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    SHOTS.mkdir(exist_ok=True)
    with streamlit_server({"ATLAS_RUNS_DIR": str(tmp_path_factory.mktemp("runs"))}) as url, \
            playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield url, browser
        browser.close()


def settle(page, ms: int = 400, tries: int = 60) -> None:
    """Idle: the page has a title and no script run is in progress (Streamlit's status widget is gone)."""
    wait_idle(page)
    for _ in range(tries):
        if page.locator("[data-testid='stStatusWidget']").count() == 0:
            break
        page.wait_for_timeout(250)
    page.wait_for_timeout(ms)


def no_exception(page, where: str) -> None:
    boxes = page.locator("[data-testid='stException']")
    assert boxes.count() == 0, f"{where}: {boxes.first.inner_text()[:500]}"


# the titles of the prediction panels: one subplot per [MASK] (annotations of the panels' figure)
PANELS_JS = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot'))
    .map(gd => ((gd.layout && gd.layout.annotations) || []).filter(a => /\\d/.test(a.text || '') &&
        (gd.data || []).some(tr => tr.type === 'bar')).length)
    .reduce((a, b) => Math.max(a, b), 0)"""


@contextlib.contextmanager
def member_page(site, member: str, lang: str):
    """A new tab on the family page showing `member`, settled and free of exception boxes."""
    url, browser = site
    page = new_page(browser, viewport={"width": 1400, "height": 1400})
    try:
        page.goto(f"{url}/family?member={member}&lang={lang}")
        settle(page)
        no_exception(page, member)
        yield page
    finally:
        page.close()


def grid_text(page) -> str:
    return page.locator(".st-key-fam_vit_grid textarea").input_value()


@pytest.mark.parametrize("lang", list(LANGS))
def test_draw_a_digit_by_clicking_the_canvas(site, lang):
    with member_page(site, "vit", lang) as page:
        with rerun(page):
            page.locator(".st-key-fam_vit_clear button").click()  # start from an empty canvas
        settle(page)
        assert set(grid_text(page).replace("\n", "")) == {"."}
        canvas = page.locator("[class*='st-key-fam_vit_canvas'] .js-plotly-plot").first
        canvas.scroll_into_view_if_needed()
        drag = canvas.locator(".nsewdrag").first.bounding_box()
        cell_w, cell_h = drag["width"] / 8, drag["height"] / 8
        drawn = [(1, 3), (2, 3), (3, 3), (4, 3), (5, 3), (6, 3)]  # a vertical stroke: a "1"
        for row, col in drawn:
            canvas = page.locator("[class*='st-key-fam_vit_canvas'] .js-plotly-plot").first
            box = canvas.locator(".nsewdrag").first.bounding_box()
            with rerun(page):
                page.mouse.click(box["x"] + (col + 0.5) * cell_w, box["y"] + (row + 0.5) * cell_h)
            settle(page, 300)
        rows = grid_text(page).splitlines()
        inked = {(r, c) for r, line in enumerate(rows) for c, ch in enumerate(line) if ch != "."}
        assert inked == set(drawn), rows
        no_exception(page, "vit after drawing")
        page.screenshot(path=str(SHOTS / f"family-vit-drawn-{lang}.png"), full_page=True)


@pytest.mark.parametrize("lang", list(LANGS))
def test_mask_a_word_by_clicking_its_token(site, lang):
    """Clicking a token pill hides it: the pill shows as pressed, the link carries it, and one more [MASK]
    panel of predictions appears."""
    with member_page(site, "mlm", lang) as page:
        panels_before = page.evaluate(PANELS_JS)
        pill = page.locator(".st-key-fam_mlm_masked button").filter(has_text="park").first
        with rerun(page):
            pill.click()
        settle(page, 600)
        no_exception(page, "mlm after a click")
        # a loaded machine may still be drawing the new figure: give it up to 15 s before judging
        for _ in range(60):
            if page.evaluate(PANELS_JS) == panels_before + 1 and "mlm_masked=" in page.url:
                break
            page.wait_for_timeout(250)
        assert pill.get_attribute("aria-pressed") == "true"
        assert "mlm_masked=" in page.url  # the masked token is part of the link
        panels = page.evaluate(PANELS_JS)
        assert panels == panels_before + 1, (panels_before, panels)  # one more [MASK] panel of predictions
        page.screenshot(path=str(SHOTS / f"family-mlm-masked-{lang}.png"), full_page=True)
