"""At a laptop's width (1000 px, the sidebar open) every wide thing either fits its column or visibly scrolls: a
chart wider than its column shows its scroll bar and a faded right edge (app/static/atlas_chart.js), a formula
fits, and a chart's colour bar is inside what the learner sees. Checked on the pages whose maps grow with the
sentence, in both languages."""
from __future__ import annotations

import os
import shutil
from urllib.parse import quote

import pytest

from app.i18n import LANGS
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, new_page, streamlit_server, wait_idle

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")

if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (install Debian's chromium)", allow_module_level=True)

SHOTS = ROOT / "test-artifacts"
LONG = "the teacher bought an apple yesterday and the cat sees the sky but I love flowers " * 2  # ~60 pieces
PAGES = ["masks?tab=padding", "multihead?heads=8", "positional", "family",
         f"inspector?text={quote(LONG.strip())}"]

# Each chart of the page (and each map of the attention view): whether it is wider than the box it is drawn in and,
# if so, whether that box shows it scrolls (a scroll bar always shown, the right edge faded while more is to the
# right); whether each colour bar's labels and its title are inside the visible box. Each formula: whether it is
# wider than its line.
WIDE_JS = r"""() => {
  const out = [];
  for (const gd of document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')) {
    const box = gd.parentElement, b = box.getBoundingClientRect();
    if (!b.width) continue;
    const title = ((gd._fullLayout || {}).title || {}).text || '';
    const wide = gd.scrollWidth > box.clientWidth + 1;
    const style = getComputedStyle(box);
    const cue = style.overflowX === 'scroll' && (style.maskImage || style.webkitMaskImage || 'none') !== 'none';
    const hidden = wide ? [] : Array.from(gd.querySelectorAll('.cbaxis text')).filter(e => {
      const r = e.getBoundingClientRect(); return r.width && (r.right > b.right + 1 || r.left < b.left - 1); })
      .map(e => e.textContent);
    const cut = wide ? [] : Array.from(gd.querySelectorAll('.gtitle')).filter(e => {
      const r = e.getBoundingClientRect(); return r.width && (r.right > b.right + 1 || r.left < b.left - 1); })
      .map(e => e.textContent.slice(0, 40));
    if ((wide && !cue) || hidden.length || cut.length) out.push({chart: title.slice(0, 60), wide, cue, hidden, cut});
  }
  for (const box of document.querySelectorAll('.atlas-view-scroll')) {  // the attention view's maps and tiles
    const wide = box.scrollWidth > box.clientWidth + 1, style = getComputedStyle(box);
    const cue = style.overflowX === 'scroll' && (style.maskImage || style.webkitMaskImage || 'none') !== 'none';
    if (wide && !cue) out.push({view: box.firstElementChild.className, wide, cue});
  }
  for (const f of document.querySelectorAll('[data-testid="stMain"] .katex-display')) {
    const inner = f.querySelector('.katex-html') || f, width = inner.getBoundingClientRect().width;
    if (width > f.getBoundingClientRect().width + 1) out.push({formula: f.textContent.slice(0, 60), width: Math.round(width),
                                                               room: Math.round(f.getBoundingClientRect().width)});
  }
  return out;
}"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    SHOTS.mkdir(exist_ok=True)
    with streamlit_server({"ATLAS_RUNS_DIR": str(tmp_path_factory.mktemp("runs"))}) as url, \
            playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield url, chromium
        chromium.close()


@pytest.mark.parametrize("lang", list(LANGS))
def test_every_wide_figure_fits_or_visibly_scrolls_at_1000px(browser, lang):
    url, chromium = browser
    page = new_page(chromium, viewport={"width": 1000, "height": 900})
    problems = {}
    for spec in PAGES:
        page.goto(f"{url}/{spec}{'&' if '?' in spec else '?'}lang={lang}")
        wait_idle(page, timeout=180_000)
        if found := page.evaluate(WIDE_JS):
            problems[spec.split("?")[0]] = found
            page.screenshot(path=str(SHOTS / f"wide-{spec.split('?')[0]}-{lang}-1000.png"), full_page=True)
    page.close()
    assert problems == {}
