"""The standby trainer (model/training/standby.py, app.jobs.JobManager.prepare): a trainer process started ahead
of time takes the next run, with the same options, files, numbers and exit codes as a plain trainer; when it
is missing, still importing or silent, a plain trainer starts instead. Real subprocesses (slow)."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from app.jobs import ROOT, STANDBY_MODULE, JobManager, is_starting, pid_alive
from app.jobs.options import TrainOptions
from model.messages import Message

FAST = dict(task="copy", size="tiny", batch_size=32, warmup=100, lr_factor=0.5, steps=30)


@pytest.fixture
def mgr(tmp_path):
    m = JobManager(tmp_path / "runs", max_running=1, threads=1, standby=True)
    yield m
    m.close_standby()
    for p in m._procs.values():
        if p.poll() is None:
            p.kill()
        p.wait(10)


def finish(m: JobManager, rid: str, timeout: float = 120) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        m.poll()
        s = m.summary(rid)
        if s["state"] not in ("queued", "running"):
            return s
        time.sleep(0.2)
    raise AssertionError(f"{rid} still {m.summary(rid)['state']}")


def losses(m: JobManager, rid: str) -> list[float]:
    return [r["loss"] for r in m.read_metrics(rid) if r.get("kind") == "train"]


def job(m: JobManager, rid: str) -> dict:
    return json.loads((m.run_path(rid) / "job.json").read_text())


def test_a_standby_trainer_takes_the_next_run_and_trains_exactly_as_a_plain_one(mgr, tmp_path):
    plain = JobManager(tmp_path / "plain", max_running=1, threads=1, standby=False)
    plain.prepare()  # off: nothing started
    assert plain._standby is None
    a = plain.start(TrainOptions(**FAST))
    assert finish(plain, a)["state"] == "done"
    assert job(plain, a)["standby"] is False

    mgr.prepare()
    assert mgr.standby_ready(timeout=60), "the standby trainer never finished importing"
    standby_pid = mgr._standby.pid
    b = mgr.start(TrainOptions(**FAST))
    assert job(mgr, b)["standby"] is True and job(mgr, b)["pid"] == standby_pid
    assert mgr._standby is None  # used up: the page asks for the next one
    s = finish(mgr, b)
    assert s["state"] == "done", s["message"]
    assert losses(mgr, b) == losses(plain, a) and len(losses(mgr, b)) >= 2  # same seed, same batches, same numbers
    log = (mgr.run_path(b) / "train.log").read_text()
    assert "$ " in log and "model.training.train" in log  # the command line, then the trainer's own output
    assert (mgr.run_path(b) / "model" / "model.safetensors").is_file()


def test_a_run_handed_to_the_standby_counts_as_live_and_stops_like_any_trainer(mgr):
    mgr.prepare()
    assert mgr.standby_ready(timeout=60)
    rid = mgr.start(TrainOptions(**{**FAST, "steps": 20000}))
    d = mgr.run_path(rid)
    pid = job(mgr, rid)["pid"]
    deadline = time.time() + 60
    while mgr.summary(rid)["state"] != "running" and time.time() < deadline:
        time.sleep(0.1)
    # Its command line names the standby, not the run: its working directory says which run it trains.
    assert pid_alive(pid, d)
    assert not pid_alive(pid, d.parent / "another-run")
    # Another server sharing the folder (a new manager, no Popen of its own) sees it alive too.
    other = JobManager(mgr.root, max_running=1, threads=1, standby=False)
    other.poll()
    assert mgr.summary(rid)["state"] == "running"
    mgr.stop(rid)
    s = finish(mgr, rid)
    assert s["state"] == "stopped"


def test_a_standby_still_importing_is_kept_and_a_plain_trainer_starts(mgr, monkeypatch):
    mgr.prepare()
    standby = mgr._standby
    monkeypatch.setattr(JobManager, "standby_ready", lambda self, timeout=0.0: False)
    rid = mgr.start(TrainOptions(**FAST))
    assert job(mgr, rid)["standby"] is False
    assert mgr._standby is standby and standby.poll() is None  # kept for the next run
    assert finish(mgr, rid)["state"] == "done"


def test_a_standby_that_does_not_take_the_run_is_ended_and_a_plain_trainer_starts(mgr):
    # A stand-in that says "ready", reads the job and exits without "taken".
    fake = subprocess.Popen([sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.readline()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    mgr._standby, mgr._standby_ready = fake, False
    assert mgr.standby_ready(timeout=30)
    rid = mgr.start(TrainOptions(**FAST))
    assert job(mgr, rid)["standby"] is False and job(mgr, rid)["pid"] != fake.pid
    assert fake.poll() is not None and mgr._standby is None
    assert finish(mgr, rid)["state"] == "done"


def test_no_standby_while_every_slot_is_busy(mgr):
    mgr.prepare()
    assert mgr.standby_ready(timeout=60)
    rid = mgr.start(TrainOptions(**{**FAST, "steps": 20000}))  # takes the standby and the only slot
    mgr.prepare()
    assert mgr._standby is None  # the next run would queue: no process importing torch beside the trainer
    mgr.stop(rid)
    finish(mgr, rid)
    if rid in mgr._procs:  # "stopped" is written just before the trainer exits
        mgr._procs[rid].wait(30)
    mgr.poll()
    mgr.prepare()
    assert mgr._standby is not None


def standby(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", STANDBY_MODULE, *args], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_standby_program_exits_quietly_without_a_run():
    idle = standby("--idle-seconds", "0.2")  # no job in time
    closed = standby()  # the server went away: end of input
    bad = standby()  # a malformed job line
    assert closed.stdout.readline().strip() == "ready"
    closed.stdin.close()
    assert bad.stdout.readline().strip() == "ready"
    bad.stdin.write('{"argv": "rm -rf /", "dir": 3}\n')
    bad.stdin.close()
    for p in (idle, closed, bad):
        p.wait(60)
        out, err = p.stdout.read(), p.stderr.read()
        assert p.returncode == 0, err
        assert "taken" not in out and err == ""


def test_the_standby_program_gives_a_bad_option_the_trainers_own_error(tmp_path):
    p = standby()
    assert p.stdout.readline().strip() == "ready"
    p.stdin.write(json.dumps({"argv": ["--task", "copy", "--steps", "-5", "--out", str(tmp_path)],
                              "dir": str(tmp_path)}) + "\n")
    p.stdin.close()
    assert p.stdout.readline().strip() == "taken"
    p.wait(60)
    plain = subprocess.run([sys.executable, "-m", "model.training.train", "--task", "copy", "--steps", "-5", "--out",
                            str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == plain.returncode == 2
    log = (tmp_path / "train.log").read_text()
    assert plain.stderr.strip().splitlines()[-1] in log  # the same argparse message, in the run's log


def test_is_starting_means_launched_without_a_step():
    assert is_starting({"state": "running", "step": 0})
    assert is_starting({"state": "queued", "step": 0, "message": Message("jobs.status.starting")})
    assert not is_starting({"state": "queued", "step": 0, "message": Message("jobs.status.waiting")})
    assert not is_starting({"state": "running", "step": 1})
    assert not is_starting({"state": "finished", "step": 0})


def test_the_training_page_asks_for_a_standby(monkeypatch):
    from streamlit.testing.v1 import AppTest
    calls = []
    monkeypatch.setattr(JobManager, "prepare", lambda self: calls.append(self.root))
    at = AppTest.from_file(str(ROOT / "pages" / "train.py"), default_timeout=60).run()
    assert not at.exception
    assert calls
