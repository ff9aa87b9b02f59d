"""Take screenshots of app pages in headless Chromium: python tools/screenshot.py URL_PATH [lang] ...

Writes test-artifacts/shot-<page>-<lang>.png. For looking at pages by hand during development."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, ROOT, streamlit_server, wait_idle  # noqa: E402


def shoot(pages: list[str], langs=("en", "ko"), wait_ms=1500, width=1400, height=3000):
    out = ROOT / "test-artifacts"
    out.mkdir(exist_ok=True)
    with streamlit_server() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": width, "height": height})
        for lang in langs:
            page.goto(url)
            wait_idle(page)
            if lang == "ko":
                page.get_by_text("한국어").first.click()
                page.wait_for_timeout(1500)
            for path in pages:
                if path:
                    page.locator(f"[data-testid='stSidebarNav'] a[href$='/{path}']").first.click()
                wait_idle(page)
                page.wait_for_timeout(wait_ms)
                f = out / f"shot-{path or 'home'}-{lang}.png"
                page.screenshot(path=str(f), full_page=True)
                print(f)
        browser.close()


if __name__ == "__main__":
    args = sys.argv[1:] or [""]
    langs = ("en", "ko")
    shoot(args, langs)
