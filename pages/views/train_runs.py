"""The training page's runs panel (pages/train.py): the table of runs, one run's details with its actions
(stop, resume or start again, open, delete) and curves, the comparison of runs and the disk they use. `mgr` is
the server's job manager (app.jobs.get_manager), `owner` this browser session's owner token."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from app import format as fmt
from app.charts import export, training as charts
from app.i18n import Message, UserError, options, t
from app.jobs import COMPARE_METRICS, MB, compare_label, run_actions as offered_actions
from app.jobs.options import ALL_TASKS
from app.pages_list import PAGES
from app.resources import from_disk
from app.state import RUN_PARAM, keep
from app.ui import error, plot, table
from pages.views import study
from pages.views.family import MEMBER_OF_TASK
from pages.views.train_ui import fmt_duration, status_text

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = ROOT / "pages" / "inspector.py"
FAMILY_PAGE = ROOT / "pages" / "family.py"


def labels(prefix: str, values):
    """A format_func with this run's labels (AppTest calls it outside the script run)."""
    return options(prefix, values).__getitem__


def inspector_registered() -> bool:
    return INSPECTOR.is_file() and any(p.file == "inspector.py" for p in PAGES)


def state_name(state: str) -> str:
    return t(f"jobs.state.{state}")


def task_name(task: str) -> str:
    return t(f"train.task.{task}") if task in ALL_TASKS else task


def run_table(runs: list[dict], key: str = "runs") -> None:
    """Every run in one table: its state, progress and scores."""
    rows = [{
        t("train.col.run"): r["id"], t("train.col.task"): task_name(r["task"]),
        t("train.col.state"): state_name(r["state"]), t("train.col.step"): f"{r['step']:,} / {r['total']:,}",
        t("train.col.loss"): fmt.fixed(r["loss"]), t("train.col.val_loss"): fmt.fixed(r["val_loss"]),
        t("train.col.val_token_acc"): fmt.percent(r["val_token_acc"]),
        t("train.col.val_exact"): fmt.percent(r["val_exact"]),
        t("train.col.parameters"): fmt.count(r["parameters"]),
        t("train.col.tokens_per_second"): fmt.count(r["tokens_per_second"]),
        t("train.col.eta"): fmt_duration(r["eta_seconds"]) if r["state"] == "running" else "",
    } for r in runs]
    table(rows, key=key)  # wider than the page: it scrolls sideways, the cut edge fading out (app.ui.table)


def run_actions(mgr, owner: str, r: dict) -> None:
    """Stop, resume (or start again: a failed run with no checkpoint), open in the inspector (or the family page)
    and delete, as far as this session may."""
    rid, actions = r["id"], r["actions"]
    row = st.container(horizontal=True, vertical_alignment="center")  # each action as wide as its label, in one row that wraps when narrow
    if "stop" in actions and row.button(t("train.action.stop"), icon=":material/stop:", key=f"stop-{rid}"):
        try:
            mgr.stop(rid, owner=owner)
        except UserError as e:
            error(e)
        else:
            st.toast(t("train.stopping"))
    for action, icon, do in (("resume", ":material/play_arrow:", mgr.resume),
                             ("restart", ":material/restart_alt:", mgr.restart)):  # go on, or start again
        if action in actions and row.button(t(f"train.action.{action}"), icon=icon, key=f"{action}-{rid}"):
            try:
                do(rid, owner=owner)
            except UserError as e:
                error(e)
            else:
                st.rerun(scope="app")
    if "inspect" in actions:  # a link: the browser changes page itself (app.state.opened_run says why)
        family = r["task"] in MEMBER_OF_TASK  # a member of the family opens in its own section
        label = t("train.open_family") if family else t("train.action.inspect")
        if family or inspector_registered():
            row.page_link(str(FAMILY_PAGE if family else INSPECTOR), label=label, icon=":material/search:",
                          query_params={RUN_PARAM: rid})
        else:
            row.info(t("train.no_inspector", path=mgr.model_dir(rid)))
    if "delete" in actions and row.button(t("train.action.delete"), icon=":material/delete:", key=f"delete-{rid}"):
        st.session_state["train_confirm_delete"] = rid
    if st.session_state.get("train_confirm_delete") == rid:
        st.warning(t("train.confirm_delete", id=rid))
        y, n, _ = st.columns([1, 1, 4])
        if y.button(t("train.action.confirm"), type="primary", key=f"confirm-delete-{rid}"):
            st.session_state.pop("train_confirm_delete", None)
            try:
                mgr.delete(rid, owner=owner)
            except UserError as e:
                error(e)
            except OSError as e:
                error(Message("train.delete_failed"), detail=str(e))
            else:  # "Show run" and the comparison forget the deleted run (keep's valid=)
                st.rerun(scope="app")
        if n.button(t("train.action.cancel"), key=f"cancel-delete-{rid}"):
            st.session_state.pop("train_confirm_delete", None)
            st.rerun(scope="fragment")


def score_names(task: str, where: str) -> tuple[str, str]:
    """The labels of the two validation scores: token accuracy and exact match for translation and LM, the
    family members' own scores (e.g. digit accuracy; objects found and mean IoU) for theirs."""
    if task in MEMBER_OF_TASK:
        return t(f"train.family_score.{MEMBER_OF_TASK[task]}.main"), t(f"train.family_score.{MEMBER_OF_TASK[task]}.second")
    return t(f"train.{where}.token_accuracy"), t(f"train.{where}.exact_match")


def run_curves(rid: str, records: list[dict], task: str = "") -> None:
    x = t("common.step")
    main_name, second_name = score_names(task, "chart")
    left, right = st.columns(2)
    with left:
        plot(charts.loss_figure(records, title=t("train.chart.loss"), train_name=t("train.chart.training"),
                                val_name=t("train.chart.validation"), x_title=x,
                                y_title=t("train.chart.loss_axis")), key=f"loss-{rid}")
        st.caption(t("train.smoothing_caption"))
    with right:
        if any(rec.get("kind") == "eval" for rec in records):
            plot(charts.accuracy_figure(records, title=t("train.chart.accuracy"),
                                        token_name=main_name, exact_name=second_name,
                                        x_title=x, y_title=t("train.chart.accuracy_axis")), key=f"acc-{rid}")
        else:
            st.info(t("train.no_eval_yet"))
    plot(charts.lr_figure(records, title=t("train.chart.lr"), lr_name=t("train.metric.learning_rate"),
                          tps_name=t("train.metric.tokens_per_second"), x_title=x), key=f"lr-{rid}")
    st.download_button(t("train.download_curves"), export.metrics_csv(records), file_name=f"{rid}-metrics.csv",
                       mime="text/csv", key=f"csv-{rid}")


def run_details(mgr, owner: str, r: dict) -> None:
    """One run: its progress, scores, actions, curves, samples and configuration."""
    rid, state = r["id"], r["state"]
    if state == "running":
        progress = t("train.progress_running", done=r["step"], total=r["total"], eta=fmt_duration(r["eta_seconds"]))
    else:
        progress = t("train.progress", state=state_name(state), done=r["step"], total=r["total"])
    st.progress(r["progress"], text=progress)
    if r["message"]:
        box = {"failed": st.error, "stopped": st.warning, "done": st.success}.get(state, st.info)
        box(status_text(r["message"]))
    cols = st.columns(3) + st.columns(3)  # three a row: a label or a value such as 3.28e-03 fits its box
    cols[0].metric(t("train.metric.training_loss"), fmt.fixed(r["loss"]))
    cols[1].metric(t("train.metric.validation_loss"), fmt.fixed(r["val_loss"]))
    main_name, second_name = score_names(r["task"], "metric")
    cols[2].metric(main_name, fmt.percent(r["val_token_acc"]))
    if r["val_exact"] is not None or r["task"] not in MEMBER_OF_TASK:  # a family member may have one score only
        cols[3].metric(second_name, fmt.percent(r["val_exact"]))
    cols[4].metric(t("train.metric.learning_rate"), f"{r['lr']:.2e}" if isinstance(r["lr"], float) else "–")
    cols[5].metric(t("train.metric.tokens_per_second"), fmt.count(r["tokens_per_second"]))
    if not r["mine"]:  # say what this learner can do, above all where the status asks to resume
        resumable = any(a in offered_actions(r) for a in ("resume", "restart"))  # to its owner
        st.caption(t("train.not_yours_resume" if resumable else "train.not_yours"))
    run_actions(mgr, owner, r)

    records = mgr.read_metrics(rid)
    if records:
        run_curves(rid, records, r["task"])
    if r["samples"]:
        st.subheader(t("train.samples_title"))
        table([{t("train.sample.source"): s["source"], t("train.sample.target"): s["target"],
                t("train.sample.prediction"): s["prediction"], "✓": "✓" if s["correct"] else "✗"}
               for s in r["samples"]], key="run-samples")
    with st.expander(t("train.config_expander")):
        st.json({"config": r["config"], "options": r["options"], "device": r["device"], "path": r["path"]},
                expanded=False)
        tail = mgr.log_tail(rid, 15)
        if tail:
            st.code(tail, language="text")


def compare(mgr, runs: list[dict]) -> None:
    """Chosen runs' curves of one metric in one figure."""
    st.subheader(t("train.compare_title"))
    ids = [r["id"] for r in runs]
    kept = st.session_state.get("train_compare_select")
    if isinstance(kept, list) and any(i not in ids for i in kept):  # a deleted run leaves the others chosen
        st.session_state["train_compare_select"] = [i for i in kept if i in ids]
    chosen = st.multiselect(t("train.compare_select"), ids, placeholder=t("common.choose_options"),
                            **keep("train_compare_select", ids[:2], valid=ids))
    metrics = list(COMPARE_METRICS)
    metric = st.radio(t("train.compare_metric_label"), metrics, format_func=labels("train.compare_metric", metrics),
                      horizontal=True, **keep("train_compare_metric", "val_loss", url="compare_metric", valid=metrics))
    if not chosen:
        return
    by_id = {r["id"]: r for r in runs}
    by_run = {compare_label(by_id[rid]): mgr.read_metrics(rid) for rid in chosen}
    name = t(f"train.compare_metric.{metric}")
    plot(charts.compare_figure(by_run, COMPARE_METRICS[metric], metric, title=name,
                               x_title=t("common.step"), y_title=name), key="compare-fig")
    st.download_button(t("train.download_compare"), export.compare_csv(by_run), file_name="compare-runs.csv",
                       mime="text/csv", key="compare-csv")


def cleanup_list(mgr, owner: str) -> None:
    """The disk the runs use against the budget, and the oldest finished runs (to delete first)."""
    used = mgr.disk_used()
    old = mgr.cleanup_candidates(owner=owner)
    with st.expander(t("train.disk_title", used=used / MB, budget=float(mgr.budget_mb))):
        if not old:
            st.caption(t("train.cleanup_none"))
            return
        st.caption(t("train.cleanup_caption"))
        table([{t("train.col.run"): r["id"], t("train.col.state"): state_name(r["state"]),
                t("train.col.size"): fmt.size_bytes(r["bytes"]),
                t("train.col.yours"): "✓" if r["mine"] else ""} for r in old], key="cleanup")


STUDY_FRESH_S = 3.0  # the page polls while runs train; each summary reads every run's files


def study_runs_of(folder: str) -> list[dict]:
    """The study's runs, summarised at most every STUDY_FRESH_S seconds for the whole server (not on every
    rerun of this page)."""
    return from_disk(study.run_summaries, Path(folder), fresh_s=STUDY_FRESH_S)
