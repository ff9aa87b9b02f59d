"""JobManager, a run's life: start (validate, write the run folder, queue), the queue (launch, reap, settle
trainers that vanished), stop, resume, restart (a fresh start), delete. Reading runs is app/jobs/runs.py,
ownership and limits app/jobs/owners.py, the trainer started ahead of time app/jobs/standby.py. No st.* calls in the class: it is
tested without Streamlit; `get_manager()` at the bottom is the server-wide instance (st.cache_resource)."""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from app.jobs.estimate import estimate as cost_estimate
from app.jobs.options import MAX_PARAMETERS, TrainOptions, train_arguments, validate_options
from app.jobs.owners import (BUDGET_DEFAULT_MB, BUDGET_ENV, PER_OWNER_DEFAULT, PER_OWNER_ENV, TOTAL_DEFAULT,
                             TOTAL_ENV, OwnersAndLimits, owner_hash, teacher_mode)
from app.jobs.runs import (ROOT, STANDBY_MODULE, TRAINER_MODULE, RunFiles, count, folder_error, number, pid_alive,
                           restartable, resumable, run_id_time, run_state, runs_dir, state_message)
from app.jobs.standby import STANDBY_ENV, StandbyTrainer
from app.jobs.threads import MAX_RUNS_ENV, env_int, trainer_threads
from model.atomic import atomic_write_json
from model.messages import Message, UserError
from model.training.allocator import HUGE_PAGES
from model.training.run_files import ACTIVE, update_status

STALE_NEW_SECONDS = 600  # a hidden half-written run folder this old is left over from a crash: removed
DUPLICATE_SECONDS = 10.0  # Start pressed again with the same choices this soon: a double click, not a new run


def _lock_file(root: Path):
    """RUNS/.jobs.lock, open for locking (a function of its own so tests can make it fail)."""
    return open(root / ".jobs.lock", "a+")


def train_command(python: str, d: Path, o: TrainOptions, threads: int) -> list[str]:
    """The trainer's command line for run folder `d` with these (validated) choices."""
    cmd = [python, "-m", TRAINER_MODULE, "--config", str(d / "config.json"), *train_arguments(o)]
    if o.task == "tsv":
        cmd += ["--tsv", str(d / "corpus.tsv")]
    return cmd + ["--threads", str(threads), "--out", str(d)]


class JobManager(RunFiles, OwnersAndLimits, StandbyTrainer):
    def __init__(self, root: str | os.PathLike | None = None, max_running: int | None = None,
                 threads: int | None = None, python: str = sys.executable, teacher: bool | None = None,
                 per_owner: int | None = None, total: int | None = None, budget_mb: float | None = None,
                 standby: bool | None = None):
        self.root = Path(root).expanduser().resolve() if root else runs_dir()
        if max_running is None:
            max_running = env_int(MAX_RUNS_ENV, 1, 1)
        self.max_running = max(1, max_running)
        # trainer CPU threads (app/jobs/threads.py): the rest is the web server's
        self.threads = trainer_threads(self.max_running) if threads is None else threads
        self.python = python
        self.teacher = teacher_mode() if teacher is None else teacher
        self.per_owner = env_int(PER_OWNER_ENV, PER_OWNER_DEFAULT, 1) if per_owner is None else per_owner
        self.total = env_int(TOTAL_ENV, TOTAL_DEFAULT, 1) if total is None else total
        self.budget_mb = env_int(BUDGET_ENV, BUDGET_DEFAULT_MB, 1) if budget_mb is None else budget_mb
        self._lock = threading.RLock()
        self._procs: dict[str, subprocess.Popen] = {}
        self.standby = os.environ.get(STANDBY_ENV, "1") != "0" if standby is None else standby
        self._standby: subprocess.Popen | None = None  # a trainer waiting for a run (app/jobs/standby.py)
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
                        waiting.append((number(job.get("queued_at")) or 0, d))
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

    def trainer_command(self, d: Path, job: dict) -> list[str] | None:
        """The trainer's command line for run folder `d`, rebuilt every time from the job's validated options
        (a stored command line is never executed: a crafted job.json in the runs folder must not run a
        program). None when the options are missing or do not pass the page's own checks."""
        if job.get("resume") and (d / "args.json").exists():
            return [self.python, "-m", TRAINER_MODULE, "--resume", str(d), "--threads", str(self.threads)]
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
        return train_command(self.python, d, o, self.threads)

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
        job.update(pid=proc.pid, launched_at=time.time(), launches=count(job.get("launches")) + 1,
                   standby=proc.args[2] == STANDBY_MODULE)
        job.pop("previous_pid", None)
        try:
            atomic_write_json(d / "job.json", job)
        except OSError:  # the trainer runs; its own status.json (with its pid) tells the other servers
            pass

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
            base = f"{options.task}-{run_id_time(now)}"
            run_id, n = base, 1
            while (self.root / run_id).exists():
                n += 1
                run_id = f"{base}-{n}"
            d = self.root / run_id
            job = {"id": run_id, "created_at": now, "queued_at": now, "options": options.public(),
                   "tsv_sha256": digest, "command": train_command(self.python, d, options, self.threads),
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

    def _recent_twin(self, public: dict, digest: str, now: float) -> str | None:
        """An active run created in the last DUPLICATE_SECONDS with exactly these options, if any."""
        for d in self._run_dirs():
            job = self._job(d)
            created = number(job.get("created_at"))
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
            if not resumable(d, st):
                raise UserError("jobs.errors.cannot_resume", id=run_id, state=state_message(run_state(st)))
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

    def restart(self, run_id: str, owner: str | None = None) -> None:
        """Queue a failed run that has no checkpoint again, from step 0 with its own options (runs.restartable).
        What the failed attempt wrote is cleared, since its weights are gone: its curves and a half model folder
        (train.log keeps its story)."""
        d = self.run_path(run_id)
        with self._exclusive():
            st, job = self._status(d), self._job(d)
            self._check_owner(d, job, owner)
            if not restartable(d, st, job):
                raise UserError("jobs.errors.cannot_restart", id=run_id, state=state_message(run_state(st)))
            self._check_queue(owner)
            estimate = job.get("estimate") if isinstance(job.get("estimate"), dict) else {}
            self._check_disk(self.run_bytes(count(estimate.get("parameters"))))
            now, previous = time.time(), self._pid(d, st, job)
            job.update(pid=None, queued_at=now, resume=False)
            if previous:
                job["previous_pid"] = previous
            try:
                with contextlib.suppress(FileNotFoundError):
                    (d / "metrics.jsonl").unlink()
                for name in ("model", "avg"):
                    shutil.rmtree(d / name, ignore_errors=True)
                atomic_write_json(d / "job.json", job)
                update_status(d / "status.json", {k: st[k] for k in ("total_steps", "task", "created_at") if k in st},
                              state="queued", step=0, message=Message("jobs.status.waiting_restart"))
            except OSError as e:
                raise folder_error(self.root, e) from None
        self.poll()

    def delete(self, run_id: str, owner: str | None = None) -> None:
        d = self.run_path(run_id)
        with self._exclusive():
            st = self._status(d)
            self._check_owner(d, self._job(d), owner)
            if st.get("state") in ACTIVE:
                raise UserError("jobs.errors.delete_active", id=run_id, state=state_message(run_state(st)))
            if not d.is_dir():
                raise UserError("jobs.errors.no_such_run", id=run_id)
            self._procs.pop(run_id, None)
            shutil.rmtree(d)

    def list_runs(self, owner: str | None = None) -> list[dict]:
        """Summaries of every run in RUNS, newest first (advances the queue first; UserError when RUNS
        cannot be used). With `owner`, others' runs are read-only ("mine" False, no stop/resume/delete)."""
        self.poll()
        out = [self.summary(d.name, owner) for d in self._run_dirs()]
        return sorted(out, key=lambda r: r["created_at"], reverse=True)

    def estimate(self, o: TrainOptions, pairs: list[tuple[str, str]] | None = None) -> dict:
        """Parameters, memory and time of a run with these choices, on this manager's threads, started by a
        standby trainer where those are on (app/jobs/estimate.py)."""
        return cost_estimate(o, self.threads, pairs, warm_start=self.standby)


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
