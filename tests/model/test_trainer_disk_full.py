"""A save the disk refuses, told by what is really on disk: before the first checkpoint there is nothing to
resume (status.json says so, "resumable" false, "fresh_start" true, and neither the message nor stderr claims a
checkpoint is kept); after one, the message names the step whose checkpoint is kept; a checkpoint that landed
before the model folder failed counts as kept. The disk is filled by a simulated ENOSPC (the trainer runs in
this process, `tiny` preset, a few steps)."""
from __future__ import annotations

import errno
import re

import pytest
import torch

from app import i18n
from model.messages import Message
from model.training import steps as train_steps
from model.training import train as trainer
from tests.model.test_trainer import message, status
from tests.model.test_trainer_faults import FAST


def enospc(*a, **k):
    raise OSError(errno.ENOSPC, "No space left on device")


def say_in(lang: str, msg: Message, monkeypatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(i18n, "lang", lambda: lang)
        return i18n.say(msg)


def test_disk_full_before_the_first_checkpoint_offers_a_fresh_start(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    monkeypatch.setattr(train_steps, "save_training_state", enospc)  # the very first save finds the disk full
    rc = trainer.main([*FAST, "--steps", "4", "--ckpt-every", "2", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 5, err
    assert not (out / "checkpoint.pt").exists() and not (out / "model" / "model.safetensors").exists()
    st = status(out)
    assert st["state"] == "failed" and st["resumable"] is False and st["fresh_start"] is True, st
    msg = message(out)
    assert msg.code == "train.status.disk_full_no_checkpoint" and msg.args["step"] == 2, msg
    en, ko = say_in("en", msg, monkeypatch), say_in("ko", msg, monkeypatch)
    assert "kept" not in en and "then resume" not in en and "no checkpoint" in en and "start the run again" in en, en
    assert "남아" not in ko and "체크포인트" in ko and "처음부터" in ko, ko
    assert "kept" not in err and "no checkpoint" in err, err


def test_a_save_refused_before_the_first_checkpoint_for_another_reason_is_not_resumable(tmp_path, monkeypatch):
    out = tmp_path / "run"
    monkeypatch.setattr(train_steps, "save_training_state",
                        lambda *a, **k: (_ for _ in ()).throw(OSError(errno.EIO, "Input/output error")))
    assert trainer.main([*FAST, "--steps", "2", "--ckpt-every", "2", "--out", str(out)]) == 5
    st, msg = status(out), message(out)
    assert st["resumable"] is False and st["fresh_start"] is True, st
    assert msg.code == "train.status.save_failed_no_checkpoint", msg
    assert "kept" not in say_in("en", msg, monkeypatch)


def test_disk_full_while_writing_the_run_files_before_any_step(tmp_path, monkeypatch):
    """The disk is full before the trainer has even written config.json: no checkpoint, a fresh start."""
    out = tmp_path / "run"
    real = train_steps.atomic_write_json

    def write(path, obj):
        if path.name == "config.json":
            enospc()
        return real(path, obj)
    monkeypatch.setattr(train_steps, "atomic_write_json", write)
    assert trainer.main([*FAST, "--steps", "2", "--out", str(out)]) == 5
    st, msg = status(out), message(out)
    assert msg.code == "train.status.disk_full_no_checkpoint" and st["resumable"] is False, (st, msg)


def test_disk_full_after_a_checkpoint_names_the_step_that_is_kept(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    calls = {"n": 0}
    real = train_steps.save_training_state

    def save(*a, **k):
        calls["n"] += 1
        if calls["n"] == 2:
            enospc()
        return real(*a, **k)
    monkeypatch.setattr(train_steps, "save_training_state", save)
    assert trainer.main([*FAST, "--steps", "6", "--ckpt-every", "2", "--out", str(out)]) == 5
    err = capsys.readouterr().err
    st, msg = status(out), message(out)
    assert st["resumable"] is True and not st.get("fresh_start"), st
    assert msg.code == "train.status.disk_full_kept" and msg.args["saved"] == 2 and msg.args["step"] == 4, msg
    assert torch.load(out / "checkpoint.pt", weights_only=True)["step"] == 2
    assert "the checkpoint from step 2 is kept" in say_in("en", msg, monkeypatch).lower()
    assert "2 스텝" in say_in("ko", msg, monkeypatch)
    assert "step 2 is kept" in err, err


def test_a_checkpoint_that_landed_before_the_model_folder_failed_is_kept(tmp_path, monkeypatch):
    out = tmp_path / "run"
    real_task_for = train_steps.task_for

    def task_for(args):
        task = real_task_for(args)
        monkeypatch.setattr(task, "save", enospc)
        return task
    monkeypatch.setattr(train_steps, "task_for", task_for)
    assert trainer.main([*FAST, "--steps", "2", "--ckpt-every", "2", "--out", str(out)]) == 5
    st, msg = status(out), message(out)
    assert torch.load(out / "checkpoint.pt", weights_only=True)["step"] == 2
    assert msg.code == "train.status.disk_full_kept" and msg.args["saved"] == 2, msg
    assert st["resumable"] is True, st


@pytest.mark.parametrize("lang", list(i18n.LANGS))
def test_every_save_message_says_what_is_on_disk(lang, monkeypatch):
    """The class: no message for a failed save claims a kept checkpoint unless one is (a `saved` step)."""
    table = i18n.catalogue(lang)
    for code in ("disk_full_no_checkpoint", "save_failed_no_checkpoint"):
        assert "{saved" not in table[f"train.status.{code}"]
    for code in ("disk_full_kept", "save_failed_kept"):
        assert re.search(r"\{saved(:[^}]*)?\}", table[f"train.status.{code}"])  # the kept step, in any format
