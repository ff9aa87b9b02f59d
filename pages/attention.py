"""Scaled dot-product attention, step by step (section 3.2.1 of the paper)."""
import math

import numpy as np
import streamlit as st
import torch

from app import attention_lab as lab
from app.charts_extra import bar_chart, histogram_overlay, line_chart, series_to_csv
from app.i18n import t, tr
from app.ui import explain, fail, show_figure, show_matrix
from model import lab as mlab
from model.attention import masked_softmax
from model.device import best_device, describe_device

st.title(tr("Scaled dot-product attention", "스케일드 닷-프로덕트 어텐션"))
explain(
    "Attention takes a set of **queries** Q, **keys** K and **values** V. Each query is compared with "
    "every key by a dot product; the scores are divided by √dₖ, turned into weights by a softmax, and "
    "the weights mix the values. Below, every number is computed from the matrices you type.",
    "어텐션은 **쿼리** Q, **키** K, **값** V를 입력으로 받습니다. 쿼리 하나를 모든 키와 내적으로 비교하고, "
    "그 점수를 √dₖ로 나눈 뒤 소프트맥스로 가중치를 만들고, 이 가중치로 값들을 섞습니다. 아래의 모든 숫자는 "
    "여러분이 입력한 행렬에서 바로 계산됩니다.",
)
st.latex(r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")

# ---------------------------------------------------------------- 1. inputs
DEFAULTS = {
    "att_tokens_q": ", ".join(lab.EXAMPLE_TOKENS),
    "att_tokens_k": "",
    "att_q": lab.matrix_to_text(lab.EXAMPLE_Q),
    "att_k": lab.matrix_to_text(lab.EXAMPLE_K),
    "att_v": lab.matrix_to_text(lab.EXAMPLE_V),
}
for key, value in DEFAULTS.items():
    st.session_state.setdefault(key, value)


def _reset_example():
    for k, v in DEFAULTS.items():
        st.session_state[k] = v


st.header(tr("1. Your queries, keys and values", "1. 쿼리, 키, 값 입력"))
explain(
    "The example is the one from the Korean article: three tokens, dₖ = dᵥ = 3. Edit anything: one row "
    "per line, numbers separated by spaces or commas. Q is n × dₖ; K is m × dₖ and V is m × dᵥ. K and V "
    "may have a different number of rows from Q, as in cross-attention (queries from one sentence, keys "
    "and values from another).",
    "예제는 한국어 글에 나온 것과 같습니다. 토큰 세 개, dₖ = dᵥ = 3입니다. 무엇이든 고쳐 보세요. 한 줄에 한 행씩, "
    "숫자는 공백이나 쉼표로 구분합니다. Q는 n × dₖ, K는 m × dₖ, V는 m × dᵥ입니다. 크로스 어텐션처럼(쿼리는 한 "
    "문장에서, 키와 값은 다른 문장에서) K와 V의 행 수가 Q와 달라도 됩니다.",
)
c1, c2 = st.columns(2)
c1.text_input(tr("Query tokens (comma-separated, one per row of Q)", "쿼리 토큰 (쉼표로 구분, Q의 행마다 하나)"),
              key="att_tokens_q")
c2.text_input(tr("Key/value tokens (blank: same as the query tokens)", "키/값 토큰 (비워 두면 쿼리 토큰과 같음)"),
              key="att_tokens_k")
cq, ck, cv = st.columns(3)
cq.text_area("Q (n × dₖ)", key="att_q", height=150)
ck.text_area("K (m × dₖ)", key="att_k", height=150)
cv.text_area("V (m × dᵥ)", key="att_v", height=150)
o1, o2 = st.columns([1, 3])
o1.button(tr("Back to the article's example", "글의 예제로 되돌리기"), on_click=_reset_example, key="att_reset")
causal = o2.toggle(tr("Causal mask (a query may not look at later keys)", "인과 마스크 (쿼리가 뒤쪽 키를 보지 못함)"),
                   key="att_causal")

Q = K = V = stages = None
try:
    Q = lab.parse_matrix(st.session_state["att_q"], "Q")
    K = lab.parse_matrix(st.session_state["att_k"], "K")
    V = lab.parse_matrix(st.session_state["att_v"], "V")
    problem = lab.check_shapes(Q, K, V)
except lab.InputProblem as e:
    problem = e.problem
if problem is None:
    stages, problem = lab.safe_stages(Q, K, V, causal)
if problem is not None:
    fail(problem.en, problem.ko, problem.detail)
    stages = None

if stages is not None:
    n, m, d_k, d_v = Q.shape[0], K.shape[0], Q.shape[1], V.shape[1]
    q_tokens = lab.parse_tokens(st.session_state["att_tokens_q"])
    k_text = st.session_state["att_tokens_k"].strip()
    k_tokens = lab.parse_tokens(k_text) if k_text else q_tokens
    q_labels, q_ok = lab.labels_for(q_tokens, n, "q")
    k_labels, k_ok = lab.labels_for(k_tokens, m, "k")
    if not q_ok:
        st.warning(tr(f"Q has {n} row(s) but {len(q_tokens)} query token(s) were given: using q1…q{n} as labels.",
                      f"Q의 행은 {n}개인데 쿼리 토큰은 {len(q_tokens)}개입니다. q1…q{n}을 이름으로 씁니다."))
    if not k_ok:
        st.warning(tr(f"K has {m} row(s) but {len(k_tokens)} key token(s) were given: using k1…k{m} as labels.",
                      f"K의 행은 {m}개인데 키 토큰은 {len(k_tokens)}개입니다. k1…k{m}을 이름으로 씁니다."))
    if causal and n > m:
        st.info(tr("With more queries than keys, the first queries have no key they may see: their weights are "
                   "all zero (nothing to attend to).",
                   "쿼리가 키보다 많으면 앞쪽 쿼리는 볼 수 있는 키가 없습니다. 그 행의 가중치는 모두 0입니다."))
    st.caption(tr(f"n = {n} queries, m = {m} keys, dₖ = {d_k}, dᵥ = {d_v}. " + t("rows_cols"),
                  f"쿼리 n = {n}개, 키 m = {m}개, dₖ = {d_k}, dᵥ = {d_v}. " + t("rows_cols")))

    # ------------------------------------------------------------ 2. step by step
    st.header(tr("2. Step by step", "2. 한 단계씩"))
    names = {s[0]: tr(s[1], s[2]) for s in lab.STAGES}
    captions = {s[0]: tr(s[3], s[4]) for s in lab.STAGES}
    stage_list = lab.visible_stages(causal)
    show_all = st.toggle(tr("Show all stages at once", "모든 단계를 한꺼번에 보기"), key="att_all")
    if not show_all:
        current = st.segmented_control(tr("Stage", "단계"), stage_list, format_func=names.get,
                                       default=stage_list[0], key="att_stage") or stage_list[0]
        if current not in stage_list:
            current = stage_list[0]
        selected = [current]
    else:
        selected = stage_list

    def draw_stage(stage: str) -> None:
        values = lab.stage_values(stages, stage)
        fig = lab.stage_figure(stage, values, q_labels, k_labels, title=names[stage], query_title=t("query"),
                               key_title=t("key"), dim_title=tr("value dimension", "값 차원"))
        cols = k_labels if stage != "output" else [f"{j + 1}" for j in range(values.shape[1])]
        show_matrix(fig, values, name=f"attention-{stage}", row_labels=q_labels, col_labels=cols,
                    key=f"att-fig-{stage}")

    if show_all:
        for i in range(0, len(selected), 2):
            cols = st.columns(2)
            for col, stage in zip(cols, selected[i:i + 2]):
                with col:
                    st.caption(captions[stage])
                    draw_stage(stage)
    else:
        step_no = stage_list.index(selected[0]) + 1
        heading = f"**{tr('Step', '단계')} {step_no} / {len(stage_list)} · {names[selected[0]]}**"
        if max(n, m) <= 8:  # a small matrix: the figure beside its explanation
            fig_col, text_col = st.columns([3, 2])
            with text_col:
                st.markdown(heading)
                st.markdown(captions[selected[0]])
            with fig_col:
                draw_stage(selected[0])
        else:
            st.markdown(heading + " — " + captions[selected[0]])
            draw_stage(selected[0])
    row_sums = stages.weights.sum(1)
    st.caption(tr(f"Row sums of A: {lab.fmt_vec(row_sums, 8)} (1 for every query that can see a key).",
                  f"A의 행 합: {lab.fmt_vec(row_sums, 8)} (볼 수 있는 키가 있는 쿼리는 모두 1)."))

    # ------------------------------------------------------------ 3. one cell
    st.header(tr("3. Where one number comes from", "3. 숫자 하나가 나오는 과정"))
    for key, size in (("att_row", n), ("att_col", m)):
        if st.session_state.get(key, 0) >= size:
            st.session_state[key] = 0
    r1, r2 = st.columns(2)
    i = r1.selectbox(tr("Query (row)", "쿼리 (행)"), range(n), format_func=lambda x: f"{x + 1}: {q_labels[x]}",
                     key="att_row")
    j = r2.selectbox(tr("Key (column)", "키 (열)"), range(m), format_func=lambda x: f"{x + 1}: {k_labels[x]}",
                     key="att_col")
    esc = lambda s: str(s).replace("`", "ˋ")
    lines = [
        f"**S[{esc(q_labels[i])}, {esc(k_labels[j])}]** = q{i + 1} · k{j + 1} = "
        f"`{lab.dot_product_text(Q[i], K[j])}`",
        f"**S′** = S ÷ √{d_k} = `{lab.fmt(stages.raw[i, j])} ÷ {lab.fmt(math.sqrt(d_k))} = "
        f"{lab.fmt(stages.scaled[i, j])}`",
    ]
    row_for_softmax = stages.masked[i] if stages.masked is not None else stages.scaled[i]
    if stages.masked is not None and not np.isfinite(stages.masked[i, j]):
        lines.append(tr(f"**mask**: key {j + 1} comes after query {i + 1}, so its score becomes −∞.",
                        f"**마스크**: 키 {j + 1}은(는) 쿼리 {i + 1}보다 뒤에 있으므로 점수가 −∞가 됩니다."))
    lines.append(f"**A[{esc(q_labels[i])}, {esc(k_labels[j])}]** = `{lab.softmax_text(row_for_softmax, j)}`")
    lines.append(f"**O[{esc(q_labels[i])}]** = Σⱼ A[{i + 1}, j] × V[j] = "
                 f"`{lab.weighted_sum_text(stages.weights[i], V)}`")
    for line in lines:
        st.markdown(line)
    explain(
        "The row of A says how much of each value row the query takes; the output row is that blend.",
        "A의 한 행은 그 쿼리가 값 행을 각각 얼마나 가져올지를 뜻하고, 출력 행은 그렇게 섞은 결과입니다.",
    )

# ---------------------------------------------------------------- 4. the printed example
st.header(tr("4. Check the printed example", "4. 인쇄된 예제 검산하기"))
explain(
    "Worked examples in articles are easy to get wrong. Here are the four matrices the article prints for "
    "its Q, K, V, beside what the code computes from the same Q, K, V, rounded to 2 decimals like the "
    "print. A **red outline** marks a printed cell that differs from the recomputed one.",
    "글에 실린 계산 예제는 틀리기 쉽습니다. 아래는 글이 같은 Q, K, V에 대해 인쇄한 네 행렬과, 코드가 그 Q, K, V로 "
    "다시 계산해 인쇄본처럼 소수 둘째 자리로 반올림한 값을 나란히 놓은 것입니다. **빨간 테두리**는 다시 계산한 값과 "
    "다른 인쇄값입니다.",
)
report = lab.example_report()
half_unit = f"{0.5 * 10.0 ** -lab.PRINTED_DECIMALS:.{lab.PRINTED_DECIMALS + 1}f}"  # rounding error of the print
ex_labels = lab.EXAMPLE_TOKENS
stage_of = {"S": "raw", "S'": "scaled", "A": "weights", "O": "output"}
for name in ("S", "S'", "A", "O"):
    printed = np.asarray(lab.PRINTED[name], float)
    shown = lab.DISPLAY[name]
    slug = name.replace("'", "-prime")
    ex_cols = ex_labels if name != "O" else [str(j + 1) for j in range(printed.shape[1])]
    left, right = st.columns(2)
    with left:
        fig = lab.stage_figure(stage_of[name], printed, ex_labels, ex_labels,
                               title=tr(f"{shown} as printed", f"인쇄된 {shown}"), query_title=t("query"),
                               key_title=t("key"), dim_title=tr("value dimension", "값 차원"),
                               highlight=report.differs[name])
        show_matrix(fig, printed, name=f"printed-{slug}", row_labels=ex_labels, col_labels=ex_cols,
                    key=f"att-printed-{slug}")
    with right:
        fig = lab.stage_figure(stage_of[name], report.rounded[name], ex_labels, ex_labels,
                               title=tr(f"{shown} computed from Q, K, V", f"Q, K, V로 계산한 {shown}"), query_title=t("query"),
                               key_title=t("key"), dim_title=tr("value dimension", "값 차원"))
        show_matrix(fig, report.computed[name], name=f"computed-{slug}", row_labels=ex_labels,
                    col_labels=ex_cols, key=f"att-computed-{slug}")
    n_diff = int(report.differs[name].sum())
    st.caption(tr(f"{shown}: {n_diff} of {printed.size} printed cells differ from the recomputed values.",
                  f"{shown}: 인쇄된 {printed.size}칸 중 {n_diff}칸이 다시 계산한 값과 다릅니다."))

st.subheader(tr("Does each printed stage follow from the printed stage before it?",
                "인쇄된 각 단계가 바로 앞의 인쇄된 단계에서 나오는가?"))
explain(
    "An error early on spoils everything after it, so a fair check recomputes each printed stage from the "
    "**printed** stage just before it. Printed numbers are rounded, so a cell may be off by half a unit "
    f"of the last digit ({half_unit}), plus however much the rounding of its inputs can move it; only larger "
    "differences count.",
    "앞에서 생긴 오류는 뒤의 모든 단계를 망칩니다. 그래서 공정한 검산은 각 인쇄 단계를 바로 앞의 **인쇄된** 단계에서 "
    f"다시 계산해 비교합니다. 인쇄된 숫자는 반올림된 값이므로 마지막 자리의 절반({half_unit})에 입력의 반올림이 옮길 수 있는 "
    "만큼을 더한 차이는 허용하고, 그보다 큰 차이만 오류로 셉니다.",
)
rows = lab.chain_rows(report)
st.dataframe([{
    tr("printed stage", "인쇄된 단계"): r["stage"],
    tr("recomputed from", "다시 계산한 근거"): tr(*r["source"]),
    tr("cells off", "어긋난 칸"): f"{r['off']} / {r['cells']}",
    tr("largest difference", "가장 큰 차이"): r["max_diff"],
    tr("largest tolerance", "가장 큰 허용 오차"): r["max_tol"],
    tr("verdict", "판정"): tr("consistent", "일치") if r["consistent"] else tr("inconsistent", "불일치"),
} for r in rows], hide_index=True)
for en, ko in lab.chain_sentences(report):
    st.markdown("- " + tr(en, ko))
verdict = lab.chain_verdict(report)
(st.success if all(r["consistent"] for r in rows) else st.warning)(tr(*verdict))
explain(
    "**How to check a worked example yourself:** recompute one cell of every stage by hand from the "
    "stage printed just before it; rows of a softmax must sum to 1; and keep in mind that a printed "
    f"value rounded to {lab.PRINTED_DECIMALS} decimals may be off by up to {half_unit}.",
    "**계산 예제를 직접 검산하는 방법:** 각 단계마다 칸 하나를 바로 앞에 인쇄된 단계에서 손으로 다시 계산해 보고, "
    f"소프트맥스의 각 행의 합이 1인지 확인하세요. 소수 {lab.PRINTED_DECIMALS}자리로 반올림한 값은 최대 {half_unit}까지 어긋날 수 있다는 점도 "
    "기억하세요.",
)

# ---------------------------------------------------------------- 5. dot-product vs additive
st.header(tr("5. Dot-product versus additive attention", "5. 닷-프로덕트 어텐션과 가산(additive) 어텐션"))
explain(
    "The paper compares two ways to score a query against a key. **Additive** (Bahdanau) attention feeds "
    "both through a small one-hidden-layer network, eᵢⱼ = vᵀ tanh(W_q qᵢ + W_k kⱼ). **Dot-product** "
    "(Luong) attention just takes qᵢ · kⱼ: one matrix multiplication for all pairs, which hardware does "
    "very fast. Both feed a softmax. Below, both score your Q and K (additive with seeded random W_q, W_k, v).",
    "논문은 쿼리와 키의 점수를 매기는 두 방법을 비교합니다. **가산**(Bahdanau) 어텐션은 둘을 은닉층 하나짜리 작은 "
    "신경망에 넣어 eᵢⱼ = vᵀ tanh(W_q qᵢ + W_k kⱼ)를 구합니다. **닷-프로덕트**(Luong) 어텐션은 qᵢ · kⱼ만 계산합니다. "
    "모든 쌍을 행렬 곱 한 번으로 구할 수 있어 하드웨어에서 매우 빠릅니다. 두 방법 모두 그 뒤에 소프트맥스를 씁니다. "
    "아래에서는 두 방법으로 여러분의 Q와 K의 점수를 매깁니다(가산 방식의 W_q, W_k, v는 시드를 고정한 무작위 값).",
)
if stages is None:
    st.info(tr("Fix the inputs in section 1 to compare the two scorings.",
               "두 방법을 비교하려면 1절의 입력을 먼저 고치세요."))
else:
    a1, a2 = st.columns(2)
    hidden = a1.slider(tr("Hidden size h of the additive network", "가산 어텐션 신경망의 은닉 크기 h"), 1, 128, 16,
                       key="att_hidden")
    add_seed = int(a2.number_input(tr("Seed for W_q, W_k, v", "W_q, W_k, v의 시드"), 0, 10_000, 0, key="att_add_seed"))
    p = mlab.additive_params(d_k, d_k, hidden, add_seed)
    keep = mlab.causal_keep(n, m) if causal else None
    with np.errstate(all="ignore"):
        e = mlab.additive_scores(torch.as_tensor(Q), torch.as_tensor(K), p["w_q"], p["w_k"], p["v"])
        w_add = masked_softmax(e, keep).numpy()
    l, r = st.columns(2)
    with l:
        fig = lab.stage_figure("weights", stages.weights, q_labels, k_labels,
                               title=tr("Dot-product (scaled) weights", "닷-프로덕트(스케일) 가중치"),
                               query_title=t("query"), key_title=t("key"))
        show_matrix(fig, stages.weights, name="dot-product-weights", row_labels=q_labels, col_labels=k_labels,
                    key="att-dot-weights")
    with r:
        fig = lab.stage_figure("weights", w_add, q_labels, k_labels,
                               title=tr(f"Additive weights (h = {hidden})", f"가산 가중치 (h = {hidden})"),
                               query_title=t("query"), key_title=t("key"))
        show_matrix(fig, w_add, name="additive-weights", row_labels=q_labels, col_labels=k_labels,
                    key="att-add-weights")
    st.caption(t("rows_cols") + " " + tr(
        "The two maps differ: the additive network's weights are random here, not trained. What matters "
        "is the cost.", "두 그림이 다른 것은 가산 방식의 가중치가 학습되지 않은 무작위 값이기 때문입니다. 여기서 볼 것은 비용입니다."))
    fl = mlab.scoring_flops(n, m, d_k, hidden)
    st.dataframe([
        {tr("scoring", "점수 방식"): tr("dot-product", "닷-프로덕트"),
         tr("formula (FLOPs)", "공식 (FLOPs)"): "2·n·m·dₖ + n·m",
         tr("FLOPs now", "현재 FLOPs"): fl["dot"],
         tr("largest intermediate (numbers)", "가장 큰 중간값 (개수)"): fl["dot_memory"]},
        {tr("scoring", "점수 방식"): tr("additive", "가산"),
         tr("formula (FLOPs)", "공식 (FLOPs)"): "2·n·dₖ·h + 2·m·dₖ·h + 4·n·m·h",
         tr("FLOPs now", "현재 FLOPs"): fl["additive"],
         tr("largest intermediate (numbers)", "가장 큰 중간값 (개수)"): fl["additive_memory"]},
    ], hide_index=True)
    st.caption(tr(f"For n = {n}, m = {m}, dₖ = {d_k}, h = {hidden}; a multiply-add counts as 2 FLOPs and a tanh as 1 (in practice it costs more).",
                  f"n = {n}, m = {m}, dₖ = {d_k}, h = {hidden} 기준이며, 곱셈-덧셈 한 번을 2 FLOPs, tanh 한 번을 1 FLOP으로 셉니다(실제로는 더 비쌉니다)."))

    device = best_device()
    t1, t2 = st.columns([1, 2])
    big_n = t1.select_slider(tr("n for the timing (n queries × n keys, d = 64)", "시간 측정용 n (쿼리 n × 키 n, d = 64)"),
                             [64, 128, 256, 512, 1024], value=256, key="att_time_n")
    if t1.button(tr("Time both on this device", "이 장치에서 두 방식 시간 재기"), key="att_time_btn"):
        with st.spinner(tr("Timing…", "측정 중…")):
            st.session_state["att_timing"] = (big_n, hidden,
                                              mlab.time_scoring(big_n, 64, hidden, device, repeats=5))
    timing = st.session_state.get("att_timing")
    with t2:
        if timing is None:
            st.caption(tr(f"Press the button to time both scorings on {describe_device(device)}.",
                          f"버튼을 누르면 {describe_device(device)}에서 두 방식의 시간을 잽니다."))
        else:
            tn, th, times = timing
            ratio = times["additive"] / max(times["dot"], 1e-12)
            st.metric(tr("dot-product", "닷-프로덕트"), f"{times['dot'] * 1e3:.3f} ms")
            st.metric(tr(f"additive (h = {th})", f"가산 (h = {th})"), f"{times['additive'] * 1e3:.3f} ms",
                      delta=f"×{ratio:.1f}", delta_color="off")
            st.caption(tr(f"Median of 5 runs, n = {tn}, d = 64, on {describe_device(device)}.",
                          f"5회 측정의 중앙값, n = {tn}, d = 64, 장치: {describe_device(device)}."))

# ---------------------------------------------------------------- 6. why sqrt(d_k)
st.header(tr("6. Why divide by √dₖ", "6. 왜 √dₖ로 나누는가"))
explain(
    "If the entries of q and k are independent with mean 0 and variance 1, their dot product "
    "q · k = Σ qᵢkᵢ is a sum of dₖ such terms, so its variance is dₖ. Large scores push softmax into a "
    "corner where one weight is almost 1 and the gradient almost vanishes. Dividing by √dₖ brings the "
    "variance back to 1. Below, random q and k are sampled to measure this.",
    "q와 k의 각 성분이 평균 0, 분산 1이고 서로 독립이라면, 내적 q · k = Σ qᵢkᵢ는 그런 항 dₖ개의 합이므로 분산이 "
    "dₖ가 됩니다. 점수가 크면 소프트맥스는 가중치 하나가 거의 1이 되는 구석으로 몰리고 기울기가 거의 사라집니다. "
    "√dₖ로 나누면 분산이 다시 1이 됩니다. 아래에서 무작위 q, k를 뽑아 직접 측정합니다.",
)
s1, s2 = st.columns([3, 1])
dk_demo = s1.slider("dₖ", 1, 512, 64, key="att_dk")
demo_seed = int(s2.number_input(tr("Seed", "시드"), 0, 10_000, 0, key="att_dk_seed"))
n_samples = 4000


@st.cache_data(show_spinner=False, max_entries=32)
def _samples(d: int, seed: int):
    return mlab.sample_dot_products(d, n_samples, seed)


raw, scaled = _samples(dk_demo, demo_seed)
m1, m2, m3 = st.columns(3)
m1.metric(tr("measured Var(q·k)", "측정한 Var(q·k)"), f"{raw.var():.2f}",
          help=tr(f"theory: dₖ = {dk_demo}", f"이론값: dₖ = {dk_demo}"))
m2.metric(tr("measured Var(q·k / √dₖ)", "측정한 Var(q·k / √dₖ)"), f"{scaled.var():.3f}",
          help=tr("theory: 1", "이론값: 1"))
m3.metric(tr("samples", "표본 수"), f"{n_samples:,}")
fig = histogram_overlay({"q·k": raw, "q·k / √dₖ": scaled},
                        title=tr(f"{n_samples:,} random dot products, dₖ = {dk_demo}",
                                 f"무작위 내적 {n_samples:,}개, dₖ = {dk_demo}"),
                        x_title=tr("score", "점수"), y_title=tr("density", "밀도"))
show_figure(fig, name=f"dot-products-dk{dk_demo}", csv=series_to_csv({"q.k": raw, "q.k/sqrt(d_k)": scaled}),
            key="att-hist")

st.subheader(tr("Big scores saturate the softmax", "점수가 크면 소프트맥스가 포화됩니다"))
small, big = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])
p_small, p_big = mlab.softmax_rows(small[None])[0], mlab.softmax_rows(big[None])[0]
b1, b2 = st.columns(2)
with b1:
    fig = bar_chart([f"s={x:g}" for x in small], p_small, title="softmax([1, 2, 3])", y_title=t("weight"),
                    y_range=[0, 1.05])
    show_figure(fig, name="softmax-1-2-3", csv=series_to_csv({"score": small, "softmax": p_small}), key="att-sm-small")
with b2:
    fig = bar_chart([f"s={x:g}" for x in big], p_big, title="softmax([10, 20, 30])", y_title=t("weight"),
                    y_range=[0, 1.05], color="#d62728", text_decimals=6)
    show_figure(fig, name="softmax-10-20-30", csv=series_to_csv({"score": big, "softmax": p_big}), key="att-sm-big")
explain(
    f"Multiplying the scores by {big[0] / small[0]:g} moves the top weight from {p_small.max():.3f} to {p_big.max():.6f}: the "
    "softmax has almost become a hard choice.",
    f"점수에 {big[0] / small[0]:g}을(를) 곱하면 가장 큰 가중치가 {p_small.max():.3f}에서 {p_big.max():.6f}로 바뀝니다. 소프트맥스가 거의 "
    "하나만 고르는 선택이 되어 버립니다.",
)

scales = np.logspace(-1, np.log10(40), 61)
grad = mlab.gradient_vs_scale(small, scales)
fig = line_chart(scales, {tr("largest |∂pᵢ/∂sⱼ|", "가장 큰 |∂pᵢ/∂sⱼ|"): grad["max_abs"],
                          tr("‖J‖ (Frobenius)", "‖J‖ (프로베니우스)"): grad["frobenius"]},
                 title=tr("Softmax gradient for scores c·[1, 2, 3]: J = diag(p) − ppᵀ",
                          "점수 c·[1, 2, 3]에 대한 소프트맥스 기울기: J = diag(p) − ppᵀ"),
                 x_title=tr("scale c (log)", "배율 c (로그)"), y_title=tr("gradient size", "기울기 크기"), log_x=True,
                 log_y=True, vline=math.sqrt(dk_demo), vline_label=f"c = √{dk_demo}")
show_figure(fig, name="softmax-gradient-vs-scale",
            csv=series_to_csv({"scale": grad["scale"], "max_abs_jacobian": grad["max_abs"],
                               "frobenius_jacobian": grad["frobenius"], "max_weight": grad["max_weight"]}),
            key="att-grad")
g_at = mlab.gradient_vs_scale(small, [1.0, math.sqrt(dk_demo)])
explain(
    f"Unscaled scores are about √dₖ = {math.sqrt(dk_demo):.1f} times larger than scaled ones (dashed line). "
    f"There the largest gradient entry is {g_at['max_abs'][1]:.2e}, against {g_at['max_abs'][0]:.3f} at c = 1: "
    "learning signals through a saturated softmax almost vanish, which is why the paper scales.",
    f"스케일하지 않은 점수는 스케일한 점수보다 약 √dₖ = {math.sqrt(dk_demo):.1f}배 큽니다(점선). 그 지점에서 가장 큰 "
    f"기울기 성분은 {g_at['max_abs'][1]:.2e}로, c = 1일 때의 {g_at['max_abs'][0]:.3f}과 비교됩니다. 포화된 소프트맥스를 "
    "지나는 학습 신호는 거의 사라집니다. 그래서 논문은 점수를 스케일합니다.",
)
