"""How the machine's cores are shared: the trainers get `thread_budget()`'s share (--threads, OMP_NUM_THREADS),
the server's own torch the rest (`apply_server_threads()`, called by app/main.py and by the server's warm-up
once torch is loaded). Never imports torch."""
from __future__ import annotations

import os
import sys
import threading

MAX_RUNS_ENV = "ATLAS_MAX_RUNS"
THREADS_ENV = "ATLAS_TRAIN_THREADS"


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


def trainer_threads(max_running: int) -> int:
    """The thread count of each trainer when `max_running` run at once."""
    return thread_budget(os.cpu_count(), max_running, env_int(THREADS_ENV, 0))[1]


_SERVER_THREADS_SET = False
_THREADS_LOCK = threading.Lock()


def _loaded(name: str) -> bool:
    """Whether module `name` is imported completely. While another thread imports it (the warm-up), it is in
    sys.modules half initialised, marked by importlib's `__spec__._initializing`; using it then raises
    "partially initialized module" (the import's own thread finishes the job: the warm-up sets the threads)."""
    module = sys.modules.get(name)
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


def apply_server_threads() -> int:
    """torch.set_num_threads(server_threads()) once per process, as soon as torch is loaded (app/main.py
    calls it on every rerun). Importing torch takes a second or more, so this never imports it: a page that
    shows no tensor draws first, and the server's warm-up (app/fast/warmup.py) loads torch in the background
    afterwards."""
    global _SERVER_THREADS_SET
    n = server_threads()
    if not _SERVER_THREADS_SET and _loaded("torch"):
        with _THREADS_LOCK:
            if not _SERVER_THREADS_SET:
                sys.modules["torch"].set_num_threads(n)
                _SERVER_THREADS_SET = True
    return n
