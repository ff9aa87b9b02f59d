"""The server's measuring process: module-level functions run one at a time in a Python process of their own, so
their timings share neither the server's interpreter lock nor torch's profiler with the pages' runs, and a page
answers while a measurement goes on (app.resources.in_background asks it).

The process is started plainly (`python -m app.measuring READ_FD WRITE_FD`), not through multiprocessing: a
multiprocessing child first runs the parent's main module again, and in a Streamlit server that is the page's
script. Calls and answers travel pickled over two pipes of their own (the process's stdout and stderr stay the
server's log), between this server and the process it started; nothing else writes to them."""
from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STALE_S = 5.0  # a queued call nobody has asked about for this long is not started: its session has gone


class Call(Future):
    """A Future that remembers when a session last asked for it: an open page asks while it waits (its watcher,
    app.ui.pending, every half second), a closed one does not."""

    def __init__(self) -> None:
        super().__init__()
        self.ask()

    def ask(self) -> None:
        self.asked = time.monotonic()

    def stale(self) -> bool:
        return time.monotonic() - self.asked > STALE_S


class Worker:
    """One measuring process and the thread that hands it calls in order. `submit` returns a Future that can be
    cancelled until its call is handed over; once the process has died every call fails with BrokenProcessPool
    (the caller asks a fresh Worker)."""

    def __init__(self) -> None:
        to_child, self._to_child = os.pipe()
        self._from_child, from_child = os.pipe()
        paths = [p for p in sys.path if p] + [str(ROOT)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}
        self._proc = subprocess.Popen([sys.executable, "-m", "app.measuring", str(to_child), str(from_child)],
                                      pass_fds=(to_child, from_child), cwd=str(ROOT), env=env)
        os.close(to_child)
        os.close(from_child)
        self._send = os.fdopen(self._to_child, "wb")
        self._receive = os.fdopen(self._from_child, "rb")
        self._calls: queue.Queue = queue.Queue()
        self.broken = False
        threading.Thread(target=self._hand_over, name="atlas-measuring", daemon=True).start()

    def submit(self, fn, *args) -> Call:
        fut = Call()
        if self.broken:  # the caller asks again, of a fresh Worker
            fut.set_exception(BrokenProcessPool("the measuring process has ended"))
        else:
            self._calls.put((fut, fn, args))
        return fut

    def _hand_over(self) -> None:
        while True:
            fut, fn, args = self._calls.get()
            if fut is None:
                return
            if fut.stale():  # its session closed (a page that is open asks every half second): not started
                fut.cancel()
            if not fut.set_running_or_notify_cancel():
                continue  # cancelled while it waited
            try:
                pickle.dump((fn, args), self._send)
                self._send.flush()
                ok, value = pickle.load(self._receive)
            except (OSError, EOFError, pickle.PickleError) as e:
                self._end(fut, e)
                return
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)

    def _end(self, fut: Future, cause: BaseException) -> None:
        self.broken = True
        fut.set_exception(BrokenProcessPool(f"the measuring process ended ({type(cause).__name__})"))
        while True:
            try:
                other, _, _ = self._calls.get_nowait()
            except queue.Empty:
                return
            if other is not None and other.set_running_or_notify_cancel():
                other.set_exception(BrokenProcessPool("the measuring process has ended"))

    def shutdown(self) -> None:
        """Ends the process (a call under way fails) and the thread."""
        self.broken = True
        self._calls.put((None, None, None))
        self._proc.kill()
        self._proc.wait(10)


# The server's side: every call asked for, once per server, by its function's name and arguments
BACKGROUND_KEPT = 512  # results computed in the background (one measured call each), for all sessions
_BACKGROUND: OrderedDict = OrderedDict()  # (name, args) -> Future, the most recently asked last
_BACKGROUND_LOCK = threading.Lock()
_WORKER: list = []  # the one measuring process, started at the first ask (and again if it died)


def _worker() -> Worker:
    """The server's measuring process, started at the first ask, and again when it has died (killed, out of
    memory): its calls under way failed, and are asked again."""
    if not _WORKER or _WORKER[0].broken:
        if _WORKER:
            _WORKER.pop().shutdown()
        _WORKER.append(Worker())
    return _WORKER[0]


def _raised(fut: Future) -> BaseException | None:
    """What a finished call raised (None: not finished, cancelled, or a value)."""
    if not fut.done() or fut.cancelled():
        return None
    try:
        fut.result()
    except BaseException as e:  # noqa: BLE001 - the call's own error, kept on its Future
        return e
    return None


def _failed(fut: Future) -> bool:
    """Cancelled (another session slid past it) or failed: asked again, it is computed again."""
    return fut.cancelled() or _raised(fut) is not None


def future_of(name: str, fn, args: tuple) -> tuple[tuple, Future]:
    """The Future of fn(*args) (`name`: fn's full name), asked of the measuring process unless it was before
    (and neither failed nor was dropped)."""
    key = (name, args)
    with _BACKGROUND_LOCK:
        fut = _BACKGROUND.get(key)
        if fut is None or _failed(fut):
            fut = _BACKGROUND[key] = _worker().submit(fn, *args)
        fut.ask()
        _BACKGROUND.move_to_end(key)
        for old in [k for k, f in _BACKGROUND.items() if f.done()][:max(0, len(_BACKGROUND) - BACKGROUND_KEPT)]:
            del _BACKGROUND[old]
    return key, fut


def drop(keys) -> None:
    """The calls of `keys` (name, args) that have not started: dropped (a learner slid past them)."""
    with _BACKGROUND_LOCK:
        for key in keys:
            fut = _BACKGROUND.get(key)
            if fut is not None and fut.cancel():
                del _BACKGROUND[key]


def lost(fut: Future) -> bool:
    """Dropped by another session, or failed because the measuring process died: worth asking again at once."""
    return fut.cancelled() or isinstance(_raised(fut), BrokenProcessPool)


def done(keys) -> bool:
    """Whether every call of `keys` (name, args) has its value, or failed (the next ask says how). Asking keeps
    the calls wanted (Call.stale)."""
    with _BACKGROUND_LOCK:
        futures = [_BACKGROUND.get(key) for key in keys]
    ask(futures)
    return all(fut is None or fut.done() for fut in futures)


def ask(futures) -> None:
    """The calls of `futures` are still wanted: a session waits for them, or watches for them."""
    for fut in futures:
        if isinstance(fut, Call):
            fut.ask()


def main(read_fd: int, write_fd: int) -> None:
    """The process's side: each call read, run, and its value (or the exception it raised) written back. It runs
    at a lower priority than the server, so a learner's page and browser come first on a busy machine."""
    if hasattr(os, "nice"):
        os.nice(5)
    calls, answers = os.fdopen(read_fd, "rb"), os.fdopen(write_fd, "wb")
    while True:
        try:
            fn, args = pickle.load(calls)
        except EOFError:  # the server ended
            return
        try:
            answer = (True, fn(*args))
        except Exception as e:  # the server's page says what went wrong
            answer = (False, e)
        try:
            data = pickle.dumps(answer)
        except (pickle.PickleError, TypeError, AttributeError) as e:
            data = pickle.dumps((False, RuntimeError(f"{type(e).__name__}: {e}")))
        answers.write(data)
        answers.flush()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
