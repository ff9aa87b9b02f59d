"""Start `streamlit run app/main.py` on a free loopback port (for browser tests and screenshots)."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("ATLAS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(root: Path = ROOT, env_extra: dict | None = None, timeout: float = 90, log_path: Path | None = None,
           script: Path | None = None):
    """`streamlit run app/main.py` (or `script`) of the tree `root` (its .streamlit/config.toml applies) on a
    free loopback port, once healthy; yields (url, the server process). Used by the browser tests and bench/."""
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env_extra or {})}
    if log_path is None and (ROOT / "test-artifacts").is_dir():
        log_path = ROOT / "test-artifacts" / f"streamlit-{port}.log"
    log = open(log_path, "w") if log_path is not None else subprocess.DEVNULL
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script or root / "app" / "main.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", "--server.runOnSave", "false"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode} (log: {log_path})")
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        else:
            raise TimeoutError("streamlit did not become healthy")
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log is not subprocess.DEVNULL:
            log.close()


@contextlib.contextmanager
def streamlit_server(env_extra: dict | None = None, timeout: float = 90):
    with served(env_extra=env_extra, timeout=timeout) as (url, _):
        yield url


def new_page(owner, warm_elements: bool = False, **kwargs):
    """A page of `owner` (a browser or a browser context) whose script runs are counted (watch_runs). Without
    `warm_elements` the warm-up does not ask for its hidden elements (app.fast.browser_warm.elements): that run of its own,
    seconds after the page opens, would land among a test's actions. The warm-up's own test asks for them."""
    from app.fast.browser_warm import NO_ELEMENTS
    page = owner.new_page(**kwargs)
    if not warm_elements:
        page.add_init_script(f"window.{NO_ELEMENTS} = true")
    return watch_runs(page)


def watch_runs(page):
    """Count the script runs (the page's or a fragment's) that the server reports finished to `page`: its
    ForwardMsg `script_finished`, read from the websocket. Call it before the page connects. (The app element's
    data-test-script-state attribute missed runs: on a loaded browser React drew "running" and "not running"
    in one render, and the attribute never changed.)"""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    runs = page.__dict__.setdefault("atlas_runs", [0])
    ends = page.__dict__.setdefault("atlas_run_ends", [])  # how each run ended, e.g. FINISHED_FRAGMENT_RUN_SUCCESSFULLY

    def frame(payload):
        if isinstance(payload, (bytes, bytearray)):
            try:
                msg = ForwardMsg.FromString(bytes(payload))
            except Exception:  # not a ForwardMsg: nothing to count
                return
            if msg.WhichOneof("type") == "script_finished":
                ends.append(ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished))
                runs[0] += 1

    page.on("websocket", lambda ws: ws.on("framereceived", frame))
    return page


@contextlib.contextmanager
def rerun(page, timeout=120_000, draw_all: bool = True):
    """`with rerun(page): <a click>`: the click makes Streamlit run the page (or a fragment) again; wait until
    the server has finished that run, then as wait_idle. A fixed pause instead raced a loaded machine: the run
    had not started when the wait began, and the test read the page before the click's run (a tab's panel still
    empty). The page must come from new_page (or watch_runs). `with rerun(page) as ended:` gives a function that
    returns how each run since the action ended (e.g. FINISHED_FRAGMENT_RUN_SUCCESSFULLY), as they arrive."""
    runs = page.__dict__.get("atlas_runs")
    if runs is None:
        raise RuntimeError("rerun() needs a page made by new_page() or watch_runs()")
    before = runs[0]
    ends = page.__dict__["atlas_run_ends"]
    n_ends = len(ends)
    yield lambda: ends[n_ends:]
    deadline = time.time() + timeout / 1000
    while runs[0] == before:  # playwright delivers the socket's frames while the test waits in a call
        if time.time() > deadline:
            raise TimeoutError(f"no script run finished within {timeout / 1000:.0f} s of the action")
        page.wait_for_timeout(50)
    wait_idle(page, timeout, draw_all, run_seen=True)


# Resolves once the page's DOM has not changed for `quiet` ms, or after `cap` ms in any case (a page that animates,
# such as a live training curve, is never still).
DOM_QUIET_JS = """([quiet, cap]) => new Promise((resolve) => {
  let timer = null;
  const done = () => { observer.disconnect(); clearTimeout(timer); clearTimeout(limit); resolve(true); };
  const observer = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(done, quiet); });
  observer.observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
  timer = setTimeout(done, quiet);
  const limit = setTimeout(done, cap);
})"""
STATUS_GONE_JS = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"


def wait_idle(page, timeout=120_000, draw_all: bool = True, run_seen: bool = False):
    """Wait until Streamlit's script run has finished (its running indicator is gone) and the browser has drawn
    what it sent (the page still for a moment); then, unless `draw_all` is false, draw every chart of the page
    (draw_all_charts). Without `run_seen` (rerun() saw the run end), first give a run that is starting the time
    to show its indicator. A fixed pause after the run waited as long on a quiet machine as on a loaded one."""
    page.wait_for_selector("[data-testid='stMain'] h1", timeout=timeout)
    if not run_seen:
        page.wait_for_timeout(300)
    page.wait_for_function(STATUS_GONE_JS, timeout=timeout)
    page.evaluate(DOM_QUIET_JS, [250, 800])
    if draw_all:
        draw_all_charts(page)


def draw_all_charts(page) -> int:
    """Draw every chart of the page now, also those the app's chart element leaves until they are scrolled
    near (app/static/atlas_chart.js): a test reads or photographs the whole page. Returns how many."""
    page.wait_for_function(  # every chart element of the page has reached the element's script
        """() => { const n = document.querySelectorAll("[class*='st-key-atlas-chart-']").length;
                   return n === 0 || (window.atlasCharts && window.atlasCharts.count() >= n); }""", timeout=60_000)
    n = page.evaluate("() => window.atlasCharts ? window.atlasCharts.drawAll() : 0") or 0
    odd = page.evaluate(CHART_BOXES_JS)
    assert not odd, f"chart elements with a stale or emptied plot: {odd}"
    return n


# No chart element of the page holds two boxes, or a plot that was emptied (Plotly's purge leaves the plot's class
# and takes its figure): a call's cleanup run on a newer call's chart did both, once. An element whose first
# figure is still on its way (a run going on while the test reads) holds no box yet, or one not drawn: not flagged.
CHART_BOXES_JS = """() => [...document.querySelectorAll("[class*='st-key-atlas-chart-']")].map((el) => {
    const boxes = [...el.querySelectorAll('.atlas-chart')];
    const emptied = boxes.filter((b) => b.classList.contains('js-plotly-plot') && !Array.isArray(b.data)).length;
    const key = [...el.classList].find((c) => c.startsWith('st-key-'));
    return boxes.length <= 1 && !emptied ? null : `${key}: ${boxes.length} boxes, ${emptied} emptied`;
  }).filter((x) => x)"""


# For every Plotly chart of the page: the margins it was given, the ones Plotly drew it with (a side that grew
# means Plotly laid the figure out a second time, app/charts/margins.py), the room left on each side and what
# is drawn there (bench/margins.py prints them).
MARGINS_JS = r"""() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')).map(gd => {
  const fl = gd._fullLayout || {}, m = fl.margin || {}, s = fl._size || {};
  const title = (fl.title && fl.title.text) || '';
  const key = (gd.closest('[class*="st-key-"]') || {}).className || '';
  // the unused room on each side: from the figure's edge to the nearest text, colour bar or legend drawn there
  const svg = gd.querySelector('svg.main-svg'), box = svg ? svg.getBoundingClientRect() : null;
  const slack = {l: null, r: null, t: null, b: null};
  if (box) {
    const parts = gd.querySelectorAll('svg.main-svg text, g.colorbar rect.cbbg, g.legend rect.bg');
    let minL = Infinity, maxR = -Infinity, minT = Infinity, maxB = -Infinity;
    for (const el of parts) { const b = el.getBoundingClientRect(); if (!b.width && !b.height) continue;
      if (el.tagName === 'text' && (!el.textContent || el.closest('.g-gtitle, .annotation'))) continue;
      minL = Math.min(minL, b.left); maxR = Math.max(maxR, b.right); minT = Math.min(minT, b.top); maxB = Math.max(maxB, b.bottom); }
    slack.l = Math.round(minL - box.left); slack.r = Math.round(box.right - maxR);
    slack.t = Math.round(minT - box.top); slack.b = Math.round(box.bottom - maxB);
  }
  const widest = (sel, dim) => Math.round(Math.max(0, ...Array.from(gd.querySelectorAll(sel)).map(e => e.getBoundingClientRect()[dim])));
  const parts = {ytick_w: widest('g.ytick text', 'width'), xtick_h: widest('g.xtick text', 'height'),
                 xtick_w: widest('g.xtick text', 'width'),
                 ytitle_w: widest('g.g-ytitle', 'width'), xtitle_h: widest('g.g-xtitle', 'height'),
                 cbar_w: widest('g.colorbar', 'width'), legend_h: widest('g.legend', 'height'),
                 ytexts: Array.from(gd.querySelectorAll('g.ytick text')).map(e => e.textContent).slice(0, 12)};
  return {parts, slack, title: title.replace(/<[^>]+>/g, '').slice(0, 60), key: (key.match(/st-key-([^ ]+)/) || [])[1] || '',
          given: {l: m.l, r: m.r, t: m.t, b: m.b}, drawn: {l: s.l, r: s.r, t: s.t, b: s.b},
          visible: gd.offsetParent !== null};
})"""


def grown(fig: dict) -> dict:
    """The sides Plotly had to widen, in px (1 px of rounding is not a second pass)."""
    return {side: round(fig["drawn"][side] - fig["given"][side])
            for side in "lrtb" if fig["drawn"].get(side) is not None and fig["given"].get(side) is not None
            and fig["drawn"][side] - fig["given"][side] > 1}


# Texts that Streamlit cuts with an ellipsis because their box is too narrow (a metric's value or label, a
# button's or a link's label): what the learner would see as "3.28e-…". Each as [the element's kind, its text].
CUT_JS = """() => [...document.querySelectorAll("[data-testid='stMain'] *")].filter((e) => {
    if (getComputedStyle(e).textOverflow !== 'ellipsis' || !e.textContent.trim()) return false;
    const box = e.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && e.scrollWidth > e.clientWidth + 1;
  }).map((e) => [(e.closest('[data-testid]') || e).dataset.testid || '?', e.textContent.trim().slice(0, 80)])"""


def cut_texts(page) -> list:
    """The texts of the page's main area cut short with an ellipsis (CUT_JS)."""
    return page.evaluate(CUT_JS)


@contextlib.contextmanager
def served_chromium():
    """(url, browser): the app served from this checkout and headless Chromium, for a module's tests to share."""
    from playwright.sync_api import sync_playwright
    with served() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield url, browser
        browser.close()


def drawing_only(page, action, drawn: str, arg=None) -> None:
    """`action()` changes a drawing only: `drawn` (JavaScript: a function of `arg` that counts the drawings) grows,
    and no script run reaches the page (a page of new_page counts them)."""
    runs, before = page.__dict__["atlas_runs"][0], page.evaluate(drawn, arg)
    action()
    page.wait_for_function(f"([a, n]) => ({drawn})(a) > n", arg=[arg, before], timeout=5_000)
    page.wait_for_timeout(400)  # a run the action had started would have finished by now on this page
    assert page.__dict__["atlas_runs"][0] == runs, "a view's choice reran the script"
