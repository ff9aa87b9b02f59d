"""Where runs live and how their files are read: RUNS (`runs_dir()`), whether a run's trainer is alive
(`pid_alive`, from /proc), and one run's summary for the page, read from files that may be damaged or
hand-edited (every field is checked; a bad one shows as "unknown" / "–", never as an exception), and the
final state of a run whose trainer ended without writing one."""
from __future__ import annotations

import contextlib
import errno
import math
import os
import re
import shutil
import signal
import time
from pathlib import Path

from model.messages import Message, UserError
from model.training.run_files import (
    ACTIVE, STATES, clean_metrics, message_code, read_json_object, read_metrics, status_message, update_status,
)

ROOT = Path(__file__).resolve().parents[2]
RUNS_ENV = "ATLAS_RUNS_DIR"
TRAINER_MODULE = "model.training.train"    # a run's trainer: `python -m model.training.train ... --out RUNS/<id>`
STANDBY_MODULE = "model.training.standby"  # a trainer started ahead of time (app/jobs/standby.py)
MB = 1_000_000
COMPARE_METRICS = {"val_loss": "eval", "val_token_acc": "eval", "val_exact": "eval", "loss": "train"}


def runs_dir() -> Path:
    """RUNS: $ATLAS_RUNS_DIR if set, else runs/ in the repository."""
    env = os.environ.get(RUNS_ENV, "").strip()
    return Path(env).expanduser().resolve() if env else ROOT / "runs"


def free_mb(root: Path) -> float:
    """Megabytes free on the disk holding `root` (or its nearest existing parent); -1 when unknown."""
    p = Path(root)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free / MB
    except OSError:
        return -1.0


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


def pid_alive(pid, run_dir: Path | None = None, program: str = TRAINER_MODULE) -> bool:
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
    programs = (program, STANDBY_MODULE) if program == TRAINER_MODULE else (program,)
    if not any(name in part for part in cmdline for name in programs):
        return False
    if run_dir is not None and not any(run_dir.name in part for part in cmdline):
        try:  # a standby trainer that took this run works in its folder (model/training/standby.py)
            return os.path.basename(os.readlink(proc / "cwd")) == run_dir.name
        except OSError:
            return False
    return True


# -----------------------------------------------------------------------------
# fields of run files that may be damaged or hand-edited

def number(v):
    """A finite int/float from a file, else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return v


def count(v) -> int:
    """A whole number >= 0 from a file; 0 for anything else."""
    v = number(v)
    return max(0, int(v)) if v is not None else 0


def samples(v) -> list[dict]:
    """Sample predictions from status.json: dicts of strings only, each marked correct or not."""
    if not isinstance(v, list):
        return []
    out = [{k: str(s.get(k, "")) for k in ("source", "target", "prediction")} for s in v if isinstance(s, dict)]
    for s in out:
        s["correct"] = s["prediction"].strip() == s["target"].strip()
    return out


def run_state(st: dict) -> str:
    """status.json's state, "unknown" when it holds none of STATES."""
    return st.get("state") if st.get("state") in STATES else "unknown"


def state_message(state: str) -> Message:
    """A run's state as a catalogue key ("unknown" for anything else)."""
    return Message(f"jobs.state.{state if state in STATES else 'unknown'}")


def run_actions(summary: dict) -> list[str]:
    """The buttons a run offers, in order: stop, resume, restart (a fresh start), inspect, delete."""
    active = summary["state"] in ACTIVE
    return [name for name, offered in (("stop", active), ("resume", summary["resumable"]),
                                       ("restart", summary.get("restartable")), ("inspect", summary["inspectable"]),
                                       ("delete", not active)) if offered]


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


def resumable(d: Path, st: dict) -> bool:
    """May the run in folder `d` (status `st`) be queued again? A stopped run; a failed one with a checkpoint
    the trainer could read; never one the trainer marked not resumable (it would fail the same way)."""
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


def restartable(d: Path, st: dict, job: dict) -> bool:
    """May the run in folder `d` start again from step 0? A failed run with no checkpoint to resume that the
    trainer says a fresh start can help (a save refused before the first checkpoint, once there is room), and
    whose options the manager can rebuild its command from."""
    return (st.get("state") == "failed" and st.get("fresh_start") is True and not (d / "checkpoint.pt").exists()
            and isinstance(job.get("options"), dict))


# -----------------------------------------------------------------------------
# the manager's reading side

class RunFiles:
    """The run files of the RUNS folder `self.root`, as JobManager (app/jobs/manager.py) reads them, and the
    final state it writes when a trainer is gone without one. Expects `may_manage(job, owner)` of the class it
    is mixed into (app/jobs/owners.py)."""

    root: Path

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

    def _pid(self, d: Path, st: dict | None = None, job: dict | None = None):
        st = self._status(d) if st is None else st
        job = self._job(d) if job is None else job
        return st.get("pid") or job.get("pid")

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
        created = number(job.get("created_at")) or number(st.get("created_at")) or number(st.get("started_at"))
        if not created:
            with contextlib.suppress(OSError):
                created = d.stat().st_mtime
        state = run_state(st)
        message = status_message(st.get("message"))
        if not st and (d / "status.json").exists():
            message = Message("jobs.status.damaged")
        if state == "queued" and job.get("pid"):
            message = Message("jobs.status.starting")
        task = next((t for t in (st.get("task"), args.get("task"), options.get("task")) if isinstance(t, str) and t),
                    "?")
        step = count(st.get("step"))
        total = count(st.get("total_steps")) or count(args.get("steps")) or count(options.get("steps"))
        model = d / "model"
        summary = {
            "id": run_id, "task": task, "state": state, "step": step, "total": total,
            "progress": min(1.0, step / total) if total else 0.0,
            "loss": number(st.get("loss")), "lr": number(st.get("lr")), "val_loss": number(st.get("val_loss")),
            "val_token_acc": number(st.get("val_token_acc")), "val_exact": number(st.get("val_exact")),
            "tokens_per_second": number(st.get("tokens_per_second")),
            "eta_seconds": number(st.get("eta_seconds")) if state == "running" else None,
            "elapsed_seconds": number(st.get("elapsed_seconds")), "created_at": created or 0.0,
            "message": message, "samples": samples(st.get("samples")),
            "parameters": number(st.get("parameters")) or number(estimate.get("parameters")),
            "device": st.get("device"), "config": cfg, "options": options,
            "estimate": estimate, "managed": bool(job), "mine": self.may_manage(job, owner),
            "resumable": resumable(d, st) and (bool(job.get("command")) or (d / "args.json").exists()),
            "restartable": restartable(d, st, job),
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

    def _crash_line(self, d: Path) -> str:
        """The error line of a traceback written after the last launch in train.log, or ""."""
        tail = self.log_tail(d.name, 40)
        last = tail.rsplit("\n$ ", 1)[-1] if "\n$ " in tail else tail
        return self.error_line(d.name) if "Traceback (most recent call last)" in last else ""

    # ---- a trainer's end
    def _settle(self, d: Path, rc: int, pid: int | None = None) -> None:
        """A trainer we launched (`pid`) has exited; if it did not write a final state, write one. A run
        queued again since (Resume pressed while the trainer was exiting: job.json's pid is no longer
        this one) is left as it is."""
        st = self._status(d)
        if st.get("state") not in ACTIVE:
            return
        if pid is not None and self._job(d).get("pid") != pid:
            return
        at = count(st.get("step"))
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
        at = count(st.get("step"))
        why = self._crash_line(d)
        if why:
            self._set_status(d, state="failed", message=Message("jobs.status.vanished_with", {"at": at, "detail": why}))
        else:
            self._set_status(d, state="stopped", message=Message("jobs.status.vanished", {"at": at}))


def run_id_time(t: float) -> str:
    """The time part of a new run's id: 20250101-120000."""
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(t))
