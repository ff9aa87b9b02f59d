"""The app's chart element: a Plotly figure drawn by Plotly in the page, updated in place and drawn when it comes
near the screen (app/static/atlas_chart.js holds the browser's half and says why).

Streamlit's st.plotly_chart keys each chart by its figure: every changed figure is a new element that Plotly
draws from scratch, and every chart of a page is drawn when the page opens, also those far below the screen.
This element is a Streamlit custom component (st.components.v2, in the page, no iframe) with a key that stays
the same from one run to the next, so the browser keeps its plot and gives it each new figure. Its code and
Plotly itself come from the app's static folder (`server.enableStaticServing`, .streamlit/config.toml):
app/static/atlas_chart.js and plotly_theme.json are in the repository; plotly.min.js is copied there from the
installed plotly package the first time a chart is drawn (the version the Python side writes figures for).

Where the app is served without its static folder (another config, a read-only install), `available()` is
false and app.ui draws with st.plotly_chart instead: the same figures, drawn the slower way."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import streamlit as st

STATIC = Path(__file__).resolve().parent / "static"
MODULE = "atlas_chart.js"
THEME = "plotly_theme.json"
COMPONENT = "atlas_chart"
DEFAULT_HEIGHT = 450  # Plotly's own default, as Streamlit's chart element uses
# Toolbar as Streamlit's chart element sets it (no box or lasso selection on these charts)
REMOVED_BUTTONS = ["lasso2d", "select2d", "sendChartToCloud"]


@functools.lru_cache(maxsize=8)
def _version(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


@functools.lru_cache(maxsize=1)
def plotly_file() -> str | None:
    """The name of plotly.min.js in app/static (copied there once from the installed plotly package, under a
    name with its version), or None if it cannot be put there."""
    import importlib.metadata
    import importlib.util
    try:  # found without importing plotly (the first page imports no chart code)
        version = importlib.metadata.version("plotly")
        source = Path(importlib.util.find_spec("plotly").origin).parent / "package_data" / "plotly.min.js"
    except (importlib.metadata.PackageNotFoundError, AttributeError, TypeError):
        return None
    name = f"plotly-{version}.min.js"
    target = STATIC / name
    if target.is_file():
        return name
    try:  # a file of its own for each copy (two sessions may start at once), renamed whole: atomic
        fd, tmp = tempfile.mkstemp(dir=STATIC, prefix=".plotly-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
                shutil.copyfileobj(src, out)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        return None
    return name


def module_url() -> str:
    """atlas_chart.js's address relative to the page (the query string changes with the file, so a browser
    never runs an old copy it kept)."""
    return f"app/static/{MODULE}?v={_version(STATIC / MODULE)}"


# The promise of the module, shared by every chart of the tab and by app/warm.py's preloading
LOAD_JS = 'window.__atlasChartModule ||= import(new URL("%s", document.baseURI).href)'


def stub_js() -> str:
    """The component's inline script: it imports app/static/atlas_chart.js (once per tab) and hands each figure
    to it. Streamlit calls it with each new figure, on the same element, and calls the cleanup it returns when
    the element goes, or at once for a call that a newer figure overtook while the module was loading: each
    call's cleanup is its own (a token), so a late one leaves the newer figure's plot alone."""
    return """export default function (c) {
  const load = (%s), call = {};
  load.then((m) => m.render(c, call));
  return () => { load.then((m) => m.unmount(c.parentElement, call)); };
}""" % (LOAD_JS % module_url())


@functools.lru_cache(maxsize=1)
def _component():
    """The registered component (its script: stub_js)."""
    return st.components.v2.component(COMPONENT, js=stub_js(), isolate_styles=False)


def warm_js(idle: str) -> str:
    """An expression (a promise of the trace types drawn) that loads the module, Plotly and the theme, then
    draws one small figure of each trace type off the screen, one per call of the JavaScript function named
    `idle` (app/warm.py), or '' where charts are drawn by st.plotly_chart."""
    if not available():
        return ""
    return "(%s).then((m) => m.warmUp(%s, %s, %s))" % (LOAD_JS % module_url(), json.dumps(plotly_file()),
                                                         json.dumps(THEME), idle)


def available() -> bool:
    """Whether charts can be drawn by this element here: static serving on, and its files in app/static.
    ATLAS_CHARTS=streamlit in the server's environment asks for st.plotly_chart (bench/ compares the two)."""
    if os.environ.get("ATLAS_CHARTS") == "streamlit":
        return False
    try:
        serving = bool(st.get_option("server.enableStaticServing"))
    except Exception:  # noqa: BLE001
        return False
    return (serving and _served_folder_is_ours() and (STATIC / MODULE).is_file() and (STATIC / THEME).is_file()
            and plotly_file() is not None)


def _served_folder_is_ours() -> bool:
    """Streamlit serves the `static` folder beside the script it was started with: app/static only when that
    script is app/main.py (or a script in a folder whose `static` is app/static, as bench/timed_main.py's is:
    bench/static links to it). Another entry point (a test's wrapper script) gets st.plotly_chart."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    ctx = get_script_run_ctx(suppress_warning=True)
    main = getattr(ctx, "main_script_path", None) if ctx is not None else None
    return bool(main) and _static_is_ours(str(main))


@functools.lru_cache(maxsize=8)
def _static_is_ours(main: str) -> bool:  # resolving paths costs 0.3 ms: once per entry point
    try:
        return (Path(main).resolve().parent / "static").resolve() == STATIC.resolve()
    except OSError:
        return False


@functools.lru_cache(maxsize=1)
def _streamlit_template() -> dict:
    """Streamlit's default Plotly template (its placeholder colours), to recognise figures that use it."""
    from app.charts.style import _default_template
    return _default_template("streamlit")


def payload(fig_dict: dict, config: dict, failed: str, fullscreen: tuple[str, str] = ("Fullscreen", "Close fullscreen")) -> bytes:
    """What the browser gets for one chart: the figure (without Streamlit's template, which the browser
    replaces with the theme's), its height, the toolbar and its fullscreen button's two titles, the files to
    load, a message for a chart that cannot be drawn, and a version that changes with all of these (an
    unchanged chart is not drawn again)."""
    layout = dict(fig_dict.get("layout") or {})
    template = layout.get("template")
    theme = template is None or template == _streamlit_template()
    if theme:
        layout.pop("template", None)
    figure = {"data": fig_dict.get("data") or [], "layout": layout}
    config = {**config, "modeBarButtonsToRemove": REMOVED_BUTTONS}  # width: the element follows its box
    spec = {"figure": figure, "theme": theme, "config": config, "height": int(layout.get("height") or DEFAULT_HEIGHT),
            "plotly": plotly_file(), "themeFile": THEME, "failed": failed,
            "fullscreen": fullscreen[0], "closeFullscreen": fullscreen[1]}
    body = json.dumps(spec, separators=(",", ":"), ensure_ascii=False).encode()
    version = hashlib.sha1(body).hexdigest()[:16]
    return body[:-1] + b',"version":"' + version.encode() + b'"}'


_HELPERS = {Path(__file__).resolve(), Path(__file__).resolve().parent / "ui.py"}  # the places that draw for a page


@functools.lru_cache(maxsize=64)
def _is_helper(filename: str) -> bool:
    return Path(filename).resolve() in _HELPERS


def chart_key(key: str | None) -> str:
    """A key that names this chart from one run to the next: the caller's, else the place in the page's code
    that draws it and how many charts that place drew before it in this run."""
    import sys
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    if key is not None:
        return f"atlas-chart-{key}"
    frame = sys._getframe(1)
    while frame is not None and _is_helper(frame.f_code.co_filename):
        frame = frame.f_back
    where = f"{Path(frame.f_code.co_filename).stem}-{frame.f_lineno}" if frame is not None else "chart"
    ctx = get_script_run_ctx(suppress_warning=True)
    used = getattr(ctx, "widget_user_keys_this_run", set()) if ctx is not None else set()
    n = 0
    while f"atlas-chart-{where}-{n}" in used:
        n += 1
    return f"atlas-chart-{where}-{n}"


def draw(fig, config: dict, words: tuple[str, str, str], *, key: str | None) -> None:
    """Draw `fig` (an app.charts.style.ReadyFigure) with this element; `words`: the messages of the page's
    language (failed, fullscreen, close fullscreen). Its payload is made once per figure and language (ready
    figures are shared between reruns and sessions, app.resources.shared_figure)."""
    made = fig.__dict__.setdefault("_atlas_payloads", {})
    data = made.get(words)
    if data is None:
        data = made[words] = payload(fig.to_dict(), config, words[0], words[1:])
    _component()(key=chart_key(key), data=data, height="content")
