"""The trainer when things go wrong and checkpoint averaging
(`--average-last K`).

- a save that fails (disk full, read-only) ends the run "failed" with a translated message, never a
  traceback, and the temporary files a killed save leaves are removed at the next start;
- two trainers on one folder: the second refuses and leaves the first one's files alone;
- the command line sees every explicitly given option (`--steps=400`), refuses abbreviations and
  numbers that make no sense;
- after a NaN loss the message says what is really on disk, and status.json says whether a resume helps;
- evaluation samples carry bounded strings, whatever the corpus holds;
- a poisoned checkpoint is refused (and never runs), a config.json asking for a huge model is refused
  before anything is allocated;
- the model after `--average-last K` is exactly the mean of the last K checkpoints' weights.

Trainers run in this process through `model.training.train.main` on the `tiny` preset (a few steps each)."""
from __future__ import annotations

import errno
import fcntl
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from app import i18n
from model.training import checkpoint as ckpt_mod
from model.training import train as trainer
from model.training import steps as train_steps
from model.training.checkpoint import CheckpointError, load_model_dir, load_training_state
from model.nn.config import PRESETS
from model.messages import Message
from model.training.run_files import read_metrics
from model.nn.transformer import Transformer
from tests.model.test_trainer import message, status

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
FAST = ["--task", "copy", "--preset", "tiny", "--batch-size", "4", "--warmup", "10", "--threads", "1",
        "--device", "cpu", "--eval-every", "1000", "--log-every", "1"]


def say_in(lang: str, msg: Message, monkeypatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(i18n, "lang", lambda: lang)
        return i18n.say(msg)


def weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file
    return load_file(str(path))


# -----------------------------------------------------------------------------
# 9. a save that fails

DISK_ERRORS = {
    "torch-zip": lambda: RuntimeError("[enforce fail at inline_container.cc:626] . unexpected pos 1216 vs 1114"),
    "enospc": lambda: OSError(errno.ENOSPC, "No space left on device"),
}


@pytest.mark.parametrize("kind", sorted(DISK_ERRORS))
def test_disk_full_during_a_save_fails_clearly(tmp_path, monkeypatch, capsys, kind):
    out = tmp_path / "run"
    calls = {"n": 0}
    real = train_steps.save_training_state

    def save(*a, **k):
        calls["n"] += 1
        if calls["n"] == 2:  # the first checkpoint lands, the second finds the disk full
            raise DISK_ERRORS[kind]()
        return real(*a, **k)
    monkeypatch.setattr(train_steps, "save_training_state", save)
    rc = trainer.main([*FAST, "--steps", "6", "--ckpt-every", "2", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 5, err
    assert "Traceback" not in err and "disk full" in err, err
    st = status(out)
    assert st["state"] == "failed" and st["resumable"] is True, st
    msg = message(out)
    assert msg.code == "train.status.disk_full_kept" and msg.args["step"] == 4 and msg.args["saved"] == 2, msg
    assert isinstance(msg.args["free_mb"], int) and msg.args["free_mb"] >= 0
    en = say_in("en", msg, monkeypatch)
    assert f"disk full ({msg.args['free_mb']:,} MB free)" in en, en
    assert "디스크" in say_in("ko", msg, monkeypatch)
    assert torch.load(out / "checkpoint.pt", weights_only=True)["step"] == 2  # the earlier checkpoint is intact
    assert not list(out.glob(".checkpoint.pt.*.tmp"))


def test_a_read_only_folder_during_a_save_fails_clearly(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"

    def save(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system", str(out / "checkpoint.pt"))
    monkeypatch.setattr(train_steps, "save_training_state", save)
    rc = trainer.main([*FAST, "--steps", "2", "--ckpt-every", "2", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 5 and "Traceback" not in err
    msg = message(out)
    assert msg.code == "train.status.save_failed_no_checkpoint" and "Read-only" in msg.args["detail"], msg
    assert say_in("en", msg, monkeypatch).startswith("could not save at step 2: ")


def test_failed_status_is_still_written_when_no_temporary_file_fits(tmp_path, monkeypatch, capsys):
    """A full disk refuses even status.json's temporary file: the status is then overwritten in place."""
    import model.training.run_files as rf
    out = tmp_path / "run"
    real_atomic = rf.atomic_write_json

    def atomic(path, obj):
        if isinstance(obj, dict) and obj.get("state") == "failed":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_atomic(path, obj)
    monkeypatch.setattr(rf, "atomic_write_json", atomic)
    monkeypatch.setattr(train_steps, "save_training_state",
                        lambda *a, **k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")))
    assert trainer.main([*FAST, "--steps", "2", "--ckpt-every", "2", "--out", str(out)]) == 5
    assert status(out)["state"] == "failed"
    assert message(out).code == "train.status.disk_full_no_checkpoint"
    assert "Traceback" not in capsys.readouterr().err


def test_temporary_files_of_a_killed_save_are_removed_at_the_next_start(tmp_path):
    out = tmp_path / "run"
    assert trainer.main([*FAST, "--steps", "2", "--ckpt-every", "2", "--out", str(out)]) == 0
    leftovers = [out / ".checkpoint.pt.k1l2.tmp", out / "model" / ".model.safetensors.a8b.tmp",
                 out / "model" / ".meta.json.x1.tmp", out / "avg" / ".step-2.safetensors.q.tmp"]
    for p in leftovers:
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"half a file")
    assert trainer.main(["--resume", str(out), "--steps", "3"]) == 0
    assert [p for p in leftovers if p.exists()] == []
    (out / ".checkpoint.pt.z.tmp").write_bytes(b"x")
    assert trainer.main([*FAST, "--steps", "1", "--out", str(out)]) == 0  # a fresh start cleans up too
    assert not (out / ".checkpoint.pt.z.tmp").exists()


# -----------------------------------------------------------------------------
# 10. one trainer per folder

def test_a_second_trainer_on_the_same_folder_refuses(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "status.json").write_text('{"state": "running", "pid": 4242}')
    before = (out / "status.json").read_bytes()
    with open(out / ".trainer.lock", "a+") as held:  # the first trainer holds the folder
        held.write("4242\n")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        rc = trainer.main([*FAST, "--steps", "2", "--out", str(out)])
        err = capsys.readouterr().err
        assert rc == 6, err
        assert "another trainer" in err and "4242" in err, err
        assert (out / "status.json").read_bytes() == before
        assert not (out / "metrics.jsonl").exists() and not (out / "args.json").exists()
    assert trainer.main([*FAST, "--steps", "1", "--out", str(out)]) == 0  # free again once released


@pytest.mark.slow
def test_two_trainer_processes_never_share_a_folder(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "model.training.train", *FAST, "--steps", "100000", "--ckpt-every", "100000",
           "--log-every", "5", "--out", str(out)]
    first = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while status(out).get("step", 0) < 5:
            assert first.poll() is None and time.time() < deadline, first.stderr.read()[-2000:]
            time.sleep(0.05)
        second = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
        assert second.returncode == 6, second.stderr[-2000:]
        assert "another trainer" in second.stderr and str(first.pid) in second.stderr
        st = status(out)
        assert st["state"] == "running" and st["pid"] == first.pid, st
        steps = [r["step"] for r in read_metrics(out / "metrics.jsonl") if r["kind"] == "train"]
        assert steps == sorted(steps) and len(steps) == len(set(steps))  # one writer only
    finally:
        first.terminate()
        first.wait(30)


# -----------------------------------------------------------------------------
# 12. the command line

def test_resume_sees_every_spelling_of_an_explicit_option(tmp_path, capsys):
    out = tmp_path / "run"
    assert trainer.main([*FAST, "--steps", "2", "--ckpt-every", "2", "--out", str(out)]) == 0
    assert trainer.main(["--resume", str(out), "--steps=4"]) == 0
    assert status(out)["step"] == 4 and message(out).args["total"] == 4
    assert json.loads((out / "args.json").read_text())["steps"] == 4
    for abbreviated in (["--step", "6"], ["--ste=6"], ["--lr-fac", "2"]):
        with pytest.raises(SystemExit):
            trainer.main(["--resume", str(out), *abbreviated])
        assert "unrecognized arguments" in capsys.readouterr().err
    assert status(out)["step"] == 4
    # an explicit value equal to the default still wins over the saved one
    assert trainer.main(["--resume", str(out), "--steps", "6", "--warmup=400"]) == 0
    assert json.loads((out / "args.json").read_text())["warmup"] == 400


@pytest.mark.parametrize("argv, says", [
    (["--lr-factor", "-1"], "--lr-factor must be a positive number"),
    (["--lr-factor", "0"], "--lr-factor must be a positive number"),
    (["--lr-factor", "nan"], "--lr-factor must be a positive number"),
    (["--lr-factor", "inf"], "--lr-factor must be a positive number"),
    (["--dropout", "1.5"], "--dropout must be at least 0 and below 1"),
    (["--dropout", "-0.1"], "--dropout must be at least 0 and below 1"),
    (["--label-smoothing", "1"], "--label-smoothing must be at least 0 and below 1"),
    (["--d-model", "0"], "--d-model must be positive"),
    (["--heads", "-2"], "--heads must be positive"),
    (["--layers", "0"], "--layers must be positive"),
    (["--d-ff", "-5"], "--d-ff must be positive"),
    (["--threads", "-1"], "--threads must be 0 or more"),
    (["--seed", "-3"], "--seed must be 0 or more"),
    (["--average-last", "-1"], "--average-last must be 0 or more"),
])
def test_numbers_that_make_no_sense_are_refused(tmp_path, capsys, argv, says):
    with pytest.raises(SystemExit):
        trainer.main([*argv, "--out", str(tmp_path / "run")])
    assert says in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_resume_cannot_bring_in_a_bad_number(tmp_path, capsys):
    out = tmp_path / "run"
    assert trainer.main([*FAST, "--steps", "1", "--out", str(out)]) == 0
    with pytest.raises(SystemExit):
        trainer.main(["--resume", str(out), "--lr-factor=-1"])
    assert "--lr-factor must be a positive number" in capsys.readouterr().err


@pytest.mark.parametrize("fail_at, code, saved, resumable", [
    (5, "train.status.nan_loss_no_checkpoint", None, False),   # nothing saved before the NaN
    (21, "train.status.nan_loss_bad_checkpoint", 20, False),   # the checkpoint is the state that made the NaN
    (25, "train.status.nan_loss", 20, True),                   # an earlier, good checkpoint is kept
])
def test_nan_message_says_what_is_really_kept(tmp_path, monkeypatch, fail_at, code, saved, resumable):
    out = tmp_path / "run"
    rc = trainer.main([*FAST, "--steps", "40", "--ckpt-every", "10", "--fail-at-step", str(fail_at), "--out", str(out)])
    assert rc == 4
    st = status(out)
    assert st["state"] == "failed" and st["resumable"] is resumable, st
    msg = message(out)
    assert msg.code == code and msg.args["at"] == fail_at and msg.args.get("saved") == saved, msg
    en, ko = say_in("en", msg, monkeypatch), say_in("ko", msg, monkeypatch)
    assert f"step {fail_at}" in en and f"{fail_at} 스텝" in ko
    if saved is None:
        assert "no checkpoint" in en.lower() and "checkpoint from step" not in en, en
        assert not (out / "checkpoint.pt").exists()
    elif not resumable:
        assert f"step {saved}" in en and "would repeat" in en, en
    else:
        assert f"The checkpoint from step {saved} is kept" in en, en


def test_a_fresh_run_in_an_old_folder_does_not_count_the_old_checkpoint(tmp_path):
    out = tmp_path / "run"
    assert trainer.main([*FAST, "--steps", "10", "--ckpt-every", "10", "--out", str(out)]) == 0
    assert trainer.main([*FAST, "--steps", "10", "--ckpt-every", "10", "--fail-at-step", "3", "--out", str(out)]) == 4
    assert message(out).code == "train.status.nan_loss_no_checkpoint"
    assert status(out)["resumable"] is False


# -----------------------------------------------------------------------------
# 13. bounded samples

HUGE = "a b c d " * 150_000  # 1.2 MB in one line


def test_evaluation_samples_are_capped():
    from model.inference.evaluate import SAMPLE_CHARS, evaluate
    from model.data.tokenizer import SymbolTokenizer
    from model.data.train_data import TaskData, encode_pairs
    tok = SymbolTokenizer()
    torch.manual_seed(0)
    model = Transformer(PRESETS["tiny"].replace(vocab_size=tok.vocab_size, max_len=12))
    pairs = [(HUGE, HUGE + "x"), ("a b", "a b")]
    data = TaskData(tok, [], encode_pairs(tok, pairs, 12), pairs, False, [])
    ev = evaluate(model, data, "cpu")
    for sample in ev["samples"]:
        for key in ("source", "target", "prediction"):
            assert len(sample[key]) <= SAMPLE_CHARS + 1, (key, len(sample[key]))
    first = ev["samples"][0]
    assert first["source"].endswith("…") and first["source"].startswith("a b c d")
    assert ev["samples"][1]["source"] == "a b"  # short text is left as it is
    assert len(json.dumps(ev)) < 5_000


@pytest.mark.slow
def test_a_huge_corpus_line_keeps_the_run_files_small(tmp_path):
    lines = [f"{'hello world ' * 6_000}{i}\t{'안녕 ' * 4_000}{i}" for i in range(40)]  # 100 kB a line
    tsv = tmp_path / "huge.tsv"
    tsv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert tsv.stat().st_size > 3_000_000
    out = tmp_path / "run"
    assert trainer.main(["--task", "tsv", "--tsv", str(tsv), "--preset", "tiny", "--batch-size", "4", "--steps", "4",
                         "--eval-every", "2", "--log-every", "1", "--threads", "1", "--device", "cpu",
                         "--out", str(out)]) == 0
    assert status(out)["state"] == "done"
    assert (out / "status.json").stat().st_size < 20_000
    assert (out / "metrics.jsonl").stat().st_size < 30_000
    assert all(len(s["source"]) < 1_000 for s in status(out)["samples"])


# -----------------------------------------------------------------------------
# 14. poisoned checkpoints and impossible configs

class Poison:
    """Unpickling this runs a shell command (it would create the marker file)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def poisoned_files(tmp_path: Path) -> dict[str, Path]:
    marker = tmp_path / "PWNED"
    m = Transformer(PRESETS["tiny"])
    state = {"format": "attention-atlas-train/1", "step": 1, "model": m.state_dict(), "optimizer": None,
             "scheduler": None, "config": None, "extra": {"payload": Poison(marker)}}
    files = {"torch.save": tmp_path / "zip.pt", "raw pickle": tmp_path / "raw.pt"}
    torch.save(state, files["torch.save"])
    with open(files["raw pickle"], "wb") as f:
        pickle.dump({"format": "attention-atlas-train/1", "model": {}, "x": Poison(marker)}, f, protocol=2)
    return files


@pytest.mark.parametrize("kind", ["torch.save", "raw pickle"])
def test_a_poisoned_checkpoint_is_refused_and_never_runs(tmp_path, kind):
    path = poisoned_files(tmp_path)[kind]
    with pytest.raises(CheckpointError) as e:
        load_training_state(path, Transformer(PRESETS["tiny"]))
    text = str(e.value)
    assert "refused" in text and "could run code" in text and "system" in text, text
    assert "PyTorch 2.6" not in text and "damaged" not in text, text
    assert not (tmp_path / "PWNED").exists()


def test_resuming_from_a_poisoned_checkpoint_says_refused(tmp_path, monkeypatch):
    out = tmp_path / "run"
    assert trainer.main([*FAST, "--steps", "1", "--out", str(out)]) == 0
    marker = tmp_path / "PWNED"
    state = torch.load(out / "checkpoint.pt", weights_only=True)
    state["extra"]["payload"] = Poison(marker)
    torch.save(state, out / "checkpoint.pt")
    assert trainer.main(["--resume", str(out), "--steps", "2"]) == 3
    msg = message(out)
    assert msg.code == "train.status.cannot_resume" and "refused" in msg.args["detail"], msg
    assert not marker.exists()


def test_a_config_asking_for_a_huge_model_is_refused_before_allocating(tmp_path, monkeypatch):
    from safetensors.torch import save_model
    small = Transformer(PRESETS["tiny"])
    d = tmp_path / "model"
    d.mkdir()
    save_model(small, str(d / "model.safetensors"))
    (d / "meta.json").write_text('{"has_tokenizer": false}')
    (d / "config.json").write_text(json.dumps(PRESETS["tiny"].replace(vocab_size=4_000_000).to_dict()))
    built = []
    real = ckpt_mod.Transformer

    def spy(config, *a, **k):
        built.append(config.vocab_size)
        return real(config, *a, **k)
    monkeypatch.setattr(ckpt_mod, "Transformer", spy)
    with pytest.raises(CheckpointError) as e:
        load_model_dir(d)
    assert built == [], "a model was allocated before refusing"
    text = str(e.value)
    assert "config.json" in text and "parameters" in text, text
    # memory this machine does not have is refused too, with the estimate
    big = PRESETS["tiny"].replace(vocab_size=300_000, d_model=1024, d_ff=1024, n_heads=8)
    (d / "config.json").write_text(json.dumps(big.to_dict()))
    monkeypatch.setattr(ckpt_mod, "stored_values", lambda path: 10**12)  # as if the file held enough
    monkeypatch.setattr(ckpt_mod, "available_memory", lambda: 200 * 2**20)
    with pytest.raises(CheckpointError, match="GiB of memory"):
        load_model_dir(d)
    assert built == []
    # a sound model directory still loads
    (d / "config.json").write_text(json.dumps(PRESETS["tiny"].to_dict()))
    monkeypatch.undo()
    assert load_model_dir(d).config == PRESETS["tiny"]


# -----------------------------------------------------------------------------
# checkpoint averaging

def test_averaging_k_checkpoints_is_the_mean_of_their_weights(tmp_path):
    from model.training.checkpoint import average_into, save_weights
    torch.manual_seed(0)
    models = [Transformer(PRESETS["tiny"]) for _ in range(3)]
    paths = []
    for i, m in enumerate(models):
        paths.append(tmp_path / f"step-{i}.safetensors")
        save_weights(paths[-1], m)
    target = Transformer(PRESETS["tiny"])
    average_into(target, paths)
    for name, p in target.named_parameters():
        expected = torch.stack([dict(m.named_parameters())[name].detach() for m in models]).mean(0)
        torch.testing.assert_close(p.detach(), expected, rtol=1e-6, atol=1e-7)
    # tied weights stay tied
    sd = target.state_dict()
    assert sd["src_embed.token.weight"].data_ptr() == sd["tgt_embed.token.weight"].data_ptr()


def run_avg(out: Path, steps: int, *extra: str) -> int:
    return trainer.main([*FAST, "--steps", str(steps), "--ckpt-every", "2", "--average-last", "3",
                         "--dropout", "0.1", "--out", str(out), *extra])


def test_average_last_makes_the_model_the_mean_and_resume_keeps_working(tmp_path, monkeypatch):
    whole = tmp_path / "whole"
    assert run_avg(whole, 10) == 0
    snaps = sorted((whole / "avg").glob("step-*.safetensors"))
    assert [p.name for p in snaps] == ["step-10.safetensors", "step-6.safetensors", "step-8.safetensors"]  # pruned
    model_w = weights(whole / "model" / "model.safetensors")
    snap_w = [weights(p) for p in snaps]
    for name, value in model_w.items():
        torch.testing.assert_close(value, torch.stack([s[name] for s in snap_w]).mean(0), rtol=1e-6, atol=1e-7)
    st = status(whole)
    assert st["averaged"]["steps"] == [6, 8, 10] and "val_loss" in st["averaged"], st
    msg = message(whole)
    assert msg.code == "train.status.finished_averaged" and msg.args["steps"] == "6, 8, 10"
    assert "6, 8, 10" in say_in("en", msg, monkeypatch) and "6, 8, 10" in say_in("ko", msg, monkeypatch)
    meta = json.loads((whole / "model" / "meta.json").read_text())
    assert meta["averaged_steps"] == [6, 8, 10] and meta["step"] == 10
    # the checkpoint keeps the trained (not averaged) weights, so training can go on from it
    ck = torch.load(whole / "checkpoint.pt", weights_only=True)
    assert ck["step"] == 10
    torch.testing.assert_close(ck["model"]["src_embed.token.weight"], snap_w[0]["src_embed.token.weight"])  # step 10
    assert not torch.equal(ck["model"]["src_embed.token.weight"], model_w["src_embed.token.weight"])

    part = tmp_path / "part"
    assert run_avg(part, 6) == 0
    (part / "avg" / "step-12.safetensors").write_bytes(b"from a run killed after its checkpoint")
    assert trainer.main(["--resume", str(part), "--steps", "10"]) == 0
    assert sorted(p.name for p in (part / "avg").glob("step-*.safetensors")) == \
        ["step-10.safetensors", "step-6.safetensors", "step-8.safetensors"]
    for name, value in weights(part / "model" / "model.safetensors").items():
        torch.testing.assert_close(value, model_w[name], rtol=1e-5, atol=1e-6)  # as if never interrupted
    assert status(part)["averaged"]["steps"] == [6, 8, 10]


def test_average_last_goes_into_the_export_and_its_card(tmp_path):
    out, dest = tmp_path / "run", tmp_path / "export"
    assert run_avg(out, 4, "--export", str(dest)) == 0
    meta = json.loads((dest / "meta.json").read_text())
    assert meta["averaged_steps"] == [2, 4]
    card = (dest / "CARD.md").read_text()
    assert "mean of the last 2 checkpoints (steps 2, 4)" in card, card
    for name, value in weights(dest / "model.safetensors").items():
        torch.testing.assert_close(value, weights(out / "model" / "model.safetensors")[name])
