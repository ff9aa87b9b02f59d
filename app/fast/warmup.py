"""The server's warm-up: once per process, after the first page has drawn, a background thread imports what
the next pages' first runs would otherwise import themselves (WARM_UP_MODULES, then our own modules the pages
import), computes the training page's estimates of the synthetic tasks, builds a figure of each trace type and
loads the first model the pages open. Pages other than the first wait for its imports (`wait_for_warm_up`);
between its steps it waits for a page that is running (`page_running`). The training page's first run starts
the estimates of the en-ko tasks apart (`prepare_estimates`)."""
from __future__ import annotations

import contextlib
import importlib
import threading
import time
from pathlib import Path

from app.jobs import apply_server_threads
from app.jobs import estimate as jobs_estimate
from app.jobs.options import DEFAULT_TASK
from model.data.corpus import SYNTHETIC_TASKS, TASKS

ROOT = Path(__file__).resolve().parents[2]

_WARM_UP_STARTED = False
_WARM_UP_DONE = threading.Event()
_RUNS_LOCK = threading.Lock()
_PAGE_RUNS = 0  # script runs of pages in progress (page_running); the warm-up waits for them between its steps

# What the pages' first runs import besides torch, in the order a learner meets them (measured with cProfile on
# each page's first run, torch already loaded): pandas for st.dataframe (attention, positional, multi-head, why),
# Streamlit's emoji catalogue for icons in alerts and segmented controls, torch._dynamo, which torch imports the
# first time a model is built on the meta device (every checkpoint load counts its parameters there) or an Adam
# optimiser is made (masks, inspector, recipe, family), and scipy.optimize for DETR's matching (the family page).
# tests/app/test_warm.py fails when a page's first run imports a package that is not here.
WARM_UP_MODULES = ("torch", "pandas", "streamlit.emojis", "plotly.io", "orjson", "torch._dynamo", "safetensors.torch",
                   "sentencepiece", "scipy.optimize")
OUR_PACKAGES = ("app", "model", "pages")  # pages/ holds the page-side helpers the page scripts import


def page_modules() -> list[str]:
    """Our own modules (app.*, model.*, pages.*) that the pages after the first import, in the pages' order:
    read from the page files' import statements. Importing them (compiling them where no bytecode is cached)
    costs a page's first run tens of milliseconds each."""
    import ast
    import importlib.util

    from app.pages_list import PAGES
    out: list[str] = []
    for info in PAGES[1:]:
        try:
            tree = ast.parse((ROOT / "pages" / info.file).read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found = [node.module]
                for a in node.names:  # `from app import format`: a module too
                    with contextlib.suppress(ImportError, ValueError):
                        if importlib.util.find_spec(f"{node.module}.{a.name}") is not None:
                            found.append(f"{node.module}.{a.name}")
            else:
                continue
            out += [m for m in found if m.split(".")[0] in OUR_PACKAGES and m not in out]
    return out


@contextlib.contextmanager
def page_running():
    """Around a page's script run (app/main.py): the warm-up lets it finish before its next step."""
    global _PAGE_RUNS
    with _RUNS_LOCK:
        _PAGE_RUNS += 1
    try:
        yield
    finally:
        with _RUNS_LOCK:
            _PAGE_RUNS -= 1


def _yield_to_pages(limit_s: float = 2.0) -> None:
    """Before each step of the warm-up: wait (up to limit_s) while a page runs. A rerun of the first page (a
    language switch while the warm-up works) would otherwise share the interpreter with it and take several
    times longer; the steps are short, except the imports of torch and torch._dynamo (about a second each)."""
    end = time.monotonic() + limit_s
    while _PAGE_RUNS > 0 and time.monotonic() < end:
        time.sleep(0.01)


def warm_up() -> None:
    """Once per process, after the first page has drawn: import, in a background thread, what the next
    pages' first runs would otherwise import themselves (WARM_UP_MODULES), and give torch the server's
    thread budget as soon as it is loaded. A module already loaded costs nothing; one that fails to import
    is left to the page that needs it (which then shows its own message)."""
    global _WARM_UP_STARTED
    if _WARM_UP_STARTED:
        return
    _WARM_UP_STARTED = True

    def load():
        try:
            for name in WARM_UP_MODULES:
                _yield_to_pages()
                try:
                    importlib.import_module(name)
                except Exception:  # noqa: BLE001 - a warm-up must never take the server down
                    continue
                if name == "torch":
                    apply_server_threads()
            for name in page_modules():  # then our own modules the next pages import
                _yield_to_pages()
                with contextlib.suppress(Exception):  # noqa: BLE001 - as above
                    importlib.import_module(name)
            for task in (DEFAULT_TASK, *(x for x in SYNTHETIC_TASKS if x != DEFAULT_TASK)):
                _yield_to_pages()  # the training page's estimate of a task reads the task's first 400 examples
                with contextlib.suppress(Exception):  # noqa: BLE001 - as above
                    jobs_estimate.tokens_per_example(task)
                    jobs_estimate.vocab_size(task)
            _yield_to_pages()
            with contextlib.suppress(Exception):  # noqa: BLE001 - as above
                from app.charts import warm_up as warm_figures
                warm_figures()
            _yield_to_pages()
            with contextlib.suppress(Exception):  # noqa: BLE001 - as above (a damaged model: its page explains)
                from app.resources import warm_first_model
                warm_first_model()
            # all of that stays for the server's life: one collection now, then frozen, so that the collection
            # after a page's first model load walks only what came since
            _yield_to_pages()
            with contextlib.suppress(Exception):  # noqa: BLE001 - as above
                from app.fast.heap import settle_heap
                settle_heap()
        finally:
            _WARM_UP_DONE.set()

    threading.Thread(target=load, name="atlas-warm-up", daemon=True).start()


_ESTIMATES_STARTED = False


def prepare_estimates() -> None:
    """Once per process, when the training page first opens: in the background, the estimates of the tasks on
    the en-ko corpus, which read its split (about a second of the first run that picked en-ko, generated
    again). Measured in a child process at the lowest priority (app.jobs.estimate.measure_tokens_apart) while
    the learner reads the page: done in the warm-up, the same work slowed the first page's clicks."""
    global _ESTIMATES_STARTED
    if _ESTIMATES_STARTED:
        return
    _ESTIMATES_STARTED = True

    def measure():
        tasks = tuple(x for x in TASKS if x not in SYNTHETIC_TASKS)
        with contextlib.suppress(Exception):  # noqa: BLE001 - an estimate is measured when needed if this fails
            jobs_estimate.measure_tokens_apart(tasks)
            for task in tasks:
                jobs_estimate.vocab_size(task)

    threading.Thread(target=measure, name="atlas-estimates", daemon=True).start()


def warm_up_done() -> bool:
    """Whether the warm-up's imports are done (true where none was started): at once, without waiting."""
    return _WARM_UP_DONE.is_set() or not _WARM_UP_STARTED


def wait_for_warm_up(timeout: float = 30.0) -> None:
    """Until the warm-up's imports are done (at once if none started). Two threads importing the same packages
    at once can each hold a module the other needs; Python then hands one of them a half-initialised module
    ("partially initialized module 'pandas' has no attribute 'Series'", seen on a page's first run beside the
    warm-up). So every page but the first waits here: it would have imported the same modules itself, so the
    wait costs it little (tests/app/test_warm.py)."""
    if _WARM_UP_STARTED:
        _WARM_UP_DONE.wait(timeout)
