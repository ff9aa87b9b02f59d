"""Review of the training page, the job manager and the trainer: damaged run files, a double click on
Start, a deleted runs folder, awkward uploads, a resume without a checkpoint. One test per bug found."""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from app import train_ui as ui
from app.jobs import JobError, JobManager, TrainOptions, get_manager, validate_upload
from model import train as trainer
from tests.apptest_util import assert_clean, run_page

PAGE = "train.py"
FAST = dict(task="copy", size="tiny", batch_size=8, warmup=10, lr_factor=0.5)


def fake_run(root, rid="copy-20250101-000000", status=None, metrics: bytes | None = None, job=None):
    """A finished run folder written by hand (no trainer needed)."""
    d = root / rid
    d.mkdir(parents=True)
    st = {"state": "done", "step": 20, "total_steps": 20, "task": "copy", "message": "finished 20 steps in 1 s",
          "loss": 2.5, "lr": 1e-3, "val_loss": 2.0, "val_token_acc": 0.5, "val_exact": 0.1,
          "samples": [{"source": "a b", "target": "a b", "prediction": "a"}]}
    (d / "status.json").write_text(json.dumps(st) if status is None else status, encoding="utf-8")
    if metrics is None:
        metrics = b"".join(json.dumps(r).encode() + b"\n" for r in (
            {"kind": "train", "step": 10, "loss": 3.0, "lr": 1e-3, "tokens_per_second": 900.0},
            {"kind": "eval", "step": 10, "val_loss": 2.5, "val_token_acc": 0.3, "val_exact": 0.0},
            {"kind": "train", "step": 20, "loss": 2.5, "lr": 1e-3, "tokens_per_second": 950.0}))
    (d / "metrics.jsonl").write_bytes(metrics)
    (d / "args.json").write_text(json.dumps({"task": "copy", "steps": 20}))
    if job is not None:
        (d / "job.json").write_text(job, encoding="utf-8")
    return d


GOOD_METRICS = b'{"kind": "train", "step": 10, "loss": 3.0, "lr": 0.001}\n'


# -- bug 1: a metrics.jsonl with a non-UTF-8 line (or a line that is JSON but not an object) raised
#    UnicodeDecodeError / AttributeError on every refresh of the page.
def test_damaged_metrics_lines_are_skipped(tmp_path):
    p = tmp_path / "metrics.jsonl"
    p.write_bytes(GOOD_METRICS + b"\xff\xfe garbage\n5\n[1, 2]\nnull\n"
                  b'{"kind": "train", "step": "x"}\n{"kind": "train", "step": NaN}\n'
                  b'{"kind": "train", "step": 20, "loss": 2.0}\n{"kind": "tr')
    records = trainer.read_metrics(p)
    assert all(isinstance(r, dict) for r in records) and records[0]["step"] == 10
    mgr = JobManager(tmp_path / "runs")
    d = tmp_path / "runs" / "r1"
    d.mkdir()
    shutil.copy(p, d / "metrics.jsonl")
    (d / "status.json").write_text('{"state": "done"}')
    assert [r["step"] for r in mgr.read_metrics("r1")] == [10, 20]


# -- bug 2: status.json / job.json holding valid JSON of the wrong shape (a list, a string, a step
#    "abc", samples that are not objects) crashed the page; a truncated status.json showed a bare "unknown".
@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("case", ["metrics-not-utf8", "metrics-not-objects", "status-list", "status-truncated",
                                  "status-bad-types", "samples-bad", "job-string", "config-list",
                                  "running-bad-step"])
def test_damaged_run_files_never_crash_the_page(runs, lang, case):
    kw = {}
    if case == "metrics-not-utf8":
        kw["metrics"] = GOOD_METRICS + b"\xff\xfe garbage\n"
    elif case == "metrics-not-objects":
        kw["metrics"] = GOOD_METRICS + b"5\n[1]\nnull\n"
    elif case == "status-list":
        kw["status"] = "[1, 2]"
    elif case == "status-truncated":
        kw["status"] = '{"state": "done", "st'
    elif case == "status-bad-types":
        kw["status"] = json.dumps({"state": ["x"], "step": "abc", "total_steps": None, "loss": "1",
                                   "lr": True, "samples": "x", "message": 7, "task": ["copy"]})
    elif case == "samples-bad":
        kw["status"] = json.dumps({"state": "done", "step": 3, "samples": [1, None, {"source": 3}]})
    elif case == "running-bad-step":  # a vanished trainer whose status holds a damaged step
        kw["status"] = json.dumps({"state": "running", "step": "abc", "pid": 2 ** 22 + 17})
        kw["job"] = json.dumps({"id": "copy-20250101-000000", "queued_at": "yesterday", "pid": 2 ** 22 + 17})
    elif case == "job-string":
        kw["job"] = '"x"'
    d = fake_run(runs, **kw)
    if case == "config-list":
        (d / "config.json").write_text("[1]")
        fake_run(runs, rid="copy-20250101-000001")  # two runs: the comparison reads both configs
    at = run_page(PAGE, lang)
    assert_clean(at)
    table = at.dataframe[0].value
    assert d.name in list(table.iloc[:, 0])
    if case == "status-truncated":
        text = " ".join(str(e.value) for e in at.info)
        assert ("status.json is damaged" if lang == "en" else "status.json 파일이 손상되었습니다") in text
        assert table.iloc[0, 2] == ("unknown" if lang == "en" else "알 수 없음")
    if case == "running-bad-step":
        assert json.loads((d / "status.json").read_text())["state"] == "stopped"
    assert d.is_dir() and (d / "metrics.jsonl").is_file()  # nothing lost


# -- bug 3: a double click on Start (two reruns with the button pressed) made two identical runs.
def test_double_click_on_start_makes_one_run(tmp_path):
    mgr = JobManager(tmp_path / "runs", python="/bin/false")  # no real trainer: only the queue matters
    a = mgr.start(TrainOptions(**FAST, steps=10))
    b = mgr.start(TrainOptions(**FAST, steps=10))
    assert a == b and len(mgr._run_dirs()) == 1
    c = mgr.start(TrainOptions(**FAST, steps=11))  # other choices: a new run
    assert c != a and len(mgr._run_dirs()) == 2
    tsv = "".join(f"w {i}\tv {i}\n" for i in range(30)).encode()
    t1 = mgr.start(TrainOptions(**{**FAST, "task": "tsv"}, steps=10, tsv_bytes=tsv, tsv_name="a.tsv"))
    t2 = mgr.start(TrainOptions(**{**FAST, "task": "tsv"}, steps=10, tsv_bytes=tsv + b"x\ty\n", tsv_name="a.tsv"))
    assert t1 != t2  # same name, other contents: not a double click


def test_double_click_on_start_in_the_page(runs):
    at = run_page(PAGE, "en")
    at.number_input(key="train_steps_tiny").set_value(10)
    at.button(key="train_start").click().run()
    at.button(key="train_start").click().run()
    assert_clean(at)
    assert len([p for p in runs.iterdir() if p.is_dir()]) == 1


# -- bug 4: deleting the runs folder while the server runs made every refresh raise FileNotFoundError
#    (the queue's lock file lives in it).
def test_runs_folder_deleted_while_the_page_is_open(runs):
    fake_run(runs)
    at = run_page(PAGE, "en")
    assert_clean(at)
    shutil.rmtree(runs)
    at.run()
    assert_clean(at)
    assert "No runs yet" in " ".join(str(e.value) for e in at.info)
    get_manager(str(runs.resolve())).poll()
    assert runs.is_dir()


# -- bug 5: an empty uploaded file said "Upload a TSV file" although one was uploaded.
def test_empty_upload_says_the_file_is_empty():
    with pytest.raises(JobError) as e:
        validate_upload(b"", "mine.tsv")
    assert "the corpus is empty" in e.value.en and "코퍼스가 비어 있습니다" in e.value.ko
    with pytest.raises(JobError, match="Upload a TSV"):
        validate_upload(None)


@pytest.mark.parametrize("data, count", [
    (b"\xef\xbb\xbf" + "".join(f"word {i}\t낱말 {i}\r\n" for i in range(25)).encode(), 25),  # BOM + CRLF
    ("".join(f"word {i}\t낱말 {i}\n" for i in range(25)).encode(), 25),
])
def test_bom_and_crlf_uploads_are_read(data, count):
    pairs = validate_upload(data, "x.tsv")
    assert len(pairs) == count and pairs[0] == ("word 0", "낱말 0")


# -- bug 6: a corpus made only of the app's held-out English→Korean sentences passed the upload check,
#    then the trainer crashed with a traceback (empty training split: torch.randint(0, ...)).
def held_out_tsv(n=40) -> bytes:
    from model.corpus import generate_sentences, held_out_combinations
    held = set(held_out_combinations(0))
    pairs = [(s.en, s.ko) for s in generate_sentences() if (s.subject, s.verb) in held][:n]
    return "".join(f"{a}\t{b}\n" for a, b in pairs).encode()


def test_upload_that_leaves_no_training_pairs_is_refused():
    with pytest.raises(JobError) as e:
        validate_upload(held_out_tsv(), "held.tsv")
    assert "0 training and 0 validation" in e.value.en and "학습 쌍 0개" in e.value.ko


def test_trainer_says_why_when_the_corpus_leaves_no_training_pairs(tmp_path):
    (tmp_path / "held.tsv").write_bytes(held_out_tsv())
    out = tmp_path / "run"
    rc = trainer.main(["--task", "tsv", "--tsv", str(tmp_path / "held.tsv"), "--preset", "tiny", "--steps", "2",
                       "--out", str(out)])
    st = json.loads((out / "status.json").read_text())
    assert rc == 2 and st["state"] == "failed" and "0 training and 0 validation" in st["message"]
    assert "학습 쌍이 0개" in ui.message_ko(st["message"])


# -- bug 7: resuming a run whose checkpoint.pt is missing silently started again from step 0.
def test_resume_without_a_checkpoint_says_so(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    out.mkdir()
    args = vars(trainer.build_parser().parse_args(["--out", str(out), "--preset", "tiny", "--steps", "2",
                                                   "--batch-size", "4", "--eval-every", "2", "--threads", "1"]))
    (out / "args.json").write_text(json.dumps(args))
    seen = []
    real_update = trainer.Run.update

    def spy(self, **fields):
        real_update(self, **fields)
        seen.append(dict(self.status))
    monkeypatch.setattr(trainer.Run, "update", spy)
    assert trainer.main(["--resume", str(out)]) == 0
    notes = [s["message"] for s in seen if s.get("state") == "running"]
    assert notes and notes[0] == "no checkpoint.pt to resume from: training starts again from step 0"
    assert "0 스텝부터 다시" in ui.message_ko(notes[0])


def test_resume_with_a_damaged_args_json_names_the_problem(tmp_path, capsys):
    (tmp_path / "args.json").write_text("[1, 2]")
    with pytest.raises(SystemExit):
        trainer.main(["--resume", str(tmp_path)])
    assert "no readable args.json" in capsys.readouterr().err


# -- bug 8: a damaged job.json whose "command" is a string was run character by character.
def test_damaged_job_command_fails_clearly(tmp_path):
    root = tmp_path / "runs"
    d = root / "copy-x"
    d.mkdir(parents=True)
    (d / "job.json").write_text(json.dumps({"id": "copy-x", "command": "python -m model.train", "pid": None,
                                            "queued_at": time.time(), "created_at": time.time()}))
    (d / "status.json").write_text(json.dumps({"state": "queued", "step": 0}))
    mgr = JobManager(root)
    s = mgr.summary("copy-x")
    assert s["state"] == "failed" and "no command to run" in s["message"]


def test_model_package_never_imports_streamlit():
    import subprocess
    code = ("import sys, model.train, model.checkpoint, model.corpus; "
            "assert 'streamlit' not in sys.modules, 'streamlit imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(Path(__file__).resolve().parent.parent))


# -- bug 9: a run whose checkpoint could not be read ("cannot resume: ...") kept its Resume button,
#    and every click failed the same way.
def test_unreadable_checkpoint_is_not_offered_for_resume_again(runs):
    st = {"state": "failed", "step": 20, "total_steps": 40, "task": "copy",
          "message": "cannot resume: /x/checkpoint.pt: damaged or not a training checkpoint (bad zip)"}
    d = fake_run(runs, status=json.dumps(st), job=json.dumps({"id": "copy-20250101-000000", "command": ["x"]}))
    (d / "checkpoint.pt").write_bytes(b"not a checkpoint\n")
    mgr = JobManager(runs)
    assert not mgr.summary(d.name)["resumable"]
    with pytest.raises(JobError, match="cannot be resumed"):
        mgr.resume(d.name)
    st["message"] = "the loss became nan at step 21 (learning rate 1.00e-03); training stopped."
    (d / "status.json").write_text(json.dumps(st))
    assert mgr.summary(d.name)["resumable"]  # other failures with a checkpoint still resume
    at = run_page(PAGE, "ko")
    assert_clean(at)


def test_resume_refusal_names_the_state_in_korean(tmp_path):
    mgr = JobManager(tmp_path / "runs")
    fake_run(mgr.root)
    with pytest.raises(JobError) as e:
        mgr.resume("copy-20250101-000000")
    assert "(state: done)" in e.value.en and "(상태: 완료)" in e.value.ko


# -- bug 10: a trainer that crashed showed the last six lines of its log, i.e. the Python traceback's
#    frames, in the page's error box, and only in English.
def test_a_crashed_trainer_shows_its_error_not_a_traceback(tmp_path):
    root = tmp_path / "runs"
    d = root / "copy-x"
    d.mkdir(parents=True)
    code = "def f():\n    raise RuntimeError('out of memory while allocating')\nf()\n"
    (d / "job.json").write_text(json.dumps({"id": "copy-x", "command": [sys.executable, "-c", code], "pid": None,
                                            "queued_at": time.time(), "created_at": time.time()}))
    (d / "status.json").write_text(json.dumps({"state": "queued", "step": 0}))
    mgr = JobManager(root)
    deadline = time.time() + 30
    while mgr.summary("copy-x")["state"] in ("queued", "running") and time.time() < deadline:
        time.sleep(0.1)
        mgr.poll()
    msg = mgr.summary("copy-x")["message"]
    assert msg == "the trainer exited with code 1 at step 0: RuntimeError: out of memory while allocating", msg
    assert "Traceback" not in msg and "File " not in msg
    assert ui.message_ko(msg) == "학습 프로세스가 0 스텝에서 코드 1로 끝났습니다: RuntimeError: out of memory while allocating"
