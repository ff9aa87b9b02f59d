"""Where one slider move's time goes, in control_latency.py's method (../shared/tools/control_latency.py): key press
-> the browser sends the new value (the slider's own wait) -> the server's first message of the run -> the run's
`script_finished` -> the status widget gone and two frames drawn. Times are taken in the browser (performance.now()
inside a WebSocket wrapper installed before the page loads), so the split is exact to a millisecond.

    python bench/move_breakdown.py --pages recipe positional --moves 5

Prints, per slider, the medians of: send (key -> value sent), server (sent -> script_finished received: the run, its
messages, and whatever the page did with the earlier ones before it could take this one), after (script_finished ->
two frames), total, and the bytes received; the bare Streamlit slider first.

--no-plotly serves the app a Plotly that draws nothing (every call resolves at once): the same moves then cost what
Streamlit and the app's own elements cost without Plotly's drawing, so the difference of two runs is what drawing the
charts adds to a move. Writes bench/results/move_breakdown.json (move_breakdown_no_plotly.json)."""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import bare_moves, control_latency as tool, page_sliders, write  # noqa: E402

# Records the time of every message the page sends and of every message it receives, before Streamlit handles it
# (a listener added first runs first), so "received" is the moment the frame reached the page.
PROBE = """
(() => {
  const Native = window.WebSocket;
  window.__sent = []; window.__got = [];
  window.WebSocket = function (...args) {
    const ws = new Native(...args);
    const send = ws.send.bind(ws);
    ws.send = (data) => { window.__sent.push(performance.now()); return send(data); };
    ws.addEventListener("message", (e) => { window.__got.push([performance.now(), e.data]); });
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
})();
"""


# A Plotly that draws nothing: what the chart element calls, each resolving at once, and the events it listens to.
NO_PLOTLY = """
(() => {
  const done = (gd) => Promise.resolve(gd);
  const lib = {react: done, newPlot: done, update: done, restyle: done, relayout: done, purge: () => {},
               Plots: {resize: done}};
  window.Plotly = lib;
  const on = HTMLElement.prototype.on;
  if (!on) HTMLElement.prototype.on = function () {};
})();
"""


def finished_at(pg, since: float) -> tuple[float | None, float | None, int]:
    """(first message received after `since`, script_finished received after it, bytes received between), in the
    page's clock."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    got = pg.evaluate("""(since) => window.__got.filter(g => g[0] > since).map(g => [g[0],
        g[1] instanceof ArrayBuffer ? Array.from(new Uint8Array(g[1])) : []])""", since)
    first, end, size = None, None, 0
    for at, data in got:
        size += len(data)
        first = at if first is None else first
        try:
            msg = ForwardMsg.FromString(bytes(data))
        except Exception:
            continue
        if msg.WhichOneof("type") == "script_finished":
            end = at
            break
    return first, end, size


def move(pg, slider) -> dict:
    """One move as control_latency.py times it (its run counted on the websocket from Python), then the browser's
    timestamps read once, so that the probe adds no work while the move is timed."""
    slider.scroll_into_view_if_needed()
    handle = slider.locator("input[type='range']").first
    key = "ArrowLeft" if handle.input_value() == handle.get_attribute("max") else "ArrowRight"
    handle.focus()
    pg.evaluate("() => { window.__sent.length = 0; window.__got.length = 0; }")
    t0 = pg.evaluate("() => performance.now()")
    before = pg.runs[0]
    pg.keyboard.press(key)
    while pg.runs[0] == before:
        pg.wait_for_timeout(5)
    while pg.locator("[data-testid='stStatusWidget']").count():
        pg.wait_for_timeout(5)
    done = pg.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))")
    first, end, size = finished_at(pg, t0)
    sent = pg.evaluate("(t0) => window.__sent.find(s => s > t0) ?? null", t0)
    return {"send": (sent - t0) if sent else None, "server": (end - sent) if sent and end else None,
            "after": (done - end) if end else None, "total": done - t0, "bytes": size,
            "first": (first - sent) if sent and first else None}


def median(rows, k):
    vals = [r[k] for r in rows if r[k] is not None]
    return statistics.median(vals) if vals else float("nan")


def line(name, rows):
    return (f"{name:52s} send {median(rows, 'send'):5.0f}  server {median(rows, 'server'):5.0f} "
            f"(first msg {median(rows, 'first'):4.0f})  after {median(rows, 'after'):5.0f}  total "
            f"{median(rows, 'total'):5.0f} ms  {median(rows, 'bytes') / 1000:7.1f} kB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", nargs="*", default=["recipe"])
    ap.add_argument("--moves", type=int, default=5)
    ap.add_argument("--only", default="", help="only sliders whose label contains this")
    ap.add_argument("--no-plotly", action="store_true", help="serve a Plotly that draws nothing")
    args = ap.parse_args()
    cl = tool()
    from playwright.sync_api import sync_playwright
    out = {}
    with tempfile.TemporaryDirectory() as d, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=cl.shutil.which("chromium"), args=["--no-sandbox", "--disable-gpu"])
        rows = bare_moves(cl, browser, Path(d), move, max(args.moves, 5), init_script=PROBE)
        out["bare"] = rows
        print(line("bare slider", rows), flush=True)
        with cl.server("app/main.py") as url:
            pg = cl.watch_runs(browser.new_page(viewport={"width": 1400, "height": 1000}))
            pg.add_init_script(PROBE)
            if args.no_plotly:
                pg.route("**/plotly.min.js*", lambda route: route.fulfill(body=NO_PLOTLY,
                                                                          content_type="application/javascript"))
            pg.goto(url)
            pg.wait_for_selector("[data-testid='stMain'] h1", timeout=90_000)
            cl.settle(pg)
            for path in args.pages:
                for label, slider in page_sliders(cl, pg, url, path):
                    if args.only and args.only not in label:
                        continue
                    if slider.locator("xpath=ancestor::*[@data-testid='stForm']").count():
                        continue
                    try:
                        rows = [move(pg, slider) for _ in range(args.moves)]
                    except Exception as e:  # a slider in a closed box
                        print(f"  skipped {path} / {label}: {type(e).__name__}", file=sys.stderr)
                        continue
                    out[f"{path} / {label}"] = rows
                    print(line(f"{path} / {label}", rows), flush=True)
            pg.close()
        browser.close()
    write("move_breakdown_no_plotly" if args.no_plotly else "move_breakdown", out)


if __name__ == "__main__":
    main()
