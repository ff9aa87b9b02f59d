"""Every control of every page in a real browser, against a bare Streamlit page in the same run.

    python bench/controls.py [--pages attention,masks,...] [--langs en,ko] [--repeats 3] [--all-options] [--list]
                             [--no-first] [--no-controls] [--read-first-s 10]

Starts `streamlit run app/main.py` headless (an empty ATLAS_RUNS_DIR: no training run keeps a page polling) and,
on its own port, `streamlit run bench/bare_page.py` (one slider, one Plotly chart), and drives headless Chromium
with playwright. Measured, each as p50 / p95 over the repeats:

- first page drawn: a fresh server per repeat (ours, then the bare page), a fresh browser context, from the
  navigation's start to the page idle (below); ours / bare;
- opening each page from the sidebar, and the language switch on each page (to the other language and back);
- every control inside stMain (sliders and select sliders, select boxes, multiselects, radios, segmented
  controls, checkboxes, toggles, number inputs, text inputs and areas, buttons and form submit buttons), each
  changed to another valid value `--repeats` times, in each language: browser time = the action (its
  pointerdown / keydown, in the page's clock) -> the app idle again; server time = the script runs the action
  started (whole or fragment reruns), timed inside the server by bench/timed_main.py; frames = the first
  websocket frame after the action -> the rerun's `script_finished` in the page's clock (an upper bound: a
  frame is stamped only when the page's main thread is free of drawing);
- every expander and tab whose opening reruns the page (a lazy container: drawn only while open), timed as a
  control `open:<name>` (opened, then closed or back to the tab before), and the controls it holds, timed with
  it open;
- the bare page's slider round trip (ArrowRight on its thumb, same measurement), a few times before every page,
  so the ratio compares like with like under the same load.

Idle: an init script wraps the page's WebSocket and reads the top-level fields of every ForwardMsg it receives
(which message: new_session / delta / script_finished and its status) with the browser's clock; playwright's
`page.on("websocket")` decodes the same frames in Python with Streamlit's protobufs (the message kinds and any
exception element are counted per action). The app is idle when a `script_finished` (not "early for rerun")
has arrived after the action, no element is stale (`[data-stale="true"]`) and no status widget is shown; then
the page must stay quiet (no new frame) for --quiet-ms, or the wait goes on to the next run's end.

Not touched: download and link buttons, the file uploader, the training page's Start and the study page's
start / stop (no training is started). Writes bench/results/controls-<date>.json (with the load average before
and after) and prints a table per control and the slowest 15."""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import Error as PWError  # noqa: E402
from playwright.sync_api import TimeoutError as PWTimeout  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from app.pages_list import PAGES  # noqa: E402
from bench.common import machine, table, write  # noqa: E402
from tests.streamlit_server import CHROMIUM, CHROMIUM_ARGS, served  # noqa: E402

BY_URL = {p.url: p for p in PAGES}
LANG_LABEL = {"en": "English", "ko": "한국어"}
SKIP_KEYS = {"train_start", "study_start", "study_stop", "train_upload", "insp_hub_fetch"}
SKIP_TESTIDS = {"stDownloadButton", "stLinkButton", "stFileUploader"}
TARGET_BROWSER_MS, TARGET_SERVER_MS, TARGET_RATIO = 400, 200, 1.6
TARGET_FIRST_RATIO, TARGET_NAV_MS, TARGET_LANG_MS = 1.3, 500, 500
TIMED = ROOT / "bench" / "timed_main.py"  # runs a script and logs each run's time in the server

# Other valid values for text fields, by widget key (cycled; a value equal to the current one is skipped).
TEXT_VALUES = {
    "att_tokens_q": ["we eat rice", "the cat sat down", "I love you"],
    "att_tokens_k": ["we eat rice", "the cat sat down", "I love you"],
    "mh_sentence": ["the old dog sleeps near the warm fire", "we eat rice", "my sister reads a book"],
    "mh_seed": ["7", "8", "9", "10"],
    "pe_dims": ["0, 2, 5", "1, 3", "0, 4, 8"],
    "perm_sentence": ["we like long walks", "the cat sat on the mat", "my sister reads a book"],
    "rot_k": ["9", "4", "12", "2"],
    "mask_batch": ["the cat sat\nI love you very much", "we eat rice\nmy sister reads a book today", "hello\nthe old dog sleeps"],
    "kind_src": ["my sister reads a book", "the cat sat", "we like long walks"],
    "sch_pairs": ["256, 2000", "512, 4000", "128, 1000"],
    "drop_sentence": ["the boy eats an apple", "we like long walks", "my sister reads a book"],
    "cx_n": ["400", "200", "800"],
    "insp_text": ["My mother loves the new movie.", "I go to school.", "We see the sky.", "The cat drank milk yesterday."],
    "fam_mlm_text": ["The cat sees the [MASK] today.", "I [MASK] to school.", "We see the [MASK]."],
    "fam_mlm_pair": ["", "나는 학교에 간다."],
    "insp_hub_name": ["Helsinki-NLP/opus-mt-en-fr", "gpt2", "Helsinki-NLP/opus-mt-en-de"],
}
SENTENCES = ["we eat rice", "the cat sat on the mat", "my sister reads a book", "I go to school."]

INIT_JS = r"""(() => {
  window.__ws = []; window.__act = null; window.__arm = false;
  const fields = {4: 'new_session', 5: 'delta', 6: 'script_finished', 9: 'session_status_changed', 11: 'ref_hash',
                  12: 'page_info_changed', 13: 'page_config_changed', 23: 'navigation', 21: 'auto_rerun'};
  function parse(buf) {
    const b = new Uint8Array(buf); let i = 0; const out = {kind: null, fin: null};
    const varint = () => { let x = 0, s = 0, c; do { c = b[i++]; x += (c & 0x7f) * Math.pow(2, s); s += 7; } while (c & 0x80 && i < b.length); return x; };
    while (i < b.length) {
      const tag = varint(), f = Math.floor(tag / 8), w = tag & 7;
      if (w === 0) { const v = varint(); if (f === 6) { out.kind = 'script_finished'; out.fin = v; } else if (fields[f]) out.kind = fields[f]; }
      else if (w === 2) { const l = varint(); if (fields[f]) out.kind = fields[f]; i += l; }
      else if (w === 1) i += 8; else if (w === 5) i += 4; else break;
    }
    return out;
  }
  const Orig = window.WebSocket;
  function Wrapped(...a) {
    const ws = new Orig(...a);
    ws.addEventListener('message', e => {
      const t = performance.now();
      if (e.data instanceof ArrayBuffer) { const p = parse(e.data); window.__ws.push({t, kind: p.kind, fin: p.fin, len: e.data.byteLength}); }
      else window.__ws.push({t, kind: 'other', fin: null, len: 0});
    });
    return ws;
  }
  Wrapped.prototype = Orig.prototype;
  for (const k of ['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED']) Wrapped[k] = Orig[k];
  window.WebSocket = Wrapped;
  window.__mut = 0;  // the last change anywhere in the document (what the learner sees being drawn)
  new MutationObserver(() => { window.__mut = performance.now(); }).observe(document,
      {subtree: true, childList: true, attributes: true, characterData: true});
  for (const ev of ['pointerdown', 'keydown']) window.addEventListener(ev, () => {
    if (window.__arm) { window.__act = performance.now(); window.__arm = false; } }, true);
})();"""

# The page is idle: a script_finished (not "early for rerun") arrived at or after index n0, nothing is stale, no
# status widget. Returns [time of the idle check, index of that script_finished] (browser clock).
IDLE_JS = """(n0) => {
  const w = window.__ws; let fin = -1;
  for (let i = n0; i < w.length; i++) if (w[i].kind === 'script_finished' && w[i].fin !== 2) fin = i;
  if (fin < 0) return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  if (document.querySelector('[data-testid="stStatusWidget"]')) return false;
  if (document.querySelector('[data-testid="stMain"] [data-testid="stSkeleton"]')) return false;  // a lazy widget loading
  if (!document.querySelector('[data-testid="stMain"] h1')) return false;
  return [performance.now(), fin];
}"""

BUSY = {"new_session", "delta", "ref_hash", "script_finished", "auto_rerun"}  # a later run (status changes are not)

WIDGETS = ["stSlider", "stSelectbox", "stMultiSelect", "stRadio", "stButtonGroup", "stCheckbox", "stToggle",
           "stNumberInput", "stTextInput", "stTextArea", "stButton", "stFormSubmitButton",
           "stDownloadButton", "stLinkButton", "stFileUploader"]

# Every control in stMain, in page order: its test id, its key (from the `st-key-<key>` class of a container),
# its label, and its index among the controls with the same test id.
LIST_JS = """(ids) => {
  const main = document.querySelector('[data-testid="stMain"]');
  const sel = ids.map(i => `[data-testid="${i}"]`).join(',');
  const all = Array.from(main.querySelectorAll(sel)).filter(e => !e.parentElement.closest(sel));
  const seen = {};
  return all.map(e => {
    const tid = e.getAttribute('data-testid');
    seen[tid] = (seen[tid] || 0) + 1;
    let key = null, n = e;
    while (n && n !== main && !key) {
      const c = Array.from(n.classList || []).find(c => c.startsWith('st-key-'));
      if (c) key = c.slice(7); n = n.parentElement;
    }
    const lab = e.querySelector('[data-testid="stWidgetLabel"]');
    let label = (lab ? lab.innerText : e.innerText || '').trim().split('\\n')[0].slice(0, 60);
    const inForm = !!e.closest('[data-testid="stForm"]') && tid !== 'stFormSubmitButton';
    return {tid, key, label, nth: seen[tid] - 1, inForm};
  });
}"""

REVEAL_JS = """e => {
  const d = e.closest('details'); if (d && !d.open) { d.querySelector('summary').click(); return true; }
  const p = e.closest('[data-testid="stTabPanel"], [role="tabpanel"]');
  if (p && (p.hidden || !p.offsetParent)) {
    const tabs = p.closest('[data-testid="stTabs"]');
    const own = sel => Array.from(tabs.querySelectorAll(sel)).filter(x => x.closest('[data-testid="stTabs"]') === tabs);
    const k = own('[data-testid="stTabPanel"], [role="tabpanel"]').indexOf(p);
    const btn = own('[data-testid="stTab"], [role="tab"]')[k];
    if (btn) { btn.click(); return true; }
  }
  return false;
}"""


# The expanders and tabs of stMain that are closed now: each a possible lazy container (st.expander / st.tabs with
# on_change: drawn only when open, and opening one reruns the page). `open`: the tab that is open now in its group.
OPENERS_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const out = [];
  main.querySelectorAll('[data-testid="stExpander"] details').forEach(d => {
    const s = d.querySelector('summary'), m = s.querySelector('[data-testid="stMarkdownContainer"]');
    if (!d.open) out.push({kind: 'expander', label: (m || s).innerText.trim().split('\\n').pop().slice(0, 60)});
  });
  main.querySelectorAll('[data-testid="stTabs"]').forEach(tabs => {
    const own = Array.from(tabs.querySelectorAll('[role="tab"]')).filter(x => x.closest('[data-testid="stTabs"]') === tabs);
    const sel = own.find(x => x.getAttribute('aria-selected') === 'true');
    own.forEach(b => { if (b !== sel) out.push({kind: 'tab', label: b.innerText.trim().slice(0, 60),
                                                   open: sel ? sel.innerText.trim().slice(0, 60) : null}); });
  });
  return out;
}"""


def pct(xs, q):
    """The median for q = .5; otherwise the nearest rank (with 3 repeats the p95 is the slowest)."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    if q == .5:
        return statistics.median(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def r1(x):
    return None if x is None else round(x, 1)


def load_average():
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return []


@contextlib.contextmanager
def serve(script: Path, env_extra: dict, log: Path, timeout: float = 180):
    """`streamlit run <script>` headless on a free loopback port; yields (url, seconds to healthy)."""
    t0 = time.perf_counter()
    with served(env_extra=env_extra, timeout=timeout, log_path=log, script=script) as (url, _):
        yield url, time.perf_counter() - t0


class Tab:
    """One browser page with the websocket hook; every wait is measured in the page's own clock."""

    def __init__(self, browser, locale="en-US", runlog: Path | None = None):
        self.runlog = runlog  # the server's script runs (bench/timed_main.py), if it writes them
        self.ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, locale=locale)
        self.ctx.add_init_script(INIT_JS)
        self.page = self.ctx.new_page()
        self.page.set_default_timeout(60_000)
        self.py_frames: list[tuple[str | None, bool]] = []  # (message kind, has an exception element), decoded in Python
        self.page.on("websocket", self._on_ws)

    def _on_ws(self, ws):
        if "_stcore/stream" in ws.url:
            ws.on("framereceived", self._on_frame)

    def _on_frame(self, payload):
        if isinstance(payload, str):
            return
        fm = ForwardMsg()
        try:
            fm.ParseFromString(payload)
        except Exception:
            self.py_frames.append(("undecodable", False))
            return
        kind = fm.WhichOneof("type")
        exc = (kind == "delta" and fm.delta.WhichOneof("type") == "new_element"
               and fm.delta.new_element.WhichOneof("type") == "exception")
        self.py_frames.append((kind, exc))

    def close(self):
        self.ctx.close()

    def n(self) -> int:
        return self.page.evaluate("window.__ws.length")

    def arm(self):
        self.page.evaluate("window.__arm = true; window.__act = null")

    def goto(self, url: str, quiet_ms: int, timeout_s: float) -> tuple[float, float, bool]:
        """Open `url` in this tab; ms from the navigation's start to the page idle, to the page drawn, drawn capped."""
        self.page.goto(url)
        browser, _, drawn, capped = self.wait_idle(0, None, quiet_ms, timeout_s, from_nav=True, draw_cap_s=20)
        return browser, drawn, capped

    def wait_idle(self, n0: int, t_act: float | None, quiet_ms: int, timeout_s: float, from_nav=False,
                  draw_cap_s: float = 5.0):
        """Wait until the app is idle after frame n0: a finished run, nothing stale, no status widget (the
        browser time), then until the document stops changing for quiet_ms (Plotly drawing the charts: the
        drawn time, waited for at most draw_cap_s after idle) with no new run meanwhile (a new run: wait for its
        end instead). Returns (browser ms, server ms, drawn ms, drawn was capped), all from the action."""
        deadline = time.time() + timeout_s
        while True:
            left = max(1.0, deadline - time.time())
            handle = self.page.wait_for_function(IDLE_JS, arg=n0, timeout=left * 1000)
            t_idle, fin = handle.json_value()
            another_run = capped = False
            cap = time.time() + draw_cap_s
            while True:
                self.page.wait_for_timeout(quiet_ms)
                frames, now, mut = self.page.evaluate(
                    "(n0) => [window.__ws.slice(n0), performance.now(), window.__mut]", n0)
                if any(f["kind"] in BUSY for f in frames[fin - n0 + 1:]):
                    another_run = True
                    break
                if now - mut >= quiet_ms:
                    break
                if time.time() > min(cap, deadline):
                    capped = True
                    mut = now
                    break
            if not another_run:
                break
            if time.time() > deadline:
                raise PWTimeout("the page kept running")
        t_drawn = max(t_idle, mut)
        if from_nav:
            return t_idle, None, t_drawn, capped
        if t_act is None:
            t_act = self.page.evaluate("window.__act")
        first = next((f["t"] for f in frames if f["t"] >= (t_act or 0)), None)
        server = frames[fin - n0]["t"] - first if first is not None else None
        return t_idle - t_act, server, t_drawn - t_act, capped

    def exceptions(self) -> int:
        return self.page.locator("[data-testid='stMain'] [data-testid='stException']").count()


DRAW_CAP_S = 3.0


class OneValue(Exception):
    """The control offers one value only (a radio or select box with one option): nothing to change or time."""


def measure(tab: Tab, do, quiet_ms: int, timeout_s: float):
    """Run `do()` (which arms the tab just before its decisive key or pointer event) and time it."""
    n0 = tab.n()
    tab.page.evaluate("window.__act = null")
    w0 = time.time()
    do()
    t_act = tab.page.evaluate("window.__act")
    if t_act is None:  # the action raised no key or pointer event we saw
        raise RuntimeError("no input event seen")
    browser, frames, drawn, capped = tab.wait_idle(n0, t_act, quiet_ms, timeout_s, draw_cap_s=DRAW_CAP_S)
    return browser, frames, drawn, capped, script_ms(tab.runlog, w0)


def script_ms(runlog: Path | None, since: float) -> float | None:
    """Milliseconds of script runs that began after `since` (time.time()), from the server's run log."""
    if runlog is None or not runlog.exists():
        return None
    runs = [json.loads(line) for line in runlog.read_text().splitlines() if line.strip()]
    return 1000 * sum(r["wall"] for r in runs if r["start"] >= since)


def locate(tab: Tab, c: dict):
    main = tab.page.locator("[data-testid='stMain']")
    if c["key"]:
        loc = main.locator(f".st-key-{c['key']}").first
        inner = loc.locator(f"[data-testid='{c['tid']}']")
        return inner.first if inner.count() else loc
    same = main.locator(f"[data-testid='{c['tid']}']")
    for i in range(same.count()):
        el = same.nth(i)
        lab = el.locator("[data-testid='stWidgetLabel']")
        text = (lab.first.inner_text() if lab.count() else el.inner_text()).strip().split("\n")[0][:60]
        if text == c["label"]:
            return el
    return None


def find_control(tab: Tab, c: dict, quiet_ms: int, timeout_s: float, reset: bool = True):
    """The control's element; when an earlier control changed what the page shows (a mode, a member, a model),
    "Reset this page" (if `reset`) brings the defaults back, and with them this control. RuntimeError if it is
    still missing."""
    el = locate(tab, c)
    if (el is None or el.count() == 0) and reset:
        reset_page(tab, quiet_ms, timeout_s)
        el = locate(tab, c)
    if el is None or el.count() == 0:
        raise RuntimeError("control not on the page (any more)")
    return el


def failed(page: str, lang: str, control: str, e: Exception) -> dict:
    """The row that records a control the bench could not change or time."""
    return {"page": page, "lang": lang, "control": control,
            "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}


def reveal(tab: Tab, el) -> None:
    """Open the expander or tab a control sits in (no rerun: both are drawn in the browser)."""
    for _ in range(3):
        if el.is_visible():
            return
        if not el.evaluate(REVEAL_JS):
            break
        tab.page.wait_for_timeout(150)
    el.scroll_into_view_if_needed(timeout=5000)


def _name_pattern(label: str) -> re.Pattern:
    """A container's name with any number in it (a count that follows the sentence: "Tokenization: 9 pieces")."""
    return re.compile("^" + re.sub(r"\d+", r"\\d+", re.escape(label)) + "$")


def opener(tab: Tab, o: dict, label: str | None = None):
    """The clickable part of a lazy container: an expander's summary, or the tab named `label` (default: o's)."""
    main = tab.page.locator("[data-testid='stMain']")
    name = _name_pattern(label or o["label"])
    if o["kind"] == "expander":
        return main.locator("[data-testid='stExpander'] summary [data-testid='stMarkdownContainer']").filter(
            has_text=name).first.locator("xpath=ancestor::summary[1]")
    return main.get_by_role("tab", name=name).first


def is_open(tab: Tab, o: dict) -> bool:
    el = opener(tab, o)
    if o["kind"] == "expander":  # a closing <details> stays open while it animates (~0.4 s here): read after it
        tab.page.wait_for_timeout(500)
        return el.evaluate("s => s.closest('details').open")
    return el.get_attribute("aria-selected") == "true"


def click_and_settle(tab: Tab, el, quiet_ms: int, timeout_s: float, rerun_expected: bool = False) -> bool:
    """Click; True (once the page is idle again) if the click reran the page, False if it changed the browser only
    (no run began within 1 s; with `rerun_expected`, within timeout_s)."""
    n0 = tab.n()
    tab.arm()
    el.click()
    deadline = time.time() + (timeout_s if rerun_expected else 1.0)
    while not any(f["kind"] in BUSY for f in tab.page.evaluate("(n0) => window.__ws.slice(n0)", n0)):
        if time.time() > deadline:
            return False
        tab.page.wait_for_timeout(100)
    tab.wait_idle(n0, None, quiet_ms, timeout_s)
    return True


def set_open(tab: Tab, o: dict, want: bool, quiet_ms: int, timeout_s: float) -> None:
    """Open (or close: an expander; a tab goes back to the one that was open) a lazy container; opening one
    inside another (`o["via"]`: the palette's word groups inside its box) opens the outer ones first."""
    if want:
        for outer in o.get("via", []):
            set_open(tab, outer, True, quiet_ms, timeout_s)
    if is_open(tab, o) == want:
        return
    el = opener(tab, o) if (want or o["kind"] == "expander") else opener(tab, o, o["open"])
    click_and_settle(tab, el, quiet_ms, timeout_s, rerun_expected=True)


def lazy_controls(tab: Tab, base: list[dict], quiet_ms: int, timeout_s: float, via: tuple = (),
                  known: set | None = None) -> tuple[list[dict], list[dict]]:
    """Controls that a page draws only inside an opened expander or tab (the inspector's palette and
    its word groups, the printed example's tabs). Each closed expander and tab is opened once: one whose
    opening reruns the page is lazy; opening it is a control of its own, and the controls it adds are measured
    with it open (`via`: the lazy containers to open first, outermost first). Lazy containers inside a lazy
    container are found the same way with it open."""
    seen = {(c["tid"], c["key"], c["label"]) for c in base}
    found = tab.page.evaluate(OPENERS_JS)
    known = set() if known is None else known
    todo = [o for o in found if (o["kind"], o["label"]) not in known]
    known |= {(o["kind"], o["label"]) for o in found}
    openers, extra = [], []
    for o in todo:
        try:
            for outer in via:
                set_open(tab, outer, True, quiet_ms, timeout_s)
            if not click_and_settle(tab, opener(tab, o), quiet_ms, timeout_s):
                if o["kind"] == "expander":
                    opener(tab, o).click()  # closed again (drawn in the browser only)
                elif o["open"]:
                    opener(tab, o, o["open"]).click()
                continue
            o = {**o, "via": list(via)}
            openers.append(o)
            now = tab.page.evaluate(LIST_JS, WIDGETS)
            for c in now:
                if (c["tid"], c["key"], c["label"]) not in seen:
                    seen.add((c["tid"], c["key"], c["label"]))
                    extra.append({**c, "via": [*via, o]})
            inner_openers, inner = lazy_controls(tab, base + now, quiet_ms, timeout_s, (*via, o), known)
            openers += inner_openers
            for c in inner:
                if (c["tid"], c["key"], c["label"]) not in seen:
                    seen.add((c["tid"], c["key"], c["label"]))
                    extra.append(c)
            set_open(tab, o, False, quiet_ms, timeout_s)
        except (PWError, RuntimeError):
            continue
    return openers, extra


def next_text(key: str | None, current: str, i: int) -> str:
    options = TEXT_VALUES.get(key or "")
    if options:
        cands = [v for v in options if v != current]
        return cands[i % len(cands)]
    if re.fullmatch(r"-?\d+", current.strip()):
        return str(int(current) + 1)
    if re.fullmatch(r"-?\d+\.\d*", current.strip()):
        return f"{float(current) * 1.1:.3g}"
    if re.fullmatch(r"[\d\s,.\-]+", current) and current.strip():
        parts = current.split(",")
        last = parts[-1].strip()
        if re.fullmatch(r"-?\d+", last):
            parts[-1] = " " + str(int(last) + 1)
            return ",".join(parts)
    cands = [s for s in SENTENCES if s != current]
    return cands[i % len(cands)]


CHOICES = ("stSelectbox", "stRadio", "stButtonGroup")  # controls with options (--all-options tries each)
MAX_OPTIONS = 24


def act(tab: Tab, el, c: dict, i: int):
    """Change one control to another valid value; returns the do() for measure()."""
    page = tab.page
    tid = c["tid"]
    if tid == "stSlider":
        thumb = el.locator("input[type='range']").first
        now, hi = thumb.get_attribute("value"), thumb.get_attribute("max")
        key = "ArrowLeft" if now is not None and hi is not None and float(now) >= float(hi) else "ArrowRight"

        def do():
            thumb.focus()
            tab.arm()
            thumb.press(key)
        return do
    if tid in ("stSelectbox", "stMultiSelect"):
        def do():
            box = el.locator("input[role='combobox'], [role='combobox']").first

            def take_last_out():  # a multiselect with every option chosen: its last one goes
                tab.arm()
                box.press("Backspace")
            box.click()
            opts = page.locator("[role='listbox'] [role='option']")
            try:
                try:
                    opts.first.wait_for(timeout=1500)
                except PWTimeout:  # a click in the box does not always open its menu: its arrow button does
                    opener = el.locator("button[aria-haspopup='listbox']")
                    if opener.count():
                        opener.first.click()
                    opts.first.wait_for(timeout=4000)
            except PWTimeout:  # no menu seen
                if tid == "stMultiSelect":
                    take_last_out()
                    return
                box.press("ArrowDown")  # the keyboard picks the next option
                tab.arm()
                box.press("Enter")
                return
            n = opts.count()
            sel = [j for j in range(n) if opts.nth(j).get_attribute("aria-selected") == "true"]
            if tid == "stSelectbox" and n <= 1:
                raise OneValue
            if tid == "stSelectbox":
                j = (sel[0] + 1) % n if sel else (1 if n > 1 else 0)
                c["wrapped"] = j == 0  # every option has been chosen once (--all-options)
            else:  # a multiselect's menu lists the options not chosen yet ("No results", no aria-selected, if none)
                free = [j for j in range(n) if opts.nth(j).get_attribute("aria-selected") == "false"]
                if not free:
                    page.keyboard.press("Escape")
                    box.click()
                    take_last_out()
                    return
                j = free[i % len(free)]
            tab.arm()
            opts.nth(j).click()
            if tid == "stMultiSelect":
                page.keyboard.press("Escape")  # close the menu (the value is committed)
        return do
    if tid == "stRadio":
        opts = el.locator("label:has(input)")
        n = opts.count()
        checked = [j for j in range(n) if opts.nth(j).locator("input").is_checked()]
        if n <= 1:
            raise OneValue
        j = (checked[0] + 1) % n if checked else 0
        c["wrapped"] = j == 0

        def do():
            tab.arm()
            opts.nth(j).click()
        return do
    if tid == "stButtonGroup":
        btns = el.locator("button")
        n = btns.count()
        on = [j for j in range(n) if "Active" in (btns.nth(j).get_attribute("data-testid") or "")
              or btns.nth(j).get_attribute("aria-checked") == "true"]
        j = (on[0] + 1) % n if on else 0
        c["wrapped"] = j == 0

        def do():
            tab.arm()
            btns.nth(j).click()
        return do
    if tid in ("stCheckbox", "stToggle"):
        def do():
            tab.arm()
            el.locator("label").first.click()
        return do
    if tid == "stNumberInput":
        up = el.locator("[data-testid='stNumberInputStepUp']")
        down = el.locator("[data-testid='stNumberInputStepDown']")
        b = up if up.count() and up.is_enabled() else down

        def do():
            tab.arm()
            b.click()
        return do
    if tid in ("stTextInput", "stTextArea"):
        field = el.locator("textarea, input").first
        value = next_text(c["key"], field.input_value(), i)
        area = field.evaluate("e => e.tagName") == "TEXTAREA"

        def do():
            field.fill(value)
            tab.arm()
            field.press("Control+Enter" if area else "Enter")
        return do
    if tid in ("stButton", "stFormSubmitButton"):
        def do():
            tab.arm()
            el.locator("button").first.click()
        return do
    raise ValueError(tid)


def open_page(tab: Tab, info, lang: str, quiet_ms: int, timeout_s: float):
    link = tab.page.locator("[data-testid='stSidebarNav']").get_by_role("link", name=info.title_in(lang), exact=True)

    def do():
        tab.arm()
        link.click()
    return measure(tab, do, quiet_ms, timeout_s)


def reset_page(tab: Tab, quiet_ms: int, timeout_s: float):
    """The sidebar's "Reset this page" (every input of the page back to its default); not timed."""
    button = tab.page.locator("[data-testid='stSidebar'] .st-key-reset_page button").first

    def do():
        tab.arm()
        button.click()
    measure(tab, do, quiet_ms, timeout_s)


def switch_lang(tab: Tab, to: str, quiet_ms: int, timeout_s: float):
    radio = tab.page.locator("[data-testid='stSidebar'] [data-testid='stRadio'] label").filter(has_text=LANG_LABEL[to])

    def do():
        tab.arm()
        radio.click()
    return measure(tab, do, quiet_ms, timeout_s)


def bare_round_trips(bare: Tab, k: int, quiet_ms: int, timeout_s: float, out: list):
    pass  # both tabs stay visible: headless Chromium gives each context its own window
    thumb = bare.page.locator("[data-testid='stSlider'] input[type='range']").first
    for _ in range(k):
        now, hi = float(thumb.get_attribute("value")), float(thumb.get_attribute("max"))
        key = "ArrowLeft" if now >= hi else "ArrowRight"

        def do():
            thumb.focus()
            bare.arm()
            thumb.press(key)
        try:
            out.append(measure(bare, do, quiet_ms, timeout_s))
        except (PWError, RuntimeError) as e:
            print("bare slider:", type(e).__name__, str(e)[:120], flush=True)


def first_draws(browser, runs_dir: str, repeats: int, quiet_ms: int, logs: Path) -> dict:
    """A fresh server per repeat, then its first page in a fresh context: ours and the bare page, alternately."""
    res = {"ours_ms": [], "bare_ms": [], "ours_drawn_ms": [], "bare_drawn_ms": [], "ours_healthy_s": [],
           "bare_healthy_s": []}
    for r in range(repeats):
        for name, script in (("ours", ROOT / "app" / "main.py"), ("bare", ROOT / "bench" / "bare_page.py")):
            with serve(script, {"ATLAS_RUNS_DIR": runs_dir}, logs / f"first-{name}-{r}.log") as (url, healthy):
                tab = Tab(browser)
                try:
                    idle, drawn, _ = tab.goto(url, quiet_ms, 180)
                    res[f"{name}_ms"].append(r1(idle))
                    res[f"{name}_drawn_ms"].append(r1(drawn))
                    res[f"{name}_healthy_s"].append(round(healthy, 2))
                finally:
                    tab.close()
            print(f"first page {name} #{r}: {res[f'{name}_ms'][-1]:.0f} ms, drawn {res[f'{name}_drawn_ms'][-1]:.0f} ms (healthy after {healthy:.1f} s)", flush=True)
    return res


def summarize(xs: list[tuple]) -> dict:
    """xs: (browser ms, frames ms, drawn ms, drawn capped, server ms) per action."""
    b = [x[0] for x in xs]
    fr = [x[1] for x in xs if x[1] is not None]
    s = [x[4] for x in xs if x[4] is not None]
    d = [x[2] for x in xs]
    return {"n": len(b), "browser_p50": r1(pct(b, .5)), "browser_p95": r1(pct(b, .95)),
            "server_p50": r1(pct(s, .5)), "server_p95": r1(pct(s, .95)),
            "frames_p50": r1(pct(fr, .5)), "frames_p95": r1(pct(fr, .95)), "frames_ms": [r1(x) for x in fr],
            "drawn_p50": r1(pct(d, .5)), "drawn_p95": r1(pct(d, .95)), "drawn_capped": sum(bool(x[3]) for x in xs),
            "browser_ms": [r1(x) for x in b], "server_ms": [r1(x) for x in s], "drawn_ms": [r1(x) for x in d]}


def markdown(d: dict) -> str:
    """The summary of one run's JSON as Markdown (for docs/benchmarks.md)."""
    out = []
    f, b = d.get("first_page"), d["bare_slider"]

    def verdict(value, target, unit=" ms", lower=True):
        if value is None:
            return "not measured"
        ok = value < target if lower else value <= target
        return f"met ({value}{unit} < {target}{unit})" if ok else f"**not met**: {value}{unit}, {value / target:.1f}x the target {target}{unit}"
    ctl = d["controls"]
    out.append(f"Run {d['machine']['date']}, `{d['command']}`, {d['repeats']} repeats, {d['minutes']} min; "
               f"load average {d['load_avg_before']} before, {d['load_avg_after']} after (2 cores).\n")
    out.append(f"Bare page (one slider + one chart) slider round trip: p50 {b['browser_p50']} ms, p95 {b['browser_p95']} ms "
               f"(server p50 {b['server_p50']} ms; drawn p95 {b['drawn_p95']} ms; n = {b['n']}).\n")
    if f:
        out.append(f"First page (fresh server and browser context each time; to idle): ours p50 {f['ours_p50']} ms, "
                   f"bare p50 {f['bare_p50']} ms, ratio {f['ratio_p50']}x (p95 {f['ratio_p95']}x; target <= 1.3x: "
                   f"{'met' if f['ratio_p50'] <= 1.3 else '**not met**'}). Drawn (Plotly done): {f['ours_drawn_p50']} vs "
                   f"{f['bare_drawn_p50']} ms.\n")
    out.append("| page | controls | actions | browser p50 / p95 ms | server p50 / p95 ms | open page p50 / p95 ms "
               "| language switch p50 / p95 ms |")
    out.append("|---|---|---|---|---|---|---|")
    for pp in d["per_page"]:
        nav = [x for r in d["open_page"] if r["page"] == pp["page"] for x in r["browser_ms"]]
        lsw = [x for r in d["language_switch"] if r["page"] == pp["page"] for x in r["browser_ms"]]
        out.append(f"| {pp['page']} | {pp['controls']} | {pp['actions']} | {pp['browser_p50']} / {pp['browser_p95']} | "
                   f"{pp['server_p50']} / {pp['server_p95']} | {r1(pct(nav, .5))} / {r1(pct(nav, .95))} | "
                   f"{r1(pct(lsw, .5))} / {r1(pct(lsw, .95))} |")
    allb = [x for r in ctl for x in r["browser_ms"]]
    alls = [x for r in ctl for x in r["server_ms"]]
    nav = [x for r in d["open_page"] for x in r["browser_ms"]]
    lsw = [x for r in d["language_switch"] for x in r["browser_ms"]]
    out.append("")
    out.append("| target | measured | verdict |")
    out.append("|---|---|---|")
    if f:
        out.append(f"| first page <= 1.3x bare | {f['ratio_p50']}x (p50) | "
                   f"{verdict(f['ratio_p50'], 1.3, 'x', lower=False)} |")
    out.append(f"| open another page < 500 ms | p50 {r1(pct(nav, .5))}, p95 {r1(pct(nav, .95))} ms | {verdict(r1(pct(nav, .95)), 500)} (p95) |")
    out.append(f"| language switch < 500 ms | p50 {r1(pct(lsw, .5))}, p95 {r1(pct(lsw, .95))} ms | {verdict(r1(pct(lsw, .95)), 500)} (p95) |")
    nb = sum(r["meets"]["browser_p95<400"] for r in ctl)
    ns = sum(r["meets"]["server_p95<200"] for r in ctl)
    nr = sum(r["meets"]["ratio_p95<1.6"] for r in ctl)
    out.append(f"| every control: browser p95 < 400 ms | all actions p95 {r1(pct(allb, .95))} ms, p50 {r1(pct(allb, .5))} ms "
               f"| {nb} of {len(ctl)} control x language rows meet it |")
    out.append(f"| every control: p95 within 1.6x the bare slider | worst {max((r['ratio_p95'] or 0) for r in ctl):.1f}x | "
               f"{nr} of {len(ctl)} meet it |")
    out.append(f"| every control: server p95 < 200 ms | all actions p95 {r1(pct(alls, .95))} ms, p50 {r1(pct(alls, .5))} ms "
               f"| {ns} of {len(ctl)} meet it |")
    out.append("")
    out.append("Slowest 15 controls (browser p95):\n")
    out.append("| page | control | lang | browser p50 / p95 ms | server p50 / p95 ms | x bare p95 | drawn p95 ms |")
    out.append("|---|---|---|---|---|---|---|")
    for r in sorted(ctl, key=lambda r: -r["browser_p95"])[:15]:
        out.append(f"| {r['page']} | `{r['control']}` | {r['lang']} | {r['browser_p50']} / {r['browser_p95']} | "
                   f"{r['server_p50']} / {r['server_p95']} | {r['ratio_p95']} | {r['drawn_p95']} |")
    if d["errors"]:
        out.append(f"\n{len(d['errors'])} actions failed: " + "; ".join(
            f"{e['page']}/{e['control']} ({e['lang']}): {e['error'][:80]}" for e in d["errors"][:8]))
    return "\n".join(out)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--markdown":  # python bench/controls.py --markdown RESULT.json
        import json
        print(markdown(json.loads(Path(sys.argv[2]).read_text())))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default=",".join(p.url for p in PAGES))
    ap.add_argument("--langs", default="en,ko")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--all-options", action="store_true",
                    help=f"a select box, radio or button group: every option once (up to {MAX_OPTIONS}), not only "
                         "the next `--repeats`: the first choice of an option can cost what later ones do not")
    ap.add_argument("--quiet-ms", type=int, default=250, help="the page must stay quiet this long to count as idle")
    ap.add_argument("--timeout", type=float, default=60, help="seconds one action may take before it counts as failed")
    ap.add_argument("--draw-cap", type=float, default=3.0,
                    help="seconds after idle to wait for the document to stop changing (the drawn time)")
    ap.add_argument("--bare-per-page", type=int, default=3, help="bare slider round trips before each page")
    ap.add_argument("--no-first", action="store_true", help="skip the first-page measurement (fresh servers)")
    ap.add_argument("--read-first-s", type=float, default=0,
                    help="stay this long on the first page of each tab before anything else (a learner reading it)")
    ap.add_argument("--no-controls", action="store_true", help="only open the pages and switch the language")
    ap.add_argument("--list", action="store_true", help="only list each page's controls")
    ap.add_argument("--name", default=f"controls-{date.today().isoformat()}")
    args = ap.parse_args()
    global DRAW_CAP_S
    DRAW_CAP_S = args.draw_cap
    pages = [BY_URL[u] for u in args.pages.split(",")]
    langs = args.langs.split(",")
    load_before = load_average()
    t_start = time.time()
    logs = Path(tempfile.mkdtemp(prefix="atlas-controls-"))
    runs_dir = tempfile.mkdtemp(prefix="atlas-controls-runs-")
    env = {"ATLAS_RUNS_DIR": runs_dir}
    results, navs, langsw, bare, skipped, errors, exc_seen = [], {}, {}, [], [], [], []
    first = None
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        if not args.no_first and not args.list:
            first = first_draws(browser, runs_dir, args.repeats, args.quiet_ms, logs)
        ours_runs, bare_runs = logs / "ours-runs.jsonl", logs / "bare-runs.jsonl"
        with serve(TIMED, {**env, "ATLAS_BENCH_SCRIPT": str(ROOT / "app" / "main.py"),
                           "ATLAS_BENCH_RUNLOG": str(ours_runs)}, logs / "ours.log") as (url, _), \
                serve(TIMED, {**env, "ATLAS_BENCH_SCRIPT": str(ROOT / "bench" / "bare_page.py"),
                              "ATLAS_BENCH_RUNLOG": str(bare_runs)}, logs / "bare.log") as (bare_url, _):
            bare_tab = Tab(browser, runlog=bare_runs)
            bare_tab.goto(bare_url, args.quiet_ms, 120)
            for lang in langs:
                tab = Tab(browser, locale="ko-KR" if lang == "ko" else "en-US", runlog=ours_runs)
                tab.goto(f"{url}/?lang={lang}", args.quiet_ms, 180)
                if args.read_first_s:
                    tab.page.wait_for_timeout(args.read_first_s * 1000)
                other = "ko" if lang == "en" else "en"
                for info in pages:
                    if not args.list:
                        bare_round_trips(bare_tab, args.bare_per_page, args.quiet_ms, args.timeout, bare)
                    pass
                    try:
                        navs.setdefault((info.url, lang), []).append(open_page(tab, info, lang, args.quiet_ms, 180))
                    except (PWError, RuntimeError) as e:
                        errors.append({"page": info.url, "lang": lang, "control": "(open page)", "error": str(e)[:200]})
                        print(f"{info.url} {lang}: page did not open: {str(e)[:200]}", flush=True)
                        continue
                    controls = tab.page.evaluate(LIST_JS, WIDGETS)
                    for _ in range(10):  # the same controls in two reads 0.5 s apart
                        tab.page.wait_for_timeout(500)
                        again = tab.page.evaluate(LIST_JS, WIDGETS)
                        if again == controls:
                            break
                        controls = again
                    if args.list:
                        for c in controls:
                            print(f"{info.url:10} {lang} {c['tid']:18} {str(c['key']):24} {c['label']}")
                        continue
                    for r in range(args.repeats):  # the language switch: to the other language and back
                        try:
                            langsw.setdefault((info.url, other), []).append(switch_lang(tab, other, args.quiet_ms, 120))
                            langsw.setdefault((info.url, lang), []).append(switch_lang(tab, lang, args.quiet_ms, 120))
                        except (PWError, RuntimeError) as e:
                            errors.append({"page": info.url, "lang": lang, "control": "(language)", "error": str(e)[:200]})
                    if not args.no_controls:
                        openers, inside = lazy_controls(tab, controls, args.quiet_ms, args.timeout)
                        controls = controls + [{"tid": "stTab" if o["kind"] == "tab" else "stExpander", "key": None,
                                                "label": o["label"], "nth": 0, "inForm": False, "opener": o}
                                               for o in openers] + inside
                    for c in ([] if args.no_controls else controls):
                        name = c["key"] or (f"open:{c['label']}" if c.get("opener") else f"{c['tid']}:{c['label']}")
                        if c["tid"] in SKIP_TESTIDS or (c["key"] in SKIP_KEYS) or c.get("inForm"):
                            skipped.append({"page": info.url, "lang": lang, "control": name, "label": c["label"],
                                            "kind": c["tid"], "why": "download/link/upload" if c["tid"] in SKIP_TESTIDS
                                            else "inside a form: no rerun until its submit button (timed)" if c.get("inForm")
                                            else "downloads over the network" if c["key"] == "insp_hub_fetch"
                                            else "starts or stops a training run"})
                            continue
                        times = []
                        c.pop("wrapped", None)
                        for i in range(max(args.repeats, MAX_OPTIONS if args.all_options else 0)):
                            if i >= args.repeats and (c["tid"] not in CHOICES or c.get("wrapped")):
                                break  # --all-options: a choice's every option once, then no more
                            try:
                                if c.get("opener"):  # a lazy expander or tab: open it, close it (or the tab before)
                                    o = c["opener"]
                                    for outer in o["via"]:
                                        set_open(tab, outer, True, args.quiet_ms, args.timeout)
                                    el = opener(tab, o) if o["kind"] == "expander" or not is_open(tab, o) \
                                        else opener(tab, o, o["open"])
                                    times.append(measure(tab, lambda: (tab.arm(), el.click()), args.quiet_ms,
                                                         args.timeout))
                                    continue
                                for outer in c.get("via", []):
                                    set_open(tab, outer, True, args.quiet_ms, args.timeout)
                                el = find_control(tab, c, args.quiet_ms, args.timeout, reset=i == 0)
                                reveal(tab, el)
                                nf = len(tab.py_frames)
                                times.append(measure(tab, act(tab, el, c, i), args.quiet_ms, args.timeout))
                                if any(exc for _, exc in tab.py_frames[nf:]) or tab.exceptions():
                                    exc_seen.append({"page": info.url, "lang": lang, "control": name})
                                tab.page.keyboard.press("Escape")  # close a select's menu if one stayed open
                            except OneValue:
                                skipped.append({"page": info.url, "lang": lang, "control": name, "label": c["label"],
                                                "kind": c["tid"], "why": "one value only: nothing to change"})
                                with contextlib.suppress(PWError):
                                    tab.page.keyboard.press("Escape")
                                break
                            except (PWError, RuntimeError, ValueError) as e:
                                errors.append(failed(info.url, lang, name, e))
                                with contextlib.suppress(PWError):
                                    tab.page.keyboard.press("Escape")
                                    tab.wait_idle(0, 0, args.quiet_ms, args.timeout)
                                break
                        if times:
                            row = {"page": info.url, "lang": lang, "control": name, "label": c["label"],
                                   "kind": c["tid"], **summarize(times)}
                            results.append(row)
                            print(f"{info.url:10} {lang} {name[:40]:40} browser p50 {row['browser_p50']} "
                                  f"p95 {row['browser_p95']}  server p50 {row['server_p50']} p95 {row['server_p95']}",
                                  flush=True)
                tab.close()
            bare_tab.close()
        browser.close()
    if args.list:
        return
    bare_sum = summarize(bare)
    bare_p50, bare_p95 = bare_sum["browser_p50"], bare_sum["browser_p95"]
    for row in results:
        row["ratio_p50"] = round(row["browser_p50"] / bare_p50, 2) if bare_p50 else None
        row["ratio_p95"] = round(row["browser_p95"] / bare_p95, 2) if bare_p95 else None
        row["meets"] = {"browser_p95<400": row["browser_p95"] < TARGET_BROWSER_MS,
                        "server_p95<200": row["server_p95"] is not None and row["server_p95"] < TARGET_SERVER_MS,
                        "ratio_p95<1.6": row["ratio_p95"] is not None and row["ratio_p95"] < TARGET_RATIO}
    nav_rows = [{"page": u, "lang": lg, **summarize(v)} for (u, lg), v in navs.items()]
    lang_rows = [{"page": u, "to": lg, **summarize(v)} for (u, lg), v in langsw.items()]
    per_page = []
    for info in pages:
        rs = [r for r in results if r["page"] == info.url]
        if rs:
            allb = [x for r in rs for x in r["browser_ms"]]
            alls = [x for r in rs for x in r["server_ms"]]
            per_page.append({"page": info.url, "controls": len({r["control"] for r in rs}), "actions": len(allb),
                             "browser_p50": r1(pct(allb, .5)), "browser_p95": r1(pct(allb, .95)),
                             "server_p50": r1(pct(alls, .5)), "server_p95": r1(pct(alls, .95)),
                             "controls_p95_over_400": sum(r["browser_p95"] >= TARGET_BROWSER_MS for r in rs),
                             "controls_server_p95_over_200": sum((r["server_p95"] or 0) >= TARGET_SERVER_MS for r in rs)})
    first_sum = None
    if first:
        o50, b50 = pct(first["ours_ms"], .5), pct(first["bare_ms"], .5)
        o95, b95 = pct(first["ours_ms"], .95), pct(first["bare_ms"], .95)
        od, bd = pct(first["ours_drawn_ms"], .5), pct(first["bare_drawn_ms"], .5)
        first_sum = {**first, "ours_p50": r1(o50), "ours_p95": r1(o95), "bare_p50": r1(b50), "bare_p95": r1(b95),
                     "ratio_p50": round(o50 / b50, 2), "ratio_p95": round(o95 / b95, 2),
                     "ours_drawn_p50": r1(od), "bare_drawn_p50": r1(bd), "drawn_ratio_p50": round(od / bd, 2)}
    payload = {"machine": machine(), "cpus": os.cpu_count(), "load_avg_before": load_before,
               "load_avg_after": load_average(), "minutes": round((time.time() - t_start) / 60, 1),
               "command": " ".join(["python bench/controls.py"] + sys.argv[1:]), "repeats": args.repeats,
               "quiet_ms": args.quiet_ms, "draw_cap_s": args.draw_cap,
               "targets": {"browser_p95_ms": TARGET_BROWSER_MS, "server_p95_ms": TARGET_SERVER_MS,
                           "ratio_to_bare_slider_p95": TARGET_RATIO, "first_page_ratio": TARGET_FIRST_RATIO,
                           "open_page_ms": TARGET_NAV_MS, "language_switch_ms": TARGET_LANG_MS},
               "first_page": first_sum, "bare_slider": bare_sum, "open_page": nav_rows, "language_switch": lang_rows,
               "per_page": per_page, "controls": results, "skipped": skipped, "errors": errors,
               "exceptions_on_page": exc_seen}
    path = write(args.name, payload)
    cols = ("page", "control", "lang", "browser_p50", "browser_p95", "server_p50", "server_p95", "ratio_p95",
            "drawn_p95")
    if results:
        print(table([{k: r[k] for k in cols} for r in results]))
        print("\nslowest 15 (browser p95):")
        print(table([{k: r[k] for k in cols} for r in sorted(results, key=lambda r: -r["browser_p95"])[:15]]))
    if per_page:
        print("\nper page:")
        print(table(per_page))
    if nav_rows:
        print("\nopening a page from the sidebar:")
        print(table([{k: r[k] for k in ("page", "lang", "browser_p50", "browser_p95", "server_p95", "drawn_p95")}
                     for r in nav_rows]))
    if lang_rows:
        print("\nlanguage switch:")
        print(table([{k: r[k] for k in ("page", "to", "browser_p50", "browser_p95", "server_p95", "drawn_p95")}
                     for r in lang_rows]))
    print(f"\nbare slider round trip: p50 {bare_p50} ms, p95 {bare_p95} ms, drawn p95 {bare_sum['drawn_p95']} ms "
          f"(n={bare_sum['n']})")
    if first_sum:
        print(f"first page: ours p50 {first_sum['ours_p50']} ms / bare {first_sum['bare_p50']} ms = "
              f"{first_sum['ratio_p50']}x (p95 {first_sum['ratio_p95']}x)")
    print(f"skipped {len(skipped)}, errors {len(errors)}, exceptions {len(exc_seen)}; load {load_before} -> "
          f"{payload['load_avg_after']}; {payload['minutes']} min")
    for e in errors[:20]:
        print("error:", e)
    print("written:", path)


if __name__ == "__main__":
    main()
