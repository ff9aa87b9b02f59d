"""The job manager (app/jobs.py) without Streamlit: validation, the queue, stop / resume / delete,
and recovery after a server restart, with real tiny trainer subprocesses in a temporary RUNS."""
from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest
import torch

from app.jobs import (MAX_PARAMETERS, JobError, JobManager, TrainOptions, clean_metrics, corpus_message_ko,
                      get_manager, pid_alive, runs_dir, validate_upload)
from model.config import TransformerConfig
from model.transformer import Transformer

FAST = dict(task="copy", size="tiny", batch_size=32, warmup=100, lr_factor=0.5)


def tsv_bytes(n: int = 40) -> bytes:
    words = ["cat", "dog", "bird", "fish", "tree", "sun", "moon", "star"]
    ko = ["고양이", "개", "새", "물고기", "나무", "해", "달", "별"]
    return "".join(f"the {words[i % 8]} {i}\t{ko[i % 8]} {i}\n" for i in range(n)).encode()


@pytest.fixture
def mgr(tmp_path):
    m = JobManager(tmp_path / "runs", max_running=1, threads=1)
    yield m
    for d in m.root.iterdir():  # never leave a trainer behind
        st = json.loads((d / "status.json").read_text()) if (d / "status.json").exists() else {}
        job = json.loads((d / "job.json").read_text()) if (d / "job.json").exists() else {}
        for pid in {st.get("pid"), job.get("pid")} - {None}:
            if pid_alive(pid, d):
                os.kill(pid, signal.SIGKILL)
    for p in m._procs.values():
        p.wait(10)


def wait_state(m: JobManager, rid: str, states, timeout: float = 90, step: int | None = None) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        m.poll()
        s = m.summary(rid)
        if s["state"] in states and (step is None or s["step"] >= step):
            return s
        time.sleep(0.2)
    raise AssertionError(f"{rid} never reached {states}: {m.summary(rid)} / {m.log_tail(rid)}")


# -----------------------------------------------------------------------------
# validation (no subprocess)

@pytest.mark.parametrize("changes, en, ko", [
    (dict(size="custom", d_model=64, heads=3), "must divide d_model", "나누어떨어지게"),
    (dict(size="custom", d_model=1024), "between 8 and 512", "사이여야"),
    (dict(size="custom", layers=7), "between 1 and 6", "사이여야"),
    (dict(steps=20001), "between 1 and 20000", "사이여야"),
    (dict(steps=0), "between 1 and 20000", "사이여야"),
    (dict(batch_size=1000), "Batch size", "배치 크기"),
    (dict(task="nope"), "Unknown task", "알 수 없는"),
    (dict(task="tsv"), "Upload a TSV", "TSV 파일"),
    (dict(task="tsv", tsv_bytes=b"a\tb\nc\td\te\n", tsv_name="x.tsv"), "x.tsv: line 2: expected 2 tab-separated",
     "x.tsv: 2번째 줄: 탭으로 나뉜 열이 2개여야"),
    (dict(task="tsv", tsv_bytes=b"ok\tfine\n\xff\xfe\tbad\n"), "line 2: not valid UTF-8", "2번째 줄: 올바른 UTF-8이"),
    (dict(task="tsv", tsv_bytes=b"a\tb\n" * 3), "only 3 pairs", "3개뿐"),
    (dict(task="tsv", tsv_bytes=b"a\tb\n" * 1_500_000), "limit is 5,000,000 bytes", "한도 5,000,000바이트"),
])
def test_bad_options_are_refused_with_a_message(mgr, changes, en, ko):
    with pytest.raises(JobError) as info:
        mgr.start(TrainOptions(**{**FAST, **changes}))
    assert en in info.value.en, info.value.en
    assert ko in info.value.ko, info.value.ko
    assert list(mgr.root.iterdir()) in ([], [mgr.root / ".jobs.lock"])  # nothing created


def test_parameter_limit(mgr):
    big = TrainOptions(task="en-ko", size="custom", d_model=512, heads=8, d_ff=2048, layers=6)
    assert mgr.estimate(big)["parameters"] > MAX_PARAMETERS
    with pytest.raises(JobError, match="parameters; the limit"):
        mgr.start(big)


def test_upload_checks():
    assert len(validate_upload(tsv_bytes(25))) == 25
    assert len(validate_upload("\ufeffhello\t안녕\n".encode() * 20)) == 20  # a BOM is fine
    with pytest.raises(JobError) as e:
        validate_upload(b"a\tb\n" * 30 + b"\tb\n")
    assert "line 31: the first column is empty" in e.value.en and "31번째 줄" in e.value.ko
    assert corpus_message_ko("line 7: empty line") == "7번째 줄: 빈 줄입니다"


def test_estimate_counts_exactly(mgr):
    o = TrainOptions(**{**FAST, "size": "custom", "d_model": 32, "heads": 2, "d_ff": 64, "layers": 1})
    est = mgr.estimate(o)
    cfg = TransformerConfig.from_dict(est["config"])
    assert (cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.n_encoder_layers, cfg.vocab_size) == (32, 2, 64, 1, 14)
    assert est["parameters"] == Transformer(cfg).num_parameters()
    assert est["memory_bytes"] >= 16 * est["parameters"]
    assert 0 < est["seconds"] < 600 and est["machine_flops"] > 0
    lm = mgr.estimate(TrainOptions(task="lm", size="small"))
    assert TransformerConfig.from_dict(lm["config"]).architecture == "decoder-only"


def test_clean_metrics_keeps_the_resumed_records():
    recs = [{"kind": "train", "step": s, "loss": 1} for s in (10, 20, 30)] + \
           [{"kind": "eval", "step": 20, "val_loss": 1}] + \
           [{"kind": "train", "step": s, "loss": 2} for s in (30, 40)]  # resumed from step 20
    out = clean_metrics(recs)
    assert [(r["kind"], r["step"], r.get("loss")) for r in out] == [
        ("train", 10, 1), ("train", 20, 1), ("eval", 20, None), ("train", 30, 2), ("train", 40, 2)]


def test_run_ids_are_checked(mgr):
    for bad in ("../etc", "a/b", "", ".hidden"):
        with pytest.raises(JobError):
            mgr.run_path(bad)


def test_runs_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "elsewhere"))
    assert runs_dir() == (tmp_path / "elsewhere").resolve()
    a = get_manager(str(runs_dir()))
    assert a is get_manager(str(runs_dir())) and a.root == (tmp_path / "elsewhere").resolve()
    monkeypatch.delenv("ATLAS_RUNS_DIR")
    assert runs_dir().name == "runs" and runs_dir().parent == Path(__file__).resolve().parent.parent


def test_pid_alive_guards_against_reuse(tmp_path):
    assert not pid_alive(None) and not pid_alive(0) and not pid_alive("x")
    assert not pid_alive(2 ** 22 + 12345)
    # This pytest process is alive, but it is not a trainer of that folder (a reused pid).
    assert not pid_alive(os.getpid(), tmp_path / "copy-1")


# -----------------------------------------------------------------------------
# real runs

def test_start_runs_to_done(mgr):
    rid = mgr.start(TrainOptions(**{**FAST, "steps": 40}))
    assert re.fullmatch(r"copy-\d{8}-\d{6}", rid)
    d = mgr.root / rid
    job = json.loads((d / "job.json").read_text())
    assert job["options"]["steps"] == 40 and "--out" in job["command"] and job["pid"]
    s = wait_state(mgr, rid, {"done", "failed"})
    assert s["state"] == "done", s
    assert (s["step"], s["total"], s["task"]) == (40, 40, "copy")
    assert s["inspectable"] and not s["resumable"] and s["parameters"] == 168320
    assert s["config"]["d_model"] == 64 and len(s["samples"]) == 3
    assert s["val_token_acc"] is not None and s["tokens_per_second"] > 0
    recs = mgr.read_metrics(rid)
    assert recs[-1]["step"] == 40 and {"train", "eval"} <= {r["kind"] for r in recs}
    md = mgr.model_dir(rid)
    assert md is not None and md.is_absolute() and (md / "model.safetensors").is_file()
    assert "$ " in (d / "train.log").read_text()
    assert [r["id"] for r in mgr.list_runs()] == [rid]
    mgr.delete(rid)
    assert not d.exists() and mgr.list_runs() == []


def test_queue_stop_resume_delete(mgr):
    """One slot: the second run waits until the first is stopped; a queued run can be taken off the
    queue and put back; a running run cannot be deleted. The queued one is an uploaded TSV corpus."""
    a = mgr.start(TrainOptions(**{**FAST, "steps": 5000}))
    b = mgr.start(TrainOptions(**{**FAST, "task": "tsv", "steps": 10, "tsv_bytes": tsv_bytes(40),
                                  "tsv_name": "mine.tsv"}))
    c = mgr.start(TrainOptions(**{**FAST, "steps": 10}))
    assert b != a and b.startswith("tsv-")
    wait_state(mgr, a, {"running"}, step=1)
    assert mgr.summary(b)["state"] == "queued" and mgr.summary(c)["state"] == "queued"
    assert (mgr.root / b / "corpus.tsv").read_bytes() == tsv_bytes(40)
    with pytest.raises(JobError, match="stop it before deleting"):
        mgr.delete(a)
    mgr.stop(c)  # off the queue, never launched
    assert mgr.summary(c)["state"] == "stopped" and mgr.summary(c)["resumable"]
    assert json.loads((mgr.root / c / "job.json").read_text())["pid"] is None

    mgr.stop(a)  # SIGTERM: the trainer checkpoints and writes "stopped"
    sa = wait_state(mgr, a, {"stopped", "failed"})
    assert sa["state"] == "stopped" and 0 < sa["step"] < 5000, sa
    assert sa["resumable"] and sa["inspectable"]
    sb = wait_state(mgr, b, {"done", "failed"})  # started when the slot freed
    assert sb["state"] == "done" and sb["task"] == "tsv", (sb, mgr.log_tail(b))

    mgr.resume(c)
    assert mgr.summary(c)["state"] in ("queued", "running")
    sc = wait_state(mgr, c, {"done", "failed"})
    assert sc["state"] == "done" and sc["step"] == 10
    with pytest.raises(JobError, match="cannot be resumed"):
        mgr.resume(c)
    mgr.delete(a)
    assert {r["id"] for r in mgr.list_runs()} == {b, c}


def test_restart_finds_a_killed_run_and_resumes_it(tmp_path):
    """The server dies (its manager is gone) and the trainer with it; a new manager over the same
    folder marks the run "stopped", and resume finishes it from the checkpoint."""
    root = tmp_path / "runs"
    first = JobManager(root, max_running=1, threads=1)
    rid = first.start(TrainOptions(**{**FAST, "steps": 150}))  # checkpoints every 15 steps
    d = root / rid
    deadline = time.time() + 90
    while not (d / "checkpoint.pt").exists():
        assert time.time() < deadline, first.log_tail(rid)
        time.sleep(0.05)
    pid = json.loads((d / "job.json").read_text())["pid"]
    os.kill(pid, signal.SIGKILL)
    first._procs[rid].wait(10)  # (the dead server would not reap it; the zombie check covers that)
    first._procs.clear()
    del first
    assert json.loads((d / "status.json").read_text())["state"] in ("running", "queued")

    second = JobManager(root, max_running=1, threads=1)
    s = second.summary(rid)
    assert s["state"] == "stopped" and s["resumable"], s
    assert "gone" in s["message"]
    ck = int(torch.load(d / "checkpoint.pt", weights_only=True)["step"])
    second.resume(rid)
    s = wait_state(second, rid, {"done", "failed"})
    assert s["state"] == "done" and s["step"] == 150, (s, second.log_tail(rid))
    steps = [r["step"] for r in second.read_metrics(rid) if r["kind"] == "train"]
    assert steps == sorted(set(steps)) and steps[-1] == 150 and ck in steps


def test_restart_with_a_reused_pid_and_a_waiting_queue(tmp_path):
    """A status.json claiming "running" with a pid that now belongs to another program is stopped;
    a run still waiting in the queue is started by the new manager."""
    root = tmp_path / "runs"
    fake = root / "copy-20000101-000000"
    fake.mkdir(parents=True)
    (fake / "status.json").write_text(json.dumps({"state": "running", "step": 7, "pid": os.getpid()}))
    m = JobManager(root, max_running=1, threads=1)
    assert m.summary(fake.name)["state"] == "stopped"
    assert not m.summary(fake.name)["managed"]
    # A run queued by a manager that then went away: the next manager starts it.
    q = JobManager(root, max_running=1, threads=1)
    q.poll = lambda: None  # this one only queues (as if the server died right after start())
    rid = q.start(TrainOptions(**{**FAST, "steps": 10}))
    assert q.summary(rid)["state"] == "queued"
    m2 = JobManager(root, max_running=1, threads=1)
    s = wait_state(m2, rid, {"done", "failed"})
    assert s["state"] == "done", (s, m2.log_tail(rid))
