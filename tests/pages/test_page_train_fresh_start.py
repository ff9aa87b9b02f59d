"""A run whose disk filled before its first checkpoint, on the training page: the page says there is no
checkpoint, offers "Start again" instead of "Resume", and the fresh start is queued without --resume, its
old curves cleared. The run is created by the job manager and trained in this process with a simulated ENOSPC
on every save (the manager's launcher is replaced, so no trainer process starts)."""
from __future__ import annotations

import errno
import json

import pytest

from app import i18n
from app.i18n import LANGS
from app.jobs import TrainOptions, get_manager
from app.jobs.manager import JobManager
from model.messages import UserError
from model.training import steps as train_steps
from model.training import train as trainer
from tests.apptest_util import assert_clean, run_page

PAGE = "train.py"
OWNER = "tok-fresh-start"  # the AppTest session's owner token: the run is its own


def enospc(*a, **k):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def full_run(runs, monkeypatch):
    """A run the manager created whose trainer found the disk full at its first save."""
    launched: list[str] = []
    monkeypatch.setattr(JobManager, "_launch", lambda self, d: launched.append(d.name))
    m = get_manager(str(runs.resolve()))
    rid = m.start(TrainOptions(task="copy", size="tiny", steps=4, batch_size=4, warmup=2), owner=OWNER)
    d = runs / rid
    argv = m.trainer_command(d, json.loads((d / "job.json").read_text()))[3:]
    with monkeypatch.context() as p:
        p.setattr(train_steps, "save_training_state", enospc)
        assert trainer.main([*argv, "--ckpt-every", "2", "--log-every", "1"]) == 5
    return m, rid, launched


def test_the_manager_offers_a_fresh_start_not_a_resume(full_run, runs):
    m, rid, launched = full_run
    s = m.summary(rid)
    assert s["state"] == "failed" and not s["resumable"] and s["restartable"], s
    assert "resume" not in s["actions"] and "restart" in s["actions"], s["actions"]
    with pytest.raises(UserError):
        m.resume(rid)
    assert (runs / rid / "metrics.jsonl").stat().st_size > 0
    m.restart(rid)
    s = m.summary(rid)
    assert s["state"] == "queued" and s["step"] == 0 and launched[-1] == rid, s
    assert s["message"].code == "jobs.status.waiting_restart"
    job = json.loads((runs / rid / "job.json").read_text())
    assert "--resume" not in m.trainer_command(runs / rid, job)
    assert not (runs / rid / "metrics.jsonl").exists()  # the curves of a run whose weights are gone
    with pytest.raises(UserError):
        m.restart(rid)  # queued already


def test_a_stopped_or_resumable_run_is_not_offered_a_fresh_start(full_run, runs):
    m, rid, _ = full_run
    st = json.loads((runs / rid / "status.json").read_text())
    (runs / rid / "checkpoint.pt").write_bytes(b"")  # a checkpoint appeared: resume, not a fresh start
    assert not m.summary(rid)["restartable"]
    (runs / rid / "checkpoint.pt").unlink()
    st.pop("fresh_start")
    (runs / rid / "status.json").write_text(json.dumps(st))  # a bad config: starting again fails again
    assert not m.summary(rid)["restartable"]


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_page_says_there_is_no_checkpoint_and_starts_again(full_run, lang):
    m, rid, launched = full_run
    at = run_page(PAGE, lang, setup=lambda at: at.session_state.__setitem__("train_owner", OWNER))
    assert_clean(at)
    errors = " ".join(e.value for e in at.error)
    table = i18n.catalogue(lang)
    assert table["train.status.disk_full_no_checkpoint"].split("{")[0] in errors, errors
    assert ("kept" not in errors) if lang == "en" else ("남아 있" not in errors), errors
    keys = {b.key for b in at.button}
    assert f"resume-{rid}" not in keys and f"restart-{rid}" in keys, keys
    button = at.button(key=f"restart-{rid}")
    assert button.label == table["train.action.restart"]
    button.click().run()
    assert_clean(at)
    assert m.summary(rid)["state"] == "queued" and launched[-1] == rid
