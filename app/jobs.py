"""The background-training job manager: one object per server, shared by every session.

Each training run is a subprocess, `python -m model.training.train --config RUNS/<id>/config.json ...
--out RUNS/<id>`, never a thread of the server. Everything about a run lives in its folder, so a
restarted server (a new manager) finds the runs again:

    RUNS/<id>/job.json      written by the manager only: options, the command, pid, queue time
    RUNS/<id>/config.json   the model (a TransformerConfig) the trainer builds, exactly
    RUNS/<id>/status.json   "queued" from the manager; then the trainer's own status (model/training/run_files.py)
    RUNS/<id>/metrics.jsonl the trainer's curves          RUNS/<id>/train.log  its stdout + stderr
    RUNS/<id>/checkpoint.pt, model/, corpus.tsv (an uploaded corpus)

RUNS is `runs/` in the repository, or the folder named by the environment variable
ATLAS_RUNS_DIR. At most `max_running` trainers (default 1, or ATLAS_MAX_RUNS) run at once;
other runs wait in state "queued" and start, oldest first, when `poll()` finds a free slot.
Pages call `poll()` on every refresh; `list_runs()` calls it too. Several servers may share one
RUNS (a file lock, RUNS/.jobs.lock, makes each queue step atomic across processes).

A classroom shares one server (docs/classroom.md):
- ownership: a run started from the page stores the hash of its browser session's owner token
  (job.json "owner"); stop / resume / delete with an `owner` act only on that session's runs,
  unless the server runs in teacher mode (ATLAS_TEACHER_MODE=1). `owner=None` is the trusted caller
  (tests, scripts), never the page.
- limits: active runs per owner (ATLAS_QUEUE_PER_SESSION, 3) and in all (ATLAS_QUEUE_TOTAL, 12),
  and a disk budget for RUNS (ATLAS_RUNS_BUDGET_MB, 2000), each refused with a UserError.
- a standby trainer: while a slot is free, the training page asks for a trainer process started ahead of
  time (`prepare()`, model/training/standby.py), which has imported torch; the next launch hands it its run
  instead of starting `python -m model.training.train`, so the first step comes ~5 s sooner. Same options, same
  files, same exit codes; ATLAS_TRAINER_STANDBY=0 turns it off.
- threads: the trainers get `thread_budget()`'s share of the cores (--threads, OMP_NUM_THREADS), the
  server's own torch the rest (`apply_server_threads()`, called by app/main.py).
- faults: a runs folder that cannot be used (read-only, a file, a full disk) is a UserError
  "jobs.errors.runs_folder" / "jobs.errors.disk_full", never a traceback; a new run is written in a
  hidden temporary folder and renamed, so a failed Start leaves nothing behind.

Status messages are Messages (catalogue keys "jobs.status.*", "train.status.*"), refusals are
UserErrors: the page translates both. The page's choices and their checks live in
app/jobs_options.py, the cost estimate in app/jobs_estimate.py.

No st.* calls in the class: it is tested without Streamlit. `get_manager()` at the bottom is
the server-wide instance (st.cache_resource)."""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import hmac
import importlib
import json
import math
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from app import jobs_estimate
from app.jobs_options import DEFAULT_TASK, MAX_PARAMETERS, TrainOptions, train_arguments, validate_options
from model.training.allocator import HUGE_PAGES
from model.atomic import atomic_write_json
from model.data.corpus import SYNTHETIC_TASKS, TASKS
from model.messages import Message, UserError
from model.training.run_files import (
    ACTIVE, STATES, clean_metrics, message_code, read_json_object, read_metrics, status_message, update_status,
)

ROOT = Path(__file__).resolve().parent.parent
RUNS_ENV = "ATLAS_RUNS_DIR"
MAX_RUNS_ENV = "ATLAS_MAX_RUNS"
THREADS_ENV = "ATLAS_TRAIN_THREADS"
TEACHER_ENV = "ATLAS_TEACHER_MODE"
STANDBY_ENV = "ATLAS_TRAINER_STANDBY"  # "0": no trainer started ahead of time (the tests' default)
STANDBY_MODULE = "model.training.standby"
STANDBY_IDLE_SECONDS = 900  # an unused standby trainer exits after this long; the page starts another
PER_OWNER_ENV, PER_OWNER_DEFAULT = "ATLAS_QUEUE_PER_SESSION", 3  # active (queued or running) runs of one session
TOTAL_ENV, TOTAL_DEFAULT = "ATLAS_QUEUE_TOTAL", 12                # active runs of everyone together
BUDGET_ENV, BUDGET_DEFAULT_MB = "ATLAS_RUNS_BUDGET_MB", 2000       # disk used by RUNS (runs + uploads)
MB = 1_000_000
STALE_NEW_SECONDS = 600  # a hidden half-written run folder this old is left over from a crash: removed
DUPLICATE_SECONDS = 10.0  # Start pressed again with the same choices this soon: a double click, not a new run
COMPARE_METRICS = {"val_loss": "eval", "val_token_acc": "eval", "val_exact": "eval", "loss": "train"}


def env_int(name: str, default: int, least: int = 0) -> int:
    """A whole number from the environment; the default when unset or not a number."""
    try:
        return max(least, int(os.environ.get(name, "").strip()))
    except ValueError:
        return default


def thread_budget(cores: int | None, max_running: int = 1, trainer_threads: int | None = None) -> tuple[int, int]:
    """(server threads, threads per trainer) for a machine with `cores` cores: the trainers together get
    about half (ATLAS_TRAIN_THREADS, when set, fixes each trainer's count), the server's torch the rest,
    at least one each. 2 cores: 1 + 1; 16 cores, one trainer: 8 + 8; 16 cores, two trainers: 8 + 4 each."""
    cores, max_running = max(1, int(cores or 1)), max(1, int(max_running))
    trainer = trainer_threads if trainer_threads and trainer_threads > 0 else max(1, cores // 2 // max_running)
    return max(1, cores - trainer * max_running), trainer


def server_threads() -> int:
    """The thread count of the server's own torch (inspector, estimates) under this machine's budget."""
    return thread_budget(os.cpu_count(), env_int(MAX_RUNS_ENV, 1, 1), env_int(THREADS_ENV, 0))[0]


_SERVER_THREADS_SET = False
_WARM_UP_STARTED = False
_WARM_UP_DONE = threading.Event()
_THREADS_LOCK = threading.Lock()
_PAGE_RUNS = 0  # script runs of pages in progress (page_running); the warm-up waits for them between its steps


def _loaded(name: str) -> bool:
    """Whether module `name` is imported completely. While another thread imports it (the warm-up), it is in
    sys.modules half initialised, marked by importlib's `__spec__._initializing`; using it then raises
    "partially initialized module" (the import's own thread finishes the job: the warm-up sets the threads)."""
    module = sys.modules.get(name)
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


def apply_server_threads() -> int:
    """torch.set_num_threads(server_threads()) once per process, as soon as torch is loaded (app/main.py
    calls it on every rerun). Importing torch takes a second or more, so this never imports it: a page that
    shows no tensor draws first, and `warm_up` loads torch in the background afterwards."""
    global _SERVER_THREADS_SET
    n = server_threads()
    if not _SERVER_THREADS_SET and _loaded("torch"):
        with _THREADS_LOCK:
            if not _SERVER_THREADS_SET:
                sys.modules["torch"].set_num_threads(n)
                _SERVER_THREADS_SET = True
    return n


# What the pages' first runs import besides torch, in the order a learner meets them (measured with cProfile on
# each page's first run, torch already loaded): pandas for st.dataframe (attention, positional, multi-head,
# why: 0.25-0.31 s), Streamlit's emoji catalogue for icons in alerts and segmented controls (0.09-0.16 s),
# and torch._dynamo, which torch imports the first time a model is built on the meta device (every checkpoint
# load counts its parameters there) or an Adam optimiser is made (1.1-1.9 s: masks, inspector, recipe, family),
# and scipy.optimize for DETR's matching (0.46 s of the family page's DETR view).
WARM_UP_MODULES = ("torch", "pandas", "streamlit.emojis", "plotly.io", "orjson", "torch._dynamo", "safetensors.torch",
                   "sentencepiece", "scipy.optimize")


def page_modules() -> list[str]:
    """Our own modules (app.*, model.*) that the pages after the first import, in the pages' order: read from
    the page files' import statements. Importing them (compiling them where no bytecode is cached) took a
    page's first run 50-120 ms here."""
    import ast
    import importlib.util

    from app.pages_list import PAGES
    out: list[str] = []
    for info in PAGES[1:]:
        try:
            tree = ast.parse((Path(__file__).resolve().parent.parent / "pages" / info.file).read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found = [node.module]
                for a in node.names:  # `from app import inspector`: a module too
                    with contextlib.suppress(ImportError, ValueError):
                        if importlib.util.find_spec(f"{node.module}.{a.name}") is not None:
                            found.append(f"{node.module}.{a.name}")
            else:
                continue
            out += [m for m in found if m.split(".")[0] in ("app", "model") and m not in out]
    return out


@contextlib.contextmanager
def page_running():
    """Around a page's script run (app/main.py): the warm-up lets it finish before its next step."""
    global _PAGE_RUNS
    with _THREADS_LOCK:
        _PAGE_RUNS += 1
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _PAGE_RUNS -= 1


def _yield_to_pages(limit_s: float = 2.0) -> None:
    """Before each step of the warm-up: wait (up to limit_s) while a page runs. A rerun of the first page (a
    language switch while the warm-up works) would otherwise share the interpreter with it and take 2-4x
    longer; the steps are short, except the imports of torch and torch._dynamo (~1 s each here)."""
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
            # after a page's first model load walks only what came since (it took that page 0.13 s here)
            _yield_to_pages()
            with contextlib.suppress(Exception):  # noqa: BLE001 - as above
                from app.resources import settle_heap
                settle_heap()
        finally:
            _WARM_UP_DONE.set()

    threading.Thread(target=load, name="atlas-warm-up", daemon=True).start()


_ESTIMATES_STARTED = False


def prepare_estimates() -> None:
    """Once per process, when the training page first opens: in the background, the estimates of the tasks on
    the en-ko corpus, which read its split (1.3 s of the first run that picked en-ko, generated again). Measured
    in a child process at the lowest priority (jobs_estimate.measure_tokens_apart), while the learner reads the
    page: done in the warm-up, the same work slowed the first page's clicks."""
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


def teacher_mode() -> bool:
    """ATLAS_TEACHER_MODE=1 (or true/yes/on): every session may stop, resume and delete every run."""
    return os.environ.get(TEACHER_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def new_owner_token() -> str:
    """A browser session's secret: the page keeps it in st.session_state; job.json keeps only its hash."""
    return secrets.token_urlsafe(24)


def owner_hash(token: str) -> str:
    return hashlib.sha256(("atlas-owner:" + str(token)).encode()).hexdigest()


def _lock_file(root: Path):
    """RUNS/.jobs.lock, open for locking (a function of its own so tests can make it fail)."""
    return open(root / ".jobs.lock", "a+")


def folder_error(root: Path, e: OSError) -> UserError:
    """What went wrong with RUNS, for the page: a full disk says how much is free; anything else
    (read-only, not a folder, no permission) names the folder and the system's reason."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return UserError("jobs.errors.disk_full", path=str(root), free=free_mb(root))
    detail = e.strerror or str(e)
    with contextlib.suppress(OSError):
        if root.exists() and not root.is_dir():
            detail = os.strerror(errno.ENOTDIR)
    return UserError("jobs.errors.runs_folder", path=str(root), reason=detail)


def free_mb(root: Path) -> float:
    """Megabytes free on the disk holding `root` (or its nearest existing parent); -1 when unknown."""
    p = Path(root)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free / MB
    except OSError:
        return -1.0


def runs_dir() -> Path:
    """RUNS: $ATLAS_RUNS_DIR if set, else runs/ in the repository."""
    env = os.environ.get(RUNS_ENV, "").strip()
    return Path(env).expanduser().resolve() if env else ROOT / "runs"


def pid_alive(pid, run_dir: Path | None = None, program: str = "model.training.train") -> bool:
    """Is `pid` a live trainer of `run_dir` (or another of our programs, e.g. "model.training.study")? os.kill(pid, 0)
    says whether the pid exists; on Linux /proc/<pid> also rules out zombies and a pid reused by another
    program after a reboot or crash (its command line must hold `program` and the run folder's name)."""
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    except OSError:
        return False
    proc = Path(f"/proc/{pid}")
    if not Path("/proc/self").exists():
        return True  # no procfs (macOS): trust os.kill
    try:
        stat = (proc / "stat").read_text()
        cmdline = (proc / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if stat[stat.rfind(")") + 2:][:1] in ("Z", "X"):
        return False  # exited, not yet reaped
    # a run handed to the standby trainer runs under the standby's command line
    programs = (program, STANDBY_MODULE) if program == "model.training.train" else (program,)
    if not any(name in part for part in cmdline for name in programs):
        return False
    if run_dir is not None and not any(run_dir.name in part for part in cmdline):
        try:  # a standby trainer that took this run works in its folder (model/training/standby.py)
            return os.path.basename(os.readlink(proc / "cwd")) == run_dir.name
        except OSError:
            return False
    return True


# -----------------------------------------------------------------------------
# reading run files that may be damaged or hand-edited

def _number(v):
    """A finite int/float from a file, else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return v


def _count(v) -> int:
    v = _number(v)
    return max(0, int(v)) if v is not None else 0


def _samples(v) -> list[dict]:
    """Sample predictions from status.json: dicts of strings only, each marked correct or not."""
    if not isinstance(v, list):
        return []
    out = [{k: str(s.get(k, "")) for k in ("source", "target", "prediction")} for s in v if isinstance(s, dict)]
    for s in out:
        s["correct"] = s["prediction"].strip() == s["target"].strip()
    return out


def _fmt_id_time(t: float) -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(t))


def _state(st: dict) -> str:
    return st.get("state") if st.get("state") in STATES else "unknown"


def state_message(state: str) -> Message:
    """A run's state as a catalogue key ("unknown" for anything else)."""
    return Message(f"jobs.state.{state if state in STATES else 'unknown'}")


def run_actions(summary: dict) -> list[str]:
    """The buttons a run offers, in order: stop, resume, inspect, delete."""
    active = summary["state"] in ACTIVE
    return [name for name, offered in (("stop", active), ("resume", summary["resumable"]),
                                       ("inspect", summary["inspectable"]), ("delete", not active)) if offered]


def is_starting(summary: dict) -> bool:
    """Launched (a trainer process exists) but no step logged yet: the page looks more often until the
    first step shows."""
    m = summary.get("message")
    launched = summary.get("state") == "running" or (isinstance(m, Message) and m.code == "jobs.status.starting")
    return launched and not summary.get("step")


def compare_label(summary: dict) -> str:
    """A run in the comparison's legend: its id and the sizes that usually differ."""
    c = summary["config"] or {}
    return f"{summary['id']} (h={c.get('n_heads', '?')}, d={c.get('d_model', '?')}, N={c.get('n_encoder_layers', '?')})"


# -----------------------------------------------------------------------------
# the manager

class JobManager:
    def __init__(self, root: str | os.PathLike | None = None, max_running: int | None = None,
                 threads: int | None = None, python: str = sys.executable, teacher: bool | None = None,
                 per_owner: int | None = None, total: int | None = None, budget_mb: float | None = None,
                 standby: bool | None = None):
        self.root = Path(root).expanduser().resolve() if root else runs_dir()
        if max_running is None:
            max_running = env_int(MAX_RUNS_ENV, 1, 1)
        self.max_running = max(1, max_running)
        if threads is None:
            threads = thread_budget(os.cpu_count(), self.max_running, env_int(THREADS_ENV, 0))[1]
        self.threads = threads  # trainer CPU threads (thread_budget): the rest is the web server's
        self.python = python
        self.teacher = teacher_mode() if teacher is None else teacher
        self.per_owner = env_int(PER_OWNER_ENV, PER_OWNER_DEFAULT, 1) if per_owner is None else per_owner
        self.total = env_int(TOTAL_ENV, TOTAL_DEFAULT, 1) if total is None else total
        self.budget_mb = env_int(BUDGET_ENV, BUDGET_DEFAULT_MB, 1) if budget_mb is None else budget_mb
        self._lock = threading.RLock()
        self._procs: dict[str, subprocess.Popen] = {}
        self.standby = os.environ.get(STANDBY_ENV, "1") != "0" if standby is None else standby
        self._standby: subprocess.Popen | None = None  # a trainer waiting for a run (model/training/standby.py)
        self._standby_ready = False
        try:  # recover: runs whose process vanished are settled; queued runs start
            self.root.mkdir(parents=True, exist_ok=True)
            self._remove_stale_new()
            self.poll()
        except (OSError, UserError):
            pass  # an unusable RUNS: problem() says why, the page shows it; nothing here may raise

    def problem(self) -> UserError | None:
        """Why RUNS cannot be used right now (not a folder, read-only, the lock cannot be opened), or None."""
        try:
            with self._exclusive():
                pass
        except UserError as e:
            return e
        if not os.access(self.root, os.W_OK | os.X_OK):
            return UserError("jobs.errors.runs_folder", path=str(self.root), reason=os.strerror(errno.EACCES))
        return None

    # ---- paths and files
    def run_path(self, run_id: str) -> Path:
        if not isinstance(run_id, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", run_id):
            raise UserError("jobs.errors.not_a_run", id=repr(run_id))
        return self.root / run_id

    def _job(self, d: Path) -> dict:
        return read_json_object(d / "job.json")

    def _status(self, d: Path) -> dict:
        return read_json_object(d / "status.json")

    def _set_status(self, d: Path, **fields) -> None:
        update_status(d / "status.json", self._status(d), **fields)

    def _run_dirs(self) -> list[Path]:
        try:
            return sorted(p for p in self.root.iterdir()
                          if p.is_dir() and not p.name.startswith(".") and
                          ((p / "status.json").exists() or (p / "job.json").exists()))
        except OSError:
            return []

    @contextlib.contextmanager
    def _exclusive(self):
        """This manager's lock, plus a file lock so two servers sharing RUNS do not both launch a run.
        A RUNS that cannot be created or locked is a UserError (jobs.errors.runs_folder)."""
        with self._lock:
            try:
                import fcntl
            except ImportError:  # Windows
                yield
                return
            try:
                self.root.mkdir(parents=True, exist_ok=True)  # RUNS may have been deleted while the server runs
                f = _lock_file(self.root)
            except OSError as e:
                raise folder_error(self.root, e) from None
            with f:
                fcntl.flock(f, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)

    def _remove_stale_new(self) -> None:
        """Hidden half-written run folders (.new-*) left by a server that died during Start."""
        now = time.time()
        with contextlib.suppress(OSError):
            for p in self.root.glob(".new-*"):
                with contextlib.suppress(OSError):
                    if now - p.stat().st_mtime > STALE_NEW_SECONDS:
                        shutil.rmtree(p, ignore_errors=True)

    def _pid(self, d: Path, st: dict | None = None, job: dict | None = None):
        st = self._status(d) if st is None else st
        job = self._job(d) if job is None else job
        return st.get("pid") or job.get("pid")

    def _is_live(self, d: Path, st: dict, job: dict) -> bool:
        proc = self._procs.get(d.name)
        if proc is not None:
            return proc.poll() is None
        return pid_alive(self._pid(d, st, job), d)

    # ---- the queue
    def poll(self) -> None:
        """Reap finished trainers, settle vanished ones, start queued runs while slots are free.
        UserError when RUNS cannot be used."""
        with self._exclusive():
            for run_id, proc in list(self._procs.items()):
                rc = proc.poll()
                if rc is not None:
                    del self._procs[run_id]
                    with contextlib.suppress(OSError):
                        self._settle(self.root / run_id, rc, proc.pid)
            running, waiting = 0, []
            for d in self._run_dirs():
                st, job = self._status(d), self._job(d)
                state = st.get("state")
                if state not in ACTIVE:
                    continue
                launched = bool(job.get("pid")) or (state == "running")
                if not launched:
                    if self._previous_alive(d, job):  # resumed while its last trainer is still exiting
                        running += 1
                    elif job.get("command") or job.get("options"):  # queued by this app (not started by hand)
                        waiting.append((_number(job.get("queued_at")) or 0, d))
                elif self._is_live(d, st, job):
                    running += 1
                else:
                    with contextlib.suppress(OSError):
                        self._mark_vanished(d, st)
            for _, d in sorted(waiting, key=lambda x: x[0]):
                if running >= self.max_running:
                    break
                self._launch(d)
                running += 1

    def _previous_alive(self, d: Path, job: dict) -> bool:
        """Is the trainer of this run's previous launch (job.json "previous_pid") still exiting? A resumed
        run waits for it: two trainers must never write one folder."""
        prev = job.get("previous_pid")
        if not prev:
            return False
        proc = self._procs.get(d.name)
        if proc is not None and proc.pid == prev:
            return proc.poll() is None
        return pid_alive(prev, d)

    def _settle(self, d: Path, rc: int, pid: int | None = None) -> None:
        """A trainer we launched (`pid`) has exited; if it did not write a final state, write one. A run
        queued again since (Resume pressed while the trainer was exiting: job.json's pid is no longer
        this one) is left as it is."""
        st = self._status(d)
        if st.get("state") not in ACTIVE:
            return
        if pid is not None and self._job(d).get("pid") != pid:
            return
        at = _count(st.get("step"))
        if rc == 0:
            message = Message("jobs.status.exited", {"at": at})
        elif rc < 0:
            name = signal.Signals(-rc).name if -rc in signal.Signals._value2member_map_ else f"signal {-rc}"
            message = Message("jobs.status.ended_by", {"at": at, "signal": name})
        else:
            why = self.error_line(d.name)
            message = Message("jobs.status.crashed_with" if why else "jobs.status.crashed",
                              {"code": rc, "at": at, **({"detail": why} if why else {})})
        self._set_status(d, state="stopped" if rc <= 0 else "failed", message=message)

    def _mark_vanished(self, d: Path, st: dict) -> None:
        """A run whose trainer is gone although status.json says it is active: "failed" with the trainer's
        own error when its log ends in one (a crash another server did not see), else "stopped" (the
        server or the machine went down with it)."""
        at = _count(st.get("step"))
        why = self._crash_line(d)
        if why:
            self._set_status(d, state="failed", message=Message("jobs.status.vanished_with", {"at": at, "detail": why}))
        else:
            self._set_status(d, state="stopped", message=Message("jobs.status.vanished", {"at": at}))

    def _crash_line(self, d: Path) -> str:
        """The error line of a traceback written after the last launch in train.log, or ""."""
        tail = self.log_tail(d.name, 40)
        last = tail.rsplit("\n$ ", 1)[-1] if "\n$ " in tail else tail
        return self.error_line(d.name) if "Traceback (most recent call last)" in last else ""

    def trainer_command(self, d: Path, job: dict) -> list[str] | None:
        """The trainer's command line for run folder `d`, rebuilt every time from the job's validated options
        (a stored command line is never executed: a crafted job.json in the runs folder must not run a
        program). None when the options are missing or do not pass the page's own checks."""
        if job.get("resume") and (d / "args.json").exists():
            return [self.python, "-m", "model.training.train", "--resume", str(d), "--threads", str(self.threads)]
        stored = job.get("options")
        if not isinstance(stored, dict):
            return None
        known = {f.name for f in dataclasses.fields(TrainOptions)} - {"tsv_bytes"}
        try:
            o = TrainOptions(**{k: v for k, v in stored.items() if k in known})
            if o.task == "tsv":
                o.tsv_bytes = (d / "corpus.tsv").read_bytes()
            validate_options(o)
        except (TypeError, ValueError, OSError):  # UserError is a ValueError
            return None
        cmd = [self.python, "-m", "model.training.train", "--config", str(d / "config.json"), *train_arguments(o)]
        if o.task == "tsv":
            cmd += ["--tsv", str(d / "corpus.tsv")]
        return cmd + ["--threads", str(self.threads), "--out", str(d)]

    def _launch(self, d: Path) -> None:
        job = self._job(d)
        cmd = self.trainer_command(d, job)
        if not cmd:
            self._set_status(d, state="failed", message=Message("jobs.status.no_command"))
            return
        env = self.trainer_env()
        try:
            with open(d / "train.log", "ab") as log:
                log.write(f"\n$ {' '.join(cmd)}\n".encode())
                log.flush()
                proc = self._hand_to_standby(d, cmd[3:])  # cmd[3:]: the options after `python -m model.training.train`
                if proc is None:
                    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:  # no trainer, or a full disk / read-only RUNS
            with contextlib.suppress(OSError):
                self._set_status(d, state="failed", message=Message("jobs.status.launch_failed", {"detail": str(e)}))
            return
        self._procs[d.name] = proc
        job.update(pid=proc.pid, launched_at=time.time(), launches=_count(job.get("launches")) + 1,
                   standby=proc.args[2] == STANDBY_MODULE)
        job.pop("previous_pid", None)
        try:
            atomic_write_json(d / "job.json", job)
        except OSError:  # the trainer runs; its own status.json (with its pid) tells the other servers
            pass

    # ---- the standby trainer
    def prepare(self) -> None:
        """Start a standby trainer (model/training/standby.py) unless one is waiting, every slot is busy (a new
        run would queue, and the import would slow the running trainers) or standby trainers are off. The
        training page calls this on every visit; cheap when one is already there."""
        if not self.standby:
            return
        with self._lock:
            if self._standby is not None and self._standby.poll() is None:
                return
            self._standby, self._standby_ready = None, False
            if sum(p.poll() is None for p in self._procs.values()) >= self.max_running:
                return
            with contextlib.suppress(OSError):
                self._standby = subprocess.Popen(
                    [self.python, "-m", STANDBY_MODULE, "--idle-seconds", str(STANDBY_IDLE_SECONDS)],
                    cwd=ROOT, env=self.trainer_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL, start_new_session=True)

    @staticmethod
    def _standby_line(proc: subprocess.Popen, timeout: float) -> str:
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        return proc.stdout.readline().decode("ascii", "replace").strip() if ready else ""

    def _hand_to_standby(self, d: Path, argv: list[str]) -> subprocess.Popen | None:
        """Give run folder `d` (trainer options `argv`) to the standby trainer if it has finished importing;
        its process is then the run's trainer. None (start a plain trainer) when there is none, it is still
        importing, or it does not answer; a standby that failed is ended."""
        with self._lock:
            proc = self._standby
            if not self.standby_ready():
                return None  # none, gone, or still importing (then kept for the next run)
            try:
                self._standby = None
                proc.stdin.write((json.dumps({"argv": argv, "dir": str(d)}) + "\n").encode())
                proc.stdin.close()
                taken = self._standby_line(proc, 10) == "taken"
            except (OSError, ValueError):
                taken = False
            with contextlib.suppress(OSError):
                proc.stdout.close()
            if not taken:
                with contextlib.suppress(OSError):
                    proc.kill()
                proc.wait()
                return None
            return proc

    def standby_ready(self, timeout: float = 0.0) -> bool:
        """Has the standby trainer finished importing (waiting up to `timeout` seconds)? False without one."""
        with self._lock:
            proc = self._standby
            if proc is None or proc.poll() is not None:
                return False
            if not self._standby_ready:
                with contextlib.suppress(OSError, ValueError):
                    self._standby_ready = self._standby_line(proc, timeout) == "ready"
            return self._standby_ready

    def close_standby(self) -> None:
        """End a waiting standby trainer (it has done nothing)."""
        with self._lock:
            proc, self._standby = self._standby, None
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def trainer_env(self) -> dict:
        """The trainer's environment: this manager's thread budget for OpenMP too, the repository importable,
        torch's large tensors on huge pages (model/training/allocator.py)."""
        env = {**HUGE_PAGES, **os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": str(self.threads),
               "MKL_NUM_THREADS": str(self.threads)}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        return env

    # ---- requests
    def start(self, options: TrainOptions, owner: str | None = None) -> str:
        """Validate, create RUNS/<task>-<time>/ with the model's config.json, queue it; returns the run id.
        `owner`: the starting session's token (its hash is stored; limits per owner apply)."""
        validate_options(options)
        est = self.estimate(options)  # builds the model's config: what TransformerConfig refuses is refused here
        if est["parameters"] > MAX_PARAMETERS:
            raise UserError("jobs.errors.too_many_parameters", count=est["parameters"], limit=MAX_PARAMETERS)
        digest = hashlib.sha256(options.tsv_bytes or b"").hexdigest()
        with self._exclusive():
            now = time.time()
            twin = self._recent_twin(options.public(), digest, now)
            if twin is not None:  # a double click on Start (or two tabs): one run, not two
                return twin
            self._check_queue(owner)
            need = len(options.tsv_bytes or b"") + self.run_bytes(est["parameters"])
            self._check_disk(need)
            base = f"{options.task}-{_fmt_id_time(now)}"
            run_id, n = base, 1
            while (self.root / run_id).exists():
                n += 1
                run_id = f"{base}-{n}"
            d = self.root / run_id
            cmd = [self.python, "-m", "model.training.train", "--config", str(d / "config.json"), *train_arguments(options)]
            if options.task == "tsv":
                cmd += ["--tsv", str(d / "corpus.tsv")]
            cmd += ["--threads", str(self.threads), "--out", str(d)]
            job = {"id": run_id, "created_at": now, "queued_at": now, "options": options.public(),
                   "tsv_sha256": digest, "command": cmd,
                   "estimate": {k: v for k, v in est.items() if k != "config"}, "config": est["config"], "pid": None}
            if owner is not None:
                job["owner"] = owner_hash(owner)
            # Written in a hidden folder, then renamed: a full disk leaves no half-made run behind.
            tmp = self.root / f".new-{run_id}-{secrets.token_hex(4)}"
            try:
                tmp.mkdir(parents=True)
                atomic_write_json(tmp / "config.json", est["config"])  # the trainer builds exactly this model
                if options.task == "tsv":
                    (tmp / "corpus.tsv").write_bytes(options.tsv_bytes or b"")
                atomic_write_json(tmp / "job.json", job)
                atomic_write_json(tmp / "status.json", {
                    "state": "queued", "step": 0, "total_steps": options.steps, "task": options.task,
                    "message": Message("jobs.status.waiting").to_dict(), "created_at": now, "updated_at": now})
                os.rename(tmp, d)
            except OSError as e:
                shutil.rmtree(tmp, ignore_errors=True)
                raise folder_error(self.root, e) from None
        self.poll()
        return run_id

    # ---- limits
    def _active_runs(self) -> list[dict]:
        """job.json of every queued or running run this app started."""
        out = []
        for d in self._run_dirs():
            job = self._job(d)
            if (job.get("options") or job.get("command")) and self._status(d).get("state") in ACTIVE:
                out.append(job)
        return out

    def _check_queue(self, owner: str | None) -> None:
        """UserError when the queue is full: this session's own runs, or everyone's."""
        active = self._active_runs()
        if len(active) >= self.total:
            raise UserError("jobs.errors.queue_full", count=len(active), limit=self.total)
        if owner is not None:
            mine = sum(1 for job in active if self._owns(job, owner))
            if mine >= self.per_owner:
                raise UserError("jobs.errors.too_many_yours", count=mine, limit=self.per_owner)

    @staticmethod
    def run_bytes(parameters: int) -> int:
        """Disk a run will take, about: checkpoint.pt (weights + Adam's two moments), the exported model,
        curves and log."""
        return 16 * int(parameters) + 1_000_000

    def disk_used(self) -> int:
        """Bytes of every file in RUNS (runs and uploaded corpora)."""
        total = 0
        for dirpath, _, files in os.walk(self.root):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, name)).st_size
        return total

    def _check_disk(self, need: int) -> None:
        """UserError when a run of `need` bytes would pass the disk budget or the disk's free space."""
        used = self.disk_used()
        if used + need > self.budget_mb * MB:
            raise UserError("jobs.errors.disk_budget", used=used / MB, budget=float(self.budget_mb), need=need / MB)
        free = free_mb(self.root)
        if 0 <= free < need / MB:
            raise UserError("jobs.errors.disk_full", path=str(self.root), free=free)

    def cleanup_candidates(self, limit: int = 5, owner: str | None = None) -> list[dict]:
        """The oldest finished (done, failed, stopped) runs with their size in bytes, oldest first, for
        the page's clean-up list: {"id", "state", "created_at", "bytes", "mine"}."""
        out = []
        for d in self._run_dirs():
            st = self._status(d)
            if st.get("state") in ACTIVE:
                continue
            size = 0
            for dirpath, _, files in os.walk(d):
                for name in files:
                    with contextlib.suppress(OSError):
                        size += os.lstat(os.path.join(dirpath, name)).st_size
            job = self._job(d)
            created = _number(job.get("created_at")) or _number(st.get("created_at"))
            if not created:
                with contextlib.suppress(OSError):
                    created = d.stat().st_mtime
            out.append({"id": d.name, "state": _state(st), "created_at": created or 0.0, "bytes": size,
                        "mine": self.may_manage(job, owner)})
        return sorted(out, key=lambda r: r["created_at"])[:limit]

    # ---- ownership
    def _owns(self, job: dict, owner: str) -> bool:
        stored = job.get("owner")
        return isinstance(stored, str) and hmac.compare_digest(stored, owner_hash(owner))

    def may_manage(self, job: dict, owner: str | None) -> bool:
        """May the session with this owner token stop, resume or delete the run of `job`? Yes for its own
        runs; in teacher mode for every run; `owner=None` is a trusted caller (tests, scripts)."""
        return owner is None or self.teacher or self._owns(job, owner)

    def _check_owner(self, d: Path, job: dict, owner: str | None) -> None:
        if not self.may_manage(job, owner):
            raise UserError("jobs.errors.not_yours", id=d.name)

    def _recent_twin(self, public: dict, digest: str, now: float) -> str | None:
        """An active run created in the last DUPLICATE_SECONDS with exactly these options, if any."""
        for d in self._run_dirs():
            job = self._job(d)
            created = _number(job.get("created_at"))
            if (created is not None and 0 <= now - created < DUPLICATE_SECONDS and job.get("options") == public
                    and job.get("tsv_sha256") == digest and self._status(d).get("state") in ACTIVE):
                return d.name
        return None

    def stop(self, run_id: str, owner: str | None = None) -> None:
        """SIGTERM a running trainer (it checkpoints and writes "stopped"); a queued run is taken off the queue."""
        d = self.run_path(run_id)
        with self._exclusive():
            st, job = self._status(d), self._job(d)
            self._check_owner(d, job, owner)
            if st.get("state") not in ACTIVE:
                return
            launched = bool(job.get("pid")) or st.get("state") == "running"
            if not launched:
                self._set_status(d, state="stopped", message=Message("jobs.status.dequeued"))
                return
            pid = self._pid(d, st, job)
            if self._is_live(d, st, job):
                try:
                    os.kill(int(pid), signal.SIGTERM)
                except OSError:
                    pass
                job["stop_requested_at"] = time.time()
                atomic_write_json(d / "job.json", job)
            else:
                self._mark_vanished(d, st)

    def resume(self, run_id: str, owner: str | None = None) -> None:
        """Queue a stopped (or failed, with a checkpoint) run again; the trainer continues with --resume.
        Pressed while the stopped trainer is still exiting, the run waits for it (job.json "previous_pid")."""
        d = self.run_path(run_id)
        with self._exclusive():
            st, job = self._status(d), self._job(d)
            self._check_owner(d, job, owner)
            if not self._resumable(d, st):
                raise UserError("jobs.errors.cannot_resume", id=run_id, state=state_message(_state(st)))
            if not job.get("command") and not (d / "args.json").exists():
                raise UserError("jobs.errors.nothing_to_resume", id=run_id)
            self._check_queue(owner)
            self._check_disk(0)
            now = time.time()
            previous = self._pid(d, st, job)
            job.update(pid=None, queued_at=now, resume=True)
            if previous:
                job["previous_pid"] = previous
            try:
                atomic_write_json(d / "job.json", job)
                self._set_status(d, state="queued", message=Message("jobs.status.waiting_resume"), pid=None)
            except OSError as e:
                raise folder_error(self.root, e) from None
        self.poll()

    def delete(self, run_id: str, owner: str | None = None) -> None:
        d = self.run_path(run_id)
        with self._exclusive():
            st = self._status(d)
            self._check_owner(d, self._job(d), owner)
            if st.get("state") in ACTIVE:
                raise UserError("jobs.errors.delete_active", id=run_id, state=state_message(_state(st)))
            if not d.is_dir():
                raise UserError("jobs.errors.no_such_run", id=run_id)
            self._procs.pop(run_id, None)
            shutil.rmtree(d)

    @staticmethod
    def _resumable(d: Path, st: dict) -> bool:
        if st.get("resumable") is False:  # the trainer says resuming would fail again (e.g. NaN from the same batches)
            return False
        state = st.get("state")
        if state == "failed":
            # A checkpoint the trainer could not read stays unreadable: resuming again would fail again.
            old = st.get("message") if isinstance(st.get("message"), str) else ""  # an older version's sentence
            unreadable = (message_code(st.get("message")) == "train.status.cannot_resume"
                          or old.startswith("cannot resume:"))
            return (d / "checkpoint.pt").exists() and not unreadable
        return state == "stopped"

    # ---- reading
    def list_runs(self, owner: str | None = None) -> list[dict]:
        """Summaries of every run in RUNS, newest first (advances the queue first; UserError when RUNS
        cannot be used). With `owner`, others' runs are read-only ("mine" False, no stop/resume/delete)."""
        self.poll()
        out = [self.summary(d.name, owner) for d in self._run_dirs()]
        return sorted(out, key=lambda r: r["created_at"], reverse=True)

    def summary(self, run_id: str, owner: str | None = None) -> dict:
        """One run for the page. Every field is checked: a damaged or hand-edited file shows as
        "unknown" / "–" with a message, never as an exception. "message" is a Message, an older
        version's English sentence (str, shown as it is) or None. "mine": may this owner manage it
        (its actions are only "inspect" otherwise)."""
        d = self.run_path(run_id)
        st, job = self._status(d), self._job(d)
        args = read_json_object(d / "args.json")
        cfg = read_json_object(d / "config.json") or job.get("config") or {}
        if not isinstance(cfg, dict):
            cfg = {}
        options = job.get("options") if isinstance(job.get("options"), dict) else {}
        estimate = job.get("estimate") if isinstance(job.get("estimate"), dict) else {}
        created = _number(job.get("created_at")) or _number(st.get("created_at")) or _number(st.get("started_at"))
        if not created:
            with contextlib.suppress(OSError):
                created = d.stat().st_mtime
        state = _state(st)
        message = status_message(st.get("message"))
        if not st and (d / "status.json").exists():
            message = Message("jobs.status.damaged")
        if state == "queued" and job.get("pid"):
            message = Message("jobs.status.starting")
        task = next((t for t in (st.get("task"), args.get("task"), options.get("task")) if isinstance(t, str) and t),
                    "?")
        step = _count(st.get("step"))
        total = _count(st.get("total_steps")) or _count(args.get("steps")) or _count(options.get("steps"))
        model = d / "model"
        summary = {
            "id": run_id, "task": task, "state": state, "step": step, "total": total,
            "progress": min(1.0, step / total) if total else 0.0,
            "loss": _number(st.get("loss")), "lr": _number(st.get("lr")), "val_loss": _number(st.get("val_loss")),
            "val_token_acc": _number(st.get("val_token_acc")), "val_exact": _number(st.get("val_exact")),
            "tokens_per_second": _number(st.get("tokens_per_second")),
            "eta_seconds": _number(st.get("eta_seconds")) if state == "running" else None,
            "elapsed_seconds": _number(st.get("elapsed_seconds")), "created_at": created or 0.0,
            "message": message, "samples": _samples(st.get("samples")),
            "parameters": _number(st.get("parameters")) or _number(estimate.get("parameters")),
            "device": st.get("device"), "config": cfg, "options": options,
            "estimate": estimate, "managed": bool(job), "mine": self.may_manage(job, owner),
            "resumable": self._resumable(d, st) and (bool(job.get("command")) or (d / "args.json").exists()),
            "inspectable": state not in ACTIVE and (model / "model.safetensors").is_file(),
            "path": str(d),
        }
        summary["actions"] = [a for a in run_actions(summary) if summary["mine"] or a == "inspect"]
        return summary

    def read_metrics(self, run_id: str) -> list[dict]:
        return clean_metrics(read_metrics(self.run_path(run_id) / "metrics.jsonl"))

    def model_dir(self, run_id: str) -> Path | None:
        """The run's model/ folder (absolute) once it holds weights, for the inspector."""
        m = (self.run_path(run_id) / "model").resolve()
        return m if (m / "model.safetensors").is_file() and (m / "config.json").is_file() else None

    def log_tail(self, run_id: str, lines: int = 20) -> str:
        try:
            with open(self.run_path(run_id) / "train.log", "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 8000))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def error_line(self, run_id: str) -> str:
        """The trainer's last error from train.log: the exception line, not the traceback's frames
        (the page shows it to a learner; the whole log is one click away)."""
        lines = [line.rstrip() for line in self.log_tail(run_id, 40).splitlines() if line.strip()]
        useful = [line for line in lines if not line.startswith(("Traceback ", " ", "\t", "$ "))
                  and set(line) - set("^~ ")]
        return useful[-1][:300] if useful else ""

    # ---- estimates (app/jobs_estimate.py)
    def estimate(self, o: TrainOptions, pairs: list[tuple[str, str]] | None = None) -> dict:
        """Parameters, memory and time of a run with these choices, on this manager's threads."""
        return jobs_estimate.estimate(o, self.threads, pairs)


# -----------------------------------------------------------------------------
# the server-wide instance

try:
    import streamlit as _st
except ImportError:  # the class works without Streamlit
    _st = None


def _cache(fn):
    if _st is None:
        import functools
        return functools.lru_cache(maxsize=None)(fn)
    return _st.cache_resource(show_spinner=False)(fn)


@_cache
def get_manager(root: str | None = None) -> JobManager:
    """The JobManager shared by every session of this server (one per runs folder). Pages call
    `get_manager(str(runs_dir()))` so a changed ATLAS_RUNS_DIR gets its own manager."""
    return JobManager(root)
