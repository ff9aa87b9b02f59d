"""The files of one training run, read and written the same way by the trainer (model/training/train.py)
and the job manager (app/jobs/). Plain JSON and files only (no torch calls).

    status.json    state (STATES), step, loss, tokens/s, ... and "message": a Message as
                   {"code": ..., "args": ...} (runs written before messages had codes hold an
                   English sentence there instead; it is shown as it is)
    metrics.jsonl  append-only, one JSON object a line ("train" and "eval" records)
    args.json      the trainer's options            config.json   the model configuration

Every JSON file is written atomically (model/atomic.py); metrics lines are appended whole."""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no folder lock
    fcntl = None

from model.atomic import atomic_write_json
from model.messages import Message

STATES = ("queued", "running", "done", "failed", "stopped")
ACTIVE = ("queued", "running")


# -----------------------------------------------------------------------------
# reading

def read_json(path: Path, default=None):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def read_json_object(path: Path) -> dict:
    """A JSON file that should hold an object; {} when it is missing, damaged or holds something else."""
    obj = read_json(path, {})
    return obj if isinstance(obj, dict) else {}


def read_metrics(path: Path) -> list[dict]:
    """All complete records of a metrics.jsonl (a half-written last line is skipped)."""
    out = []
    try:
        with open(path, "rb") as f:  # bytes: one damaged (non-UTF-8) line must not hide the others
            for line in f:
                if line.endswith(b"\n"):
                    try:
                        record = json.loads(line.decode("utf-8"))
                    except ValueError:  # also UnicodeDecodeError
                        continue
                    if isinstance(record, dict):
                        out.append(record)
    except OSError:
        pass
    return out


def clean_metrics(records: list[dict]) -> list[dict]:
    """Drop records a resumed run redid: when a step repeats or goes back (a run killed after its
    last checkpoint, then resumed), the later records replace the earlier ones from that step on."""
    out: list[dict] = []
    last: dict[str, int] = {}
    for r in records:
        if not isinstance(r, dict):
            continue
        kind, step = r.get("kind"), r.get("step")
        if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step):
            continue
        if kind in last and step <= last[kind]:
            out = [x for x in out if x.get("kind") != kind or x["step"] < step]
        out.append(r)
        last[kind] = step
    return out


def status_message(value) -> Message | str | None:
    """status.json's "message": a Message, the English sentence an older version stored (kept
    verbatim, never translated), or None when there is none or it is damaged."""
    if isinstance(value, dict):
        return Message.from_dict(value)
    if isinstance(value, str) and value:
        return value
    return None


def message_code(value) -> str | None:
    """The code of status.json's "message" (None for an old English sentence or nothing)."""
    msg = status_message(value)
    return msg.code if isinstance(msg, Message) else None


# -----------------------------------------------------------------------------
# writing

def _jsonable(fields: dict) -> dict:
    return {k: (v.to_dict() if isinstance(v, Message) else v) for k, v in fields.items()}


def update_status(path: Path, status: dict, **fields) -> dict:
    """status + fields (Messages stored as {"code", "args"}) + updated_at, written atomically."""
    status.update(_jsonable(fields), updated_at=time.time())
    atomic_write_json(path, status)
    return status


def append_jsonl(path: Path, record: dict) -> None:
    """One write() of one whole line, then fsync: readers see whole lines or nothing new."""
    data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


class Run:
    """Status and metrics of one run directory, as the trainer keeps them; only rank 0 writes."""

    def __init__(self, out: Path, writer: bool):
        self.out, self.writer = Path(out), writer
        self.status: dict = read_json_object(self.out / "status.json")  # a damaged file: start afresh

    def update(self, **fields) -> None:
        """Set status fields; a `message` is a Message (or None to clear it)."""
        if self.writer:
            update_status(self.out / "status.json", self.status, **fields)
        else:
            self.status.update(_jsonable(fields))

    def update_in_place(self, **fields) -> None:
        """update() for a full disk, when not even a temporary file fits: status.json is overwritten
        where it is (its old blocks are reused). Not atomic; only for the last word of a failing run."""
        if not self.writer:
            return
        self.status.update(_jsonable(fields), updated_at=time.time())
        data = (json.dumps(self.status, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
        fd = os.open(self.out / "status.json", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        finally:
            os.close(fd)

    def log(self, record: dict) -> None:
        if self.writer:
            append_jsonl(self.out / "metrics.jsonl", record)


LOCK_FILE = ".trainer.lock"


class TrainerLock:
    """One trainer per run folder: an exclusive, non-blocking flock on `<folder>/.trainer.lock`, held
    until release() or the process ends (the kernel drops it when a killed trainer's process goes, so a
    stale lock never blocks a resume). The holder writes its pid into the file for the refusal message."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / LOCK_FILE
        self.fd: int | None = None

    def acquire(self) -> int | None:
        """None when the lock is now ours; else the holder's pid (0 when unknown). OSError when the
        folder cannot hold the lock file (read-only, missing)."""
        if fcntl is None:
            return None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = int(os.pread(fd, 32, 0).decode("ascii").strip() or 0)
            except (OSError, ValueError):
                holder = 0
            os.close(fd)
            return holder
        except OSError:
            os.close(fd)
            raise
        self.fd = fd
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except OSError:  # a full disk: the lock holds all the same
            pass
        return None

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = None
