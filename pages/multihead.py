"""Multi-head attention and the shape of every tensor (section 3.2.2 of the paper)."""
import streamlit as st
import torch

from app import attention_lab as lab
from app.charts import head_grid, matrix_to_csv
from app.charts_extra import head_tiles
from app.i18n import t, tr
from app.ui import explain, fail, show_figure, show_matrix
from model import lab as mlab
from model.config import PRESETS
from model.layers import positional_encoding

st.title(tr("Multi-head attention", "멀티헤드 어텐션"))
explain(
    "One attention sees the sentence one way. Multi-head attention projects the same input into H smaller "
    "spaces of width d_h = D / H, runs scaled dot-product attention in each of them in parallel, then "
    "concatenates the H results and mixes them with one more matrix, W^O. Below, a real "
    "`model.attention.MultiHeadAttention` (seeded weights, untrained) runs on your sentence.",
    "어텐션 하나는 문장을 한 가지 방식으로만 봅니다. 멀티헤드 어텐션은 같은 입력을 폭 d_h = D / H인 작은 공간 H개로 "
    "투영하고, 각 공간에서 스케일드 닷-프로덕트 어텐션을 나란히 계산한 뒤, H개의 결과를 이어 붙이고(concat) 행렬 W^O "
    "하나로 섞습니다. 아래에서는 실제 `model.attention.MultiHeadAttention`(시드를 고정한, 학습하지 않은 가중치)이 "
    "여러분의 문장에 대해 돌아갑니다.",
)
st.latex(r"\mathrm{MultiHead}(Q,K,V)=\mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_H)\,W^O,\quad "
         r"\mathrm{head}_i=\mathrm{Attention}(QW_i^Q,\,KW_i^K,\,VW_i^V)")

# ---------------------------------------------------------------- inputs
D_CHOICES = [8, 16, 24, 32, 48, 64, 96, 128, 256, 512]
MAX_TOKENS = 64
st.session_state.setdefault("mh_sentence", tr("the cat sat on the mat", "고양이가 매트 위에 앉았다"))
st.session_state.setdefault("mh_d", 64)

st.header(tr("1. The input", "1. 입력"))
st.text_input(tr("Sentence (tokens are the words, split at spaces)", "문장 (공백으로 나눈 단어가 토큰)"),
              key="mh_sentence")
c1, c2, c3, c4 = st.columns(4)
D = c1.select_slider("D = d_model", D_CHOICES, key="mh_d")
valid_h = [h for h in range(1, D + 1) if D % h == 0 and h <= 64]
if st.session_state.get("mh_h") not in valid_h:
    st.session_state["mh_h"] = 8 if 8 in valid_h else max(h for h in valid_h if h <= 8)
H = c2.selectbox(tr("H = heads (divisors of D)", "H = 헤드 수 (D의 약수)"), valid_h, key="mh_h")
seed = int(c3.number_input(tr("Weight seed", "가중치 시드"), 0, 10_000, 0, key="mh_seed"))
use_pe = c4.toggle(tr("Add positional encoding", "위치 인코딩 더하기"), value=True, key="mh_pe")

words = st.session_state["mh_sentence"].split()
if len(words) > MAX_TOKENS:
    st.warning(tr(f"{len(words)} tokens: only the first {MAX_TOKENS} are used.",
                  f"토큰이 {len(words)}개입니다. 앞의 {MAX_TOKENS}개만 씁니다."))
    words = words[:MAX_TOKENS]
if not words:
    fail("Type at least one word.", "단어를 하나 이상 입력하세요.")
    st.stop()

L, d_h = len(words), D // H
labels = [w[:24] for w in words]
x = mlab.word_embeddings(words, D)  # (L, D)
if use_pe:
    x = x + positional_encoding(L, D)
x = x[None]  # (B=1, L, D)
explain(
    f"Each word gets a fixed random vector of length D (the same word always gets the same vector)"
    f"{', plus its sinusoidal positional encoding' if use_pe else ''}. The batch holds this one sentence, "
    f"so B = 1, L = {L}, D = {D}, H = {H} and d_h = D / H = {d_h}.",
    f"각 단어는 길이 D인 고정된 무작위 벡터를 받습니다(같은 단어는 언제나 같은 벡터)"
    f"{'. 여기에 사인 위치 인코딩을 더합니다' if use_pe else ''}. 배치에는 이 문장 하나만 있으므로 B = 1, L = {L}, "
    f"D = {D}, H = {H}, d_h = D / H = {d_h}입니다.",
)

mha = mlab.seeded_mha(D, H, seed)
with torch.no_grad():
    out, steps = mlab.multihead_steps(mha, x)
    module_out = mha(x)[0]  # the module's own (fused) path
gap = float((out - module_out).abs().max())
if not torch.allclose(out, module_out, atol=1e-5, rtol=1e-4):
    fail("The step-by-step path does not match the module's output.",
         "단계별 계산이 모듈의 출력과 맞지 않습니다.", f"max |difference| = {gap:.3g}")

# ---------------------------------------------------------------- 2. shapes
st.header(tr("2. Every step and its shape", "2. 단계별 텐서 모양"))
explain(
    "The shapes below are read from the tensors the model actually produced at each step, not written by "
    "hand. Splitting into heads is only a reshape and a transpose: no numbers change.",
    "아래 모양은 손으로 적은 것이 아니라, 모델이 각 단계에서 실제로 만든 텐서에서 읽은 것입니다. 헤드로 나누는 일은 "
    "reshape와 transpose일 뿐이라서 숫자는 하나도 바뀌지 않습니다.",
)
STEP_TEXT = {
    "input": ("[B, L, D]", "token embeddings (+ positions)", "토큰 임베딩 (+ 위치)"),
    "q_proj": ("[B, L, D]", "Q = X W^Q (all heads at once)", "Q = X W^Q (모든 헤드를 한 번에)"),
    "k_proj": ("[B, L, D]", "K = X W^K", "K = X W^K"),
    "v_proj": ("[B, L, D]", "V = X W^V", "V = X W^V"),
    "split": ("[B, L, H, d_h]", "split D into H heads of width d_h (reshape)", "D를 폭 d_h인 헤드 H개로 나눔 (reshape)"),
    "transpose": ("[B, H, L, d_h]", "move the head axis forward (transpose)", "헤드 축을 앞으로 옮김 (transpose)"),
    "scores": ("[B, H, L, L]", "QKᵀ / √d_h in every head", "헤드마다 QKᵀ / √d_h"),
    "weights": ("[B, H, L, L]", "softmax over keys", "키 방향 소프트맥스"),
    "heads": ("[B, H, L, d_h]", "weights × V in every head", "헤드마다 가중치 × V"),
    "concat": ("[B, L, D]", "transpose back and concatenate the heads", "다시 transpose하고 헤드를 이어 붙임"),
    "output": ("[B, L, D]", "× W^O: mix the heads", "× W^O: 헤드들을 섞음"),
}
sizes = {"B": 1, "L": L, "D": D, "H": H, "d_h": d_h}
st.dataframe([{
    tr("step", "단계"): tr(STEP_TEXT[s.name][1], STEP_TEXT[s.name][2]),
    tr("shape (symbols)", "모양 (기호)"): STEP_TEXT[s.name][0],
    tr("shape (this run)", "모양 (이번 실행)"): str(list(s.shape)),
} for s in steps], hide_index=True, height=35 * (len(steps) + 1) + 3)
st.caption(tr(f"B = 1, L = {L}, D = {D}, H = {H}, d_h = {d_h}. The step-by-step output equals the module's "
              f"output (largest difference {gap:.1e}).",
              f"B = 1, L = {L}, D = {D}, H = {H}, d_h = {d_h}. 단계별 계산 결과는 모듈의 출력과 같습니다 "
              f"(가장 큰 차이 {gap:.1e})."))

# ---------------------------------------------------------------- 3. heads
st.header(tr("3. What each head attends to", "3. 헤드마다 무엇을 보는가"))
weights = mlab.step_tensor(steps, "weights")[0].numpy()  # (H, L, L)
st.caption(t("rows_cols") + " " + tr("Weights are untrained, so the patterns are random; still, every head "
                                     "computes its own map from the same input.",
                                     "가중치를 학습하지 않았으므로 패턴은 무작위입니다. 그래도 헤드마다 같은 입력에서 "
                                     "서로 다른 지도를 계산합니다."))
heads_csv = "".join(f"# head {h + 1}\n" + matrix_to_csv(weights[h], labels, labels) for h in range(H))
if H <= 16:
    fig = head_tiles(weights, labels, labels, head_title=t("head"), query_title=t("query"), key_title=t("key"),
                     per_row=4 if H != 2 else 2)
    show_figure(fig, name=f"multihead-D{D}-H{H}-heads", csv=heads_csv, key="mh-heads")
else:
    fig = head_grid(weights[None], layer_title=tr("layer", "레이어"), head_title=t("head"))
    show_figure(fig, name=f"multihead-D{D}-H{H}-all-heads", csv=heads_csv, key="mh-grid")
    head_word = t("head")
    h_pick = st.selectbox(tr("Look at one head with token labels", "헤드 하나를 토큰 이름과 함께 보기"),
                          range(H), format_func=lambda h: f"{head_word} {h + 1}", key="mh_pick")
    fig = lab.stage_figure("weights", weights[h_pick], labels, labels, title=f"{t('head')} {h_pick + 1}",
                           query_title=t("query"), key_title=t("key"))
    show_matrix(fig, weights[h_pick], name=f"multihead-D{D}-H{H}-head{h_pick + 1}", row_labels=labels,
                col_labels=labels, key="mh-one-head")

# ---------------------------------------------------------------- 4. single vs multi
st.header(tr("4. One head versus H heads", "4. 헤드 하나와 헤드 H개"))
explain(
    "The projection matrices have the same size for every H (D × 3D for Q, K, V and D × D for W^O), so the "
    "same seed gives exactly the same parameters. The only difference is how the D columns are grouped: "
    "one softmax over all D dimensions, or H separate softmaxes over d_h dimensions each.",
    "투영 행렬의 크기는 H와 상관없이 같습니다(Q, K, V용 D × 3D, W^O용 D × D). 그래서 같은 시드면 파라미터도 완전히 "
    "같습니다. 다른 점은 D개의 열을 묶는 방식뿐입니다. D차원 전체에 소프트맥스 하나를 쓰느냐, d_h차원씩 나눈 H개의 "
    "소프트맥스를 쓰느냐입니다.",
)
single = mlab.seeded_mha(D, 1, seed)
with torch.no_grad():
    out1, steps1 = mlab.multihead_steps(single, x)
w1 = mlab.step_tensor(steps1, "weights")[0, 0].numpy()
same_params = all(torch.equal(a, b) for a, b in zip(single.parameters(), mha.parameters()))
l, r = st.columns(2)
with l:
    fig = lab.stage_figure("weights", w1, labels, labels, title=tr("1 head (d_h = D)", "헤드 1개 (d_h = D)"),
                           query_title=t("query"), key_title=t("key"))
    show_matrix(fig, w1, name=f"single-head-D{D}", row_labels=labels, col_labels=labels, key="mh-single")
with r:
    w_mean = weights.mean(0)
    fig = lab.stage_figure("weights", w_mean, labels, labels,
                           title=tr(f"mean of the {H} heads (d_h = {d_h})", f"헤드 {H}개의 평균 (d_h = {d_h})"),
                           query_title=t("query"), key_title=t("key"))
    show_matrix(fig, w_mean, name=f"multi-head-mean-D{D}-H{H}", row_labels=labels, col_labels=labels,
                key="mh-mean")
n_params = sum(p.numel() for p in mha.parameters())
m1, m2, m3 = st.columns(3)
m1.metric(tr("parameters, 1 head", "파라미터, 헤드 1개"), f"{sum(p.numel() for p in single.parameters()):,}")
m2.metric(tr(f"parameters, {H} heads", f"파라미터, 헤드 {H}개"), f"{n_params:,}")
m3.metric(tr("max |output difference|", "출력 차이의 최댓값"), f"{float((out - out1).abs().max()):.3g}")
st.caption(tr(f"4·D² + 4·D = {4 * D * D + 4 * D:,} in both cases; identical weights: {'yes' if same_params else 'no'}.",
              f"두 경우 모두 4·D² + 4·D = {4 * D * D + 4 * D:,}개이며, 가중치가 같은가: {'예' if same_params else '아니요'}."))

# ---------------------------------------------------------------- 5. cost
st.header(tr("5. The cost does not grow with H", "5. H가 늘어도 비용은 그대로"))
explain(
    "H heads of width D/H do the same matrix work as one head of width D. The table runs the model for every "
    "allowed H and counts the floating-point operations of each matrix product from the captured shapes "
    "(a multiply-add counts 2). Only the number of softmax entries, H·L², grows with H — small next to the "
    "matrix products when d_h is not tiny.",
    "폭이 D/H인 헤드 H개는 폭이 D인 헤드 하나와 같은 양의 행렬 연산을 합니다. 아래 표는 가능한 모든 H로 모델을 돌리고, "
    "기록한 텐서 모양에서 행렬 곱마다 부동소수점 연산 수를 셉니다(곱셈-덧셈 한 번 = 2). H에 따라 늘어나는 것은 "
    "소프트맥스 원소 수 H·L²뿐인데, d_h가 아주 작지 않다면 행렬 곱에 비해 작습니다.",
)
rows = []
for h in valid_h:
    m_h = mlab.seeded_mha(D, h, seed)
    with torch.no_grad():
        _, st_h = mlab.multihead_steps(m_h, x)
    f = mlab.multihead_flops(st_h, h)
    matmul = f["projections"] + f["scores"] + f["weighted_sum"] + f["output_projection"]
    rows.append({
        "H": h, "d_h": D // h,
        tr("scores shape", "점수 모양"): str(list(mlab.step_tensor(st_h, "scores").shape)),
        tr("Q/K/V projections", "Q/K/V 투영"): f["projections"],
        "QKᵀ": f["scores"], tr("weights × V", "가중치 × V"): f["weighted_sum"],
        "W^O": f["output_projection"], tr("matmul total", "행렬 곱 합계"): matmul,
        tr("softmax entries", "소프트맥스 원소"): f["softmax_entries"],
        tr("parameters", "파라미터"): sum(p.numel() for p in m_h.parameters()),
    })
st.dataframe(rows, hide_index=True)
totals = {r[tr("matmul total", "행렬 곱 합계")] for r in rows}
st.caption(tr(f"Matmul FLOPs for L = {L}, D = {D}: {'the same for every H' if len(totals) == 1 else 'they differ'} "
              f"({', '.join(f'{v:,}' for v in sorted(totals))}).",
              f"L = {L}, D = {D}에서 행렬 곱 FLOPs: {'모든 H에서 같음' if len(totals) == 1 else '서로 다름'} "
              f"({', '.join(f'{v:,}' for v in sorted(totals))})."))
base = PRESETS["paper_base"]
explain(
    f"The paper's base model uses D = {base.d_model} with H = {base.n_heads}, so d_h = {base.d_head}. Its "
    "ablation (Table 3, rows A) found a single head clearly worse, and many very thin heads worse as well: "
    "the split is a trade-off, not free extra capacity.",
    f"논문의 기본 모델은 D = {base.d_model}, H = {base.n_heads}이므로 d_h = {base.d_head}입니다. 논문의 실험"
    "(표 3의 A행)에서는 헤드가 하나일 때 분명히 나빴고, 아주 얇은 헤드를 너무 많이 써도 나빠졌습니다. 헤드 나누기는 "
    "공짜로 얻는 용량이 아니라 균형의 문제입니다.",
)
