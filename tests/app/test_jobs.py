"""The job manager (app/jobs/: the manager, run files, options, the cost estimate) without Streamlit:
validation, the config handed to the trainer, the queue, stop / resume / delete, recovery after a
server restart, damaged run folders; real tiny trainer subprocesses in a temporary RUNS (slow)."""
from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest
import torch

from app import i18n
from app.jobs import COMPARE_METRICS, JobManager, get_manager, pid_alive, runs_dir
from app.jobs.estimate import config_for
from app.jobs.options import (ALL_TASKS, CUSTOM_DEFAULTS, LIMITS, MAX_PARAMETERS, POSITIONALS, RECIPES, SIZES, WHOLE_NUMBERS,
                              TrainOptions, check_upload, model_config, validate_upload)
from model.nn.config import TransformerConfig
from model.messages import Message, UserError
from model.training.run_files import STATES
from model.nn.transformer import Transformer

FAST = dict(task="copy", size="tiny", batch_size=32, warmup=100, lr_factor=0.5)


def tsv_bytes(n: int = 40) -> bytes:
    words = ["cat", "dog", "bird", "fish", "tree", "sun", "moon", "star"]
    ko = ["고양이", "개", "새", "물고기", "나무", "해", "달", "별"]
    return "".join(f"the {words[i % 8]} {i}\t{ko[i % 8]} {i}\n" for i in range(n)).encode()


def say_in(lang: str, msg: Message, monkeypatch) -> str:
    monkeypatch.setattr(i18n, "lang", lambda: lang)
    return i18n.say(msg)


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


def fake_run(root, rid="copy-20250101-000000", status=None, job=None):
    """A finished run folder written by hand (no trainer needed)."""
    d = root / rid
    d.mkdir(parents=True)
    st = {"state": "done", "step": 20, "total_steps": 20, "task": "copy",
          "message": {"code": "train.status.finished", "args": {"total": 20, "seconds": 1.0}}}
    (d / "status.json").write_text(json.dumps(st) if status is None else status, encoding="utf-8")
    (d / "args.json").write_text(json.dumps({"task": "copy", "steps": 20}))
    if job is not None:
        (d / "job.json").write_text(job, encoding="utf-8")
    return d


# -----------------------------------------------------------------------------
# validation (no subprocess)

@pytest.mark.parametrize("changes, code, en, ko", [
    (dict(size="custom", custom=dict(d_model=64, heads=3)), "heads_divide", "must divide d_model", "나누어떨어지게"),
    (dict(size="custom", custom=dict(d_model=1024)), "out_of_range", "between 8 and 512", "사이여야"),
    (dict(size="custom", custom=dict(layers=7)), "out_of_range", "between 1 and 6", "사이여야"),
    (dict(steps=20001), "out_of_range", "between 1 and 20000", "사이여야"),
    (dict(steps=0), "out_of_range", "between 1 and 20000", "사이여야"),
    (dict(batch_size=1000), "out_of_range", "Batch size", "배치 크기"),
    (dict(steps=10.5), "whole_number", "Training steps must be a whole number", "정수여야"),
    (dict(task="nope"), "unknown_task", "Unknown task", "알 수 없는"),
    (dict(size="huge"), "unknown_size", "Unknown model size", "알 수 없는"),
    (dict(size="custom", custom=dict(positional="rotary")), "unknown_positional", "Unknown positional", "위치 인코딩"),
    (dict(task="tsv"), "need_upload", "Upload a TSV", "TSV 파일"),
    (dict(task="tsv", tsv_bytes=b"a\tb\nc\td\te\n", tsv_name="x.tsv"), "in_file", "x.tsv: line 2: expected 2 tab-separated",
     "x.tsv: 2번째 줄: 탭으로 나뉜 열이 2개여야"),
    (dict(task="tsv", tsv_bytes=b"ok\tfine\n\xff\xfe\tbad\n"), "not_utf8", "line 2: not valid UTF-8", "2번째 줄: 올바른 UTF-8이"),
    (dict(task="tsv", tsv_bytes=b"a\tb\n" * 3), "too_few_pairs", "only 3 pairs", "3개뿐"),
    (dict(task="tsv", tsv_bytes=b"a\tb\n" * 1_500_000), "upload_too_big", "limit is 5,000,000 bytes",
     "한도 5,000,000바이트"),
])
def test_bad_options_are_refused_with_a_message(mgr, changes, code, en, ko, monkeypatch):
    with pytest.raises(UserError) as info:
        mgr.start(TrainOptions(**{**FAST, **changes}))
    assert info.value.message.code.endswith("." + code), info.value.message
    assert en in say_in("en", info.value.message, monkeypatch)
    assert ko in say_in("ko", info.value.message, monkeypatch)
    assert list(mgr.root.iterdir()) in ([], [mgr.root / ".jobs.lock"])  # nothing created


def test_parameter_limit(mgr, monkeypatch):
    big = TrainOptions(task="en-ko", size="custom", custom=dict(d_model=512, heads=8, d_ff=2048, layers=6))
    assert mgr.estimate(big)["parameters"] > MAX_PARAMETERS
    with pytest.raises(UserError) as e:
        mgr.start(big)
    assert "parameters; the limit" in say_in("en", e.value.message, monkeypatch)


def test_what_transformer_config_refuses_is_a_user_error():
    """TransformerConfig has the last word: what its own checks refuse (here a vocabulary of 0)
    becomes a UserError, with its text as the detail."""
    with pytest.raises(UserError) as e:
        model_config(TrainOptions(), vocab_size=0)
    assert e.value.message.code == "jobs.errors.bad_config" and "vocab_size" in e.value.detail


def test_upload_checks(monkeypatch):
    assert len(validate_upload(tsv_bytes(25))) == 25
    assert len(validate_upload("\ufeffhello\t안녕\n".encode() * 20)) == 20  # a BOM is fine
    with pytest.raises(UserError) as e:
        validate_upload(b"a\tb\n" * 30 + b"\tb\n")
    assert e.value.message == Message("train.corpus.first_empty", {"line": 31})
    assert say_in("en", e.value.message, monkeypatch) == "line 31: the first column is empty"
    assert say_in("ko", Message("train.corpus.empty_line", {"line": 7}), monkeypatch) == "7번째 줄: 빈 줄입니다"
    good = check_upload(tsv_bytes(25), "mine.tsv")
    assert good["count"] == 25 and good["sample"][0] == ("the cat 0", "고양이 0")
    bad = check_upload(b"a\tb\n", "mine.tsv")
    assert bad["error"].code == "jobs.errors.in_file" and bad["error"].args["problem"].code == "jobs.errors.too_few_pairs"


# -- an empty uploaded file said "Upload a TSV file" although one was uploaded.
def test_empty_upload_says_the_file_is_empty(monkeypatch):
    with pytest.raises(UserError) as e:
        validate_upload(b"", "mine.tsv")
    assert "the corpus is empty" in say_in("en", e.value.message, monkeypatch)
    assert "코퍼스가 비어 있습니다" in say_in("ko", e.value.message, monkeypatch)
    with pytest.raises(UserError) as e:
        validate_upload(None)
    assert e.value.message.code == "jobs.errors.need_upload"


@pytest.mark.parametrize("data, count", [
    (b"\xef\xbb\xbf" + "".join(f"word {i}\t낱말 {i}\r\n" for i in range(25)).encode(), 25),  # BOM + CRLF
    ("".join(f"word {i}\t낱말 {i}\n" for i in range(25)).encode(), 25),
])
def test_bom_and_crlf_uploads_are_read(data, count):
    pairs = validate_upload(data, "x.tsv")
    assert len(pairs) == count and pairs[0] == ("word 0", "낱말 0")


# -- a corpus made only of the app's held-out English→Korean sentences passed the upload check, then the
#    trainer crashed (an empty training split).
def test_upload_that_leaves_no_training_pairs_is_refused(monkeypatch):
    from model.data.corpus import generate_sentences, held_out_combinations
    held = set(held_out_combinations(0))
    pairs = [(s.en, s.ko) for s in generate_sentences() if (s.subject, s.verb) in held][:40]
    with pytest.raises(UserError) as e:
        validate_upload("".join(f"{a}\t{b}\n" for a, b in pairs).encode(), "held.tsv")
    assert "0 training and 0 validation" in say_in("en", e.value.message, monkeypatch)
    assert "학습 쌍 0개" in say_in("ko", e.value.message, monkeypatch)


def test_estimate_counts_exactly(mgr):
    o = TrainOptions(**{**FAST, "size": "custom", "custom": dict(d_model=32, heads=2, d_ff=64, layers=1)})
    est = mgr.estimate(o)
    cfg = TransformerConfig.from_dict(est["config"])
    assert (cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.n_encoder_layers, cfg.vocab_size) == (32, 2, 64, 1, 14)
    assert est["parameters"] == Transformer(cfg).num_parameters()
    assert est["memory_bytes"] >= 16 * est["parameters"]
    assert 0 < est["seconds"] < 600 and est["machine_flops"] > 0
    lm = mgr.estimate(TrainOptions(task="lm", size="small"))
    assert TransformerConfig.from_dict(lm["config"]).architecture == "decoder-only"


def test_choices_become_one_transformer_config():
    """The page's choices make the TransformerConfig in one place; the trainer gets it as --config."""
    tiny = config_for(TrainOptions(**FAST))
    assert (tiny.d_model, tiny.n_heads, tiny.max_len, tiny.vocab_size, tiny.architecture) == (64, 4, 64, 14,
                                                                                             "encoder-decoder")
    custom = config_for(TrainOptions(**{**FAST, "size": "custom", "custom": dict(
        d_model=48, heads=3, d_ff=96, layers=3, dropout=0.2, label_smoothing=0.0, positional="learned",
        norm_first=True)}))
    assert custom == TransformerConfig(vocab_size=14, d_model=48, n_heads=3, d_ff=96, n_encoder_layers=3,
                                       n_decoder_layers=3, dropout=0.2, max_len=64, positional="learned",
                                       norm_first=True, label_smoothing=0.0)
    assert config_for(TrainOptions(task="lm", size="small")).architecture == "decoder-only"
    assert config_for(TrainOptions(size="custom")) == config_for(TrainOptions(size="custom", custom=CUSTOM_DEFAULTS))
    with pytest.raises(UserError) as e:
        config_for(TrainOptions(size="custom", custom=dict(colour=1)))
    assert e.value.message.code == "jobs.errors.bad_config" and "colour" in e.value.detail


def test_start_hands_the_trainer_its_config(tmp_path):
    m = JobManager(tmp_path / "runs", python="/bin/false")  # no real trainer: only what it is given matters
    o = TrainOptions(**{**FAST, "size": "custom", "custom": dict(d_model=32, heads=2, d_ff=64, layers=1), "steps": 40})
    rid = m.start(o)
    d = m.root / rid
    job = json.loads((d / "job.json").read_text())
    cmd = job["command"]
    assert cmd[:5] == ["/bin/false", "-m", "model.training.train", "--config", str(d / "config.json")]
    assert TransformerConfig.from_dict(json.loads((d / "config.json").read_text())) == config_for(o)
    assert job["config"] == config_for(o).to_dict()
    for flag in ("--preset", "--d-model", "--heads", "--layers", "--max-len"):
        assert flag not in cmd  # the model travels as the config, not as flags
    assert cmd[cmd.index("--steps") + 1] == "40" and cmd[cmd.index("--out") + 1] == str(d)
    from model.training.train import build_parser
    args = build_parser().parse_args(cmd[3:])  # the trainer accepts every option
    assert args.task == "copy" and args.eval_every == 10 and args.threads == m.threads


def test_run_ids_are_checked(mgr):
    for bad in ("../etc", "a/b", "", ".hidden"):
        with pytest.raises(UserError) as e:
            mgr.run_path(bad)
        assert e.value.message.code == "jobs.errors.not_a_run"


def test_runs_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "elsewhere"))
    assert runs_dir() == (tmp_path / "elsewhere").resolve()
    a = get_manager(str(runs_dir()))
    assert a is get_manager(str(runs_dir())) and a.root == (tmp_path / "elsewhere").resolve()
    monkeypatch.delenv("ATLAS_RUNS_DIR")
    assert runs_dir().name == "runs" and runs_dir().parent == Path(__file__).resolve().parents[2]


def test_pid_alive_guards_against_reuse(tmp_path):
    assert not pid_alive(None) and not pid_alive(0) and not pid_alive("x")
    assert not pid_alive(2 ** 22 + 12345)
    # This pytest process is alive, but it is not a trainer of that folder (a reused pid).
    assert not pid_alive(os.getpid(), tmp_path / "copy-1")


def test_every_key_built_from_a_name_exists():
    """Keys the code builds from ids (f-strings), in both languages; literal keys are checked by test_i18n."""
    names = ([f"jobs.state.{s}" for s in (*STATES, "unknown")]
             + [f"jobs.field.{n}" for n in (*LIMITS, *WHOLE_NUMBERS)]
             + [f"train.task.{t}" for t in ALL_TASKS] + [f"train.task_help.{t}" for t in ALL_TASKS]
             + [f"train.size.{s}" for s in SIZES] + [f"train.positional.{p}" for p in POSITIONALS]
             + [f"train.norm.{n}" for n in ("post", "pre")] + [f"train.compare_metric.{m}" for m in COMPARE_METRICS]
             + [f"train.unit.{u}" for u in ("h", "min", "s")])
    assert set(RECIPES) == set(SIZES)
    for lang in i18n.LANGS:
        assert [k for k in names if k not in i18n.catalogue(lang)] == [], lang


# -----------------------------------------------------------------------------
# damaged and hand-made run folders (no trainer)

def test_damaged_metrics_lines_are_skipped(tmp_path):
    m = JobManager(tmp_path / "runs")
    d = fake_run(m.root, "r1")
    (d / "metrics.jsonl").write_bytes(b'{"kind": "train", "step": 10, "loss": 3.0}\n\xff\xfe garbage\n5\n'
                                      b'{"kind": "train", "step": 20, "loss": 2.0}\n{"kind": "tr')
    assert [r["step"] for r in m.read_metrics("r1")] == [10, 20]


# -- a double click on Start (two reruns with the button pressed) made two identical runs.
def test_double_click_on_start_makes_one_run(tmp_path):
    m = JobManager(tmp_path / "runs", python="/bin/false")  # no real trainer: only the queue matters
    fast = dict(FAST, batch_size=8, warmup=10)
    a = m.start(TrainOptions(**fast, steps=10))
    b = m.start(TrainOptions(**fast, steps=10))
    assert a == b and len(m._run_dirs()) == 1
    c = m.start(TrainOptions(**fast, steps=11))  # other choices: a new run
    assert c != a and len(m._run_dirs()) == 2
    tsv = "".join(f"w {i}\tv {i}\n" for i in range(30)).encode()
    t1 = m.start(TrainOptions(**{**fast, "task": "tsv"}, steps=10, tsv_bytes=tsv, tsv_name="a.tsv"))
    t2 = m.start(TrainOptions(**{**fast, "task": "tsv"}, steps=10, tsv_bytes=tsv + b"x\ty\n", tsv_name="a.tsv"))
    assert t1 != t2  # same name, other contents: not a double click


# -- a damaged job.json whose "command" is a string was run character by character.
def test_damaged_job_command_fails_clearly(tmp_path):
    root = tmp_path / "runs"
    d = root / "copy-x"
    d.mkdir(parents=True)
    (d / "job.json").write_text(json.dumps({"id": "copy-x", "command": "python -m model.training.train", "pid": None,
                                            "queued_at": time.time(), "created_at": time.time()}))
    (d / "status.json").write_text(json.dumps({"state": "queued", "step": 0}))
    s = JobManager(root).summary("copy-x")
    assert s["state"] == "failed" and s["message"] == Message("jobs.status.no_command")


# -- a run whose checkpoint could not be read kept its Resume button, and every click failed the same way.
@pytest.mark.parametrize("stored", [
    {"code": "train.status.cannot_resume", "args": {"detail": "/x/checkpoint.pt: damaged (bad zip)"}},
    "cannot resume: /x/checkpoint.pt: damaged or not a training checkpoint (bad zip)",  # an older version's file
])
def test_unreadable_checkpoint_is_not_offered_for_resume_again(tmp_path, stored):
    st = {"state": "failed", "step": 20, "total_steps": 40, "task": "copy", "message": stored}
    m = JobManager(tmp_path / "runs")
    d = fake_run(m.root, status=json.dumps(st), job=json.dumps({"id": "copy-20250101-000000", "command": ["x"]}))
    (d / "checkpoint.pt").write_bytes(b"not a checkpoint\n")
    assert not m.summary(d.name)["resumable"] and "resume" not in m.summary(d.name)["actions"]
    with pytest.raises(UserError) as e:
        m.resume(d.name)
    assert e.value.message.code == "jobs.errors.cannot_resume"
    st["message"] = {"code": "train.status.nan_loss", "args": {"value": "nan", "at": 21, "lr": 1e-3, "saved": 20}}
    (d / "status.json").write_text(json.dumps(st))
    assert m.summary(d.name)["resumable"]  # other failures with a checkpoint still resume
    assert m.summary(d.name)["actions"] == ["resume", "delete"]


def test_resume_refusal_names_the_state_in_both_languages(tmp_path, monkeypatch):
    m = JobManager(tmp_path / "runs")
    fake_run(m.root)
    with pytest.raises(UserError) as e:
        m.resume("copy-20250101-000000")
    assert e.value.message == Message("jobs.errors.cannot_resume", {"id": "copy-20250101-000000",
                                                                    "state": Message("jobs.state.done")})
    assert "(state: done)" in say_in("en", e.value.message, monkeypatch)
    assert "(상태: 완료)" in say_in("ko", e.value.message, monkeypatch)


def test_summary_of_an_old_run_keeps_its_english_message(tmp_path):
    """status.json written by the previous version holds an English sentence: it is kept verbatim."""
    m = JobManager(tmp_path / "runs")
    d = fake_run(m.root, status=json.dumps({"state": "done", "step": 20, "total_steps": 20,
                                            "message": "finished 20 steps in 1 s",
                                            "samples": [{"source": "a b", "target": "a b ", "prediction": "a b"}]}))
    s = m.summary(d.name)
    assert s["message"] == "finished 20 steps in 1 s" and s["progress"] == 1.0
    assert s["samples"][0]["correct"] and s["actions"] == ["delete"]


# -- a trainer that crashed showed the last lines of its log (the traceback's frames) in the page's error box.
@pytest.mark.slow
def test_a_crashed_trainer_shows_its_error_not_a_traceback(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    d = root / "copy-x"
    d.mkdir(parents=True)
    (d / "config.json").write_text("{not json")  # the trainer refuses it and exits with code 2
    (d / "job.json").write_text(json.dumps({"id": "copy-x", "options": {**FAST, "steps": 10}, "pid": None,
                                            "queued_at": time.time(), "created_at": time.time()}))
    (d / "status.json").write_text(json.dumps({"state": "queued", "step": 0}))
    m = JobManager(root)
    deadline = time.time() + 60
    while m.summary("copy-x")["state"] in ("queued", "running") and time.time() < deadline:
        time.sleep(0.1)
        m.poll()
    msg = m.summary("copy-x")["message"]
    assert msg.code == "jobs.status.crashed_with" and msg.args["code"] == 2, msg
    assert "--config: not valid JSON" in msg.args["detail"] and "Traceback" not in msg.args["detail"]
    assert say_in("ko", msg, monkeypatch).startswith("학습 프로세스가 0 스텝에서 코드 2로 끝났습니다: ")


# -- job.json's "command" was executed as stored, so a crafted queued run in the runs folder ran any
# program on the next page view. The command is rebuilt from the validated options every time.
@pytest.mark.parametrize("options, runs", [({**FAST, "steps": 5}, True), ({**FAST, "task": "../../bin/sh"}, False),
                                           ({**FAST, "steps": "5; rm -rf /"}, False), (None, False)])
def test_a_stored_command_is_never_executed(tmp_path, options, runs):
    root = tmp_path / "runs"
    d = root / "copy-x"
    d.mkdir(parents=True)
    witness = tmp_path / "pwned"
    job = {"id": "copy-x", "command": ["sh", "-c", f"touch {witness}"], "pid": None,
           "queued_at": time.time(), "created_at": time.time(), **({"options": options} if options else {})}
    (d / "job.json").write_text(json.dumps(job))
    (d / "status.json").write_text(json.dumps({"state": "queued", "step": 0}))
    m = JobManager(root, threads=1)
    cmd = m.trainer_command(d, job)
    if runs:
        assert cmd[:3] == [m.python, "-m", "model.training.train"] and "sh" not in cmd and "--out" in cmd
    else:
        assert cmd is None
    m.poll()
    for p in m._procs.values():
        p.kill()
        p.wait(10)
    assert not witness.exists()
    if not runs:
        assert m.summary("copy-x")["message"] == Message("jobs.status.no_command")


# -----------------------------------------------------------------------------
# real runs

@pytest.mark.slow
def test_start_runs_to_done(mgr):
    rid = mgr.start(TrainOptions(**{**FAST, "steps": 40}))
    assert re.fullmatch(r"copy-\d{8}-\d{6}", rid)
    d = mgr.root / rid
    job = json.loads((d / "job.json").read_text())
    assert job["options"]["steps"] == 40 and "--out" in job["command"] and "--config" in job["command"] and job["pid"]
    s = wait_state(mgr, rid, {"done", "failed"})
    assert s["state"] == "done", s
    assert (s["step"], s["total"], s["task"]) == (40, 40, "copy")
    assert s["message"].code == "train.status.finished"
    assert s["inspectable"] and not s["resumable"] and s["parameters"] == 168320
    assert s["config"] == job["config"] and s["config"]["d_model"] == 64 and len(s["samples"]) == 3
    assert s["val_token_acc"] is not None and s["tokens_per_second"] > 0
    recs = mgr.read_metrics(rid)
    assert recs[-1]["step"] == 40 and {"train", "eval"} <= {r["kind"] for r in recs}
    md = mgr.model_dir(rid)
    assert md is not None and md.is_absolute() and (md / "model.safetensors").is_file()
    assert "$ " in (d / "train.log").read_text()
    assert [r["id"] for r in mgr.list_runs()] == [rid]
    mgr.delete(rid)
    assert not d.exists() and mgr.list_runs() == []


@pytest.mark.slow
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
    assert mgr.summary(b)["message"] == Message("jobs.status.waiting")
    assert (mgr.root / b / "corpus.tsv").read_bytes() == tsv_bytes(40)
    with pytest.raises(UserError) as e:
        mgr.delete(a)
    assert e.value.message.code == "jobs.errors.delete_active"
    mgr.stop(c)  # off the queue, never launched
    assert mgr.summary(c)["state"] == "stopped" and mgr.summary(c)["resumable"]
    assert mgr.summary(c)["message"] == Message("jobs.status.dequeued")
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
    with pytest.raises(UserError) as e:
        mgr.resume(c)
    assert e.value.message.code == "jobs.errors.cannot_resume"
    mgr.delete(a)
    assert {r["id"] for r in mgr.list_runs()} == {b, c}


@pytest.mark.slow
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
    assert s["message"].code == "jobs.status.vanished"
    ck = int(torch.load(d / "checkpoint.pt", weights_only=True)["step"])
    second.resume(rid)
    s = wait_state(second, rid, {"done", "failed"})
    assert s["state"] == "done" and s["step"] == 150, (s, second.log_tail(rid))
    steps = [r["step"] for r in second.read_metrics(rid) if r["kind"] == "train"]
    assert steps == sorted(set(steps)) and steps[-1] == 150 and ck in steps


@pytest.mark.slow
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


def test_tokens_per_example_measured_in_a_child_are_the_same_numbers(monkeypatch, tmp_path):
    """The training page's first run has the en-ko corpus tasks' tokens per example measured in a child process
    (no interpreter lock or memory taken from the server): the numbers are the ones measured here, kept on disk
    for the next server; with none kept and a child that fails, a task is measured here when an estimate needs it."""
    from app.jobs import estimate as est
    from model.data.corpus import CACHE_ENV
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(est, "_TOKENS", {})
    est.measure_tokens_apart(("lm", "reverse"))
    apart = dict(est._TOKENS)
    assert set(apart) == {"lm", "reverse"}
    est._TOKENS.clear()
    assert {t: est.tokens_per_example(t) for t in apart} == apart
    # kept on disk: the next server reads them without a child (here: one that could not start)
    est._TOKENS.clear()
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    est.measure_tokens_apart(("lm", "reverse"))
    assert est._TOKENS == apart
    # nothing kept (or a damaged file) and no child: measured here when an estimate needs it
    est._TOKENS.clear()
    est._kept_tokens_path().write_text("{damaged", encoding="utf-8")
    est.measure_tokens_apart(("reverse",))
    assert est._TOKENS == {}
    assert est.tokens_per_example("reverse") == apart["reverse"]
