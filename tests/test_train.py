"""The trainer on its own (`python -m model.train`, no app): it learns, it survives being killed,
it fails clearly on bad input, and DDP replicas end with identical weights.

Every run is a real subprocess (the trainer installs signal handlers; pytest's must stay intact)
on the `tiny` preset, one CPU thread, so the whole file takes well under a minute."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from model.train import read_json, read_metrics

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
# A recipe that learns the copy task in 300 steps (checked: val token accuracy ≈ 1.0 at step 300).
TINY = ["--task", "copy", "--preset", "tiny", "--batch-size", "32", "--warmup", "100",
        "--lr-factor", "0.5", "--threads", "1", "--device", "cpu"]


def trainer(*args: str) -> list[str]:
    return [sys.executable, "-m", "model.train", *args]


def run_trainer(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(trainer(*args), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)


def status(out: Path) -> dict:
    return read_json(out / "status.json", {}) or {}


def checkpoint_step(out: Path) -> int:
    return int(torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=True)["step"])


def wait_for(pred, proc: subprocess.Popen, timeout: float = 60, what: str = ""):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        if proc.poll() is not None:
            raise AssertionError(f"trainer exited with {proc.returncode} before {what}: {proc.stderr.read()[-2000:]}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def learned(tmp_path_factory) -> Path:
    """One uninterrupted 300-step copy run, shared by the tests below."""
    out = tmp_path_factory.mktemp("learned") / "run"
    r = run_trainer(*TINY, "--steps", "300", "--eval-every", "100", "--ckpt-every", "100",
                    "--log-every", "10", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def test_learns_the_copy_task(learned):
    st = status(learned)
    assert st["state"] == "done" and st["step"] == st["total_steps"] == 300, st
    assert st["val_token_acc"] >= 0.9, st
    assert st["val_exact"] >= 0.5, st
    assert len(st["samples"]) == 3 and all({"source", "target", "prediction"} <= set(s) for s in st["samples"])
    recs = read_metrics(learned / "metrics.jsonl")
    evals = [r for r in recs if r["kind"] == "eval"]
    assert [r["step"] for r in evals] == [100, 200, 300]
    assert evals[-1]["val_loss"] < evals[0]["val_loss"]
    train = [r for r in recs if r["kind"] == "train"]
    assert [r["step"] for r in train] == list(range(10, 301, 10))
    assert all(r["lr"] > 0 and r["tokens_per_second"] > 0 for r in train)
    # Speed leaves evaluation and saving out: the logging windows holding one are not slower.
    tps = {r["step"]: r["tokens_per_second"] for r in train}
    median = sorted(tps.values())[len(tps) // 2]
    assert (tps[110] + tps[210]) / 2 > 0.5 * median, tps
    # Everything the inspector and the app need is on disk.
    for name in ("args.json", "config.json", "checkpoint.pt", "model/config.json", "model/model.safetensors",
                 "model/meta.json"):
        assert (learned / name).is_file(), name
    assert checkpoint_step(learned) == 300


def test_killed_run_resumes_from_its_checkpoint(learned, tmp_path):
    """SIGKILL after the first checkpoint, then --resume: the run reaches its total, the metrics
    continue from the checkpoint's step, and the weights match the uninterrupted run."""
    out = tmp_path / "run"
    proc = subprocess.Popen(trainer(*TINY, "--steps", "300", "--eval-every", "100", "--ckpt-every", "100",
                                    "--log-every", "10", "--out", str(out)),
                            cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (out / "checkpoint.pt").exists(), proc, what="the first checkpoint")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    ck = checkpoint_step(out)
    assert ck in (100, 200), ck
    assert status(out)["state"] == "running"  # what a vanished process leaves behind
    before = len(read_metrics(out / "metrics.jsonl"))

    r = run_trainer("--resume", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    st = status(out)
    assert st["state"] == "done" and st["step"] == 300, st
    assert checkpoint_step(out) == 300
    resumed = [x for x in read_metrics(out / "metrics.jsonl")[before:] if x["kind"] == "train"]
    assert [x["step"] for x in resumed] == list(range(ck + 10, 301, 10))
    # Batches depend only on (seed, step): the resumed run ends where the uninterrupted one did.
    assert st["val_loss"] == pytest.approx(status(learned)["val_loss"], rel=1e-3, abs=1e-4)


def test_sigterm_stops_with_a_checkpoint(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(trainer(*TINY, "--steps", "5000", "--log-every", "5", "--eval-every", "5000",
                                    "--ckpt-every", "5000", "--out", str(out)),
                            cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: status(out).get("step", 0) >= 10, proc, what="step 10")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    st = status(out)
    assert st["state"] == "stopped", st
    assert 10 <= st["step"] < 5000
    assert "resume" in st["message"]
    assert checkpoint_step(out) == st["step"]  # the stopped run saved where it stopped
    assert (out / "model" / "model.safetensors").is_file()


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_checkpoint_fails_clearly(learned, tmp_path, damage):
    out = tmp_path / "run"
    out.mkdir()
    for name in ("args.json", "status.json", "metrics.jsonl"):
        (out / name).write_bytes((learned / name).read_bytes())
    data = (learned / "checkpoint.pt").read_bytes()
    (out / "checkpoint.pt").write_bytes(data[: len(data) // 2] if damage == "truncated" else b"not a checkpoint\n")
    r = run_trainer("--resume", str(out), "--steps", "400")
    assert r.returncode == 3
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    st = status(out)
    assert st["state"] == "failed"
    assert "checkpoint.pt" in st["message"] and "resume" in st["message"], st["message"]


def test_bad_tsv_names_the_line(tmp_path):
    tsv = tmp_path / "corpus.tsv"
    tsv.write_text("hello\t안녕\nthank you\t고마워\none\ttwo\tthree\n", encoding="utf-8")
    out = tmp_path / "run"
    r = run_trainer("--task", "tsv", "--tsv", str(tsv), "--preset", "tiny", "--steps", "10", "--out", str(out))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    st = status(out)
    assert st["state"] == "failed"
    assert "line 3" in st["message"] and "columns" in st["message"], st["message"]


def test_nan_loss_stops_and_keeps_the_checkpoint(tmp_path):
    out = tmp_path / "run"
    r = run_trainer(*TINY, "--steps", "100", "--ckpt-every", "10", "--log-every", "5", "--eval-every", "1000",
                    "--fail-at-step", "25", "--out", str(out))
    assert r.returncode == 4
    assert "Traceback" not in r.stderr
    st = status(out)
    assert st["state"] == "failed"
    msg = st["message"]
    assert "nan" in msg.lower() and "step 25" in msg and "step 20" in msg, msg
    assert checkpoint_step(out) == 20  # the earlier checkpoint is kept, not overwritten
    assert json.loads((out / "model" / "meta.json").read_text())["step"] == 20


def test_ddp_replicas_hold_identical_weights(tmp_path):
    """Two CPU processes (gloo) under torchrun: after training, every rank's weights are the same."""
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1", "--nproc_per_node", "2",
           "-m", "model.train", *TINY, "--steps", "20", "--log-every", "5", "--eval-every", "20",
           "--ckpt-every", "20", "--out", str(out)]
    r = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    st = status(out)
    assert st["state"] == "done" and st["step"] == 20 and st["world_size"] == 2, st
    sums = st["replica_checksums"]
    assert len(sums) == 2
    assert sums[0] == sums[1], sums
    assert all(abs(v) > 0 for v in sums[0])
