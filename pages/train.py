"""Train your own: choose a task and a model size, start a real training run in the background,
watch it learn, compare runs, open a result in the inspector. Runs live in RUNS (app/jobs/); the runs panel's
parts are pages/views/train_runs.py."""
from __future__ import annotations

import streamlit as st

from app import format as fmt
from app.i18n import UserError, prose, say, t
from app.fast.warmup import prepare_estimates
from app.jobs import ACTIVE, get_manager, is_starting, runs_dir
from app.jobs.options import (ALL_TASKS, CUSTOM_DEFAULTS, DEFAULT_TASK, LIMITS, MAX_PARAMETERS, MAX_UPLOAD_BYTES,
                              POSITIONALS, SIZES, TASK_RECIPES, TrainOptions, is_family, recipe_dropout,
                              task_recipe)
from app.resources import checked_upload
from app.state import between, keep, set_link
from app.ui import error, text
from pages.views import study
from pages.views.train_owner import browser_owner
from pages.views.train_runs import cleanup_list, compare, labels, run_details, run_table, study_runs_of
from pages.views.train_ui import fmt_duration

mgr = get_manager(str(runs_dir()))
mgr.prepare()  # a trainer started ahead of time (torch imported): the next Start's first step comes sooner
# This browser's secret, kept in its cookie across reloads: it owns the runs it starts (job.json keeps only its
# hash); others' runs are read-only here unless the server runs in teacher mode (docs/classroom.md).
OWNER = browser_owner()


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
            st.success(t("train.upload_ok", file=fmt.escape_md(upload_name), count=checked["count"],
                         source=fmt.escape_md(pairs[0][0]), target=fmt.escape_md(pairs[0][1])))

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
    f"train_steps_{which}", recipe["steps"], url="steps", valid=range(10, LIMITS["steps"][1] + 1)))
batch, batch_tokens = recipe["batch_size"], 0
set_link("batch" if recipe["batch_tokens"] else "batch_tokens", None)  # the link holds the form as shown
if recipe["batch_tokens"]:  # sentences of similar length together, at most this many padded tokens a step
    batch_tokens = c2.select_slider(t("train.batch_tokens_label"), TOKEN_BATCHES, help=t("train.batch_tokens_help"),
                                    **keep(f"train_batch_tokens_{which}", recipe["batch_tokens"]
                                           if recipe["batch_tokens"] in TOKEN_BATCHES else 2048, url="batch_tokens",
                                           valid=TOKEN_BATCHES))
else:
    batch = c2.select_slider(t("train.batch_label"), BATCHES, **keep(
        f"train_batch_{which}", recipe["batch_size"] if recipe["batch_size"] in BATCHES else 64, url="batch",
        valid=BATCHES))
warmup = c3.number_input(t("train.warmup_label"), 1, LIMITS["warmup"][1], step=50, **keep(
    f"train_warmup_{which}", recipe["warmup"], url="warmup", valid=range(1, LIMITS["warmup"][1] + 1)))
lr_factor = c4.number_input(t("train.lr_label"), LIMITS["lr_factor"][0], LIMITS["lr_factor"][1], step=0.25, **keep(
    f"train_lr_{which}", float(recipe["lr_factor"]), url="lr", valid=between(*LIMITS["lr_factor"])))
cooldown = 0.0
set_link("cooldown", None)
if not is_family(task):  # the family members train with the paper's schedule
    cooldown = c5.slider(t("train.cooldown_label"), 0.0, LIMITS["cooldown"][1], step=0.05, help=t("train.cooldown_help"),
                         **keep(f"train_cooldown_{which}", float(recipe["cooldown"]), url="cooldown",
                                valid=between(0.0, LIMITS["cooldown"][1]), check=on_step(0.05)))
dropout = None
set_link("recipe_dropout", None)
if size != "custom" and not is_family(task):  # a custom size sets its dropout with its sizes, above
    dropout = c6.slider(t("train.dropout_label"), 0.0, LIMITS["dropout"][1], step=0.05, **keep(
        f"train_recipe_dropout_{which}", recipe_dropout(recipe, size), url="recipe_dropout",
        valid=between(0.0, LIMITS["dropout"][1]), check=on_step(0.05)))
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
    # One row that wraps where the page is narrow: each number as wide as it is, never cut short.
    row = st.container(horizontal=True)
    row.metric(t("train.metric.parameters"), fmt.count(est["parameters"]), help=t("train.metric_help.parameters"),
               width="content")
    row.metric(t("train.metric.memory"), fmt.size_bytes(est["memory_bytes"]), help=t("train.metric_help.memory"),
               width="content")
    row.metric(t("train.metric.time"), "≈ " + fmt_duration(est["seconds"]) if est["seconds"] else "–",
               help=t("train.metric_help.time"), width="content")
    if not est.get("family"):
        row.metric(t("train.metric.tokens_per_step"), fmt.count(est["tokens_per_step"]), width="content")
        st.caption(t("train.estimate_caption", tflop=est["flops"] / 1e12, gflops=est["machine_flops"] / 1e9,
                     threads=mgr.threads))
    else:
        st.caption(t("train.family_estimate_caption"))
    if est["parameters"] > MAX_PARAMETERS:  # a hint like the heads one; Start explains the refusal
        st.warning(t("train.too_big", count=est["parameters"], limit=MAX_PARAMETERS))

st.caption(t("train.limits", slots=mgr.max_running, max_d_model=LIMITS["d_model"][1], max_layers=LIMITS["layers"][1],
             max_steps=LIMITS["steps"][1], millions=MAX_PARAMETERS / 1e6))
st.caption(t("train.queue_limits", per_session=mgr.per_owner, total=mgr.total, budget=float(mgr.budget_mb)))
st.caption(t("train.owner_note"))

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


@st.fragment(run_every=REFRESH)
def runs_panel(mgr) -> None:
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
        run_details(mgr, OWNER, next(r for r in runs if r["id"] == selected))
        if len(runs) > 1:
            compare(mgr, runs)
        cleanup_list(mgr, OWNER)
    if (any(r["state"] in ACTIVE for r in runs) != _active_at_start
            or any(is_starting(r) for r in runs) != _starting_at_start):
        st.rerun(scope="app")  # switch the auto-refresh on, off, or back to every 2 s


runs_panel(mgr)


@st.fragment(run_every=1.0)
def idle_watch(mgr) -> None:
    """While nothing of this learner's trains, look every second for a run started elsewhere (another tab, the
    command line with the same owner): the page then runs again and its runs panel refreshes itself."""
    try:
        runs = mgr.list_runs(owner=OWNER)
    except UserError:
        return
    if any(r["state"] in ACTIVE or is_starting(r) for r in runs):
        st.rerun(scope="app")


if REFRESH is None:  # while something trains, the runs panel refreshes itself and notices the end
    idle_watch(mgr)

# The Table 3 study (pages/study.py) trains ordinary runs in a folder of its own: listed here, read-only.
study_runs = study_runs_of(str(study.study_dir()))
if study_runs:
    finished = sum(r["state"] == "done" for r in study_runs)
    with st.expander(t("train.study_runs", runs=len(study_runs), done=finished)):
        st.caption(t("train.stored_in", path=study.study_dir()))
        run_table(study_runs, key="study-runs")
        st.page_link("../pages/study.py", label=t("pages.study.title"), icon=":material/table_chart:")
