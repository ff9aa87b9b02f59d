"""How a training run ends when something goes wrong, said in status.json (a Message, and whether resuming
can help) and on stderr: a save the disk refused, a loss that became NaN, a corpus, config or checkpoint
that cannot be used. Exit codes are the trainer's (model/training/train.py)."""
from __future__ import annotations

import contextlib
import errno
import shutil
import sys
from pathlib import Path

from model.errors import CheckpointError
from model.messages import Message
from model.training.run_files import Run

DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
# OSErrors a run ends on with a message instead of a traceback: the disk is full, read-only or failing
SAVE_ERRNOS = DISK_ERRNOS + (errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO)


class GiveUp(Exception):
    """The run cannot go on: `message` says why, `code` is the exit code, `fields` go into status.json."""

    def __init__(self, message: Message, code: int, **fields):
        super().__init__(str(message))
        self.message, self.code, self.fields = message, code, fields


class SaveFailed(Exception):
    """A checkpoint, model folder or weights snapshot of `step` could not be written (`error` says why);
    `saved_at` is the step of the last complete checkpoint on disk (None: there is none)."""

    def __init__(self, error: BaseException, step: int, saved_at: int | None):
        super().__init__(str(error))
        self.error, self.step, self.saved_at = error, step, saved_at


def give_up(run: Run, message: Message, code: int, **fields) -> int:
    fields.setdefault("resumable", False)  # a bad corpus, config or checkpoint: the same resume fails again
    run.update(state="failed", message=message, **fields)
    print(f"error: {message}", file=sys.stderr)
    return code


# -----------------------------------------------------------------------------
# saves the disk refused

def _free_mb(folder: Path) -> int | None:
    try:
        return int(shutil.disk_usage(folder).free // 2**20)
    except OSError:
        return None


UNKNOWN = object()  # save_problem's saved_at when a checkpoint is on disk but its step was never read


def save_problem(error: BaseException, step: int, folder: Path, saved_at=UNKNOWN) -> tuple[Message, dict]:
    """What a failed write means for the learner, true to what is on disk: the disk is full (with what is
    left) or why else, and the checkpoint that is kept (`saved_at`: its step; None: there is none, so
    resuming cannot help and the run is offered a fresh start once there is room; UNKNOWN: one is on disk).
    Returns the message and status.json's "resumable" / "fresh_start"."""
    cause = error
    while isinstance(cause, CheckpointError) and (cause.__cause__ or cause.__context__) is not None:
        cause = cause.__cause__ or cause.__context__
    text = str(error)
    free = _free_mb(folder)
    full = (isinstance(cause, OSError) and cause.errno in DISK_ERRNOS) or "unexpected pos" in text \
        or "No space left" in text or "file write failed" in text
    kept = "" if saved_at is UNKNOWN else "_no_checkpoint" if saved_at is None else "_kept"
    args = {"step": step, **({"saved": saved_at} if kept == "_kept" else {})}
    fields = {"resumable": saved_at is not None, "fresh_start": saved_at is None}
    if full and free is not None:
        return Message(f"train.status.disk_full{kept}", {"free_mb": free, **args}), fields
    detail = cause.strerror if isinstance(cause, OSError) and cause.strerror else text
    if isinstance(cause, OSError) and cause.filename:
        detail = f"{detail}: {cause.filename}"
    if full:
        detail = f"disk full ({detail})"
    return Message(f"train.status.save_failed{kept}", {"detail": " ".join(detail.split())[:300], **args}), fields


def saved_on_disk(out: Path, trainer) -> int | None | object:
    """The checkpoint a run that failed outside a save has on disk: the trainer's last (None: none yet);
    before the trainer was set up, UNKNOWN when checkpoint.pt exists (a resume that never got to read it)."""
    if trainer is not None:
        return trainer.saved_at
    return UNKNOWN if (out / "checkpoint.pt").exists() else None


def save_failed(run: Run, problem: tuple[Message, dict]) -> int:
    """Say why the run ended, in status.json if the disk still takes it, and on stderr always."""
    message, fields = problem
    step = message.args["step"]
    kept = (f"the checkpoint from step {message.args['saved']} is kept" if "saved" in message.args
            else "no checkpoint was saved before it, so there is nothing to resume: start the run again"
            if fields["fresh_start"] else "the last complete checkpoint is kept")
    if message.code.startswith("train.status.disk_full"):
        print(f"error: disk full ({message.args['free_mb']:,} MB free) while saving step {step}; {kept}",
              file=sys.stderr)
    else:
        print(f"error: could not save at step {step}: {message.args['detail']}; {kept}", file=sys.stderr)
    if run.writer:
        fields = dict(state="failed", message=message, **fields)
        try:
            run.update(**fields)
        except OSError:  # no room even for status.json's temporary file: overwrite it in place
            try:
                run.update_in_place(**fields)
            except OSError as e:
                print(f"error: could not write status.json either ({e.strerror or e})", file=sys.stderr)
    return 5


def remove_leftovers(out: Path) -> list[Path]:
    """Temporary files a trainer killed during a save leaves behind (model.atomic names them
    `.<name>.<random>.tmp`): the checkpoint's, the model folder's and the averaging snapshots'.
    Only the trainer writes these, and it holds the folder's lock, so none is in use."""
    gone = []
    for pattern in (".checkpoint.pt.*.tmp", "model/.*.tmp", "avg/.*.tmp"):
        for p in out.glob(pattern):
            with contextlib.suppress(OSError):
                p.unlink()
                gone.append(p)
    return gone


# -----------------------------------------------------------------------------
# a loss that became NaN

def nan_message(value: str, step: int, lr: float, saved_at: int | None) -> tuple[Message, dict]:
    """The message after a NaN loss at step+1, true to what is on disk, and whether resuming can help:
    not without a checkpoint, nor from the very state whose next batch gave the NaN (batches depend
    only on the seed and the step, so a resume would repeat it)."""
    args = {"value": value, "at": step + 1, "lr": lr}
    if saved_at is None:
        return Message("train.status.nan_loss_no_checkpoint", args), {"resumable": False}
    if saved_at >= step:
        return Message("train.status.nan_loss_bad_checkpoint", {**args, "saved": saved_at}), {"resumable": False}
    return Message("train.status.nan_loss", {**args, "saved": saved_at}), {"resumable": True}
