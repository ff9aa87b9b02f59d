"""The standby trainer: while a slot is free, the training page asks for a trainer process started ahead of time
(`prepare()`, model/training/standby.py), which has imported torch; the next launch hands it its run instead
of starting `python -m model.training.train`, so the first step comes seconds sooner (no torch import). Same
options, same files, same exit codes; ATLAS_TRAINER_STANDBY=0 turns it off."""
from __future__ import annotations

import contextlib
import json
import select
import subprocess
from pathlib import Path

from app.jobs.runs import ROOT, STANDBY_MODULE

STANDBY_ENV = "ATLAS_TRAINER_STANDBY"  # "0": no trainer started ahead of time (the tests' default)
STANDBY_IDLE_SECONDS = 900  # an unused standby trainer exits after this long; the page starts another


class StandbyTrainer:
    """The standby trainer of JobManager (app/jobs/manager.py). Expects of the class it is mixed into:
    `standby` (on or off), `python`, `max_running`, `_lock`, `_procs` (the trainers it launched) and
    `trainer_env()`; keeps the waiting process in `_standby` and whether it has said "ready" in `_standby_ready`."""

    _standby: subprocess.Popen | None
    _standby_ready: bool

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
