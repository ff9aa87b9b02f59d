"""The warm-up after the first page: the server imports, in the background, what the next pages'
first runs need (app.fast.warmup.warm_up), and the browser loads the chart element and draws one element of each
kind the pages use, hidden, while it is idle (app/fast/browser_warm.py). The browser half is checked in a real browser in tests/browser/test_browser_pages.py."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
import threading
from pathlib import Path

from app.fast import browser_warm as warm
from app.fast import warmup

ROOT = Path(__file__).resolve().parents[2]


def test_the_script_runs_once_per_tab_and_loads_the_chart_element_first():
    s = warm.script()
    assert s.startswith("<script>") and s.rstrip().endswith("</script>") and s.count("</script>") == 1
    assert f"if (w.{warm.MARKER}) return;" in s  # a rerun that mounts it again does nothing
    assert "atlas_chart.js?v=" in s and "warmUp(" in s  # the app's own files (app.fast.chart), nothing of Streamlit's
    assert "/static/js/" not in s


def test_without_the_chart_element_the_script_only_asks_for_the_elements(monkeypatch):
    monkeypatch.setenv("ATLAS_CHARTS", "streamlit")
    s = warm.script()
    assert "warmUp(" not in s and "const p = (() => null)();" in s and warm.ELEMENTS_KEY in s


def test_after_the_warm_up_no_page_first_run_imports_a_package_of_its_own():
    """The whole class of slow first visits: a page whose first run imports a package (pandas for a table,
    torch._dynamo for a model built on the meta device, 1-2 s each here) pays for it while the learner waits.
    In a fresh process: the overview's first run, the warm-up thread to its end, then each page's first run;
    none may load a top-level package that was not loaded yet (our own app/ and model/ aside)."""
    code = f"""
import sys, threading, json, time
sys.path.insert(0, {str(ROOT)!r})
from streamlit.testing.v1 import AppTest
from app.pages_list import PAGES
import app.fast.warmup as warmup
at = AppTest.from_file({str(ROOT / 'app' / 'main.py')!r}, default_timeout=120)
at.session_state["lang"] = "en"
at.run()
assert not at.exception, at.exception
import gc
frozen_before = gc.get_freeze_count()  # the warm-up thread has just begun (importing torch takes seconds)
for th in threading.enumerate():
    if th.name == "atlas-warm-up":
        th.join(120)
missing = [m for m in (*warmup.WARM_UP_MODULES, *warmup.page_modules()) if m not in sys.modules]
import app.jobs.estimate as est
frozen = gc.get_freeze_count() - frozen_before
walked = len(gc.get_objects())  # what a full collection walks (not the frozen ones)
out = {{"missing": missing, "pages": {{}}, "frozen": frozen, "walked": walked}}
from pathlib import Path
import model.training.checkpoint as ckpt
loads, load_model_dir = [], ckpt.load_model_dir
def counted(path, *a, **k):  # the models the pages' first runs load themselves
    loads.append(str(path))
    return load_model_dir(path, *a, **k)
ckpt.load_model_dir = counted
out["loads"] = loads
members = sorted(f.stem for f in Path({str(ROOT / 'pages' / 'family')!r}).glob("*.py") if f.stem != "__init__")
runs = [(p.file, None) for p in PAGES[1:]] + [("family.py", m) for m in members]  # each member: a view of its own
for file, member in runs:
    before = {{m.split(".")[0] for m in sys.modules}}
    at.switch_page("../pages/" + file)
    if member:
        at.session_state["fam_member"] = member
    at.run()
    assert not at.exception, (file, member, at.exception)
    new = {{m.split(".")[0] for m in sys.modules}} - before - {{"app", "model"}}
    out["pages"][file + (f" ({{member}})" if member else "")] = sorted(new)
for th in threading.enumerate():  # started by the training page's first run
    if th.name == "atlas-estimates":
        th.join(120)
import model.data.corpus.tasks as corpus
out["corpus_held"] = corpus._corpus.cache_info().currsize + corpus._combinations_by_english.cache_info().currsize
from app.jobs.options import ALL_TASKS, is_family
measured = sorted(est._TOKENS)
misses = est.vocab_size.cache_info().misses
for task in ALL_TASKS:  # every task the training page offers: its estimate is ready
    if task != "tsv" and not is_family(task):
        est.tokens_per_example(task)
        est.vocab_size(task)
out["estimate_misses"] = [sorted(set(est._TOKENS) - set(measured)), est.vocab_size.cache_info().misses - misses]
print("RESULT" + json.dumps(out))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.split("RESULT", 1)[1])
    assert out["missing"] == [], f"the warm-up did not load {out['missing']}"
    # A full collection with torch, pandas and plotly loaded and not frozen walks ~300k objects: 0.17 s holding
    # the GIL, paid by the first page that loads a model (app.resources.settle_heap) and by any full collection
    # Python starts on its own before that. The warm-up freezes what it loaded.
    assert out["frozen"] > 100_000, f"what the warm-up loaded is frozen (app.resources.settle_heap): {out['frozen']}"
    assert out["walked"] < 60_000, f"a full collection walks {out['walked']} objects"
    # Each task's estimate reads its data (the en-ko corpus: 1.3 s of the first run that picked it): the warm-up
    # computed the synthetic tasks', the training page's first run started the others' (app.fast.warmup.prepare_estimates)
    assert out["estimate_misses"] == [[], 0], "the training page's estimates were ready (warm-up, prepare_estimates)"
    assert out["corpus_held"] == 0, "the en-ko corpus (~90 MB) was generated in a child process, not here"
    # The shipped EN->KO model (the inspector's first model, the masks page's demonstration): loaded by the warm-up,
    # it cost the inspector's first open ~80 of its 160 ms (weights, card)
    from app.resources import SHIPPED
    assert str(SHIPPED["en-ko"]) not in out["loads"], "the warm-up loads the shipped model the pages open first"
    offenders = {page: new for page, new in out["pages"].items() if new}
    assert not offenders, f"first runs that import a package the warm-up does not: {offenders} (add it to " \
                          "app.fast.warmup.WARM_UP_MODULES)"


def test_the_warm_up_starts_once_and_skips_a_module_that_fails(monkeypatch):
    started = []

    class FakeThread:
        def __init__(self, target, name, daemon):
            started.append(name)
            self.target = target

        def start(self):
            self.target()

    monkeypatch.setattr(warmup, "_WARM_UP_STARTED", False)
    # its own "done" event: the process's stays unset until a real warm-up is done (a later page test's
    # wait_for_warm_up would otherwise not wait, and import beside a real warm-up thread)
    monkeypatch.setattr(warmup, "_WARM_UP_DONE", warmup.threading.Event())
    monkeypatch.setattr(warmup.threading, "Thread", FakeThread)
    monkeypatch.setattr(warmup, "WARM_UP_MODULES", ("no_such_module_atlas", "json"))
    warmup.warm_up()
    warmup.warm_up()
    assert started == ["atlas-warm-up"]


def test_a_page_runs_after_the_warm_up_not_beside_it():
    """Two threads importing the same packages at once can each hold a module the other needs: Python then
    hands one of them a half-initialised module ("partially initialized module 'pandas' has no attribute
    'Series'", seen on the recipe page's first run while the warm-up imported pandas). So a page other than
    the first waits until the warm-up's imports are done. Here the warm-up's one import takes 1.5 s; the
    recipe page opened at once must start only after it finished."""
    code = f"""
import sys, time, json, types
sys.path.insert(0, {str(ROOT)!r})
import app.fast.warmup as warmup, app.state as state
finished = []
def slow_import(name):
    time.sleep(1.5)
    finished.append(time.monotonic())
warmup.WARM_UP_MODULES = ("a_slow_module",)
warmup.page_modules = lambda: []
warmup.importlib = types.SimpleNamespace(import_module=slow_import)
seen = []
begin = state.begin_page
def spy(page):
    seen.append((page, time.monotonic(), list(finished)))
    return begin(page)
state.begin_page = spy
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({str(ROOT / 'app' / 'main.py')!r}, default_timeout=120)
at.session_state["lang"] = "en"
at.run()
assert not at.exception, at.exception
at.switch_page("../pages/recipe.py")
at.run()
assert not at.exception, at.exception
print("RESULT" + json.dumps(seen))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.split("RESULT", 1)[1])
    assert [s[0] for s in seen] == ["overview", "recipe"], seen
    (_, _, before_overview), (_, started, before_recipe) = seen
    assert before_overview == []  # the warm-up starts after the first page
    assert len(before_recipe) == 1 and before_recipe[0] <= started, "the recipe page ran beside the warm-up"


def test_a_rerun_while_the_warm_up_imports_torch_shows_no_error():
    """While the warm-up thread imports torch, "torch" is already in sys.modules, half initialised (no
    set_num_threads yet). A rerun in that second (a language switch on the first page, a second learner's
    first page) must not touch it: app/main.py's apply_server_threads raised AttributeError ("partially
    initialized module 'torch'") before the page had even started. Here the warm-up's torch is a stand-in that
    stays half-initialised for 1.5 s; the first page is run again at once, then the threads are set once the
    import is done."""
    code = f"""
import sys, time, json, types, importlib.machinery
sys.path.insert(0, {str(ROOT)!r})
import app.fast.warmup as warmup
calls = []
def slow_import(name):
    fake = types.ModuleType(name)
    fake.__spec__ = importlib.machinery.ModuleSpec(name, None)
    fake.__spec__._initializing = True  # what importlib marks a module with while its code runs
    sys.modules[name] = fake
    time.sleep(1.5)
    fake.set_num_threads = calls.append
    fake.__spec__._initializing = False
warmup.WARM_UP_MODULES = ("torch",)
warmup.importlib = types.SimpleNamespace(import_module=slow_import)
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({str(ROOT / 'app' / 'main.py')!r}, default_timeout=120)
at.session_state["lang"] = "en"
at.run()
assert not at.exception, at.exception
time.sleep(0.2)
assert "torch" in sys.modules and sys.modules["torch"].__spec__._initializing
at.session_state["lang"] = "ko"
at.run()  # the same first page again, torch still half-imported
errors = [e.message for e in at.exception]
deadline = time.time() + 30
while not calls and time.time() < deadline:  # until the warm-up has set the threads (the rest of it is not tested)
    time.sleep(0.05)
time.sleep(0.3)  # a second setting would come at once
print("RESULT" + json.dumps({{"errors": errors, "calls": calls}}), flush=True)
import os
os._exit(0)  # the warm-up thread goes on with the pages' modules: not waited for
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.split("RESULT", 1)[1])
    assert seen["errors"] == [], seen["errors"]
    from app.jobs import server_threads
    assert seen["calls"] == [server_threads()]  # set once, by the warm-up, when torch was ready


def test_the_warm_up_knows_the_modules_the_pages_import():
    """page_modules reads the pages' own import statements: our modules the next pages import at the top."""
    mods = warmup.page_modules()
    assert {"model.lessons.positions", "model.lessons.worked_example", "app.charts.heatmaps",
            "model.inference.decode"} <= set(mods)
    for helper in ("attention_lab", "inspector"):  # page-side helpers: in app/, or in pages/views/ beside the pages
        assert {f"app.{helper}", f"pages.views.{helper}"} & set(mods), helper
    assert all(m.split(".")[0] in ("app", "model", "pages") for m in mods) and len(mods) == len(set(mods))


def test_the_warm_up_lets_a_running_page_finish_between_its_steps(monkeypatch):
    """A rerun of the first page while the warm-up works (a language switch) shared the interpreter with it and
    once took 1.1-1.3 s (docs/benchmarks.md 2026-12-03). Between its steps the warm-up now waits while a page
    runs (app.fast.warmup.page_running, around every page's run in app/main.py)."""
    import threading
    import time
    import types

    imported = []
    monkeypatch.setattr(warmup, "_WARM_UP_STARTED", False)
    monkeypatch.setattr(warmup, "_WARM_UP_DONE", threading.Event())
    monkeypatch.setattr(warmup, "WARM_UP_MODULES", ("json",))
    monkeypatch.setattr(warmup, "page_modules", lambda: ["app.format"])
    monkeypatch.setattr(warmup, "importlib", types.SimpleNamespace(
        import_module=lambda name: imported.append((name, time.monotonic()))))
    with warmup.page_running():
        warmup.warm_up()
        time.sleep(0.4)
        assert imported == [], "nothing while the page runs"
        page_done = time.monotonic()
    assert warmup._WARM_UP_DONE.wait(30)
    assert [name for name, _ in imported] == ["json", "app.format"]
    assert all(at >= page_done for _, at in imported)
    assert warmup._PAGE_RUNS == 0


def test_the_warm_up_builds_a_figure_of_every_trace_type_the_app_draws(monkeypatch):
    """The first figure of a trace type a server builds pays Plotly's first use of it (its validators): a
    histogram 27 ms against 6 ms after (the attention page's first open). app.charts.warm_up builds one of
    each trace type that app/ uses (go.Heatmap(...), go.Histogram(...) ... in its source)."""
    from app.charts import warm_up as warm_figures
    from tests.apptest_util import trace_types_in_app
    traces = trace_types_in_app()
    assert {"Heatmap", "Scatter", "Bar"} <= traces
    import app.charts.style as style
    built = set()
    ready = style.ready_figure

    def record(fig, *args, **kwargs):
        import plotly.graph_objects as go
        built.update(type(trace).__name__ for trace in (go.Figure(fig) if isinstance(fig, dict) else fig).data)
        return ready(fig, *args, **kwargs)
    monkeypatch.setattr(style, "ready_figure", record)
    warm_figures()
    assert traces <= built, f"trace types the warm-up never builds: {sorted(traces - built)}"


# Element kinds (Streamlit functions that draw something; not st.write, a name files share) and those
# app.fast.browser_warm.elements leaves out, with why.
ELEMENT_KINDS = {"title", "header", "subheader", "caption", "markdown", "latex", "code", "json", "metric", "info",
                 "warning", "success", "error", "exception", "progress", "text_input", "text_area", "number_input",
                 "slider", "select_slider", "selectbox", "multiselect", "radio", "checkbox", "toggle",
                 "segmented_control", "pills", "button", "download_button", "form_submit_button", "file_uploader",
                 "tabs", "expander", "form", "dataframe", "data_editor", "table", "image", "page_link",
                 "plotly_chart", "popover", "status", "html", "toast", "spinner", "columns", "container"}
NOT_WARMED = {
    "plotly_chart": "the ViT canvas; the app's charts are drawn off the screen by the browser's warm-up itself",
    "html": "the warm-up's own element, on every page from the first",
    "image": "the first page's architecture figure",
    "page_link": "drawn on the first page",
    "toast": "momentary, outside the page's flow",
    "spinner": "momentary, outside the page's flow",
}


def _kinds_called(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.func.attr for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ELEMENT_KINDS}


def test_the_hidden_elements_cover_every_kind_the_pages_draw():
    """The whole class of slow first openings that app.fast.browser_warm.elements answers: a page drawing a kind of element
    that no page before it drew pays for the browser compiling its code (the attention page's first opening:
    ~1.1 s of the main thread against ~0.5 s later). A kind a page or app/ module draws must be among the hidden
    elements, or listed in NOT_WARMED with the reason."""
    sources = sorted((ROOT / "pages").rglob("*.py")) + [p for p in sorted((ROOT / "app").rglob("*.py"))
                                                        if p.name != "browser_warm.py"]
    used = set().union(*(_kinds_called(p) for p in sources))
    warmed = _kinds_called(ROOT / "app" / "fast" / "browser_warm.py")
    missing = used - warmed - set(NOT_WARMED)
    assert not missing, f"element kinds the pages draw that app.fast.browser_warm.elements does not: {sorted(missing)}"
    assert not (set(NOT_WARMED) & warmed), "a kind both warmed and listed as not warmed"


def _warm_app(tmp_path):
    from streamlit.testing.v1 import AppTest
    script = tmp_path / "warm_page.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom app.fast import browser_warm\nbrowser_warm.elements()\n")
    at = AppTest.from_file(str(script), default_timeout=30)
    at.run()
    return at


def test_the_hidden_elements_draw_a_group_a_click_after_their_button(tmp_path):
    """A full run draws the button alone; each click on it (the browser's warm-up) reruns the fragment, which
    draws the next group in place of the one before; after the last group, a click draws nothing more."""
    at = _warm_app(tmp_path)
    assert [b.key for b in at.button] == [warm.ELEMENTS_KEY] and len(at.markdown) == 0
    counts = []
    for _ in range(len(warm.GROUPS) + 1):
        at.button(key=warm.ELEMENTS_KEY).click().run()
        assert not at.exception
        counts.append((len(at.latex), len(at.text_area), len(at.multiselect), len(at.slider), len(at.tabs),
                       len(at.dataframe)))
    assert counts == [(1, 0, 0, 0, 0, 0), (0, 1, 0, 0, 0, 0), (0, 0, 1, 0, 0, 0), (0, 0, 0, 1, 0, 0),
                      (0, 0, 0, 0, 2, 0), (0, 0, 0, 0, 0, 1), (0, 0, 0, 0, 0, 0)]
    at.run()  # a full run: the button alone
    assert len(at.dataframe) == 0 and [b.key for b in at.button] == [warm.ELEMENTS_KEY]


def test_the_hidden_elements_wait_for_nothing_while_the_server_warms_up(tmp_path, monkeypatch):
    """While the server's warm-up still imports (torch, pandas...), the groups draw at once, all but the data
    grid: waiting for the imports held back the learner's next click by up to a second (bench notes)."""
    monkeypatch.setattr(warmup, "_WARM_UP_STARTED", True)
    monkeypatch.setattr(warmup, "_WARM_UP_DONE", threading.Event())  # started, never done
    at = _warm_app(tmp_path)
    grids = []
    for _ in warm.GROUPS:
        at.button(key=warm.ELEMENTS_KEY).click().run()
        assert not at.exception
        grids.append(len(at.dataframe))
    assert grids == [0] * len(warm.GROUPS)
    # the grid's group waits for the warm-up: asked again, it is drawn once the imports are done
    at.button(key=warm.ELEMENTS_KEY).click().run()
    assert len(at.dataframe) == 0
    warmup._WARM_UP_DONE.set()
    at.button(key=warm.ELEMENTS_KEY).click().run()
    assert len(at.dataframe) == 1


def test_a_group_whose_run_was_cut_short_is_drawn_at_the_next_click(tmp_path, monkeypatch):
    """A run of the fragment can end before its group is drawn: a second click (the browser's warm-up asks again
    once an answer is overdue, on a slow machine) interrupts it. The group that was not drawn comes at the next
    click instead of being skipped (CI: the text area's group never reached the browser, and the first opening of
    a page with a text area paid for its code)."""
    cut = {"left": 1}

    def fields_cut_short(label, options):
        if cut["left"]:
            cut["left"] -= 1
            raise RuntimeError("the run ended here")
        return fields(label, options)

    fields = warm.GROUPS[1]
    monkeypatch.setattr(warm, "GROUPS", (warm.GROUPS[0], fields_cut_short, *warm.GROUPS[2:]))
    at = _warm_app(tmp_path)
    at.button(key=warm.ELEMENTS_KEY).click().run()
    assert len(at.latex) == 1
    at.button(key=warm.ELEMENTS_KEY).click().run()
    assert at.exception and not at.text_area
    at.button(key=warm.ELEMENTS_KEY).click().run()
    assert not at.exception and len(at.text_area) == 1
