"""Training recipe (section 5.3-5.4): the warm-up learning-rate schedule, Adam's settings and
label smoothing — every curve computed by model.schedule, torch.optim.Adam and F.cross_entropy."""
import numpy as np
import streamlit as st
import torch

from app.concepts import InputError, bar_figure, line_figure, parse_pairs, rows_csv, series_csv
from app.i18n import t, tr
from app.ui import explain, fail, show_figure
from model.schedule import ADAM_BETAS, ADAM_EPS, noam_lr, noam_peak
from model.smoothing import (loss_vs_confidence, minimise_confidence, optimal_confidence, target_distribution,
                             target_entropy)

MAX_CURVES = 6
D_LIMITS, W_LIMITS = (1, 1_000_000), (1, 10_000_000)

st.title(tr("Training recipe", "학습 레시피"))
explain(
    "The paper trains with Adam, a learning rate that first rises and then decays, dropout and "
    "label smoothing. This page computes each ingredient so you can see what the numbers do.",
    "논문은 Adam, 처음에 올라갔다가 내려가는 학습률, 드롭아웃, 레이블 스무딩으로 학습합니다. 이 페이지는 "
    "각 재료를 직접 계산해서 숫자가 어떻게 움직이는지 보여 줍니다.",
)

# ----------------------------------------------------------------------------- 1. schedule
st.header(tr("1. Warm-up, then inverse square-root decay", "1. 워밍업, 그다음 역제곱근 감소"))
st.latex(r"lrate = d_{model}^{-0.5}\cdot\min(step^{-0.5},\; step\cdot warmup^{-1.5})")
explain(
    "For the first `warmup` steps the rate grows linearly (Adam's statistics are still unreliable, "
    "so big steps would be risky); afterwards it falls like 1/√step. The two branches meet at "
    "step = warmup, which is therefore the peak: d_model^−0.5 · warmup^−0.5. Bigger models get a "
    "smaller rate.",
    "처음 `warmup` 스텝 동안 학습률은 선형으로 커집니다(Adam의 통계가 아직 믿을 만하지 않아서 큰 "
    "스텝은 위험합니다). 그 뒤에는 1/√step처럼 줄어듭니다. 두 갈래가 만나는 step = warmup이 곧 "
    "최고점이고, 그 값은 d_model^−0.5 · warmup^−0.5입니다. 모델이 클수록 학습률이 작아집니다.",
)
c1, c2, c3 = st.columns(3)
d_model = c1.slider("d_model", 64, 2048, 512, step=64, key="sch_d")
warmup = c2.slider("warmup_steps", 100, 20_000, 4000, step=100, key="sch_w")
lo, hi = c3.slider(tr("step range", "스텝 범위"), 1, 200_000, (1, 100_000), key="sch_range")
extra_text = st.text_input(
    tr(f"more curves to compare: (d_model, warmup) pairs separated by “;” (up to {MAX_CURVES - 1})",
       f"비교할 곡선 추가: (d_model, warmup) 쌍을 “;”로 구분 (최대 {MAX_CURVES - 1}개)"),
    "512, 8000; 256, 4000", key="sch_pairs")
log_x = st.checkbox(tr("logarithmic step axis", "스텝 축을 로그 눈금으로"), key="sch_log")
curves = [(d_model, warmup)]
try:
    if extra_text.strip():
        curves += parse_pairs(extra_text, (D_LIMITS, W_LIMITS), MAX_CURVES - 1)
except InputError as e:
    fail(e.en, e.ko)
curves = list(dict.fromkeys(curves))
if hi <= lo:
    hi = lo + 1
grid = np.unique(np.concatenate([np.geomspace(lo, hi, 400) if log_x else np.linspace(lo, hi, 600),
                                 [w for _, w in curves if lo <= w <= hi]]).round())
series, rows = {}, []
peaks = ([], [], [])
for d, w in curves:
    name = f"d_model={d}, warmup={w}"
    series[name] = np.array([noam_lr(s, d, w) for s in grid])
    peak_step, peak_lr = noam_peak(d, w)
    if lo <= peak_step <= hi:
        for lst, val in zip(peaks, (peak_step, peak_lr, f"{peak_step:,}: {peak_lr:.2e}")):
            lst.append(val)
    rows.append({"d_model": d, "warmup": w, tr("peak step", "최고점 스텝"): peak_step,
                 tr("peak learning rate", "최고 학습률"): f"{peak_lr:.4e}",
                 "d^-0.5 · w^-0.5": f"{d ** -0.5 * w ** -0.5:.4e}",
                 tr(f"rate at step {hi:,}", f"{hi:,} 스텝의 학습률"): f"{noam_lr(hi, d, w):.4e}"})
fig = line_figure(grid, series, markers={tr("peak (step = warmup)", "최고점 (step = warmup)"): peaks}, log_x=log_x, x_title=tr("training step", "학습 스텝"),
                  y_title=tr("learning rate", "학습률"), height=430,
                  title=tr("The paper's learning-rate schedule (peaks marked)", "논문의 학습률 스케줄 (최고점 표시)"))
show_figure(fig, name="warmup-schedule", csv=series_csv("step", grid, series), key="sch_fig")
st.dataframe(rows, hide_index=True)
p_step, p_lr = noam_peak(d_model, warmup)
st.markdown(tr(
    f"With d_model = {d_model} and warmup = {warmup:,} the peak is at step **{p_step:,}** with rate "
    f"**{p_lr:.4e}** = {d_model}^−0.5 · {warmup}^−0.5. Doubling warmup lowers the peak by √2 and moves it later.",
    f"d_model = {d_model}, warmup = {warmup:,}이면 최고점은 **{p_step:,}** 스텝, 학습률 **{p_lr:.4e}** = "
    f"{d_model}^−0.5 · {warmup}^−0.5입니다. warmup을 두 배로 하면 최고점이 √2배 낮아지고 뒤로 밀립니다."))

# ----------------------------------------------------------------------------- 2. Adam
st.header(tr("2. Adam with β₁ = 0.9, β₂ = 0.98, ε = 10⁻⁹", "2. β₁ = 0.9, β₂ = 0.98, ε = 10⁻⁹인 Adam"))
b1, b2 = ADAM_BETAS
explain(
    f"The paper's Adam (from `model.schedule`: betas = {ADAM_BETAS}, eps = {ADAM_EPS:g}) keeps a running mean "
    "of the gradient m and of its square v, corrects both for starting at zero, and steps by "
    "lr · m̂ / (√v̂ + ε). β₂ = 0.98 (instead of the usual 0.999) lets v forget old gradients faster. "
    "Below, torch.optim.Adam minimises a toy loss f(θ) = c·θ²/2; its internal state is printed and "
    "recomputed by hand from the formulas.",
    f"논문의 Adam(`model.schedule`의 betas = {ADAM_BETAS}, eps = {ADAM_EPS:g})은 기울기의 이동 평균 m과 "
    "기울기 제곱의 이동 평균 v를 유지하고, 0에서 시작한 편향을 보정한 뒤 lr · m̂ / (√v̂ + ε)만큼 움직입니다. "
    "β₂ = 0.98(흔히 쓰는 0.999 대신)이라 v가 옛 기울기를 더 빨리 잊습니다. 아래에서 torch.optim.Adam이 "
    "장난감 손실 f(θ) = c·θ²/2를 최소화합니다. 내부 상태를 출력하고 공식으로 직접 다시 계산해 봅니다.",
)
c1, c2, c3, c4 = st.columns(4)
theta0 = c1.number_input(tr("start θ₀", "시작 θ₀"), -100.0, 100.0, 1.0, key="adam_theta")
scale = c2.select_slider(tr("gradient scale c", "기울기 배율 c"), [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0], 1.0,
                         key="adam_c")
lr = c3.select_slider(tr("learning rate", "학습률"), [1e-4, 1e-3, 0.01, 0.05, 0.1, 0.5], 0.1, key="adam_lr")
n_steps = c4.slider(tr("steps", "스텝 수"), 1, 30, 5, key="adam_steps")
param = torch.nn.Parameter(torch.tensor([float(theta0)], dtype=torch.float64))
opt = torch.optim.Adam([param], lr=lr, betas=ADAM_BETAS, eps=ADAM_EPS)
m = v = 0.0
adam_rows, updates, worst = [], [], 0.0
for step in range(1, n_steps + 1):
    opt.zero_grad()
    loss = 0.5 * scale * (param ** 2).sum()
    loss.backward()
    g = float(param.grad)
    before = float(param.detach())
    opt.step()
    st_ = opt.state[param]
    m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g  # by hand
    m_hat, v_hat = m / (1 - b1 ** step), v / (1 - b2 ** step)
    by_hand = before - lr * m_hat / (v_hat ** 0.5 + ADAM_EPS)
    worst = max(worst, abs(by_hand - float(param.detach())), abs(m - float(st_["exp_avg"])), abs(v - float(st_["exp_avg_sq"])))
    updates.append(float(param.detach()) - before)
    adam_rows.append({tr("step", "스텝"): step, "θ": f"{before:.6g}", tr("gradient g", "기울기 g"): f"{g:.4g}",
                      "m": f"{float(st_['exp_avg']):.4g}", "v": f"{float(st_['exp_avg_sq']):.4g}",
                      "m̂": f"{m_hat:.4g}", "v̂": f"{v_hat:.4g}",
                      tr("update Δθ", "갱신량 Δθ"): f"{float(param.detach()) - before:.4g}", tr("new θ", "새 θ"): f"{float(param.detach()):.6g}"})
st.dataframe(adam_rows, hide_index=True)
st.download_button(t("download_csv"), rows_csv(adam_rows), file_name="adam-steps.csv", mime="text/csv", key="adam_csv")
first = updates[0]
c1, c2 = st.columns(2)
c1.metric(tr("first update |Δθ| (≈ lr, whatever c is)", "첫 갱신량 |Δθ| (c와 무관하게 ≈ lr)"), f"{abs(first):.6g}")
c2.metric(tr("largest gap torch vs by-hand formula", "torch와 손계산 공식의 최대 차이"), f"{worst:.1e}")
explain(
    "Try c = 0.001 and c = 1000: the first step is the same size, lr, because m̂/√v̂ = g/|g| at step 1. "
    "Adam's step size is set by the learning rate, not by the gradient's scale — which is why the "
    "schedule above matters so much, and why a warm-up protects the first, noisy steps.",
    "c = 0.001과 c = 1000을 비교해 보세요. 첫 스텝에서는 m̂/√v̂ = g/|g|이므로 첫 갱신 크기가 똑같이 lr입니다. "
    "Adam의 스텝 크기는 기울기의 크기가 아니라 학습률이 정합니다. 그래서 위의 스케줄이 중요하고, 워밍업이 "
    "잡음이 많은 처음 스텝들을 보호합니다.",
)

# ----------------------------------------------------------------------------- 3. label smoothing
st.header(tr("3. Label smoothing", "3. 레이블 스무딩"))
explain(
    "Instead of a one-hot target, the model is trained towards a softened distribution: the correct "
    "token gets 1 − ε + ε/V and every token (the correct one included) shares ε, as "
    "`torch.nn.functional.cross_entropy(label_smoothing=ε)` does. The paper uses ε = 0.1. It hurts "
    "perplexity (the model learns to be less sure) but improved accuracy and BLEU.",
    "원-핫 목표 대신 부드럽게 만든 분포를 목표로 학습합니다. 정답 토큰은 1 − ε + ε/V를 받고, (정답을 "
    "포함한) 모든 토큰이 ε를 나눠 가집니다. `torch.nn.functional.cross_entropy(label_smoothing=ε)`가 하는 "
    "방식입니다. 논문은 ε = 0.1을 씁니다. 모델이 덜 확신하도록 배우기 때문에 퍼플렉서티는 나빠지지만 "
    "정확도와 BLEU는 좋아졌습니다.",
)
c1, c2 = st.columns(2)
eps = c1.slider("ε (label_smoothing)", 0.0, 0.5, 0.1, step=0.01, key="ls_eps")
V = int(c2.number_input(tr("vocabulary size V", "어휘 크기 V"), 2, 50_000, 10, key="ls_V"))
q = target_distribution(V, eps).numpy()
shown = min(V, 12)
labels = [tr("correct", "정답")] + [f"#{i}" for i in range(1, shown)]
colors = ["#d62728"] + ["#1f77b4"] * (shown - 1)
left, right = st.columns(2)
with left:
    fig = bar_figure(labels, q[:shown], colors=colors, x_title=tr("token", "토큰"), y_title=tr("target probability", "목표 확률"),
                     title=tr(f"Target distribution (ε = {eps:g}, V = {V:,})", f"목표 분포 (ε = {eps:g}, V = {V:,})"))
    show_figure(fig, name="label-smoothing-target", key="ls_target",
                csv=series_csv("token", np.arange(V), {"target": q}) if V <= 5000 else
                series_csv("token", np.arange(shown), {"target": q[:shown]}))
    if V > shown:
        st.caption(tr(f"The other {V - shown:,} tokens each get ε/V = {eps / V:.3g}.",
                      f"나머지 토큰 {V - shown:,}개는 각각 ε/V = {eps / V:.3g}를 받습니다."))
conf = torch.linspace(0.005, 0.9995, 400, dtype=torch.float64)
p_star = optimal_confidence(V, eps)
conf = torch.unique(torch.cat([conf, torch.tensor([p_star], dtype=torch.float64)]))
conf = conf[conf < 1]
plain = loss_vs_confidence(conf, V, 0.0).numpy()
smooth = loss_vs_confidence(conf, V, eps).numpy()
p_num, l_num = minimise_confidence(V, eps)
with right:
    curves_ls = {tr("no smoothing (ε = 0)", "스무딩 없음 (ε = 0)"): plain,
                 tr(f"label smoothing ε = {eps:g}", f"레이블 스무딩 ε = {eps:g}"): smooth}
    marks_ls = {tr("minimum with smoothing", "스무딩 시 최솟값"): ([p_num], [l_num], [f"p = {p_num:.4f}"])}
    fig = line_figure(conf, curves_ls, markers=marks_ls, x_title=tr("model's probability on the correct token",
                                                                    "정답 토큰에 모델이 준 확률"),
                      y_title=tr("cross-entropy loss", "교차 엔트로피 손실"),
                      title=tr("Loss against confidence (rest spread evenly)", "확신도에 따른 손실 (나머지는 고르게 분배)"))
    fig.update_yaxes(range=[0, float(max(np.max(smooth[conf.numpy() > 0.05]), 3.5))])
    show_figure(fig, name="label-smoothing-loss", csv=series_csv("confidence", conf, curves_ls), key="ls_loss")
c1, c2, c3, c4 = st.columns(4)
c1.metric(tr("best confidence, found numerically", "수치로 찾은 최적 확신도"), f"{p_num:.6f}")
c2.metric(tr("formula 1 − ε + ε/V", "공식 1 − ε + ε/V"), f"{p_star:.6f}")
c3.metric(tr("smallest loss (nats)", "최소 손실 (nats)"), f"{l_num:.4f}")
c4.metric(tr("entropy of the target (nats)", "목표 분포의 엔트로피 (nats)"), f"{target_entropy(V, eps):.4f}")
explain(
    "Without smoothing the loss keeps falling as the confidence approaches 1, so the model is pushed "
    "towards ever larger logits. With smoothing the loss has a minimum *inside* (0, 1) and rises again "
    "near 1: being too sure is penalised, and even a perfect model pays the target's entropy.",
    "스무딩이 없으면 확신도가 1에 가까워질수록 손실이 계속 줄어서, 모델은 로짓을 끝없이 키우는 쪽으로 "
    "밀립니다. 스무딩을 쓰면 손실의 최솟값이 (0, 1) *안쪽*에 있고 1 근처에서 다시 올라갑니다. 지나친 "
    "확신은 벌을 받고, 완벽한 모델도 목표 분포의 엔트로피만큼은 손실을 냅니다.",
)
