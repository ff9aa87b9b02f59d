"""The limits page in Chromium, both languages: a move of a slider whose measurement is new answers at once with
the last measurement under a note, and the new one replaces it when the server's background thread has measured
it, with no further action of the learner's (the page's small watching fragment runs it again)."""
from __future__ import annotations

import pytest
from app.i18n import LANGS, catalogue

from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, served, wait_idle

pytestmark = pytest.mark.browser
SHOTS = ROOT / "test-artifacts" / "screenshots"
NOTE = ".st-key-atlas-pending-cost"
# the cost table's full-attention row: its measured peak ("33.000 MiB"), found by the header's words
PEAK = """(header) => { const t = Array.from(document.querySelectorAll('[data-testid=stMain] table'))
  .find(t => t.querySelector('th') && t.textContent.includes(header));
  if (!t) return null; const heads = Array.from(t.querySelectorAll('th')).map(h => h.textContent.trim());
  const row = t.querySelector('tbody tr'); return row ? row.children[heads.indexOf(header)].textContent.trim() : null; }"""


@pytest.mark.parametrize("lang", LANGS)
def test_a_new_measurement_lands_by_itself_after_the_last_one_shows(lang):
    from playwright.sync_api import sync_playwright
    words = catalogue(lang)
    header = words["limits.cost.peak"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, viewport={"width": 1400, "height": 1200})
        page.goto(f"{url}/limits?lang={lang}")
        wait_idle(page)
        before = page.evaluate(PEAK, header)
        assert before and before.startswith("33.0"), before  # n = 1,024 at d = 256, 4 heads: 4 x 1024^2 x 2 x 4 B
        assert page.locator(NOTE).count() == 0
        n = page.get_by_role("slider").first  # n: 1,024 -> 2,048, sizes never measured on this server
        n.focus()
        n.press("ArrowRight")
        # the note's box can come before its text: Streamlit fills a new block's place with what stood there (the
        # table) until the note's own element arrives, so wait for the note itself
        alert = page.locator(f"{NOTE} [data-testid='stAlert']")
        alert.wait_for(timeout=30_000)
        note = alert.inner_text()
        assert "2,048" in note and "1,024" in note, note
        assert page.evaluate(PEAK, header) == before  # the last measurement, said to be so
        page.screenshot(path=str(SHOTS / f"limits-measuring-{lang}.png"))
        # nothing pressed: the new measurement replaces the last one once measured
        page.wait_for_selector(NOTE, state="detached", timeout=120_000)
        wait_idle(page)
        after = page.evaluate(PEAK, header)
        assert float(after.split()[0]) > 3.5 * float(before.split()[0]), after  # 4 x the scores at twice the length
        assert page.locator("[data-testid='stException']").count() == 0
        page.screenshot(path=str(SHOTS / f"limits-measured-{lang}.png"))
        browser.close()
