"""Train your own: choose a task and a model size, start a real training run in the background,
watch it learn, compare runs, open a result in the inspector. Runs live in RUNS (app/jobs.py)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from app import train_ui as ui
from app.i18n import lang, tr
from app.jobs import ACTIVE, ALL_TASKS, LIMITS, MAX_PARAMETERS, MAX_UPLOAD_BYTES, JobError, TrainOptions, \
    get_manager, runs_dir, validate_upload
from app.pages_list import PAGES
from app.ui import PLOT_CONFIG, explain

ROOT = Path(__file__).resolve().parent.parent
INSPECTOR = ROOT / "pages" / "inspector.py"
mgr = get_manager(str(runs_dir()))

TASK_NAMES = {
    "copy": ("Copy  (a b c → a b c)", "복사  (a b c → a b c)"),
    "reverse": ("Reverse  (a b c → c b a)", "뒤집기  (a b c → c b a)"),
    "sort": ("Sort  (c a b → a b c)", "정렬  (c a b → a b c)"),
    "en-ko": ("English → Korean translation", "영어 → 한국어 번역"),
    "lm": ("Language model (decoder-only)", "언어 모델 (디코더 전용)"),
    "tsv": ("Your own corpus (TSV upload)", "직접 만든 코퍼스 (TSV 업로드)"),
}
TASK_HELP = {
    "copy": ("Random letter sequences; the target is the source. The simplest task: the cross-attention "
             "learns a clean diagonal.",
             "무작위 글자 나열을 그대로 옮깁니다. 가장 쉬운 과제로, 크로스 어텐션이 깔끔한 대각선을 배웁니다."),
    "reverse": ("The target is the source backwards: the cross-attention learns the anti-diagonal.",
                "소스를 거꾸로 씁니다. 크로스 어텐션이 반대 방향 대각선을 배웁니다."),
    "sort": ("The target is the source's letters in alphabetical order: attention has to search, not just align.",
             "소스의 글자를 알파벳 순서로 정렬합니다. 어텐션이 단순 정렬이 아니라 찾아다녀야 합니다."),
    "en-ko": ("The app's English → Korean grammar corpus (shared sentencepiece vocabulary). Word order changes "
              "(SVO → SOV), so the alignment is not a diagonal.",
              "앱에 들어 있는 영어 → 한국어 문법 코퍼스(공유 sentencepiece 어휘). 어순이 바뀌므로(SVO → SOV) "
              "정렬이 대각선이 아닙니다."),
    "lm": ("A decoder-only model predicting the next token of English and Korean sentences (no encoder, "
           "no cross-attention).",
           "영어·한국어 문장의 다음 토큰을 예측하는 디코더 전용 모델입니다(인코더와 크로스 어텐션 없음)."),
    "tsv": ("Upload a UTF-8 text file with one `source<TAB>target` pair a line (at most 5 MB, at least 20 pairs). "
            "It is split 85 / 5 / 10 into train / validation / test.",
            "한 줄에 `소스<TAB>타깃` 한 쌍이 있는 UTF-8 텍스트 파일을 올려 주세요(최대 5 MB, 최소 20쌍). "
            "학습 / 검증 / 테스트로 85 / 5 / 10 비율로 나눕니다."),
}
SIZE_NAMES = {"tiny": ("Tiny (d_model 64, 2+2 layers)", "아주 작게 (d_model 64, 2+2 레이어)"),
              "small": ("Small (d_model 128, 2+2 layers)", "작게 (d_model 128, 2+2 레이어)"),
              "custom": ("Custom", "직접 설정")}
# A recipe per size that works on a CPU (the tiny one learns the copy task in ~300 steps).
RECIPES = {"tiny": dict(steps=300, batch_size=32, warmup=100, lr_factor=0.5),
           "small": dict(steps=1000, batch_size=64, warmup=400, lr_factor=1.0),
           "custom": dict(steps=500, batch_size=32, warmup=200, lr_factor=0.5)}
STATE_NAMES = {"queued": ("queued", "대기 중"), "running": ("running", "학습 중"), "done": ("done", "완료"),
               "failed": ("failed", "실패"), "stopped": ("stopped", "멈춤"), "unknown": ("unknown", "알 수 없음")}


@st.cache_data(max_entries=4, show_spinner=False)
def check_upload(data: bytes, name: str) -> dict:
    """validate_upload once per file, not on every rerun: the pair count and the first 400 pairs (all the
    estimate reads), or the error in both languages."""
    try:
        pairs = validate_upload(data, name)
    except JobError as e:
        return {"error": (e.en, e.ko)}
    return {"count": len(pairs), "sample": pairs[:400]}


def state_name(state: str) -> str:
    en, ko = STATE_NAMES.get(state, (state, state))
    return tr(en, ko)


def labels(names: dict[str, tuple[str, str]]):
    """A format_func fixed to this run's language (AppTest calls it outside the script run)."""
    i = int(lang() == "ko")
    return lambda k: names[k][i]


def message(msg: str) -> str:
    return ui.message_ko(msg) if lang() == "ko" else msg


# Widgets whose option labels are translated get one key per language: switching the language then
# makes a fresh widget (seeded from keep()) instead of one whose stored label no longer exists.
def keep(key: str, default):
    """A widget's value survives a visit to another page (Streamlit forgets unrendered widgets)."""
    return st.session_state.get(f"_keep_{key}", default)


def remember(key: str, value):
    st.session_state[f"_keep_{key}"] = value
    return value


st.title(tr("Train your own Transformer", "나만의 Transformer 학습하기"))
explain(
    "Pick a task and a model size and train a real Transformer with the paper's recipe (Adam with "
    "β₂ = 0.98, the warm-up learning-rate schedule, label smoothing). Training runs in a separate "
    "process on this server: you can visit other pages, or open this page in another tab, and come "
    "back to the same runs. When a run is done (or stopped), open it in the inspector to see what its "
    "heads learned.",
    "과제와 모델 크기를 고르고, 논문의 레시피(β₂ = 0.98인 Adam, 워밍업 학습률 스케줄, 레이블 스무딩)로 "
    "진짜 Transformer를 학습해 보세요. 학습은 이 서버의 별도 프로세스에서 돌아가므로 다른 페이지를 "
    "둘러보거나 다른 탭에서 이 페이지를 열어도 같은 실행을 다시 볼 수 있습니다. 학습이 끝나거나 멈추면 "
    "인스펙터에서 열어 각 헤드가 무엇을 배웠는지 살펴보세요.",
)

# -----------------------------------------------------------------------------
# 1. task
st.header(tr("1 · Task", "1 · 과제"))
task = st.selectbox(tr("What should the model learn?", "모델이 무엇을 배울까요?"), ALL_TASKS,
                    index=ALL_TASKS.index(keep("task", "copy")), format_func=labels(TASK_NAMES),
                    key=f"train_task-{lang()}")
remember("task", task)
st.caption(tr(*TASK_HELP[task]))
upload_bytes, upload_name, upload_ok, pairs = None, "", True, None
if task == "tsv":
    up = st.file_uploader(tr("Parallel corpus (TSV, UTF-8, ≤ 5 MB)", "병렬 코퍼스 (TSV, UTF-8, 5 MB 이하)"),
                          type=["tsv", "txt"], key="train_upload", max_upload_size=MAX_UPLOAD_BYTES // 1_000_000)
    if up is None:
        upload_ok = False
        st.info(tr("Example line: `I eat an apple.⇥나는 사과를 먹는다.` (⇥ is a tab).",
                   "예시 줄: `I eat an apple.⇥나는 사과를 먹는다.` (⇥는 탭 문자)."))
    else:
        upload_bytes, upload_name = up.getvalue(), up.name
        checked = check_upload(upload_bytes, upload_name)
        if "error" in checked:
            upload_ok = False
            en, ko = checked["error"]
            st.error(tr(f"This file cannot be used: {en}", f"이 파일은 쓸 수 없습니다: {ko}"), icon="🚫")
        else:
            pairs, n_pairs = checked["sample"], checked["count"]
            st.success(tr(f"{upload_name}: {n_pairs:,} pairs, e.g. “{pairs[0][0]}” → “{pairs[0][1]}”.",
                          f"{upload_name}: {n_pairs:,}쌍, 예: “{pairs[0][0]}” → “{pairs[0][1]}”."))

# -----------------------------------------------------------------------------
# 2. model size
st.header(tr("2 · Model size", "2 · 모델 크기"))
size = st.radio(tr("Size", "크기"), list(SIZE_NAMES), index=list(SIZE_NAMES).index(keep("size", "tiny")),
                format_func=labels(SIZE_NAMES), horizontal=True, key=f"train_size-{lang()}")
remember("size", size)
custom = {}
if size == "custom":
    c1, c2, c3 = st.columns(3)
    with c1:
        custom["d_model"] = st.select_slider("d_model", [16, 32, 48, 64, 96, 128, 192, 256, 384, 512],
                                             value=keep("d_model", 64), key="train_d_model")
        custom["heads"] = st.select_slider(tr("heads h", "헤드 수 h"), [1, 2, 3, 4, 6, 8, 12, 16], value=keep("heads", 4),
                                           key="train_heads")
        custom["d_ff"] = st.select_slider("d_ff", [32, 64, 128, 256, 512, 1024, 2048], value=keep("d_ff", 128),
                                          key="train_d_ff")
    with c2:
        custom["layers"] = st.slider(tr("layers N (encoder and decoder each)", "레이어 수 N (인코더·디코더 각각)"),
                                     1, LIMITS["layers"][1], keep("layers", 2), key="train_layers")
        custom["dropout"] = st.slider(tr("dropout P_drop", "드롭아웃 P_drop"), 0.0, LIMITS["dropout"][1],
                                      keep("dropout", 0.0), 0.05, key="train_dropout")
        custom["label_smoothing"] = st.slider(tr("label smoothing ε_ls", "레이블 스무딩 ε_ls"), 0.0,
                                              LIMITS["label_smoothing"][1], keep("label_smoothing", 0.1), 0.05,
                                              key="train_ls")
    with c3:
        custom["positional"] = st.radio(tr("positional encoding", "위치 인코딩"), ["sinusoidal", "learned"],
                                        index=["sinusoidal", "learned"].index(keep("positional", "sinusoidal")),
                                        format_func=labels({"sinusoidal": ("sinusoidal", "사인파"),
                                                            "learned": ("learned", "학습")}),
                                        key=f"train_positional-{lang()}")
        norm = st.radio(tr("layer norm", "레이어 정규화"), ["post", "pre"], index=int(keep("norm_first", False)),
                        format_func=labels({"post": ("post-LN (the paper)", "post-LN (논문)"),
                                            "pre": ("pre-LN", "pre-LN")}), key=f"train_norm-{lang()}")
        custom["norm_first"] = norm == "pre"
    for k, v in custom.items():
        remember(k, v)
    if custom["d_model"] % custom["heads"]:
        st.warning(tr(f"{custom['heads']} heads do not divide d_model = {custom['d_model']}: pick another pair.",
                      f"헤드 {custom['heads']}개로는 d_model = {custom['d_model']}을 나눌 수 없습니다. 다른 조합을 고르세요."))

# -----------------------------------------------------------------------------
# 3. training recipe
st.header(tr("3 · Training", "3 · 학습"))
recipe = RECIPES[size]
c1, c2, c3, c4 = st.columns(4)
steps = c1.number_input(tr("steps", "스텝 수"), 10, LIMITS["steps"][1], keep(f"steps_{size}", recipe["steps"]), 50,
                        key=f"train_steps_{size}")
batch = c2.select_slider(tr("batch size (sentences)", "배치 크기 (문장 수)"), [8, 16, 32, 64, 128, 256],
                         value=keep(f"batch_{size}", recipe["batch_size"]), key=f"train_batch_{size}")
warmup = c3.number_input(tr("warm-up steps", "워밍업 스텝"), 1, LIMITS["warmup"][1],
                         keep(f"warmup_{size}", recipe["warmup"]), 50, key=f"train_warmup_{size}")
lr_factor = c4.number_input(tr("learning-rate factor", "학습률 배수"), LIMITS["lr_factor"][0], LIMITS["lr_factor"][1],
                            float(keep(f"lr_{size}", recipe["lr_factor"])), 0.25, key=f"train_lr_{size}")
for _k, _v in ((f"steps_{size}", steps), (f"batch_{size}", batch), (f"warmup_{size}", warmup),
               (f"lr_{size}", lr_factor)):
    remember(_k, _v)
st.caption(tr("lrate = factor · d_model^−0.5 · min(step^−0.5, step · warmup^−1.5) — the paper's schedule "
              "(factor 1). Small models on short runs like a smaller factor; if the loss becomes NaN, "
              "lower it or warm up longer.",
              "lrate = 배수 · d_model^−0.5 · min(step^−0.5, step · warmup^−1.5) — 논문의 스케줄(배수 1)입니다. "
              "짧게 학습하는 작은 모델은 배수를 낮추는 편이 좋고, 손실이 NaN이 되면 배수를 낮추거나 워밍업을 "
              "늘리세요."))

options = TrainOptions(task=task, size=size, steps=int(steps), batch_size=int(batch), warmup=int(warmup),
                       lr_factor=float(lr_factor), tsv_bytes=upload_bytes, tsv_name=upload_name, **custom)

# ---- estimate
est = None
try:
    if size != "custom" or custom["d_model"] % custom["heads"] == 0:
        est = mgr.estimate(options, pairs=pairs)
except (JobError, ValueError) as e:
    st.warning(tr(f"No estimate: {e}", f"추정할 수 없습니다: {e}"))
if est:
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(tr("parameters", "파라미터"), ui.fmt_count(est["parameters"]),
              help=tr("Counted exactly by building the model on PyTorch's meta device.",
                      "PyTorch의 meta 장치에서 모델을 만들어 정확히 센 값입니다."))
    m2.metric(tr("memory (estimate)", "메모리 (추정)"), ui.fmt_bytes(est["memory_bytes"]),
              help=tr("Weights, gradients and Adam's two moments (4 × 4 bytes per parameter) plus a rough "
                      "count of the activations kept for the backward pass.",
                      "가중치, 그래디언트, Adam의 두 모멘트(파라미터당 4 × 4바이트)에 역전파를 위해 저장하는 "
                      "활성값을 대략 더한 값입니다."))
    m3.metric(tr("time (estimate)", "시간 (추정)"), "≈ " + ui.fmt_duration(est["seconds"], lang()),
              help=tr("6 · parameters · tokens floating-point operations, divided by this machine's speed on a small "
                      "matrix multiplication (measured once), plus a fixed cost per step. Only an estimate.",
                      "6 · 파라미터 · 토큰 만큼의 부동소수점 연산을 이 기기의 작은 행렬 곱 속도(한 번 측정)로 "
                      "나누고, 스텝마다 드는 고정 비용을 더한 값입니다. 어디까지나 추정입니다."))
    m4.metric(tr("tokens per step", "스텝당 토큰"), ui.fmt_count(est["tokens_per_step"]))
    st.caption(tr(f"Estimate only: {est['flops'] / 1e12:.2f} TFLOP in total at ≈ {est['machine_flops'] / 1e9:.0f} "
                  f"GFLOP/s measured for one small matrix product on {mgr.threads} thread(s).",
                  f"추정치일 뿐입니다: 전체 {est['flops'] / 1e12:.2f} TFLOP, 작은 행렬 곱 하나로 잰 속도 "
                  f"≈ {est['machine_flops'] / 1e9:.0f} GFLOP/s (스레드 {mgr.threads}개)."))
    if est["parameters"] > MAX_PARAMETERS:
        st.error(tr(f"Too big for this server: {est['parameters']:,} parameters (the limit is {MAX_PARAMETERS:,}).",
                    f"이 서버에서 학습하기에는 너무 큽니다: 파라미터 {est['parameters']:,}개 (한도 {MAX_PARAMETERS:,}개)."))

st.caption(tr(f"Limits that protect this machine: {mgr.max_running} training run(s) at a time (others wait in a "
              f"queue), d_model ≤ {LIMITS['d_model'][1]}, ≤ {LIMITS['layers'][1]} layers, ≤ {LIMITS['steps'][1]:,} "
              f"steps, ≤ {MAX_PARAMETERS / 1e6:.0f}M parameters, uploads ≤ 5 MB.",
              f"이 기기를 지키기 위한 제한: 한 번에 학습 {mgr.max_running}개(나머지는 대기열에서 기다림), "
              f"d_model ≤ {LIMITS['d_model'][1]}, 레이어 ≤ {LIMITS['layers'][1]}, 스텝 ≤ {LIMITS['steps'][1]:,}, "
              f"파라미터 ≤ {MAX_PARAMETERS / 1e6:.0f}M, 업로드 ≤ 5 MB."))

if st.button(tr("Start training", "학습 시작"), type="primary", icon=":material/play_arrow:", key="train_start",
             disabled=not upload_ok):
    try:
        run_id = mgr.start(options)
    except JobError as e:
        st.error(tr(e.en, e.ko), icon="🚫")
    else:
        st.session_state["train_selected"] = run_id
        st.session_state.pop("train_run_select", None)
        st.toast(tr(f"Started {run_id}", f"{run_id} 시작"), icon="🚀")

# -----------------------------------------------------------------------------
# 4. runs (a fragment that refreshes itself while something trains)
st.header(tr("4 · Runs", "4 · 실행 목록"))
st.caption(tr(f"Stored in `{mgr.root}` (set ATLAS_RUNS_DIR to move them).",
              f"`{mgr.root}`에 저장됩니다 (ATLAS_RUNS_DIR 환경 변수로 위치를 바꿀 수 있습니다)."))
_active_at_start = any(r["state"] in ACTIVE for r in mgr.list_runs())


def inspector_registered() -> bool:
    return INSPECTOR.is_file() and any(p.file == "inspector.py" for p in PAGES)


def run_table(runs: list[dict]) -> None:
    rows = [{
        tr("run", "실행"): r["id"], tr("task", "과제"): tr(*TASK_NAMES.get(r["task"], (r["task"], r["task"]))),
        tr("state", "상태"): state_name(r["state"]), tr("step", "스텝"): f"{r['step']:,} / {r['total']:,}",
        tr("loss", "손실"): ui.fmt_num(r["loss"]), tr("val loss", "검증 손실"): ui.fmt_num(r["val_loss"]),
        tr("val token acc.", "검증 토큰 정확도"): ui.fmt_pct(r["val_token_acc"]),
        tr("val exact", "검증 완전 일치"): ui.fmt_pct(r["val_exact"]),
        tr("parameters", "파라미터"): ui.fmt_count(r["parameters"]),
        tr("tokens/s", "토큰/초"): ui.fmt_count(r["tokens_per_second"]),
        "ETA": ui.fmt_duration(r["eta_seconds"], lang()) if r["state"] == "running" else "",
    } for r in runs]
    st.dataframe(rows, hide_index=True, width="stretch")


def run_actions(r: dict) -> None:
    rid = r["id"]
    actions = []
    if r["state"] in ACTIVE:
        actions.append("stop")
    if r["resumable"]:
        actions.append("resume")
    if r["inspectable"]:
        actions.append("inspect")
    if r["state"] not in ACTIVE:
        actions.append("delete")
    cols = dict(zip(actions, st.columns([1] * len(actions) + [5 - len(actions)])[: len(actions)])) if actions else {}
    if "stop" in cols and cols["stop"].button(tr("Stop", "멈추기"), icon=":material/stop:", key=f"stop-{rid}"):
        mgr.stop(rid)
        st.toast(tr("Stopping: the trainer saves a checkpoint first.", "멈추는 중: 먼저 체크포인트를 저장합니다."))
    if "resume" in cols and cols["resume"].button(tr("Resume", "이어서 학습"), icon=":material/play_arrow:",
                                                  key=f"resume-{rid}"):
        try:
            mgr.resume(rid)
        except JobError as e:
            st.error(tr(e.en, e.ko))
        else:
            st.rerun(scope="app")
    if "inspect" in cols and cols["inspect"].button(tr("Open in inspector", "인스펙터에서 열기"),
                                                    icon=":material/search:", key=f"inspect-{rid}"):
        path = mgr.model_dir(rid)
        if path is None:
            st.error(tr("This run has no saved model yet.", "이 실행에는 아직 저장된 모델이 없습니다."))
        elif not inspector_registered():
            st.info(tr("The inspector page is not part of this app yet. The model is saved in "
                       f"`{path}`.", f"인스펙터 페이지가 아직 앱에 없습니다. 모델은 `{path}`에 저장되어 있습니다."))
        else:
            st.session_state["inspect_model_dir"] = str(path)
            st.switch_page(str(INSPECTOR))
    if "delete" in cols and cols["delete"].button(tr("Delete…", "삭제…"), icon=":material/delete:",
                                                  key=f"delete-{rid}"):
        st.session_state["train_confirm_delete"] = rid
    if st.session_state.get("train_confirm_delete") == rid:
        st.warning(tr(f"Delete **{rid}** with its checkpoint and curves? This cannot be undone.",
                      f"**{rid}** 실행과 체크포인트, 곡선을 모두 삭제할까요? 되돌릴 수 없습니다."))
        y, n, _ = st.columns([1, 1, 4])
        if y.button(tr("Yes, delete", "예, 삭제"), type="primary", key=f"confirm-delete-{rid}"):
            st.session_state.pop("train_confirm_delete", None)
            try:
                mgr.delete(rid)
            except (JobError, OSError) as e:
                st.error(tr(f"Could not delete: {e}", f"삭제하지 못했습니다: {getattr(e, 'ko', e)}"))
            else:
                st.session_state.pop("train_selected", None)
                st.rerun(scope="app")
        if n.button(tr("Cancel", "취소"), key=f"cancel-delete-{rid}"):
            st.session_state.pop("train_confirm_delete", None)
            st.rerun(scope="fragment")


def run_details(r: dict) -> None:
    rid, state = r["id"], r["state"]
    frac = min(1.0, r["step"] / r["total"]) if r["total"] else 0.0
    if state == "running":
        eta = ui.fmt_duration(r["eta_seconds"], lang())
        text = tr(f"step {r['step']:,} of {r['total']:,} · about {eta} left",
                  f"{r['total']:,} 스텝 중 {r['step']:,} · 약 {eta} 남음")
    else:
        text = f"{state_name(state)} · " + tr(f"step {r['step']:,} of {r['total']:,}",
                                               f"{r['total']:,} 스텝 중 {r['step']:,}")
    st.progress(frac, text=text)
    if r["message"]:
        box = {"failed": st.error, "stopped": st.warning, "done": st.success}.get(state, st.info)
        box(message(r["message"]))
    cols = st.columns(6)
    cols[0].metric(tr("training loss", "학습 손실"), ui.fmt_num(r["loss"]))
    cols[1].metric(tr("validation loss", "검증 손실"), ui.fmt_num(r["val_loss"]))
    cols[2].metric(tr("val. token accuracy", "검증 토큰 정확도"), ui.fmt_pct(r["val_token_acc"]))
    cols[3].metric(tr("val. exact match", "검증 완전 일치"), ui.fmt_pct(r["val_exact"]))
    cols[4].metric(tr("learning rate", "학습률"), f"{r['lr']:.2e}" if isinstance(r["lr"], float) else "–")
    cols[5].metric(tr("tokens / s", "토큰 / 초"), ui.fmt_count(r["tokens_per_second"]))
    run_actions(r)

    records = mgr.read_metrics(rid)
    if records:
        x = tr("step", "스텝")
        left, right = st.columns(2)
        with left:
            st.plotly_chart(ui.loss_figure(records, title=tr("Loss", "손실"), train_name=tr("training", "학습"),
                                           val_name=tr("validation", "검증"), x_title=x, y_title=tr("loss", "손실")),
                            config=PLOT_CONFIG, key=f"loss-{rid}")
            st.caption(tr("The training loss includes label smoothing, so it stays above the validation loss "
                          "(measured without smoothing).",
                          "학습 손실에는 레이블 스무딩이 들어 있어 (스무딩 없이 잰) 검증 손실보다 높게 유지됩니다."))
        with right:
            if any(rec.get("kind") == "eval" for rec in records):
                st.plotly_chart(ui.accuracy_figure(records, title=tr("Validation accuracy", "검증 정확도"),
                                                   token_name=tr("token accuracy (teacher forcing)",
                                                                 "토큰 정확도 (교사 강요)"),
                                                   exact_name=tr("exact match (greedy decoding)",
                                                                 "완전 일치 (탐욕적 디코딩)"),
                                                   x_title=x, y_title=tr("accuracy", "정확도")),
                                config=PLOT_CONFIG, key=f"acc-{rid}")
            else:
                st.info(tr("Validation curves appear after the first evaluation.",
                           "첫 검증이 끝나면 검증 곡선이 나타납니다."))
        st.plotly_chart(ui.lr_figure(records, title=tr("Learning rate (warm-up schedule) and speed",
                                                       "학습률 (워밍업 스케줄)과 속도"),
                                     lr_name=tr("learning rate", "학습률"), tps_name=tr("tokens / s", "토큰 / 초"),
                                     x_title=x), config=PLOT_CONFIG, key=f"lr-{rid}")
        st.download_button(tr("Download the curves (CSV)", "곡선 내려받기 (CSV)"), ui.metrics_csv(records),
                           file_name=f"{rid}-metrics.csv", mime="text/csv", key=f"csv-{rid}")
    if r["samples"]:
        st.subheader(tr("Sample predictions (fixed validation examples)", "예측 예시 (고정된 검증 예문)"))
        st.dataframe([{tr("source", "소스"): s.get("source", ""), tr("target", "정답"): s.get("target", ""),
                       tr("prediction", "예측"): s.get("prediction", ""),
                       "✓": "✓" if s.get("prediction", "").strip() == s.get("target", "").strip() else "✗"}
                      for s in r["samples"]], hide_index=True, width="stretch")
    with st.expander(tr("Configuration and log", "설정과 로그")):
        st.json({"config": r["config"], "options": r["options"], "device": r["device"], "path": r["path"]},
                expanded=False)
        tail = mgr.log_tail(rid, 15)
        if tail:
            st.code(tail, language="text")


def compare(runs: list[dict]) -> None:
    st.subheader(tr("Compare runs", "실행 비교"))
    ids = [r["id"] for r in runs]
    chosen = st.multiselect(tr("Runs to compare (e.g. 1 head vs 8 heads)", "비교할 실행 (예: 헤드 1개 대 8개)"), ids,
                            default=[i for i in st.session_state.get("train_compare", ids[:2]) if i in ids],
                            key="train_compare_select")
    st.session_state["train_compare"] = chosen
    metrics = {"val_loss": ("eval", tr("validation loss", "검증 손실")),
               "val_token_acc": ("eval", tr("validation token accuracy", "검증 토큰 정확도")),
               "val_exact": ("eval", tr("validation exact match", "검증 완전 일치")),
               "loss": ("train", tr("training loss", "학습 손실"))}
    metric = st.radio(tr("metric", "지표"), list(metrics), format_func=lambda k: metrics[k][1], horizontal=True,
                      index=list(metrics).index(keep("compare_metric", "val_loss")),
                      key=f"train_compare_metric-{lang()}")
    remember("compare_metric", metric)
    if not chosen:
        return
    by_run = {}
    for rid in chosen:
        r = next(x for x in runs if x["id"] == rid)
        c = r["config"] or {}
        label = f"{rid} (h={c.get('n_heads', '?')}, d={c.get('d_model', '?')}, N={c.get('n_encoder_layers', '?')})"
        by_run[label] = mgr.read_metrics(rid)
    kind, name = metrics[metric]
    st.plotly_chart(ui.compare_figure(by_run, kind, metric, title=name, x_title=tr("step", "스텝"), y_title=name),
                    config=PLOT_CONFIG, key="compare-fig")
    st.download_button(tr("Download these curves (CSV)", "이 곡선들 내려받기 (CSV)"), ui.compare_csv(by_run),
                       file_name="compare-runs.csv", mime="text/csv", key="compare-csv")


@st.fragment(run_every=2.0 if _active_at_start else None)
def runs_panel() -> None:
    runs = mgr.list_runs()  # also advances the queue
    if not runs:
        st.info(tr("No runs yet. Start one above.", "아직 실행이 없습니다. 위에서 학습을 시작해 보세요."))
    else:
        run_table(runs)
        ids = [r["id"] for r in runs]
        want = st.session_state.get("train_selected")
        selected = st.selectbox(tr("Show run", "볼 실행"), ids, index=ids.index(want) if want in ids else 0,
                                key="train_run_select")
        st.session_state["train_selected"] = selected
        run_details(next(r for r in runs if r["id"] == selected))
        if len(runs) > 1:
            compare(runs)
    if any(r["state"] in ACTIVE for r in runs) != _active_at_start:
        st.rerun(scope="app")  # switch the auto-refresh on or off


runs_panel()
