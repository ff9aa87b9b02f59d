"""Input to drawn frame for the sliders that only change the drawing (app/fast/choice.py), in Chromium: the positional
page's anchor, highlighted position, layer and head, the masks page's head and the ViT section's patch; and, in the
same run, the same sliders as the server drew them (ATLAS_ATTENTION_VIEW=server), timed as
../shared/tools/control_latency.py times a control.

    python bench/choice_latency.py [--moves 15] [--lang en] [--sides browser server] [--first-tabs 0]

In the browser the clock starts at the key's own event timestamp (a capturing keydown listener) and stops in the
second animation frame after the last chart or text on the screen that follows the slider drew its new variant (its
data-variant attribute set once Plotly has drawn): the frame with every new drawing on the screen has been produced
(followers only near the screen are drawn in the frames after it). As a learner sees
the page: the slider scrolled into view, the charts near the screen drawn (a chart far below is drawn when it comes
near the screen). A server-drawn slider
is timed from the key press to the run's `script_finished` on the websocket, the status widget gone and two frames.
Writes bench/results/choice_latency.json; prints p50 and p95 per slider and over all moves."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, pct, table, write  # noqa: E402
from bench.view_latency import server_moves  # noqa: E402
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, new_page, served, wait_idle  # noqa: E402

# (page, channel, the server-drawn slider's key, its label for the table)
SLIDERS = [("positional", "pe-anchor", "pe_anchor", "positional: anchor"),
           ("positional", "pe-highlight", "rot_p", "positional: highlighted position"),
           ("positional", "pe-perm-layer", "perm_layer", "positional: layer"),
           ("positional", "pe-perm-head", "perm_head", "positional: head"),
           ("masks", "mask-head", "mask_head", "masks: head"),
           ("family?member=vit", "vit-patch", "fam_vit_patch", "family (ViT): patch"),
           ("recipe", "drop-p", "drop_p", "recipe: P_drop"),
           ("why", "why-k", "cx_k", "why: k")]
LISTEN = """() => {
  window.__t0 = null; window.__done = null;
  if (window.__listening) return;
  window.__listening = true;
  document.addEventListener('keydown', (e) => { window.__t0 = e.timeStamp; window.__done = null; }, true);
  const seen = (el) => { const r = el.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight && r.width > 0; };
  new MutationObserver((records) => { if (records.some((m) => seen(m.target)))
      requestAnimationFrame(() => requestAnimationFrame(() => { window.__done = performance.now(); })); })
    .observe(document.body, {subtree: true, attributes: true, attributeFilter: ['data-variant']});
}"""
TWO_FRAMES = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))"


def browser_moves(page, channel: str, moves: int) -> list[float]:
    thumb = page.locator(f"input[data-channel='{channel}']")
    thumb.scroll_into_view_if_needed()  # the charts near the screen are drawn; the others when scrolled to
    page.wait_for_timeout(1500)
    times = []
    for n in range(moves):
        page.evaluate(LISTEN)
        thumb.focus()
        page.keyboard.press("ArrowRight" if n % 2 == 0 else "ArrowLeft")
        page.wait_for_function("() => window.__done !== null", timeout=10_000)
        page.wait_for_timeout(250)  # every follower drawn: the last one's frames are the clock's end
        times.append(page.evaluate("() => window.__done - window.__t0"))
    return times


def first_moves(browser, url: str, args) -> list[float]:
    """The anchor's first key press in each of args.first_tabs fresh tabs: what a learner's first move costs (the
    variants' numbers not yet decoded, the browser's code paths not yet compiled)."""
    times = []
    for _ in range(args.first_tabs):
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/positional?lang={args.lang}")
        wait_idle(page, draw_all=False)
        times.append(browser_moves(page, "pe-anchor", 1)[0])
        page.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--moves", type=int, default=15)
    ap.add_argument("--lang", default="en")
    ap.add_argument("--sides", nargs="+", default=["browser", "server"], choices=["browser", "server"],
                    help="time the browser's answer, the server's, or both (the default)")
    ap.add_argument("--first-tabs", type=int, default=0,
                    help="also open the positional page in this many fresh tabs and time the anchor's first move in each")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright
    results: dict[str, list[float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for env, side in (({}, "browser"), ({"ATLAS_ATTENTION_VIEW": "server"}, "server")):
            if side not in args.sides:
                continue
            with served(env_extra=env) as (url, _):
                page = new_page(browser, viewport={"width": 1400, "height": 1000})
                opened = None
                if side == "browser":
                    results["browser: first move in a fresh tab (anchor)"] = first_moves(browser, url, args)
                for where, channel, key, label in SLIDERS:
                    if where != opened:
                        sep = "&" if "?" in where else "?"
                        page.goto(f"{url}/{where}{sep}lang={args.lang}")
                        wait_idle(page, draw_all=False)  # as a learner: charts drawn as they come near
                        opened = where
                    results[f"{side}: {label}"] = (browser_moves(page, channel, args.moves) if side == "browser"
                                                   else server_moves(page, args.moves, key))
                page.close()
        browser.close()
    for side in args.sides:
        every = [x for k, v in results.items() if k.startswith(side) and "first move" not in k for x in v]
        results[f"{side}: every move"] = every
    rows = [{"slider": k, "moves": len(v), "p50_ms": round(pct(v, 0.5), 1), "p95_ms": round(pct(v, 0.95), 1)}
            for k, v in results.items() if v]
    print(table(rows))
    write("choice_latency", {"machine": machine(), "rows": rows, "raw": results})


if __name__ == "__main__":
    main()
