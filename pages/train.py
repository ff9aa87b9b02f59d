"""Train your own: choose a task and a model size, start a real training run in the background,
watch it learn, compare runs, open a result in the inspector. Runs live in RUNS (app/jobs.py)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from app import format as fmt
from pages.views import study
from app.charts import export, training as charts
from app.i18n import Message, UserError, options, prose, say, t
from app.fast.warmup import prepare_estimates
from app.jobs import ACTIVE, COMPARE_METRICS, MB, compare_label, get_manager, is_starting, new_owner_token, runs_dir
from app.jobs.options import (ALL_TASKS, CUSTOM_DEFAULTS, DEFAULT_TASK, LIMITS, MAX_PARAMETERS, MAX_UPLOAD_BYTES,
                              POSITIONALS, SIZES, TASK_RECIPES, TrainOptions, is_family, recipe_dropout,
                              task_recipe)
from app.pages_list import PAGES
from app.resources import checked_upload
from app.state import between, keep, set_link
from pages.views.train_ui import fmt_duration, plain, status_text
from app.ui import error, plot, text

ROOT = Path(__file__).resolve().parent.parent
INSPECTOR = ROOT / "pages" / "inspector.py"
FAMILY_PAGE = ROOT / "pages" / "family.py"
FAMILY_MEMBER = {"mlm": "mlm", "vit-digits": "vit", "detr-shapes": "detr"}  # task -> the family page's section
mgr = get_manager(str(runs_dir()))
mgr.prepare()  # a trainer started ahead of time (torch imported): the next Start's first step comes sooner
# This browser session's secret: it owns the runs it starts (job.json keeps only its hash); others' runs are
# read-only here unless the server runs in teacher mode (app/jobs.py, docs/classroom.md).
OWNER = st.session_state.setdefault("train_owner", new_owner_token())


def labels(prefix: str, values):
    """A format_func with this run's labels (AppTest calls it outside the script run)."""
    return options(prefix, values).__getitem__


def on_step(step: float):
    """`check=` for a slider's value from a link: a multiple of the slider's step."""
    return lambda v: abs(v / step - round(v / step)) < 1e-6


# Choices of the form. A link pre-fills it (?task=reverse&size=custom&d_model=128&heads=8&...: the link
# names of the custom sizes are CUSTOM_URL); it never starts a run.
D_MODELS = [16, 32, 48, 64, 96, 128, 192, 256, 384, 512]
HEADS = [1, 2, 3, 4, 6, 8, 12, 16]
D_FFS = [32, 64, 128, 256, 512, 1024, 2048]
NORMS = ["post", "pre"]
BATCHES = [8, 16, 32, 64, 128, 256]
TOKEN_BATCHES = [512, 1024, 2048, 4096, 8192]  # --batch-tokens of a recipe that batches by tokens
CUSTOM_URL = ("d_model", "heads", "d_ff", "layers", "dropout", "ls", "positional", "norm")

st.title(t("train.title"))
prepare_estimates()  # the en-ko corpus tasks' estimates, in the background while the learner reads
text("train.intro")

# -----------------------------------------------------------------------------
# 1. task
st.header(t("train.section.task"))
task = st.selectbox(t("train.task_question"), ALL_TASKS, format_func=labels("train.task", ALL_TASKS),
                    **keep("train_task", DEFAULT_TASK, url="task", valid=ALL_TASKS))
st.caption(t(f"train.task_help.{task}"))
upload_bytes, upload_name, upload_ok, pairs = None, "", True, None
if task == "tsv":
    up = st.file_uploader(t("train.upload_label"), type=["tsv", "txt"], key="train_upload",
                          max_upload_size=MAX_UPLOAD_BYTES // 1_000_000)
    if up is None:
        upload_ok = False
        st.info(t("train.upload_example"))
    else:
        upload_bytes, upload_name = up.getvalue(), up.name
        checked = checked_upload(upload_bytes, upload_name)
        if "error" in checked:
            upload_ok = False
            st.error(t("train.upload_unusable", problem=say(checked["error"])), icon="🚫")
        else:
            pairs = checked["sample"]
            st.success(t("train.upload_ok", file=plain(upload_name), count=checked["count"],
                         source=plain(pairs[0][0]), target=plain(pairs[0][1])))

# -----------------------------------------------------------------------------
# 2. model size
st.header(t("train.section.size"))
custom = {}
if is_family(task):  # its own architecture: no size to choose
    st.info(t("train.family_size"))
    size = "small"
else:
    size = st.radio(t("train.size_label"), SIZES, format_func=labels("train.size", SIZES), horizontal=True,
                    **keep("train_size", "tiny", url="size", valid=SIZES))
if size == "custom" and not is_family(task):
    c1, c2, c3 = st.columns(3)
    with c1:
        custom["d_model"] = st.select_slider("d_model", D_MODELS, **keep(
            "train_d_model", CUSTOM_DEFAULTS["d_model"], url="d_model", valid=D_MODELS))
        custom["heads"] = st.select_slider(t("train.heads_label"), HEADS, **keep(
            "train_heads", CUSTOM_DEFAULTS["heads"], url="heads", valid=HEADS))
        custom["d_ff"] = st.select_slider("d_ff", D_FFS, **keep(
            "train_d_ff", CUSTOM_DEFAULTS["d_ff"], url="d_ff", valid=D_FFS))
    with c2:
        max_layers = LIMITS["layers"][1]
        custom["layers"] = st.slider(t("train.layers_label"), 1, max_layers, **keep(
            "train_layers", CUSTOM_DEFAULTS["layers"], url="layers", valid=range(1, max_layers + 1)))
        custom["dropout"] = st.slider(t("train.dropout_label"), 0.0, LIMITS["dropout"][1], step=0.05, **keep(
            "train_dropout", float(CUSTOM_DEFAULTS["dropout"]), url="dropout",
            valid=between(0.0, LIMITS["dropout"][1]), check=on_step(0.05)))
        custom["label_smoothing"] = st.slider(t("train.ls_label"), 0.0, LIMITS["label_smoothing"][1], step=0.05,
                                              **keep("train_ls", float(CUSTOM_DEFAULTS["label_smoothing"]), url="ls",
                                                     valid=between(0.0, LIMITS["label_smoothing"][1]),
                                                     check=on_step(0.05)))
    with c3:
        custom["positional"] = st.radio(t("train.positional_label"), POSITIONALS,
                                        format_func=labels("train.positional", POSITIONALS), **keep(
                                            "train_positional", CUSTOM_DEFAULTS["positional"], url="positional",
                                            valid=POSITIONALS))
        norm = st.radio(t("train.norm_label"), NORMS, format_func=labels("train.norm", NORMS), **keep(
            "train_norm", "pre" if CUSTOM_DEFAULTS["norm_first"] else "post", url="norm", valid=NORMS))
        custom["norm_first"] = norm == "pre"
else:  # a link describes the form as shown: the custom sizes only with size=custom
    for name in CUSTOM_URL:
        set_link(name, None)

# -----------------------------------------------------------------------------
# 3. training recipe
st.header(t("train.section.training"))
recipe = task_recipe(task, size)  # a family task's own, en-ko's measured recipe, else the size's
which = task if is_family(task) else (f"{task}_{size}" if (task, size) in TASK_RECIPES else size)
c1, c2, c3, c4, c5, c6 = st.columns(6)
# One set of keys per size (and per family task): each starts from its own recipe, and keeps what the learner set.
steps = c1.number_input(t("train.steps_label"), 10, LIMITS["steps"][1], step=50, **keep(
    f"train_steps_{which}", recipe["steps"], valid=range(10, LIMITS["steps"][1] + 1)))
batch, batch_tokens = recipe["batch_size"], 0
if recipe["batch_tokens"]:  # sentences of similar length together, at most this many padded tokens a step
    batch_tokens = c2.select_slider(t("train.batch_tokens_label"), TOKEN_BATCHES, help=t("train.batch_tokens_help"),
                                    **keep(f"train_batch_tokens_{which}", recipe["batch_tokens"]
                                           if recipe["batch_tokens"] in TOKEN_BATCHES else 2048, valid=TOKEN_BATCHES))
else:
    batch = c2.select_slider(t("train.batch_label"), BATCHES, **keep(
        f"train_batch_{which}", recipe["batch_size"] if recipe["batch_size"] in BATCHES else 64, valid=BATCHES))
warmup = c3.number_input(t("train.warmup_label"), 1, LIMITS["warmup"][1], step=50, **keep(
    f"train_warmup_{which}", recipe["warmup"], valid=range(1, LIMITS["warmup"][1] + 1)))
lr_factor = c4.number_input(t("train.lr_label"), LIMITS["lr_factor"][0], LIMITS["lr_factor"][1], step=0.25, **keep(
    f"train_lr_{which}", float(recipe["lr_factor"]), valid=between(*LIMITS["lr_factor"])))
cooldown = 0.0
if not is_family(task):  # the family members train with the paper's schedule
    cooldown = c5.slider(t("train.cooldown_label"), 0.0, LIMITS["cooldown"][1], step=0.05, help=t("train.cooldown_help"),
                         **keep(f"train_cooldown_{which}", float(recipe["cooldown"]),
                                valid=between(0.0, LIMITS["cooldown"][1]), check=on_step(0.05)))
dropout = None
if size != "custom" and not is_family(task):  # a custom size sets its dropout with its sizes, above
    dropout = c6.slider(t("train.dropout_label"), 0.0, LIMITS["dropout"][1], step=0.05, **keep(
        f"train_recipe_dropout_{which}", recipe_dropout(recipe, size), valid=between(0.0, LIMITS["dropout"][1]),
        check=on_step(0.05)))
st.caption(prose("train.lr_schedule"))

choices = TrainOptions(task=task, size=size, steps=int(steps), batch_size=int(batch), warmup=int(warmup),
                       lr_factor=float(lr_factor), batch_tokens=int(batch_tokens), cooldown=float(cooldown),
                       dropout=dropout, custom=custom,
                       tsv_bytes=upload_bytes, tsv_name=upload_name)

# ---- estimate
est = None
try:
    est = mgr.estimate(choices, pairs=pairs)
except UserError as e:
    if e.message.code == "jobs.errors.heads_divide":
        st.warning(t("train.heads_warning", **e.message.args))
    else:
        st.warning(t("train.no_estimate", problem=say(e.message)))
if est:
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(t("train.metric.parameters"), fmt.count(est["parameters"]), help=t("train.metric_help.parameters"))
    m2.metric(t("train.metric.memory"), fmt.size_bytes(est["memory_bytes"]), help=t("train.metric_help.memory"))
    m3.metric(t("train.metric.time"), "≈ " + fmt_duration(est["seconds"]) if est["seconds"] else "–",
              help=t("train.metric_help.time"))
    if not est.get("family"):
        m4.metric(t("train.metric.tokens_per_step"), fmt.count(est["tokens_per_step"]))
        st.caption(t("train.estimate_caption", tflop=est["flops"] / 1e12, gflops=est["machine_flops"] / 1e9,
                     threads=mgr.threads))
    else:
        st.caption(t("train.family_estimate_caption"))
    if est["parameters"] > MAX_PARAMETERS:  # a hint like the heads one; Start explains the refusal
        st.warning(t("train.too_big", count=est["parameters"], limit=MAX_PARAMETERS))

st.caption(t("train.limits", slots=mgr.max_running, max_d_model=LIMITS["d_model"][1], max_layers=LIMITS["layers"][1],
             max_steps=LIMITS["steps"][1], millions=MAX_PARAMETERS / 1e6))
st.caption(t("train.queue_limits", per_session=mgr.per_owner, total=mgr.total, budget=float(mgr.budget_mb)))

if st.button(t("train.start"), type="primary", icon=":material/play_arrow:", key="train_start",
             disabled=not upload_ok):
    try:
        run_id = mgr.start(choices, owner=OWNER)
    except UserError as e:
        error(e, icon="🚫")
    else:
        # "Show run" (drawn below, not yet in this run) opens on the new run.
        st.session_state["train_run_select"] = run_id
        st.toast(t("train.started", id=run_id), icon="🚀")

# -----------------------------------------------------------------------------
# 4. runs (a fragment that refreshes itself while something trains)
st.header(t("train.section.runs"))
st.caption(t("train.stored_in", path=mgr.root))
folder_problem = mgr.problem()  # read-only, a file, no permission: say so instead of a traceback
if folder_problem is not None:
    error(folder_problem, icon="🚫")
    st.stop()
try:
    _runs_at_start = mgr.list_runs(owner=OWNER)
except UserError as e:
    error(e, icon="🚫")
    st.stop()
_active_at_start = any(r["state"] in ACTIVE for r in _runs_at_start)
_starting_at_start = any(is_starting(r) for r in _runs_at_start)
# While something trains the runs refresh every 2 s; every 0.5 s until a new run's first step shows.
REFRESH = 0.5 if _starting_at_start else 2.0 if _active_at_start else None
if mgr.teacher:
    st.info(t("train.teacher_mode"))


def inspector_registered() -> bool:
    return INSPECTOR.is_file() and any(p.file == "inspector.py" for p in PAGES)


def state_name(state: str) -> str:
    return t(f"jobs.state.{state}")


def task_name(task: str) -> str:
    return t(f"train.task.{task}") if task in ALL_TASKS else task


def run_table(runs: list[dict]) -> None:
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
    wide = {t(f"train.col.{c}"): st.column_config.TextColumn(width="medium") for c in ("run", "step", "state", "eta")}
    st.dataframe(rows, hide_index=True, width="stretch", column_config=wide)


def run_actions(r: dict) -> None:
    rid, actions = r["id"], r["actions"]
    cols = dict(zip(actions, st.columns([1] * len(actions) + [5 - len(actions)])[: len(actions)])) if actions else {}
    if "stop" in cols and cols["stop"].button(t("train.action.stop"), icon=":material/stop:", key=f"stop-{rid}"):
        try:
            mgr.stop(rid, owner=OWNER)
        except UserError as e:
            error(e)
        else:
            st.toast(t("train.stopping"))
    if "resume" in cols and cols["resume"].button(t("train.action.resume"), icon=":material/play_arrow:",
                                                  key=f"resume-{rid}"):
        try:
            mgr.resume(rid, owner=OWNER)
        except UserError as e:
            error(e)
        else:
            st.rerun(scope="app")
    inspect_label = t("train.open_family") if r["task"] in FAMILY_MEMBER else t("train.action.inspect")
    if "inspect" in cols and cols["inspect"].button(inspect_label, icon=":material/search:", key=f"inspect-{rid}"):
        path = mgr.model_dir(rid)
        if path is None:
            st.error(t("train.no_model"))
        elif r["task"] in FAMILY_MEMBER:  # a member of the family opens in its own section
            member = FAMILY_MEMBER[r["task"]]
            st.session_state["fam_member"] = member
            st.session_state[f"fam_{member}_model"] = f"run: {rid}"
            st.switch_page(str(FAMILY_PAGE))
        elif not inspector_registered():
            st.info(t("train.no_inspector", path=path))
        else:
            st.session_state["inspect_model_dir"] = str(path)
            st.switch_page(str(INSPECTOR))
    if "delete" in cols and cols["delete"].button(t("train.action.delete"), icon=":material/delete:",
                                                  key=f"delete-{rid}"):
        st.session_state["train_confirm_delete"] = rid
    if st.session_state.get("train_confirm_delete") == rid:
        st.warning(t("train.confirm_delete", id=rid))
        y, n, _ = st.columns([1, 1, 4])
        if y.button(t("train.action.confirm"), type="primary", key=f"confirm-delete-{rid}"):
            st.session_state.pop("train_confirm_delete", None)
            try:
                mgr.delete(rid, owner=OWNER)
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
    if task in FAMILY_MEMBER:
        return t(f"train.family_score.{FAMILY_MEMBER[task]}.main"), t(f"train.family_score.{FAMILY_MEMBER[task]}.second")
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


def run_details(r: dict) -> None:
    rid, state = r["id"], r["state"]
    if state == "running":
        progress = t("train.progress_running", done=r["step"], total=r["total"], eta=fmt_duration(r["eta_seconds"]))
    else:
        progress = t("train.progress", state=state_name(state), done=r["step"], total=r["total"])
    st.progress(r["progress"], text=progress)
    if r["message"]:
        box = {"failed": st.error, "stopped": st.warning, "done": st.success}.get(state, st.info)
        box(status_text(r["message"]))
    cols = st.columns(6)
    cols[0].metric(t("train.metric.training_loss"), fmt.fixed(r["loss"]))
    cols[1].metric(t("train.metric.validation_loss"), fmt.fixed(r["val_loss"]))
    main_name, second_name = score_names(r["task"], "metric")
    cols[2].metric(main_name, fmt.percent(r["val_token_acc"]))
    if r["val_exact"] is not None or r["task"] not in FAMILY_MEMBER:  # a family member may have one score only
        cols[3].metric(second_name, fmt.percent(r["val_exact"]))
    cols[4].metric(t("train.metric.learning_rate"), f"{r['lr']:.2e}" if isinstance(r["lr"], float) else "–")
    cols[5].metric(t("train.metric.tokens_per_second"), fmt.count(r["tokens_per_second"]))
    if not r["mine"]:
        st.caption(t("train.not_yours"))
    run_actions(r)

    records = mgr.read_metrics(rid)
    if records:
        run_curves(rid, records, r["task"])
    if r["samples"]:
        st.subheader(t("train.samples_title"))
        st.dataframe([{t("train.sample.source"): s["source"], t("train.sample.target"): s["target"],
                       t("train.sample.prediction"): s["prediction"], "✓": "✓" if s["correct"] else "✗"}
                      for s in r["samples"]], hide_index=True, width="stretch")
    with st.expander(t("train.config_expander")):
        st.json({"config": r["config"], "options": r["options"], "device": r["device"], "path": r["path"]},
                expanded=False)
        tail = mgr.log_tail(rid, 15)
        if tail:
            st.code(tail, language="text")


def compare(runs: list[dict]) -> None:
    st.subheader(t("train.compare_title"))
    ids = [r["id"] for r in runs]
    kept = st.session_state.get("train_compare_select")
    if isinstance(kept, list) and any(i not in ids for i in kept):  # a deleted run leaves the others chosen
        st.session_state["train_compare_select"] = [i for i in kept if i in ids]
    chosen = st.multiselect(t("train.compare_select"), ids, placeholder=t("common.choose_options"),
                            **keep("train_compare_select", ids[:2], valid=ids))
    metrics = list(COMPARE_METRICS)
    metric = st.radio(t("train.compare_metric_label"), metrics, format_func=labels("train.compare_metric", metrics),
                      horizontal=True, **keep("train_compare_metric", "val_loss", valid=metrics))
    if not chosen:
        return
    by_id = {r["id"]: r for r in runs}
    by_run = {compare_label(by_id[rid]): mgr.read_metrics(rid) for rid in chosen}
    name = t(f"train.compare_metric.{metric}")
    plot(charts.compare_figure(by_run, COMPARE_METRICS[metric], metric, title=name,
                               x_title=t("common.step"), y_title=name), key="compare-fig")
    st.download_button(t("train.download_compare"), export.compare_csv(by_run), file_name="compare-runs.csv",
                       mime="text/csv", key="compare-csv")


def cleanup_list() -> None:
    """The disk the runs use against the budget, and the oldest finished runs (to delete first)."""
    used = mgr.disk_used()
    old = mgr.cleanup_candidates(owner=OWNER)
    with st.expander(t("train.disk_title", used=used / MB, budget=float(mgr.budget_mb))):
        if not old:
            st.caption(t("train.cleanup_none"))
            return
        st.caption(t("train.cleanup_caption"))
        st.dataframe([{t("train.col.run"): r["id"], t("train.col.state"): state_name(r["state"]),
                       t("train.col.size"): fmt.size_bytes(r["bytes"]),
                       t("train.col.yours"): "✓" if r["mine"] else ""} for r in old],
                     hide_index=True, width="stretch")


@st.fragment(run_every=REFRESH)
def runs_panel() -> None:
    try:
        runs = mgr.list_runs(owner=OWNER)  # also advances the queue
    except UserError as e:  # the folder became unusable while the page was open
        error(e, icon="🚫")
        return
    if not runs:
        st.info(t("train.no_runs"))
    else:
        run_table(runs)
        ids = [r["id"] for r in runs]
        # The run shown survives other pages; a deleted one falls back to the newest.
        selected = st.selectbox(t("train.show_run"), ids, **keep("train_run_select", ids[0], valid=ids))
        run_details(next(r for r in runs if r["id"] == selected))
        if len(runs) > 1:
            compare(runs)
        cleanup_list()
    if (any(r["state"] in ACTIVE for r in runs) != _active_at_start
            or any(is_starting(r) for r in runs) != _starting_at_start):
        st.rerun(scope="app")  # switch the auto-refresh on, off, or back to every 2 s


runs_panel()

@st.cache_data(ttl=3.0, max_entries=2, show_spinner=False)
def study_runs_of(folder: str) -> list[dict]:
    """The study's 57 runs, summarised at most every 3 s (not on every rerun of this page)."""
    return study.run_summaries(Path(folder))


# The Table 3 study (pages/study.py) trains ordinary runs in a folder of its own: listed here, read-only.
study_runs = study_runs_of(str(study.study_dir()))
if study_runs:
    finished = sum(r["state"] == "done" for r in study_runs)
    with st.expander(t("train.study_runs", runs=len(study_runs), done=finished)):
        st.caption(t("train.stored_in", path=study.study_dir()))
        run_table(study_runs)
        st.page_link("../pages/study.py", label=t("pages.study.title"), icon=":material/table_chart:")
