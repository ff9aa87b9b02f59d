"""Input to drawn frame in the inspector's attention view (app/static/attention_view.js), in Chromium: a tile
clicked, a layer or head button clicked, a cell pointed at, a token of the head view pointed at; and, in the same
run, a server-drawn control of the same kind (the masks page's head slider, as the server drew it before the view:
ATLAS_ATTENTION_VIEW=server), its script run to a drawn frame.

    python bench/view_latency.py [--moves 30] [--lang en]
    python bench/view_latency.py --big      # a random 12-layer x 12-head Llama (3 key/value heads) on ~64 tokens

The view's clock starts at the event's own timestamp (a capturing listener on the view, before its handler) and
stops in the second animation frame after the handler drew: the frame with the new drawing has been produced.
The server side is timed as ../shared/tools/control_latency.py times a control: from the key press to the
run's `script_finished` on the websocket, the status widget gone and two frames drawn.
Writes bench/results/view_latency.json; prints p50 and p95 per action."""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, pct, table, write  # noqa: E402
from tests.streamlit_server import STATUS_GONE_JS, CHROMIUM, CHROMIUM_ARGS, new_page, served, wait_idle  # noqa: E402

LISTEN = """() => {
  window.__lat = [];
  const root = document.querySelector('.atlas-view');
  const mark = (e) => { const t0 = e.timeStamp, what = e.type;
    requestAnimationFrame(() => requestAnimationFrame(() => window.__lat.push([what, performance.now() - t0]))); };
  root.addEventListener('click', mark, true);
  root.addEventListener('mousemove', mark, true);
}"""
VISIBLE = """() => { const c = document.querySelector('.atlas-view-detail'), r = c.getBoundingClientRect(),
  b = c.parentElement.getBoundingClientRect();
  return {x0: Math.max(r.left, b.left), x1: Math.min(r.right, b.right) - 4, y0: Math.max(r.top, 0),
          y1: Math.min(r.bottom, window.innerHeight) - 4}; }"""
TWO_FRAMES = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))"


def view_moves(page, moves: int, rng: random.Random) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"tile click": [], "button click": [], "cell hover": [], "token hover": []}
    page.evaluate(LISTEN)

    def last() -> float:
        page.wait_for_function("() => window.__lat.length > 0", timeout=5_000)
        values = page.evaluate("() => { const v = window.__lat.map((x) => x[1]); window.__lat = []; return v; }")
        return values[-1]

    for _ in range(moves):
        tiles = page.locator(".atlas-view-tile")
        tiles.nth(rng.randrange(tiles.count())).click()
        out["tile click"].append(last())
        buttons = page.locator(".atlas-view-row button[data-name='layer'], .atlas-view-row button[data-name='head']")
        buttons.nth(rng.randrange(buttons.count())).click()
        out["button click"].append(last())
        page.locator(".atlas-view-detail").scroll_into_view_if_needed()
        v = page.evaluate(VISIBLE)  # the part of the map on the screen (a wide map scrolls in its box)
        page.mouse.move(v["x0"] + rng.uniform(0.5, 0.95) * (v["x1"] - v["x0"]),
                        v["y0"] + rng.uniform(0.5, 0.95) * (v["y1"] - v["y0"]))
        out["cell hover"].append(last())
    return out


def head_moves(page, moves: int, rng: random.Random) -> list[float]:
    page.evaluate(LISTEN)
    page.locator(".atlas-view-lines").scroll_into_view_if_needed()
    box = page.locator(".atlas-view-lines").bounding_box()
    times = []
    top, bottom = max(box["y"], 0), min(box["y"] + box["height"], page.viewport_size["height"])  # on the screen
    for _ in range(moves):
        page.mouse.move(box["x"] + 20, top + rng.uniform(0.1, 0.9) * (bottom - top))
        page.wait_for_function("() => window.__lat.length > 0", timeout=5_000)
        times.append(page.evaluate("() => { const v = window.__lat.map((x) => x[1]); window.__lat = []; return v.pop(); }"))
        page.mouse.move(box["x"] + box["width"] / 2, top - 40)
        page.evaluate(TWO_FRAMES)
        page.evaluate("() => { window.__lat = []; }")
    return times


def server_moves(page, moves: int, key: str = "kind_head") -> list[float]:
    """A server-drawn drawing-only control (default the masks page's head slider; `key` its widget key): a key press
    to the run's end (on the websocket), the status widget gone and two frames drawn."""
    runs = page.__dict__["atlas_runs"]
    times = []
    page.wait_for_selector(f".st-key-{key} input[type='range']", state="attached", timeout=60_000)
    slider = page.locator(f".st-key-{key} input[type='range']").first
    slider.scroll_into_view_if_needed()
    slider.focus()
    for n in range(moves):
        before = runs[0]
        t0 = time.perf_counter()
        page.keyboard.press("ArrowRight" if n % 2 == 0 else "ArrowLeft")
        deadline = time.time() + 30
        while runs[0] == before and time.time() < deadline:
            page.wait_for_timeout(5)
        page.wait_for_function(STATUS_GONE_JS, timeout=60_000)
        page.evaluate(TWO_FRAMES)
        times.append((time.perf_counter() - t0) * 1000)
    return times


BIG_TEXT = ("the quick brown fox jumps over the lazy dog while my friend reads a long book about the sea and the sky "
            "in the quiet old library near the school every day")


def big_model(folder: Path) -> str:
    """A random Llama of BERT-base's head count (12 layers x 12 heads, 3 key/value heads) in `folder`/big, saved as
    save_pretrained writes it (the hub tests' own maker; needs transformers): the inspector's name for it."""
    import tests.model.test_hub_llama as maker
    maker.D, maker.HEADS, maker.KV, maker.FF, maker.LAYERS = 96, 12, 3, 128, 12
    (folder / "big").mkdir(parents=True)
    maker.make_checkpoint(folder / "big", "llama-spm")
    return "pretrained: big"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--moves", type=int, default=30)
    ap.add_argument("--lang", default="en")
    ap.add_argument("--big", action="store_true", help="a 12 x 12-head model on ~64 tokens instead of the shipped one")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright
    rng = random.Random(0)
    results: dict[str, list[float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        env, query = {}, ""
        if args.big:
            import tempfile
            from urllib.parse import quote
            folder = Path(tempfile.mkdtemp())
            env = {"ATLAS_PRETRAINED_DIR": str(folder)}
            query = f"&model={quote(big_model(folder))}&text={quote(BIG_TEXT)}"
        with served(env_extra=env) as (url, _):
            page = new_page(browser, viewport={"width": 1300, "height": 1500})
            page.goto(f"{url}/inspector?lang={args.lang}{query}")
            wait_idle(page, draw_all=False)
            page.wait_for_selector(".atlas-view", timeout=120_000)
            print("maps:", page.evaluate("() => document.querySelectorAll('.atlas-view-tile').length"),
                  "tokens:", page.evaluate("() => document.querySelector('.atlas-view-detail').dataset.cols"))
            results.update(view_moves(page, args.moves, rng))
            page.goto(f"{url}/inspector?lang={args.lang}&tab=head{query}")
            wait_idle(page, draw_all=False)
            page.wait_for_selector(".atlas-view-lines")
            results["token hover"] = head_moves(page, args.moves, rng)
        with served(env_extra={"ATLAS_ATTENTION_VIEW": "server"}) as (url, _):  # the masks page as the server drew it
            page = new_page(browser, viewport={"width": 1300, "height": 1500})
            page.goto(f"{url}/masks?lang={args.lang}")
            wait_idle(page, draw_all=False)
            results["server: masks page head slider"] = server_moves(page, max(5, args.moves // 3))
        browser.close()
    rows = [{"action": k, "moves": len(v), "p50_ms": round(pct(v, 0.5), 1), "p95_ms": round(pct(v, 0.95), 1)}
            for k, v in results.items() if v]
    print(table(rows))
    write("view_latency_big" if args.big else "view_latency", {"machine": machine(), "rows": rows, "raw": results})


if __name__ == "__main__":
    main()
