"""The job manager made safe for a classroom, without Streamlit. Ownership of runs per browser
session (teacher mode manages all), queue and disk limits, thread budgets, an unusable runs folder,
several managers (servers) on one runs folder, a vanished trainer, and Resume pressed while a stopped
trainer is still exiting. A fake trainer (a small Python script given as the manager's `python`) stands in
for model.training.train: it records each launch and is driven by files, so nothing here depends on timing."""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from app import i18n
from app.jobs import manager as jobs_manager, threads as jobs_threads  # where the tests below replace names
from app.jobs import JobManager, owner_hash, pid_alive, thread_budget
from app.jobs.options import TrainOptions
from model.messages import Message, UserError

FAST = dict(task="copy", size="tiny", batch_size=8, warmup=10, lr_factor=0.5)

FAKE_TRAINER = r'''
import json, os, signal, sys, time
args = sys.argv[1:]
out = args[args.index("--out") + 1] if "--out" in args else args[args.index("--resume") + 1]
def status(**kw):
    p = os.path.join(out, "status.json")
    try:
        st = json.load(open(p))
    except Exception:
        st = {}
    st.update(kw)
    with open(p + ".w", "w") as f:
        json.dump(st, f)
    os.replace(p + ".w", p)
with open(os.path.join(out, "launches.jsonl"), "a") as f:
    f.write(json.dumps({"pid": os.getpid(), "argv": args, "omp": os.environ.get("OMP_NUM_THREADS")}) + "\n")
stopping = []
signal.signal(signal.SIGTERM, lambda *a: stopping.append(1))
status(state="running", pid=os.getpid(), step=1)
deadline = time.time() + 120  # never outlive a failed test for long
def there(name):
    return os.path.exists(os.path.join(out, name))
while time.time() < deadline:
    if stopping:  # like model.training.train: write "stopped" first, then take a while to exit
        status(state="stopped", step=1, message={"code": "train.status.stopped", "args": {"at": 1}})
        while not there("exit") and time.time() < deadline:
            time.sleep(0.01)
        sys.exit(0)
    if there("finish"):
        os.remove(os.path.join(out, "finish"))
        status(state="done", step=2, message={"code": "train.status.finished", "args": {"total": 2, "seconds": 1}})
        sys.exit(0)
    if there("crash"):
        print("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
              "OSError: [Errno 28] No space left on device", flush=True)
        sys.exit(1)
    time.sleep(0.01)
sys.exit(3)
'''


@pytest.fixture
def fake(tmp_path):
    """The path of the fake trainer, usable as a JobManager's `python`."""
    p = tmp_path / "fake-python"
    p.write_text(f"#!{sys.executable}\n" + FAKE_TRAINER)
    p.chmod(0o755)
    return str(p)


@pytest.fixture
def managers():
    """Every manager a test makes; afterwards every fake trainer still alive is killed and reaped."""
    made: list[JobManager] = []
    yield made
    for m in made:
        for d in m._run_dirs():
            for line in _launches(d):
                if pid_alive(line["pid"], d):
                    os.kill(line["pid"], signal.SIGKILL)
        for p in m._procs.values():
            p.kill()
            p.wait(10)


def _launches(d: Path) -> list[dict]:
    f = Path(d) / "launches.jsonl"
    return [json.loads(x) for x in f.read_text().splitlines()] if f.exists() else []


def wait_for(cond, what: str, timeout: float = 60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"never: {what}")


def say_in(lang: str, msg: Message, monkeypatch) -> str:
    monkeypatch.setattr(i18n, "lang", lambda: lang)
    return i18n.say(msg)


def fake_done(root: Path, rid: str, created: float, size: int = 0, owner: str | None = None) -> Path:
    d = root / rid
    d.mkdir(parents=True)
    (d / "status.json").write_text(json.dumps({"state": "done", "step": 2, "total_steps": 2, "task": "copy"}))
    job = {"id": rid, "created_at": created, "options": {**FAST, "steps": 2}, "pid": None}
    if owner:
        job["owner"] = owner_hash(owner)
    (d / "job.json").write_text(json.dumps(job))
    (d / "checkpoint.pt").write_bytes(b"\0" * size)
    return d


# -----------------------------------------------------------------------------
# 1. ownership: a session manages its own runs; teacher mode manages all

def test_a_session_manages_only_its_own_runs(tmp_path, fake, managers, monkeypatch):
    m = JobManager(tmp_path / "runs", python=fake, threads=1, teacher=False)
    managers.append(m)
    rid = m.start(TrainOptions(**FAST, steps=20), owner="token-a")
    job = json.loads((m.root / rid / "job.json").read_text())
    assert job["owner"] == owner_hash("token-a") and "token-a" not in json.dumps(job)  # only the hash is kept
    wait_for(lambda: m.summary(rid)["state"] == "running", "running")

    mine, theirs = m.summary(rid, owner="token-a"), m.summary(rid, owner="token-b")
    assert mine["mine"] and mine["actions"] == ["stop"]
    assert not theirs["mine"] and theirs["actions"] == []  # visible, read-only
    assert [r["mine"] for r in m.list_runs(owner="token-b")] == [False]
    for act in (m.stop, m.resume, m.delete):
        with pytest.raises(UserError) as e:
            act(rid, owner="token-b")
        assert e.value.message == Message("jobs.errors.not_yours", {"id": rid})
    assert "another browser" in say_in("en", e.value.message, monkeypatch)
    assert "다른 브라우저에서" in say_in("ko", e.value.message, monkeypatch)
    assert m.summary(rid)["state"] == "running"  # nothing happened

    m.stop(rid, owner="token-a")  # the owner may
    wait_for(lambda: m.summary(rid)["state"] == "stopped", "stopped")
    (m.root / rid / "exit").touch()
    theirs = m.summary(rid, owner="token-b")
    assert theirs["actions"] == [] and m.summary(rid, owner="token-a")["actions"] == ["resume", "delete"]


def test_teacher_mode_manages_every_run(tmp_path, fake, managers, monkeypatch):
    root = tmp_path / "runs"
    fake_done(root, "copy-1", 1.0, owner="token-a")
    fake_done(root, "copy-2", 2.0)  # started from the command line: no owner
    learner = JobManager(root, python=fake, teacher=False)
    assert [learner.summary(r, owner="token-b")["actions"] for r in ("copy-1", "copy-2")] == [[], []]
    assert learner.summary("copy-1", owner="token-a")["actions"] == ["delete"]
    monkeypatch.setenv("ATLAS_TEACHER_MODE", "1")
    teacher = JobManager(root, python=fake)
    assert teacher.teacher
    assert [teacher.summary(r, owner="token-b")["actions"] for r in ("copy-1", "copy-2")] == [["delete"], ["delete"]]
    teacher.delete("copy-1", owner="token-b")
    assert not (root / "copy-1").exists()
    monkeypatch.setenv("ATLAS_TEACHER_MODE", "0")
    assert not JobManager(root, python=fake).teacher


# -----------------------------------------------------------------------------
# 3. limits: per session, in all, and the disk

def test_queue_limits_per_session_and_in_all(tmp_path, fake, managers, monkeypatch):
    m = JobManager(tmp_path / "runs", python=fake, threads=1, per_owner=2, total=3, teacher=False)
    managers.append(m)
    m.start(TrainOptions(**FAST, steps=11), owner="a")
    m.start(TrainOptions(**FAST, steps=12), owner="a")
    with pytest.raises(UserError) as e:
        m.start(TrainOptions(**FAST, steps=13), owner="a")
    assert e.value.message == Message("jobs.errors.too_many_yours", {"count": 2, "limit": 2})
    assert "limit is 2 per browser)" in say_in("en", e.value.message, monkeypatch)
    assert "브라우저당 한도 2개" in say_in("ko", e.value.message, monkeypatch)
    m.start(TrainOptions(**FAST, steps=14), owner="b")  # another session still may
    with pytest.raises(UserError) as e:
        m.start(TrainOptions(**FAST, steps=15), owner="c")
    assert e.value.message == Message("jobs.errors.queue_full", {"count": 3, "limit": 3})
    assert len(m._run_dirs()) == 3
    monkeypatch.setenv("ATLAS_QUEUE_PER_SESSION", "5")
    monkeypatch.setenv("ATLAS_QUEUE_TOTAL", "x")  # not a number: the default
    env = JobManager(tmp_path / "runs", python=fake)
    assert (env.per_owner, env.total) == (5, 12)


def test_disk_budget_is_refused_with_how_much_is_used(tmp_path, fake, monkeypatch):
    root = tmp_path / "runs"
    fake_done(root, "copy-old", 1.0, size=1_500_000)
    m = JobManager(root, python=fake, budget_mb=2)
    with pytest.raises(UserError) as e:
        m.start(TrainOptions(**FAST, steps=10), owner="a")  # the tiny model needs ~3.7 MB
    msg = e.value.message
    assert msg.code == "jobs.errors.disk_budget" and msg.args["budget"] == 2 and 1.5 < msg.args["used"] < 1.6
    assert "already uses 2 MB of its 2 MB budget" in say_in("en", msg, monkeypatch)
    assert "할당량 2 MB 중 2 MB" in say_in("ko", msg, monkeypatch)
    assert [p.name for p in root.iterdir() if not p.name.startswith(".")] == ["copy-old"]
    monkeypatch.setenv("ATLAS_RUNS_BUDGET_MB", "50")
    assert JobManager(root, python=fake).budget_mb == 50


def test_oldest_finished_runs_are_listed_for_cleanup(tmp_path):
    root = tmp_path / "runs"
    fake_done(root, "copy-b", 2_000.0, size=300, owner="a")
    fake_done(root, "copy-a", 1_000.0, size=100)
    fake_done(root, "copy-c", 3_000.0, size=200)
    q = root / "copy-q"
    q.mkdir()
    (q / "status.json").write_text(json.dumps({"state": "queued", "step": 0}))  # active: not a candidate
    m = JobManager(root, python="/bin/false", teacher=False)
    old = m.cleanup_candidates(limit=2, owner="a")
    assert [(r["id"], r["mine"]) for r in old] == [("copy-a", False), ("copy-b", True)]
    assert old[0]["bytes"] >= 100 and old[1]["bytes"] >= 300
    assert m.disk_used() >= 600


# -----------------------------------------------------------------------------
# 5. thread budgets

@pytest.mark.parametrize("cores, running, fixed, expected", [
    (2, 1, None, (1, 1)), (1, 1, None, (1, 1)), (16, 1, None, (8, 8)), (16, 2, None, (8, 4)),
    (8, 1, 3, (5, 3)), (4, 3, None, (1, 1)), (None, 1, None, (1, 1)),
])
def test_thread_budget(cores, running, fixed, expected):
    assert thread_budget(cores, running, fixed) == expected


def test_trainers_and_server_get_their_threads(tmp_path, fake, managers, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.delenv("ATLAS_TRAIN_THREADS", raising=False)
    monkeypatch.delenv("ATLAS_MAX_RUNS", raising=False)
    assert JobManager(tmp_path / "a", python=fake).threads == 8 and jobs_threads.server_threads() == 8
    monkeypatch.setenv("ATLAS_TRAIN_THREADS", "3")
    m = JobManager(tmp_path / "runs", python=fake)
    managers.append(m)
    assert m.threads == 3 and jobs_threads.server_threads() == 13
    rid = m.start(TrainOptions(**FAST, steps=10))
    wait_for(lambda: _launches(m.root / rid), "launched")
    launch = _launches(m.root / rid)[0]
    assert launch["argv"][launch["argv"].index("--threads") + 1] == "3" and launch["omp"] == "3"

    import torch
    before = torch.get_num_threads()
    monkeypatch.setattr(jobs_threads, "_SERVER_THREADS_SET", False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.delenv("ATLAS_TRAIN_THREADS")
    try:
        assert jobs_threads.apply_server_threads() == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


# -----------------------------------------------------------------------------
# 8. an unusable runs folder: a clear UserError, never a traceback, nothing half-created

def test_runs_dir_pointing_at_a_file(tmp_path, monkeypatch):
    f = tmp_path / "not-a-folder"
    f.write_text("x")
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(f))
    m = JobManager()  # must not raise
    problem = m.problem()
    assert problem is not None and problem.message.code == "jobs.errors.runs_folder"
    assert str(f) in say_in("en", problem.message, monkeypatch)
    with pytest.raises(UserError) as e:
        m.list_runs()
    assert e.value.message.code == "jobs.errors.runs_folder"
    with pytest.raises(UserError) as e:
        m.start(TrainOptions(**FAST, steps=10))
    assert e.value.message.code == "jobs.errors.runs_folder"
    assert f.read_text() == "x"


def test_lock_file_that_cannot_be_opened(tmp_path, monkeypatch):
    def refuse(root):
        raise PermissionError(errno.EACCES, "Permission denied", str(root / ".jobs.lock"))
    monkeypatch.setattr(jobs_manager, "_lock_file", refuse)
    m = JobManager(tmp_path / "runs")  # must not raise
    assert m.problem().message == Message("jobs.errors.runs_folder", {"path": str(m.root),
                                                                      "reason": "Permission denied"})
    assert "cannot be used: Permission denied" in say_in("en", m.problem().message, monkeypatch)
    assert "쓸 수 없습니다: Permission denied" in say_in("ko", m.problem().message, monkeypatch)
    with pytest.raises(UserError):
        m.start(TrainOptions(**FAST, steps=10))
    assert list((tmp_path / "runs").iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_runs_folder(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    root.chmod(0o555)
    try:
        m = JobManager(root)
        assert m.problem().message.code == "jobs.errors.runs_folder"
        with pytest.raises(UserError):
            m.start(TrainOptions(**FAST, steps=10))
    finally:
        root.chmod(0o755)


def test_disk_full_on_start_leaves_nothing_half_created(tmp_path, monkeypatch):
    m = JobManager(tmp_path / "runs", python="/bin/false")
    real = jobs_manager.atomic_write_json

    def full(path, obj):
        if Path(path).name == "job.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, obj)
    monkeypatch.setattr(jobs_manager, "atomic_write_json", full)
    with pytest.raises(UserError) as e:
        m.start(TrainOptions(**FAST, steps=10))
    assert e.value.message.code == "jobs.errors.disk_full" and e.value.message.args["path"] == str(m.root)
    assert "is full" in say_in("en", e.value.message, monkeypatch)
    assert "가득 찼습니다" in say_in("ko", e.value.message, monkeypatch)
    assert [p.name for p in m.root.iterdir()] == [".jobs.lock"]  # no run folder, visible or hidden
    monkeypatch.setattr(jobs_manager, "atomic_write_json", real)
    rid = m.start(TrainOptions(**FAST, steps=10))  # space again: a normal run
    assert [r["id"] for r in m.list_runs()] == [rid]


def test_stale_hidden_half_runs_are_removed(tmp_path):
    root = tmp_path / "runs"
    old, new = root / ".new-copy-1-aa", root / ".new-copy-2-bb"
    for d in (old, new):
        d.mkdir(parents=True)
        (d / "config.json").write_text("{}")
    os.utime(old, (1, 1))
    m = JobManager(root, python="/bin/false")
    assert not old.exists() and new.exists()  # a recent one may be another server's Start in progress
    assert m.list_runs() == []


# -----------------------------------------------------------------------------
# 9. a vanished trainer; "resumable": false

def test_vanished_trainer_with_an_error_in_its_log_is_failed(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    d = root / "copy-x"
    d.mkdir(parents=True)
    (d / "status.json").write_text(json.dumps({"state": "running", "step": 40, "pid": 2 ** 22 + 99}))
    (d / "job.json").write_text(json.dumps({"id": "copy-x", "options": {**FAST, "steps": 100}, "command": ["x"],
                                            "pid": 2 ** 22 + 99}))
    (d / "train.log").write_text("$ python -m model.training.train\nTraceback (most recent call last):\n  File \"a\"\n"
                                 "RuntimeError: old failure\n\n$ python -m model.training.train --resume\nstep 40\n"
                                 "Traceback (most recent call last):\n  File \"t.py\", line 3\n"
                                 "OSError: [Errno 28] No space left on device\n")
    (d / "checkpoint.pt").write_bytes(b"x")
    s = JobManager(root).summary("copy-x")
    assert s["state"] == "failed"
    assert s["message"] == Message("jobs.status.vanished_with", {
        "at": 40, "detail": "OSError: [Errno 28] No space left on device"})
    assert "its log ends with: OSError" in say_in("en", s["message"], monkeypatch)
    assert s["resumable"]  # a checkpoint is there
    # A log whose last launch ended without a traceback (the server went down with it): "stopped".
    (d / "status.json").write_text(json.dumps({"state": "running", "step": 40, "pid": 2 ** 22 + 99}))
    (d / "train.log").write_text("$ python -m model.training.train\nTraceback (most recent call last):\nValueError: x\n"
                                 "$ python -m model.training.train --resume\nstep 40\n")
    s = JobManager(root).summary("copy-x")
    assert s["state"] == "stopped" and s["message"].code == "jobs.status.vanished"


def test_resumable_false_is_honoured(tmp_path):
    root = tmp_path / "runs"
    d = root / "copy-nan"
    d.mkdir(parents=True)
    (d / "status.json").write_text(json.dumps({
        "state": "failed", "step": 21, "resumable": False,
        "message": {"code": "train.status.nan_loss", "args": {"value": "nan", "at": 21, "lr": 1e-3, "saved": 20}}}))
    (d / "job.json").write_text(json.dumps({"id": "copy-nan", "options": {**FAST, "steps": 100}, "command": ["x"]}))
    (d / "checkpoint.pt").write_bytes(b"x")
    m = JobManager(root)
    assert not m.summary("copy-nan")["resumable"] and m.summary("copy-nan")["actions"] == ["delete"]
    with pytest.raises(UserError) as e:
        m.resume("copy-nan")
    assert e.value.message.code == "jobs.errors.cannot_resume"


# -----------------------------------------------------------------------------
# 11. Resume pressed while the stopped trainer is still exiting

def _stopped_run(tmp_path, fake, managers):
    """A run whose fake trainer was running and has just been asked to stop: (manager, id, folder, its pid)."""
    m = JobManager(tmp_path / "runs", python=fake, threads=1)
    managers.append(m)
    rid = m.start(TrainOptions(**FAST, steps=20))
    d = m.root / rid
    wait_for(lambda: m.summary(rid)["state"] == "running", "running")
    first = _launches(d)[0]["pid"]
    m.stop(rid)
    return m, rid, d, first


def test_resume_while_the_stopped_trainer_exits_is_kept(tmp_path, fake, managers):
    m, rid, d, first = _stopped_run(tmp_path, fake, managers)
    wait_for(lambda: m.summary(rid)["state"] == "stopped", "the trainer writes stopped")
    assert pid_alive(first, d)  # ... and is still exiting
    m.resume(rid)
    for _ in range(5):
        m.poll()
    job = json.loads((d / "job.json").read_text())
    assert m.summary(rid)["state"] == "queued" and job["pid"] is None  # waits: one trainer per folder
    assert job["previous_pid"] == first and m._procs[rid].pid == first
    (d / "exit").touch()
    os.waitid(os.P_PID, first, os.WEXITED | os.WNOWAIT)  # exited (not reaped: the manager does that)
    m.poll()  # reaps the old trainer: must not overwrite "queued" with "stopped"; starts the resumed run
    s = m.summary(rid)
    assert s["state"] in ("queued", "running") and s["message"] != Message("jobs.status.exited", {"at": 1}), s
    wait_for(lambda: len(_launches(d)) == 2, "relaunched")
    (d / "exit").unlink()
    (d / "finish").touch()
    wait_for(lambda: (m.poll(), m.summary(rid)["state"])[1] == "done", "done")


# -----------------------------------------------------------------------------
# 7. several servers on one runs folder

def _queue(root: Path, n: int) -> list[str]:
    """n queued runs, written by a manager that never launches (as if its server died after Start)."""
    q = JobManager(root, python="/bin/false", per_owner=100, total=100)
    q.poll = lambda: None
    return [q.start(TrainOptions(**FAST, steps=10 + i)) for i in range(n)]


POLLER = textwrap.dedent('''
    import sys
    sys.path.insert(0, {repo!r})
    from app.jobs import JobManager
    m = JobManager({root!r}, python={fake!r}, max_running=1, threads=1)
    for _ in range(40):
        m.poll()
''')


def test_two_managers_on_one_folder_never_launch_a_run_twice(tmp_path, fake, managers):
    root = tmp_path / "runs"
    ids = _queue(root, 4)
    a = JobManager(root, python=fake, max_running=1, threads=1)
    b = JobManager(root, python=fake, max_running=1, threads=1)
    managers += [a, b]
    repo = str(Path(__file__).resolve().parents[2])
    for round_ in range(len(ids)):
        # Threads of both managers and two other server processes poll at once.
        threads = [threading.Thread(target=lambda m=m: [m.poll() for _ in range(25)]) for m in (a, b, a, b)]
        procs = [subprocess.Popen([sys.executable, "-c", POLLER.format(repo=repo, root=str(root), fake=fake)])
                 for _ in range(2 if round_ < 2 else 0)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for p in procs:
            assert p.wait(120) == 0
        states = lambda: [json.loads((root / r / "status.json").read_text())["state"] for r in ids]
        # a just-launched fake trainer writes "running" itself, a moment after its launch is recorded
        wait_for(lambda: "running" in states(), "the launched trainer runs")
        running = [r for r, s in zip(ids, states()) if s == "running"]
        launched = [r for r in ids if _launches(root / r)]
        assert len(running) == 1 and len(launched) == round_ + 1, (running, launched)
        (root / running[0] / "finish").touch()
        wait_for(lambda: json.loads((root / running[0] / "status.json").read_text())["state"] == "done", "done")
        a.poll()
    for r in ids:
        assert len(_launches(root / r)) == 1, r  # each run started exactly once
        assert a.summary(r)["state"] == "done" and b.summary(r)["state"] == "done"


def test_a_crash_seen_first_by_the_other_manager_keeps_its_error(tmp_path, fake, managers):
    """A launches a trainer that crashes; B polls before A reaps it (B sees a zombie): the run is "failed"
    with the trainer's error, and A's later clean-up keeps that status."""
    root = tmp_path / "runs"
    a = JobManager(root, python=fake, max_running=1, threads=1)
    managers.append(a)
    rid = a.start(TrainOptions(**FAST, steps=10))
    d = root / rid
    wait_for(lambda: a.summary(rid)["state"] == "running", "running")
    pid = _launches(d)[0]["pid"]
    (d / "crash").touch()
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    b = JobManager(root, python=fake, max_running=1, threads=1)
    s = b.summary(rid)
    assert s["state"] == "failed" and s["message"].code == "jobs.status.vanished_with", s
    assert "No space left on device" in s["message"].args["detail"]
    a.poll()  # A reaps its child (code 1): the status stays the one B wrote
    assert a.summary(rid)["message"] == s["message"] and a.summary(rid)["state"] == "failed"


def test_resume_pressed_as_the_stopped_trainer_exits_is_not_undone(tmp_path, fake, managers):
    """The issue's case: the trainer has written "stopped" and exited, but the manager has not reaped it yet
    when Resume is pressed; the clean-up of that exit must not turn the new "queued" into "stopped"."""
    m, rid, d, first = _stopped_run(tmp_path, fake, managers)
    (d / "exit").touch()
    os.waitid(os.P_PID, first, os.WEXITED | os.WNOWAIT)  # stopped and exited, not yet reaped
    assert json.loads((d / "status.json").read_text())["state"] == "stopped"
    m.resume(rid)  # its own poll reaps the old trainer
    s = m.summary(rid)
    assert s["state"] in ("queued", "running"), s
    (d / "exit").unlink()
    wait_for(lambda: len(_launches(d)) == 2, "relaunched")
    (d / "finish").touch()
    wait_for(lambda: (m.poll(), m.summary(rid)["state"])[1] == "done", "done")
