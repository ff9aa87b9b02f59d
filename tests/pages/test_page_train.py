"""The training page in AppTest (no browser): both languages, a tiny run started from the page and
followed to the end, stop / delete with confirmation, clear messages for bad uploads, damaged or old
run folders that never crash the page; links that pre-fill the form, and inputs and the selected run
that survive other pages; plus its text helpers (pages/views/train_ui.py)."""
from __future__ import annotations

import json
import shutil
import time

import pytest
from app.i18n import LANGS

from app import i18n
from app.jobs import get_manager
from app.format import escape_md as plain
from pages.views.train_ui import fmt_duration, status_text
from model.messages import Message
from tests.apptest_util import assert_clean, run_page
from tests import apptest_util
from tests.apptest_read import charts, tables

PAGE = "train.py"


def texts(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "info", "success", "warning", "error")
             for e in getattr(at, kind)]
    return "\n".join(str(p) for p in parts)


def label(lang: str, key: str, **args) -> str:
    return i18n.fill(i18n.catalogue(lang)[key], args)


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


# Page runs take about a second each; those that start a real trainer are marked slow.
GOOD_METRICS = b'{"kind": "train", "step": 10, "loss": 3.0, "lr": 0.001}\n'


def fake_run(root, rid="copy-20250101-000000", status=None, metrics: bytes | None = None, job=None):
    """A finished run folder written by hand (no trainer needed); its status message is the English
    sentence the previous version stored."""
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


@pytest.mark.parametrize("lang", list(LANGS))
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


@pytest.mark.slow
def test_start_a_tiny_run_and_follow_it(runs):
    at = run_page(PAGE, "en")
    at.number_input(key="train_steps_tiny").set_value(20)
    at.button(key="train_start").click().run()
    assert_clean(at)
    rid = at.session_state["train_run_select"]
    assert rid.startswith("copy-") and (runs / rid / "job.json").is_file()
    s = wait_until(at, runs, rid, {"done", "failed"})
    assert s["state"] == "done", s
    assert_clean(at)
    table = tables(at)[0]
    assert table.iloc[0]["run"] == rid and table.iloc[0]["state"] == "done" and table.iloc[0]["step"] == "20 / 20"
    assert "finished 20 steps" in texts(at)
    assert len(charts(at)) >= 3  # loss, accuracy, learning rate
    assert at.get("download_button")
    # Another session (a second browser tab) in Korean sees the same run, the message translated.
    ko = run_page(PAGE, "ko")
    assert_clean(ko)
    assert tables(ko)[0].iloc[0]["상태"] == "완료"
    assert "20 스텝을" in texts(ko)
    # Open in inspector: a link to the inspector with the run in its query (the browser changes page itself,
    # app.state.opened_run says why), which the inspector reads once and picks the run's model by.
    links = [e.proto for e in at.get("page_link") if e.proto.label == "Open in inspector"]
    assert len(links) == 1 and links[0].page.endswith("inspector") and links[0].query_string == f"run={rid}", links
    at.query_params["run"] = rid
    at.switch_page("../pages/inspector.py").run()
    assert_clean(at)
    assert at.title[0].value == "Attention inspector"
    assert at.session_state["insp_model"] == f"run: {rid}"
    assert at.selectbox(key="insp_model").value == f"run: {rid}"


@pytest.mark.slow
def test_stop_then_delete_with_confirmation(runs):
    at = run_page(PAGE, "en")
    at.number_input(key="train_steps_tiny").set_value(5000)
    at.button(key="train_start").click().run()
    rid = at.session_state["train_run_select"]
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


@pytest.mark.parametrize("lang", list(LANGS))
@pytest.mark.parametrize("data, en, ko", [
    (b"hello\tworld\nthree\tcolumns\there\n", "line 2: expected 2 tab-separated columns", "2번째 줄"),
    (b"caf\xe9\tcoffee\n", "line 1: not valid UTF-8", "1번째 줄: 올바른 UTF-8이 아닙니다"),
    (b"a\tb\n" * 1_300_000, "limit is 5,000,000 bytes", "한도 5,000,000바이트"),
], ids=["three-columns", "not-utf8", "too-big"])
def test_bad_upload_gives_a_clear_message(runs, lang, data, en, ko):
    at = run_page(PAGE, lang)
    at.selectbox(key="train_task").set_value("tsv").run()
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
    at.selectbox(key="train_task").set_value("tsv").run()
    good = "".join(f"word {i}\t낱말 {i}\n" for i in range(30)).encode()
    at.file_uploader(key="train_upload").set_value(("mine.tsv", good, "text/plain")).run()
    assert_clean(at)
    assert "30 pairs" in at.success[0].value
    assert not at.button(key="train_start").disabled
    at.radio(key="train_size").set_value("custom").run()
    at.select_slider(key="train_heads").set_value(3).run()  # d_model stays 64
    assert "do not divide" in texts(at)
    at.button(key="train_start").click().run()
    assert_clean(at)
    assert "must divide d_model" in " ".join(e.value for e in at.error)
    assert not any(p.is_dir() for p in runs.glob("*"))


# -- status.json / job.json holding valid JSON of the wrong shape (a list, a string, a step "abc", samples
#    that are not objects) crashed the page; a truncated status.json showed a bare "unknown".
@pytest.mark.parametrize("lang", list(LANGS))
@pytest.mark.parametrize("case", ["metrics-not-utf8", "metrics-not-objects", "status-list", "status-truncated",
                                  "status-bad-types", "samples-bad", "job-string", "config-list",
                                  "running-bad-step", "message-unknown-code", "message-bad-args"])
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
    elif case == "message-unknown-code":  # a newer version's code, or a hand-edited file
        kw["status"] = json.dumps({"state": "done", "step": 3, "message": {"code": "train.status.nope", "args": {}}})
    elif case == "message-bad-args":
        kw["status"] = json.dumps({"state": "done", "step": 3,
                                   "message": {"code": "train.status.finished", "args": {"total": 3, "seconds": "x"}}})
    d = fake_run(runs, **kw)
    if case == "config-list":
        (d / "config.json").write_text("[1]")
        fake_run(runs, rid="copy-20250101-000001")  # two runs: the comparison reads both configs
    at = run_page(PAGE, lang)
    assert_clean(at)
    table = tables(at)[0]
    assert d.name in list(table.iloc[:, 0])
    if case == "status-truncated":
        text = " ".join(str(e.value) for e in at.info)
        assert label(lang, "jobs.status.damaged") in text
        assert table.iloc[0, 2] == label(lang, "jobs.state.unknown")
    if case == "running-bad-step":
        assert json.loads((d / "status.json").read_text())["state"] == "stopped"
    if case == "message-unknown-code":
        assert plain("train.status.nope") in " ".join(str(e.value) for e in at.success)
    assert d.is_dir() and (d / "metrics.jsonl").is_file()  # nothing lost


@pytest.mark.parametrize("lang", list(LANGS))
def test_an_old_run_with_an_english_message_displays_it_verbatim(runs, lang):
    """status.json written by the previous version: "message" is an English sentence. It is shown as
    it is, in both languages, as plain text (Markdown characters escaped), never translated."""
    old = "cannot resume: /runs/x/checkpoint.pt: damaged or not a *training* checkpoint ($1 [bad zip])"
    d = fake_run(runs, status=json.dumps({"state": "failed", "step": 20, "total_steps": 40, "task": "copy",
                                          "message": old}))
    (d / "checkpoint.pt").write_bytes(b"x")
    at = run_page(PAGE, lang)
    assert_clean(at)
    assert [e.value for e in at.error] == [plain(old)]
    assert all(b.key != f"resume-{d.name}" for b in at.button)  # an unreadable checkpoint: no Resume


@pytest.mark.slow
def test_double_click_on_start_in_the_page(runs):
    at = run_page(PAGE, "en")
    at.number_input(key="train_steps_tiny").set_value(10)
    at.button(key="train_start").click().run()
    at.button(key="train_start").click().run()
    assert_clean(at)
    assert len([p for p in runs.iterdir() if p.is_dir()]) == 1


# -- deleting the runs folder while the server runs made every refresh raise FileNotFoundError
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


# -----------------------------------------------------------------------------
# links and kept inputs: a link pre-fills the form (never starts a run); what a learner set,
# and the run shown, survive other pages and the language.

def open_link(params: dict, lang: str = "en"):
    return apptest_util.open_link(PAGE, params, lang)


toasts = apptest_util.toasts


def estimated_parameters(**options) -> str:
    from app import format as fmt
    from app.jobs import estimate as jobs_estimate
    from app.jobs.options import TrainOptions
    return fmt.count(jobs_estimate.estimate(TrainOptions(**options), 1)["parameters"])


def test_a_link_with_task_and_size_prefills_the_form(runs):
    at = open_link({"task": "reverse", "size": "small"})
    assert_clean(at)
    assert not toasts(at)
    assert at.selectbox(key="train_task").value == "reverse"
    assert at.radio(key="train_size").value == "small"
    assert at.number_input(key="train_steps_small").value == 1000  # the small size's own recipe
    assert at.select_slider(key="train_batch_small").value == 64
    assert at.metric[0].value == estimated_parameters(task="reverse", size="small") == "927.5k"
    assert "No runs yet" in texts(at)  # a link never starts a run
    assert not any(runs.glob("*/job.json"))
    assert (at.query_params["task"], at.query_params["size"]) == ("reverse", "small")


CUSTOM_LINK = {"task": "sort", "size": "custom", "d_model": "128", "heads": "8", "d_ff": "256", "layers": "3",
               "dropout": "0.1", "ls": "0.2", "positional": "learned", "norm": "pre"}


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_link_with_custom_sizes_prefills_them(runs, lang):
    at = open_link(CUSTOM_LINK, lang)
    assert_clean(at)
    assert not toasts(at)
    assert at.session_state["lang"] == lang
    assert at.selectbox(key="train_task").value == "sort" and at.radio(key="train_size").value == "custom"
    assert (at.select_slider(key="train_d_model").value, at.select_slider(key="train_heads").value,
            at.select_slider(key="train_d_ff").value) == (128, 8, 256)
    assert at.slider(key="train_layers").value == 3
    assert at.slider(key="train_dropout").value == pytest.approx(0.1)
    assert at.slider(key="train_ls").value == pytest.approx(0.2)
    assert at.radio(key="train_positional").value == "learned" and at.radio(key="train_norm").value == "pre"
    custom = {"d_model": 128, "heads": 8, "d_ff": 256, "layers": 3, "dropout": 0.1, "label_smoothing": 0.2,
              "positional": "learned", "norm_first": True}
    assert at.metric[0].value == estimated_parameters(task="sort", size="custom", custom=custom)
    assert at.metric[0].value != estimated_parameters(task="sort", size="custom")
    assert {k: at.query_params[k] for k in CUSTOM_LINK} == CUSTOM_LINK
    assert not any(runs.glob("*/job.json"))


@pytest.mark.parametrize("params", [
    {"task": "<b>x</b>", "size": "huge"},
    {"task": "x" * 100_000, "size": "<b>small</b>"},
    {"size": "custom", "d_model": "100", "heads": "<b>4</b>", "d_ff": "nan", "layers": "99", "dropout": "0.07",
     "ls": "x" * 100_000, "positional": "rope", "norm": "sandwich"},
    {"size": "custom", "d_model": "64.5", "heads": "0", "d_ff": "1e9", "layers": "-1", "dropout": "inf",
     "ls": "0.9", "positional": "", "norm": "1"},
], ids=["unknown", "html-and-long", "custom-unknown", "custom-out-of-range"])
def test_bad_link_values_fall_back_to_the_defaults_with_a_notice(runs, params):
    fresh = run_page(PAGE, "en")
    at = open_link(params)
    assert_clean(at)
    shown = toasts(at)
    bad = [k for k in params if k != "size" or params["size"] != "custom"]
    for name in bad:
        assert any(f"“{name}”" in s for s in shown), (name, shown)
    assert len(shown) == len(bad), shown
    assert all("<b>" not in s and "xxxx" not in s for s in shown)  # the notice never repeats the link's text
    assert at.selectbox(key="train_task").value == "copy"
    assert at.query_params["task"] == "copy"
    if params["size"] == "custom":
        for kind, key in (("select_slider", "train_d_model"), ("select_slider", "train_heads"),
                          ("select_slider", "train_d_ff"), ("slider", "train_layers"), ("slider", "train_dropout"),
                          ("slider", "train_ls"), ("radio", "train_positional"), ("radio", "train_norm")):
            assert getattr(at, kind)(key=key).value == {"train_d_model": 64, "train_heads": 4, "train_d_ff": 128,
                                                        "train_layers": 2, "train_dropout": 0.0, "train_ls": 0.1,
                                                        "train_positional": "sinusoidal",
                                                        "train_norm": "post"}[key], key
        assert at.metric[0].value == estimated_parameters(task="copy", size="custom")
        assert (at.query_params["d_model"], at.query_params["layers"], at.query_params["norm"]) == ("64", "2", "post")
    else:
        assert at.radio(key="train_size").value == "tiny" and at.query_params["size"] == "tiny"
        assert at.metric[0].value == fresh.metric[0].value == "168.3k"
    for element in [*at.markdown, *at.caption, *at.info, *at.warning, *at.error]:
        assert "<b>" not in str(element.value)
    assert not any(runs.glob("*/job.json"))


def test_widget_changes_are_written_to_the_link(runs):
    at = run_page(PAGE, "en")
    assert (at.query_params["task"], at.query_params["size"]) == ("copy", "tiny")
    assert "d_model" not in at.query_params
    at.selectbox(key="train_task").set_value("en-ko")
    at.radio(key="train_size").set_value("custom").run()
    assert_clean(at)
    at.select_slider(key="train_d_model").set_value(96)
    at.select_slider(key="train_heads").set_value(6)
    at.slider(key="train_layers").set_value(4)
    at.slider(key="train_dropout").set_value(0.2)
    at.radio(key="train_positional").set_value("learned")
    at.radio(key="train_norm").set_value("pre").run()
    assert_clean(at)
    q = at.query_params
    assert (q["task"], q["size"], q["d_model"], q["heads"], q["layers"], q["positional"], q["norm"]) == \
        ("en-ko", "custom", "96", "6", "4", "learned", "pre")
    assert float(q["dropout"]) == pytest.approx(0.2) and float(q["ls"]) == pytest.approx(0.1)
    # The link now opens the same form in a new session.
    other = open_link({k: q[k] for k in q if k != "lang"})
    assert not toasts(other)
    assert other.metric[0].value == at.metric[0].value
    assert (other.select_slider(key="train_d_model").value, other.radio(key="train_norm").value) == (96, "pre")
    # Back to a preset size: the custom sizes leave the link (they are not used), and come back kept.
    at.radio(key="train_size").set_value("small").run()
    assert at.query_params["size"] == "small" and "d_model" not in at.query_params
    at.radio(key="train_size").set_value("custom").run()
    assert at.select_slider(key="train_d_model").value == 96 and at.query_params["d_model"] == "96"


def test_the_form_survives_other_pages_and_the_language(runs):
    at = run_page(PAGE, "en")
    at.selectbox(key="train_task").set_value("reverse")
    at.radio(key="train_size").set_value("custom").run()
    at.select_slider(key="train_d_model").set_value(128)
    at.radio(key="train_positional").set_value("learned")
    at.number_input(key="train_steps_custom").set_value(700).run()
    at.radio(key="train_size").set_value("small").run()
    at.number_input(key="train_steps_small").set_value(2000).run()
    at.radio(key="train_size").set_value("custom").run()
    assert_clean(at)
    shown = at.metric[0].value
    at.switch_page("../pages/multihead.py").run()
    at.session_state["lang"] = "ko"
    at.run()
    at.switch_page(f"../pages/{PAGE}").run()
    assert_clean(at)
    assert at.title[0].value == "나만의 Transformer 학습하기"
    assert at.selectbox(key="train_task").value == "reverse" and at.radio(key="train_size").value == "custom"
    assert at.select_slider(key="train_d_model").value == 128
    assert at.radio(key="train_positional").value == "learned"
    assert at.number_input(key="train_steps_custom").value == 700
    assert at.metric[0].value == shown
    at.radio(key="train_size").set_value("small").run()
    assert at.number_input(key="train_steps_small").value == 2000  # each size keeps its own recipe
    assert at.number_input(key="train_steps_small").value != at.session_state["train_steps_custom"]


def two_runs(runs) -> tuple[str, str]:
    """Two finished runs written by hand; the first is older (the page lists newest first)."""
    from app.jobs import owner_hash
    old, new = "copy-20250101-000000", "copy-20250102-000000"
    owner = owner_hash(TWO_RUNS_OWNER)  # started in the session as_session(TWO_RUNS_OWNER): it may delete them
    fake_run(runs, rid=old, job=json.dumps({"id": old, "created_at": 1_000, "owner": owner}))
    fake_run(runs, rid=new, job=json.dumps({"id": new, "created_at": 2_000, "owner": owner}))
    return old, new


TWO_RUNS_OWNER = "tok-two-runs"


def test_the_selected_run_survives_other_pages(runs):
    old, new = two_runs(runs)
    at = run_page(PAGE, "en", setup=as_session(TWO_RUNS_OWNER))
    assert_clean(at)
    assert at.selectbox(key="train_run_select").value == new  # the newest first
    at.selectbox(key="train_run_select").set_value(old).run()
    at.multiselect(key="train_compare_select").set_value([old])
    at.radio(key="train_compare_metric").set_value("val_exact").run()
    assert_clean(at)
    assert at.button(key=f"delete-{old}")  # the old run's details are shown
    at.switch_page("../pages/overview.py").run()
    at.session_state["lang"] = "ko"
    at.run()
    at.switch_page(f"../pages/{PAGE}").run()
    assert_clean(at)
    assert at.selectbox(key="train_run_select").value == old
    assert at.button(key=f"delete-{old}") and not any(b.key == f"delete-{new}" for b in at.button)
    assert at.multiselect(key="train_compare_select").value == [old]
    assert at.radio(key="train_compare_metric").value == "val_exact"
    assert "run" not in at.query_params and old not in str(dict(at.query_params))  # run ids stay local


def test_a_deleted_run_falls_back(runs):
    old, new = two_runs(runs)
    at = run_page(PAGE, "en")
    at.selectbox(key="train_run_select").set_value(old).run()
    at.multiselect(key="train_compare_select").set_value([old, new]).run()
    fake_run(runs, rid="copy-20250103-000000", job=json.dumps({"id": "copy-20250103-000000", "created_at": 3_000}))
    shutil.rmtree(runs / old)  # deleted elsewhere (another tab, by hand)
    at.run()
    assert_clean(at)
    assert at.selectbox(key="train_run_select").value == "copy-20250103-000000"  # the newest
    assert at.multiselect(key="train_compare_select").value == [new]  # the others stay chosen


@pytest.mark.slow
def test_start_shows_the_new_run_although_another_was_selected(runs):
    old, new = two_runs(runs)
    at = run_page(PAGE, "en")
    at.selectbox(key="train_run_select").set_value(old).run()
    at.number_input(key="train_steps_tiny").set_value(10)
    at.button(key="train_start").click().run()
    assert_clean(at)
    rid = at.selectbox(key="train_run_select").value
    assert rid not in (old, new) and (runs / rid / "job.json").is_file()
    assert at.session_state["train_run_select"] == rid
    wait_until(at, runs, rid, {"done", "failed"})
    assert at.selectbox(key="train_run_select").value == rid


# -----------------------------------------------------------------------------
# text helpers (no page run)

@pytest.mark.parametrize("seconds, en, ko", [
    (75, "1 min 15 s", "1분 15초"), (3725, "1 h 2 min", "1시간 2분"), (9.6, "10 s", "10초"),
    (None, "–", "–"), (float("nan"), "–", "–"),
])
def test_fmt_duration(seconds, en, ko):
    assert fmt_duration(seconds, "en") == en and fmt_duration(seconds, "ko") == ko


def test_status_text(monkeypatch):
    monkeypatch.setattr(i18n, "lang", lambda: "ko")
    assert status_text(Message("train.status.stopped", {"at": 12})) == "12 스텝에서 멈췄습니다. 이어서 학습할 수 있습니다"
    assert status_text(Message("jobs.errors.cannot_resume", {"id": "r", "state": Message("jobs.state.done")})) == \
        "r 실행은 이어서 학습할 수 없습니다 (상태: 완료)."
    assert status_text("something new") == "something new"  # an older version's sentence: as it is
    assert status_text("*x* $y$") == r"\*x\* \$y\$"
    assert status_text(Message("no.such.code", {"n": 1})) == plain("no.such.code {'n': 1}")
    assert status_text(None) == ""


# -----------------------------------------------------------------------------
# a classroom shares one server

# -- the upload success box echoed the file name and the first pair as Markdown: an image link made the
#    browser fetch it, ** turned bold.
def test_upload_success_box_shows_user_text_as_text(runs):
    at = run_page(PAGE, "en")
    at.selectbox(key="train_task").set_value("tsv").run()
    data = ("**b** ![i](http://x.invalid/p.png)\t<b>굵게</b>\n"
            + "".join(f"word {i}\t낱말 {i}\n" for i in range(30))).encode()
    name = "![i](http://x.invalid/f.png)_x_.tsv"
    at.file_uploader(key="train_upload").set_value((name, data, "text/plain")).run()
    assert_clean(at)
    box = at.success[0].value
    assert box == label("en", "train.upload_ok", file=plain(name), count=31, source=plain("**b** ![i](http://x.invalid/p.png)"),
                        target=plain("<b>굵게</b>"))
    assert "![i](" not in box and "**b**" not in box and "\\*\\*b\\*\\*" in box


def as_session(token: str):
    """run_page's setup: this AppTest session's owner token (a browser session's secret)."""
    return lambda at: at.session_state.__setitem__("train_owner", token)


def test_others_runs_are_read_only_with_an_explanation(runs, monkeypatch):
    from app.jobs import owner_hash
    monkeypatch.delenv("ATLAS_TEACHER_MODE", raising=False)
    rid = "copy-20250101-000000"
    fake_run(runs, rid, job=json.dumps({"id": rid, "created_at": 1.0, "owner": owner_hash("tok-a"),
                                        "options": {"task": "copy", "steps": 20}}))
    owner = run_page(PAGE, "en", setup=as_session("tok-a"))
    assert_clean(owner)
    assert owner.button(key=f"delete-{rid}") and label("en", "train.not_yours") not in texts(owner)
    for lang in LANGS:
        other = run_page(PAGE, lang, setup=as_session("tok-b"))
        assert_clean(other)
        assert all(b.key != f"delete-{rid}" for b in other.button)  # visible, but no Delete
        assert label(lang, "train.not_yours") in texts(other)
        assert tables(other)[0].iloc[0, 0] == rid
    assert json.loads((runs / rid / "job.json").read_text())["owner"] != "tok-a"  # only a hash is stored


def test_started_runs_belong_to_the_session(runs, monkeypatch):
    """Start stores the session's owner hash (no trainer needed: the manager's python is a stand-in)."""
    from app.jobs import get_manager as manager, owner_hash
    monkeypatch.setattr(manager(str(runs.resolve())), "python", "/bin/false")
    at = run_page(PAGE, "en", setup=as_session("tok-start"))
    at.number_input(key="train_steps_tiny").set_value(10)
    at.button(key="train_start").click().run()
    assert_clean(at)
    rid = at.session_state["train_run_select"]
    assert json.loads((runs / rid / "job.json").read_text())["owner"] == owner_hash("tok-start")


@pytest.mark.parametrize("lang", list(LANGS))
def test_runs_dir_that_is_a_file_gives_a_clear_message(tmp_path, monkeypatch, lang):
    f = tmp_path / "runs-file"
    f.write_text("not a folder")
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(f))
    at = run_page(PAGE, lang)
    assert_clean(at)
    errors = " ".join(e.value for e in at.error)
    assert ("cannot be used" if lang == "en" else "쓸 수 없습니다") in errors, errors
    assert "runs\\-file" in errors or "runs-file" in errors


def test_lock_that_cannot_be_opened_gives_a_clear_message(tmp_path, monkeypatch):
    from app.jobs import manager as jobs  # where JobManager opens its lock
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "locked"))  # (not the `runs` fixture: its clean-up lists runs)

    def refuse(root):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(jobs, "_lock_file", refuse)
    at = run_page(PAGE, "en")
    assert_clean(at)
    assert "cannot be used: Permission denied" in " ".join(e.value for e in at.error)
    at.button(key="train_start").click().run()
    assert_clean(at)


def test_disk_full_on_start_gives_a_clear_message_and_creates_nothing(runs, monkeypatch):
    from app.jobs import manager as jobs  # where JobManager.start writes its files
    real = jobs.atomic_write_json

    def full(path, obj):
        if str(path).endswith("job.json"):
            raise OSError(28, "No space left on device")
        return real(path, obj)
    monkeypatch.setattr(jobs, "atomic_write_json", full)
    at = run_page(PAGE, "ko")
    at.number_input(key="train_steps_tiny").set_value(10)
    at.button(key="train_start").click().run()
    assert_clean(at)
    assert "가득 찼습니다" in " ".join(e.value for e in at.error)
    assert [p.name for p in runs.iterdir()] == [".jobs.lock"]  # no run folder, visible or hidden


def test_disk_use_and_the_oldest_finished_runs_are_listed(runs):
    fake_run(runs, "copy-20250101-000000", job=json.dumps({"id": "copy-20250101-000000", "created_at": 1.0}))
    fake_run(runs, "copy-20250102-000000", job=json.dumps({"id": "copy-20250102-000000", "created_at": 2.0}))
    at = run_page(PAGE, "en")
    assert_clean(at)
    assert any(e.label.startswith("Disk: the runs use") for e in at.expander)
    cleanup = tables(at)[-1]
    assert list(cleanup["run"]) == ["copy-20250101-000000", "copy-20250102-000000"]  # oldest first


def test_en_ko_starts_from_its_measured_recipe_by_tokens(runs):
    """Task en-ko at the small size offers the recipe measured for it: batches by tokens, and the
    launched trainer gets exactly those options."""
    from app.jobs.options import TASK_RECIPES, TrainOptions, train_arguments
    recipe = TASK_RECIPES[("en-ko", "small")]
    at = run_page(PAGE, "en")
    at.selectbox(key="train_task").set_value("en-ko")
    at.run()
    at.radio(key="train_size").set_value("small")
    at.run()
    assert_clean(at)
    assert at.select_slider(key="train_batch_tokens_en-ko_small").value == recipe["batch_tokens"]
    assert at.number_input(key="train_steps_en-ko_small").value == recipe["steps"]
    assert at.number_input(key="train_warmup_en-ko_small").value == recipe["warmup"]
    args = train_arguments(TrainOptions(task="en-ko", size="small", steps=recipe["steps"],
                                        batch_size=recipe["batch_size"], warmup=recipe["warmup"],
                                        lr_factor=recipe["lr_factor"], batch_tokens=recipe["batch_tokens"]))
    assert args[args.index("--batch-tokens") + 1] == str(recipe["batch_tokens"])


def test_owner_cookie_accepts_only_a_token_this_app_writes():
    from app.jobs import OWNER_COOKIE, cookie_script, new_owner_token, owner_from_cookie
    token = new_owner_token()
    assert owner_from_cookie(token) == token and token != new_owner_token()
    for bad in (None, "", "tok-a", token[:-1], token + "x", token[:-1] + "=", 42, f"{token}; x=1", "<" + token[1:]):
        assert owner_from_cookie(bad) is None, bad
    script = cookie_script(token)
    assert f"{OWNER_COOKIE}={token};" in script and "SameSite=Strict" in script and "Max-Age=" in script
    with pytest.raises(ValueError):
        cookie_script("x'; alert(1); '")


class _Cookies(dict):
    """What st.context.cookies gives a session: the cookies its browser sent."""


def test_a_reload_keeps_the_browsers_runs_through_its_cookie(runs, monkeypatch):
    """A reload starts a new session: the runs this browser started stay its own through the cookie the page
    writes, while another browser (another cookie, a copied link, no cookie) sees them read-only."""
    from app.jobs import OWNER_COOKIE, get_manager as manager, owner_hash
    from pages.views import train_owner
    monkeypatch.delenv("ATLAS_TEACHER_MODE", raising=False)
    monkeypatch.setattr(manager(str(runs.resolve())), "python", "/bin/false")
    sent = _Cookies()
    monkeypatch.setattr(train_owner, "sent_cookies", lambda: sent)
    first = run_page(PAGE, "en")
    token = first.session_state["train_owner"]
    assert train_owner.owner_from_cookie(token) == token
    scripts = [e.proto.body for e in first.get("html") if OWNER_COOKIE in e.proto.body]
    assert len(scripts) == 1 and token in scripts[0]  # the page writes the cookie
    rid = "copy-20250101-000000"
    fake_run(runs, rid, job=json.dumps({"id": rid, "created_at": 1.0, "owner": owner_hash(token),
                                        "options": {"task": "copy", "steps": 20}}))
    sent[OWNER_COOKIE] = token  # the browser sends it back on the reload
    reloaded = run_page(PAGE, "en")
    assert_clean(reloaded)
    assert reloaded.session_state["train_owner"] == token
    assert reloaded.button(key=f"delete-{rid}") and label("en", "train.not_yours") not in texts(reloaded)
    for cookie in (None, "tok-b", token[:-2]):  # another browser, or a cookie this app did not write
        sent.clear()
        if cookie:
            sent[OWNER_COOKIE] = cookie
        other = run_page(PAGE, "en")
        assert other.session_state["train_owner"] != token
        assert all(b.key != f"delete-{rid}" for b in other.button)
        assert label("en", "train.not_yours") in texts(other)
    assert all(token not in str(v) for v in other.query_params.values())  # never in a link


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_second_learner_is_told_what_to_do_instead_of_resume(runs, monkeypatch, lang):
    from app.jobs import owner_hash
    monkeypatch.delenv("ATLAS_TEACHER_MODE", raising=False)
    rid = "copy-20250101-000000"
    d = fake_run(runs, rid, status=json.dumps({"state": "stopped", "step": 10, "total_steps": 20, "task": "copy",
                                               "resumable": True,
                                               "message": {"code": "train.status.stopped", "args": {"at": 6000}}}),
                 job=json.dumps({"id": rid, "created_at": 1.0, "owner": owner_hash("tok-a"),
                                 "options": {"task": "copy", "steps": 20}}))
    (d / "checkpoint.pt").write_bytes(b"x")
    owner = run_page(PAGE, lang, setup=as_session("tok-a"))
    assert owner.button(key=f"resume-{rid}")
    other = run_page(PAGE, lang, setup=as_session("tok-b"))
    assert_clean(other)
    assert all(b.key != f"resume-{rid}" for b in other.button)
    assert label(lang, "train.not_yours_resume") in texts(other)
    assert "6,000" in texts(other) and "6000" not in texts(other)


@pytest.mark.parametrize("lang", list(LANGS))
def test_every_step_count_in_a_status_is_written_with_thousands_separators(lang):
    """A run's status beside its progress bar ("step 6,000 of 6,000") writes its counts the same way."""
    table = i18n.catalogue(lang)
    keys = [k for k in table if k.startswith(("train.status.", "jobs.status."))]
    assert len(keys) > 10
    args = {"at": 6000, "step": 6000, "saved": 6000, "total": 6000, "seconds": 12.0, "code": 1, "detail": "x",
            "signal": "SIGTERM", "value": "nan", "lr": 1e-3, "count": 2, "steps": "5,900, 6,000", "free_mb": 3}
    for key in keys:
        text = i18n.fill(table[key], args)
        assert "6000" not in text, (key, text)
