"""The trainer on its own (`python -m model.training.train`, no app): it learns, it survives being killed,
it fails clearly on bad input (status messages are catalogue codes), DDP replicas end with identical
weights, `--config` builds exactly the model it is given; plus the run files it writes
(model/training/run_files.py) and the export with its model card (model/training/export.py).

Trainer runs are real subprocesses (the trainer installs signal handlers) on the `tiny` preset, one
CPU thread; they are marked slow."""
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

from app import i18n
from model.training import options
from model.training import train as trainer
from model.nn.config import PRESETS, TransformerConfig
from model.messages import Message
from model.training.run_files import Run, clean_metrics, read_json, read_metrics, status_message

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
# A recipe that learns the copy task in 300 steps (checked: val token accuracy ≈ 1.0 at step 300).
TINY = ["--task", "copy", "--preset", "tiny", "--batch-size", "32", "--warmup", "100",
        "--lr-factor", "0.5", "--threads", "1", "--device", "cpu"]


def trainer_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "model.training.train", *args]


def run_trainer(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(trainer_cmd(*args), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)


def status(out: Path) -> dict:
    return read_json(out / "status.json", {}) or {}


def message(out: Path) -> Message:
    msg = status_message(status(out).get("message"))
    assert isinstance(msg, Message), status(out)
    return msg


def say_in(lang: str, msg: Message, monkeypatch) -> str:
    monkeypatch.setattr(i18n, "lang", lambda: lang)
    return i18n.say(msg)


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


# -----------------------------------------------------------------------------
# the training loop and the command line

@pytest.mark.slow
def test_learns_the_copy_task(learned, monkeypatch):
    st = status(learned)
    assert st["state"] == "done" and st["step"] == st["total_steps"] == 300, st
    assert st["val_token_acc"] >= 0.9, st
    assert st["val_exact"] >= 0.5, st
    assert len(st["samples"]) == 3 and all({"source", "target", "prediction"} <= set(s) for s in st["samples"])
    done = message(learned)
    assert done.code == "train.status.finished" and done.args["total"] == 300
    assert say_in("en", done, monkeypatch).startswith("finished 300 steps in ")
    assert say_in("ko", done, monkeypatch).startswith("300 스텝을 ")
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


@pytest.mark.slow
def test_killed_run_resumes_from_its_checkpoint(learned, tmp_path):
    """SIGKILL after the first checkpoint, then --resume: the run reaches its total, the metrics
    continue from the checkpoint's step, and the weights match the uninterrupted run."""
    out = tmp_path / "run"
    proc = subprocess.Popen(trainer_cmd(*TINY, "--steps", "300", "--eval-every", "100", "--ckpt-every", "100",
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


@pytest.mark.slow
def test_sigterm_stops_with_a_checkpoint(tmp_path, monkeypatch):
    out = tmp_path / "run"
    proc = subprocess.Popen(trainer_cmd(*TINY, "--steps", "5000", "--log-every", "5", "--eval-every", "5000",
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
    assert message(out) == Message("train.status.stopped", {"at": st["step"]})
    assert "resume" in say_in("en", message(out), monkeypatch)
    assert checkpoint_step(out) == st["step"]  # the stopped run saved where it stopped
    assert (out / "model" / "model.safetensors").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_checkpoint_fails_clearly(learned, tmp_path, damage, monkeypatch):
    out = tmp_path / "run"
    out.mkdir()
    for name in ("args.json", "status.json", "metrics.jsonl"):
        (out / name).write_bytes((learned / name).read_bytes())
    data = (learned / "checkpoint.pt").read_bytes()
    (out / "checkpoint.pt").write_bytes(data[: len(data) // 2] if damage == "truncated" else b"not a checkpoint\n")
    r = run_trainer("--resume", str(out), "--steps", "400")
    assert r.returncode == 3
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert status(out)["state"] == "failed"
    msg = message(out)
    assert msg.code == "train.status.cannot_resume" and "checkpoint.pt" in msg.args["detail"], msg
    assert say_in("en", msg, monkeypatch).startswith("cannot resume: ")
    assert say_in("ko", msg, monkeypatch).startswith("이어서 학습할 수 없습니다: ")


@pytest.mark.slow
def test_bad_tsv_names_the_line(tmp_path, monkeypatch):
    tsv = tmp_path / "corpus.tsv"
    tsv.write_text("hello\t안녕\nthank you\t고마워\none\ttwo\tthree\n", encoding="utf-8")
    out = tmp_path / "run"
    r = run_trainer("--task", "tsv", "--tsv", str(tsv), "--preset", "tiny", "--steps", "10", "--out", str(out))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert status(out)["state"] == "failed"
    msg = message(out)
    assert msg == Message("train.status.corpus", {"problem": Message("train.corpus.columns", {"line": 3, "found": 3})})
    assert say_in("en", msg, monkeypatch) == "corpus: line 3: expected 2 tab-separated columns, found 3"
    assert say_in("ko", msg, monkeypatch) == "코퍼스 오류: 3번째 줄: 탭으로 나뉜 열이 2개여야 하는데 3개입니다"


@pytest.mark.slow
def test_nan_loss_stops_and_keeps_the_checkpoint(tmp_path, monkeypatch):
    out = tmp_path / "run"
    r = run_trainer(*TINY, "--steps", "100", "--ckpt-every", "10", "--log-every", "5", "--eval-every", "1000",
                    "--fail-at-step", "25", "--out", str(out))
    assert r.returncode == 4
    assert "Traceback" not in r.stderr
    assert status(out)["state"] == "failed"
    msg = message(out)
    assert msg.code == "train.status.nan_loss" and (msg.args["at"], msg.args["saved"]) == (25, 20), msg
    text = say_in("en", msg, monkeypatch)
    assert "nan" in text.lower() and "step 25" in text and "step 20" in text, text
    assert "25 스텝에서 손실이 nan" in say_in("ko", msg, monkeypatch)
    assert checkpoint_step(out) == 20  # the earlier checkpoint is kept, not overwritten
    assert json.loads((out / "model" / "meta.json").read_text())["step"] == 20


@pytest.mark.slow
def test_ddp_replicas_hold_identical_weights(tmp_path):
    """Two CPU processes (gloo) under torchrun: after training, every rank's weights are the same."""
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1", "--nproc_per_node", "2",
           "-m", "model.training.train", *TINY, "--steps", "20", "--log-every", "5", "--eval-every", "20",
           "--ckpt-every", "20", "--out", str(out)]
    r = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    st = status(out)
    assert st["state"] == "done" and st["step"] == 20 and st["world_size"] == 2, st
    sums = st["replica_checksums"]
    assert len(sums) == 2
    assert sums[0] == sums[1], sums
    assert all(abs(v) > 0 for v in sums[0])


ODD = PRESETS["tiny"].replace(vocab_size=20, d_model=32, n_heads=2, d_ff=48, n_encoder_layers=1, n_decoder_layers=2,
                              max_len=40, positional="learned", dropout=0.05)  # no flag combination gives this


@pytest.mark.slow
@pytest.mark.parametrize("given", ["file", "text"])
def test_config_builds_exactly_that_model(tmp_path, given):
    """--config (a file, or JSON text) is the model, field for field: config.json, the saved model and
    the checkpoint all hold it; args.json keeps it so --resume builds it again."""
    path = tmp_path / "wanted.json"
    path.write_text(json.dumps(ODD.to_dict()))
    out = tmp_path / "run"
    value = str(path) if given == "file" else json.dumps(ODD.to_dict())
    assert trainer.main(["--config", value, "--task", "copy", "--steps", "3", "--batch-size", "4", "--eval-every", "3",
                         "--threads", "1", "--device", "cpu", "--out", str(out)]) == 0
    assert status(out)["state"] == "done"
    assert TransformerConfig.from_dict(json.loads((out / "config.json").read_text())) == ODD
    assert TransformerConfig.from_dict(json.loads((out / "model" / "config.json").read_text())) == ODD
    ck = torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=True)
    assert ck["config"] == ODD.to_dict()
    assert json.loads((out / "args.json").read_text())["config"] == ODD.to_dict()
    args = options.build_parser().parse_args(["--config", value, "--out", "x"])
    assert options.model_config(args, vocab_size=14) == ODD  # the tokenizer's size does not change it
    assert "--config '{" in options.command_line(argparse_namespace(out))


def argparse_namespace(out: Path):
    import argparse
    return argparse.Namespace(**{**vars(options.build_parser().parse_args([])),
                                 **json.loads((out / "args.json").read_text())})


def test_config_refuses_model_flags_and_bad_json(tmp_path, capsys):
    good = json.dumps(ODD.to_dict())
    for argv, says in (
            (["--config", good, "--d-model", "64"], "leave out --d-model"),
            (["--config", good, "--preset", "tiny"], "leave out --preset"),
            (["--config", '{"d_model": 30, "n_heads": 4}'], "divisible by n_heads"),
            (["--config", "{not json"], "not valid JSON"),
            (["--config", '{"colour": 1}'], "unknown config keys"),
            (["--config", str(tmp_path / "missing.json")], "cannot read"),
    ):
        with pytest.raises(SystemExit):
            trainer.main([*argv, "--out", str(tmp_path / "run")])
        assert says in capsys.readouterr().err, argv
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_config_that_does_not_fit_the_task_fails_clearly(tmp_path, monkeypatch):
    out = tmp_path / "run"
    small = ODD.replace(vocab_size=5)
    assert trainer.main(["--config", json.dumps(small.to_dict()), "--steps", "2", "--out", str(out)]) == 2
    assert status(out)["state"] == "failed"
    assert message(out) == Message("train.status.vocab_too_small", {"size": 5, "needed": 14})
    lm = ODD.replace(architecture="decoder-only")
    assert trainer.main(["--config", json.dumps(lm.to_dict()), "--steps", "2", "--out", str(out)]) == 2
    assert message(out) == Message("train.status.wrong_architecture", {"architecture": "decoder-only"})
    assert say_in("ko", message(out), monkeypatch) == "decoder-only 모델로는 이 과제를 학습할 수 없습니다"


# -- the trainer used to crash with a traceback (an empty training split: torch.randint(0, ...)) on a corpus
#    made only of the app's held-out English→Korean sentences.
def held_out_tsv(n=40) -> bytes:
    from model.data.corpus import generate_sentences, held_out_combinations
    held = set(held_out_combinations(0))
    pairs = [(s.en, s.ko) for s in generate_sentences() if (s.subject, s.verb) in held][:n]
    return "".join(f"{a}\t{b}\n" for a, b in pairs).encode()


def test_trainer_says_why_when_the_corpus_leaves_no_training_pairs(tmp_path, monkeypatch):
    (tmp_path / "held.tsv").write_bytes(held_out_tsv())
    out = tmp_path / "run"
    rc = trainer.main(["--task", "tsv", "--tsv", str(tmp_path / "held.tsv"), "--preset", "tiny", "--steps", "2",
                       "--out", str(out)])
    assert rc == 2 and status(out)["state"] == "failed"
    msg = message(out)
    assert msg == Message("train.status.corpus", {"problem": Message("train.corpus.no_split", {"train": 0, "valid": 0})})
    assert "0 training and 0 validation" in say_in("en", msg, monkeypatch)
    assert "학습 쌍이 0개" in say_in("ko", msg, monkeypatch)


# -- resuming a run whose checkpoint.pt is missing used to start again from step 0 without a word.
@pytest.mark.slow
def test_resume_without_a_checkpoint_says_so(tmp_path, monkeypatch):
    out = tmp_path / "run"
    out.mkdir()
    args = vars(options.build_parser().parse_args(["--out", str(out), "--preset", "tiny", "--steps", "2",
                                                   "--batch-size", "4", "--eval-every", "2", "--threads", "1"]))
    (out / "args.json").write_text(json.dumps(args))
    seen = []
    real_update = Run.update

    def spy(self, **fields):
        real_update(self, **fields)
        seen.append(dict(self.status))
    monkeypatch.setattr(Run, "update", spy)
    assert trainer.main(["--resume", str(out)]) == 0
    notes = [s["message"] for s in seen if s.get("state") == "running"]
    assert notes and status_message(notes[0]) == Message("train.status.no_checkpoint")
    assert "0 스텝부터 다시" in say_in("ko", status_message(notes[0]), monkeypatch)
    assert say_in("en", status_message(notes[0]), monkeypatch) == \
        "no checkpoint.pt to resume from: training starts again from step 0"


def test_resume_with_a_damaged_args_json_names_the_problem(tmp_path, capsys):
    (tmp_path / "args.json").write_text("[1, 2]")
    with pytest.raises(SystemExit):
        trainer.main(["--resume", str(tmp_path)])
    assert "no readable args.json" in capsys.readouterr().err


def test_main_keeps_the_callers_signal_handlers(tmp_path):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    (tmp_path / "held.tsv").write_bytes(held_out_tsv())
    trainer.main(["--task", "tsv", "--tsv", str(tmp_path / "held.tsv"), "--steps", "2", "--out", str(tmp_path / "r")])
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


@pytest.mark.slow
def test_model_package_never_imports_streamlit():
    code = ("import sys, model.training.train, model.training.checkpoint, model.data.corpus, model.training.export, model.inference.evaluate, "
            "model.training.run_files; assert 'streamlit' not in sys.modules, 'streamlit imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(ROOT))


# -----------------------------------------------------------------------------
# run files

GOOD_METRICS = b'{"kind": "train", "step": 10, "loss": 3.0, "lr": 0.001}\n'


# -- a metrics.jsonl with a non-UTF-8 line (or a line that is JSON but not an object) raised
#    UnicodeDecodeError / AttributeError on every refresh of the page.
def test_damaged_metrics_lines_are_skipped(tmp_path):
    p = tmp_path / "metrics.jsonl"
    p.write_bytes(GOOD_METRICS + b"\xff\xfe garbage\n5\n[1, 2]\nnull\n"
                  b'{"kind": "train", "step": "x"}\n{"kind": "train", "step": NaN}\n'
                  b'{"kind": "train", "step": 20, "loss": 2.0}\n{"kind": "tr')
    records = read_metrics(p)
    assert all(isinstance(r, dict) for r in records) and records[0]["step"] == 10
    assert [r["step"] for r in clean_metrics(records)] == [10, 20]


def test_clean_metrics_keeps_the_resumed_records():
    recs = [{"kind": "train", "step": s, "loss": 1} for s in (10, 20, 30)] + \
           [{"kind": "eval", "step": 20, "val_loss": 1}] + \
           [{"kind": "train", "step": s, "loss": 2} for s in (30, 40)]  # resumed from step 20
    out = clean_metrics(recs)
    assert [(r["kind"], r["step"], r.get("loss")) for r in out] == [
        ("train", 10, 1), ("train", 20, 1), ("eval", 20, None), ("train", 30, 2), ("train", 40, 2)]


def test_status_messages_are_codes_and_old_sentences_stay_as_they_are(tmp_path):
    run = Run(tmp_path, writer=True)
    msg = Message("train.status.corpus", {"problem": Message("train.corpus.empty_line", {"line": 4})})
    run.update(state="failed", message=msg)
    stored = json.loads((tmp_path / "status.json").read_text())
    assert stored["message"] == {"code": "train.status.corpus",
                                 "args": {"problem": {"code": "train.corpus.empty_line", "args": {"line": 4}}}}
    assert status_message(stored["message"]) == msg
    assert status_message("finished 20 steps in 1 s") == "finished 20 steps in 1 s"  # an older version's file
    assert status_message(None) is None and status_message(7) is None and status_message({"code": 3}) is None
    run.update(message=None)
    assert status(tmp_path)["message"] is None
    Run(tmp_path, writer=False).update(state="done")  # only rank 0 writes
    assert status(tmp_path)["state"] == "failed"


# -----------------------------------------------------------------------------
# export and the model card

def test_export_writes_a_model_card(tmp_path, capsys):
    from model.training.export import export_model
    from model.data.tokenizer import SymbolTokenizer
    from model.data.train_data import TaskData
    from model.nn.transformer import Transformer
    tok = SymbolTokenizer()
    torch.manual_seed(0)
    model = Transformer(PRESETS["tiny"].replace(vocab_size=tok.vocab_size, max_len=12)).eval()
    data = TaskData(tok, [], [], [], False, [("a b", "a b"), ("c d e", "c d e"), ("f", "f")])
    args = options.build_parser().parse_args(["--task", "copy", "--steps", "7", "--out", "x", "--preset", "tiny"])
    scores = export_model(model, data, args, tmp_path / "copy-model", 12.0, options.command_line(args))
    assert scores["test_sentences"] == 3 and 0 <= scores["exact_match_greedy"] <= 1
    card = (tmp_path / "copy-model" / "CARD.md").read_text()
    assert card.startswith("# Model card: copy-model")
    assert "python -m model.training.train --steps 7 --out x --preset tiny" in card
    assert "d_model=64, heads=4" in card and "layers=2 encoder + 2 decoder" in card
    meta = json.loads((tmp_path / "copy-model" / "meta.json").read_text())
    assert meta["steps"] == 7 and meta["scores"]["test_sentences"] == 3 and meta["has_tokenizer"]
