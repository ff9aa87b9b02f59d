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
    """A checkpoint, model folder or weights snapshot could not be written (`error` says why)."""

    def __init__(self, error: BaseException, step: int):
        super().__init__(str(error))
        self.error, self.step = error, step


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


def save_problem(error: BaseException, step: int, folder: Path) -> Message:
    """What a failed write means for the learner: the disk is full (with what is left), or why else."""
    cause = error
    while isinstance(cause, CheckpointError) and (cause.__cause__ or cause.__context__) is not None:
        cause = cause.__cause__ or cause.__context__
    text = str(error)
    free = _free_mb(folder)
    full = (isinstance(cause, OSError) and cause.errno in DISK_ERRNOS) or "unexpected pos" in text \
        or "No space left" in text or "file write failed" in text
    if full and free is not None:
        return Message("train.status.disk_full", {"free_mb": free, "step": step})
    detail = cause.strerror if isinstance(cause, OSError) and cause.strerror else text
    if isinstance(cause, OSError) and cause.filename:
        detail = f"{detail}: {cause.filename}"
    if full:
        detail = f"disk full ({detail})"
    return Message("train.status.save_failed", {"detail": " ".join(detail.split())[:300], "step": step})


def save_failed(run: Run, message: Message) -> int:
    """Say why the run ended, in status.json if the disk still takes it, and on stderr always."""
    if message.code == "train.status.disk_full":
        print(f"error: disk full ({message.args['free_mb']:,} MB free) while saving step {message.args['step']}; "
              f"the last complete checkpoint is kept", file=sys.stderr)
    else:
        print(f"error: could not save at step {message.args['step']}: {message.args['detail']}", file=sys.stderr)
    if run.writer:
        fields = dict(state="failed", message=message, resumable=True)
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
