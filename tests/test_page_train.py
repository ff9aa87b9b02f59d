"""The training page in AppTest (no browser): both languages, a tiny run started from the page and
followed to the end, stop / delete with confirmation, and clear messages for bad uploads."""
from __future__ import annotations

import time

import pytest

from app.jobs import get_manager
from tests.apptest_util import assert_clean, run_page

PAGE = "train.py"


def texts(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "info", "success", "warning", "error")
             for e in getattr(at, kind)]
    return "\n".join(str(p) for p in parts)


def wait_until(at, runs, rid, states, timeout=90):
    m = get_manager(str(runs.resolve()))
    deadline = time.time() + timeout
    while time.time() < deadline:
        m.poll()
        if m.summary(rid)["state"] in states:
            at.run()
            return m.summary(rid)
        time.sleep(0.3)
    raise AssertionError(f"{rid}: {m.summary(rid)}\n{m.log_tail(rid)}")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_page_in_both_languages(runs, lang):
    at = run_page(PAGE, lang)
    assert_clean(at)
    title = at.title[0].value
    assert title == ("Train your own Transformer" if lang == "en" else "나만의 Transformer 학습하기")
    labels = [m.label for m in at.metric]
    assert labels[:3] == (["parameters", "memory (estimate)", "time (estimate)"] if lang == "en"
                          else ["파라미터", "메모리 (추정)", "시간 (추정)"])
    assert at.metric[0].value == "168.3k"  # the tiny copy model, counted exactly
    assert at.button(key="train_start").label == ("Start training" if lang == "en" else "학습 시작")
    assert ("No runs yet" if lang == "en" else "아직 실행이 없습니다") in texts(at)


def test_start_a_tiny_run_and_follow_it(runs):
    at = run_page(PAGE, "en")
    at.number_input(key="train_steps_tiny").set_value(20)
    at.button(key="train_start").click().run()
    assert_clean(at)
    rid = at.session_state["train_selected"]
    assert rid.startswith("copy-") and (runs / rid / "job.json").is_file()
    s = wait_until(at, runs, rid, {"done", "failed"})
    assert s["state"] == "done", s
    assert_clean(at)
    table = at.dataframe[0].value
    assert table.iloc[0]["run"] == rid and table.iloc[0]["state"] == "done" and table.iloc[0]["step"] == "20 / 20"
    assert "finished 20 steps" in texts(at)
    assert len(at.get("plotly_chart")) >= 3  # loss, accuracy, learning rate
    assert at.get("download_button")
    # Another session (a second browser tab) in Korean sees the same run, the message translated.
    ko = run_page(PAGE, "ko")
    assert_clean(ko)
    assert ko.dataframe[0].value.iloc[0]["상태"] == "완료"
    assert "20 스텝을" in texts(ko)
    # Open in inspector: the page hands the model folder over in session state and switches page
    # (the inspector consumes the key and selects the run's model).
    at.button(key=f"inspect-{rid}").click().run()
    assert at.title[0].value == "Attention inspector"
    model_dir = str((runs / rid / "model").resolve())
    try:
        handed = at.session_state["inspect_model_dir"]
    except KeyError:
        handed = None
    assert handed == model_dir or rid in str(at.session_state["insp_model"])


def test_stop_then_delete_with_confirmation(runs):
    at = run_page(PAGE, "en")
    at.number_input(key="train_steps_tiny").set_value(5000)
    at.button(key="train_start").click().run()
    rid = at.session_state["train_selected"]
    wait_until(at, runs, rid, {"running"})
    at.button(key=f"stop-{rid}").click().run()
    assert_clean(at)
    s = wait_until(at, runs, rid, {"stopped", "failed"})
    assert s["state"] == "stopped", s
    assert at.button(key=f"resume-{rid}")  # resumable
    at.button(key=f"delete-{rid}").click().run()
    assert "cannot be undone" in texts(at)
    assert (runs / rid).is_dir()  # nothing deleted before the confirmation
    at.button(key=f"confirm-delete-{rid}").click().run()
    assert_clean(at)
    assert not (runs / rid).exists()
    assert "No runs yet" in texts(at)


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("data, en, ko", [
    (b"hello\tworld\nthree\tcolumns\there\n", "line 2: expected 2 tab-separated columns", "2번째 줄"),
    (b"caf\xe9\tcoffee\n", "line 1: not valid UTF-8", "1번째 줄: 올바른 UTF-8이 아닙니다"),
    (b"a\tb\n" * 1_300_000, "limit is 5,000,000 bytes", "한도 5,000,000바이트"),
], ids=["three-columns", "not-utf8", "too-big"])
def test_bad_upload_gives_a_clear_message(runs, lang, data, en, ko):
    at = run_page(PAGE, lang)
    at.selectbox(key=f"train_task-{lang}").set_value("tsv").run()
    assert at.button(key="train_start").disabled  # nothing to start without a file
    at.file_uploader(key="train_upload").set_value(("mine.tsv", data, "text/tab-separated-values")).run()
    assert_clean(at)
    errors = " ".join(e.value for e in at.error)
    assert (en if lang == "en" else ko) in errors, errors
    assert at.button(key="train_start").disabled
    assert not any(p.is_dir() for p in runs.glob("*")), "nothing was created"


def test_good_upload_and_a_bad_custom_size(runs):
    lang = "en"
    at = run_page(PAGE, lang)
    at.selectbox(key=f"train_task-{lang}").set_value("tsv").run()
    good = "".join(f"word {i}\t낱말 {i}\n" for i in range(30)).encode()
    at.file_uploader(key="train_upload").set_value(("mine.tsv", good, "text/plain")).run()
    assert_clean(at)
    assert "30 pairs" in at.success[0].value
    assert not at.button(key="train_start").disabled
    at.radio(key="train_size-en").set_value("custom").run()
    at.select_slider(key="train_heads").set_value(3).run()  # d_model stays 64
    assert "do not divide" in texts(at)
    at.button(key="train_start").click().run()
    assert_clean(at)
    assert "must divide d_model" in " ".join(e.value for e in at.error)
    assert not any(p.is_dir() for p in runs.glob("*"))


def test_figure_helpers_are_pure():
    from app import train_ui as ui
    recs = [{"kind": "train", "step": s, "loss": 3.0 / s, "lr": 1e-3 * s, "tokens_per_second": 1000.0}
            for s in (10, 20)] + [{"kind": "eval", "step": 20, "val_loss": 0.5, "val_token_acc": 0.9,
                                   "val_exact": 0.4, "samples": []}]
    fig = ui.loss_figure(recs, title="Loss", train_name="training", val_name="validation", x_title="step",
                         y_title="loss")
    assert [t.name for t in fig.data] == ["training", "validation"]
    assert list(fig.data[0].x) == [10, 20] and list(fig.data[1].y) == [0.5]
    lr = ui.lr_figure(recs, title="lr", lr_name="learning rate", tps_name="tokens / s", x_title="step")
    assert lr.layout.yaxis2.title.text == "tokens / s" and lr.layout.yaxis.title.text == "learning rate"
    cmp = ui.compare_figure({"a": recs, "b": recs[:1]}, "train", "loss", title="t", x_title="x", y_title="y")
    assert [t.name for t in cmp.data] == ["a", "b"]
    csv = ui.metrics_csv(recs)
    assert csv.splitlines()[0] == ",".join(ui.CSV_FIELDS) and len(csv.splitlines()) == 4
    assert ui.compare_csv({"a": recs, "b": recs}).count("\n") == 7
    assert ui.fmt_duration(75) == "1 min 15 s" and ui.fmt_duration(75, "ko") == "1분 15초"
    assert ui.fmt_duration(None) == "–" and ui.fmt_bytes(11_500_000) == "11.5 MB"
    assert ui.message_ko("stopped at step 12; resume to continue") == "12 스텝에서 멈췄습니다. 이어서 학습할 수 있습니다"
    assert ui.message_ko("something new") == "something new"
