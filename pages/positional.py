"""Positional encoding (section 3.5): the sine waves, a shift as a rotation, extrapolation,
sinusoidal versus learned positions, and what self-attention does without any positions."""
import numpy as np
import streamlit as st
import torch

from app.charts import attention_heatmap, matrix_heatmap, matrix_to_csv
from app.concepts import (InputError, circle_figure, lift_title, line_figure, numeric_heatmap, parse_int_list,
                          series_csv, split_words)
from app.i18n import t, tr
from app.ui import explain, fail, show_figure, show_matrix
from model.layers import positional_encoding
from model.positions import (cosine_similarity_matrix, dot_by_distance, frequencies, learned_lookup_error,
                             learned_table, permutation_experiment, rotation_check, rotation_matrix,
                             seeded_encoder, wavelength, word_vocab)

MAX_WORDS = 24

st.title(tr("Positional encoding", "위치 인코딩"))
explain(
    "Self-attention compares every token with every other token, but nothing in that comparison "
    "says *where* a token sits. The paper adds a fixed vector to each embedding — one that depends "
    "only on the position:\n\n"
    "$PE_{(pos,\\,2i)} = \\sin(pos / 10000^{2i/d_{model}})$,  "
    "$PE_{(pos,\\,2i+1)} = \\cos(pos / 10000^{2i/d_{model}})$.\n\n"
    "Each pair of dimensions $(2i, 2i+1)$ is a clock hand turning at its own speed: the first pairs "
    "turn fast (a full turn every 2π ≈ 6.3 positions), the last ones very slowly (10000·2π positions).",
    "셀프 어텐션은 모든 토큰을 서로 비교하지만, 그 비교에는 토큰이 *어디에* 있는지에 대한 정보가 "
    "없습니다. 그래서 논문은 각 임베딩에 위치에만 의존하는 고정된 벡터를 더합니다.\n\n"
    "$PE_{(pos,\\,2i)} = \\sin(pos / 10000^{2i/d_{model}})$,  "
    "$PE_{(pos,\\,2i+1)} = \\cos(pos / 10000^{2i/d_{model}})$.\n\n"
    "차원 쌍 $(2i, 2i+1)$ 하나하나는 저마다 다른 속도로 도는 시계 바늘과 같습니다. 앞쪽 쌍은 빠르게 "
    "돌고(2π ≈ 6.3 위치마다 한 바퀴), 뒤쪽 쌍은 아주 느리게 돕니다(10000·2π 위치마다 한 바퀴).",
)

# ----------------------------------------------------------------------------- 1. heatmap
st.header(tr("1. The encoding as a picture", "1. 그림으로 보는 위치 인코딩"))
c1, c2 = st.columns(2)
length = c1.slider(tr("max length (positions)", "최대 길이 (위치 수)"), 8, 512, 100, key="pe_len")
d_model = c2.slider("d_model", 4, 512, 128, step=4, key="pe_d")
pe = positional_encoding(length, d_model, dtype=torch.float64)  # (L, D)
pos_t, dim_t = tr("position", "위치"), tr("dimension", "차원")
fig = numeric_heatmap(pe, title=tr(f"PE: {length} positions × {d_model} dimensions",
                                   f"PE: 위치 {length}개 × 차원 {d_model}개"),
                      x_title=dim_t, y_title=pos_t, zmin=-1, zmax=1, height=460)
show_figure(fig, name=f"positional-encoding-{length}x{d_model}",
            csv=matrix_to_csv(pe, [str(i) for i in range(length)], [str(j) for j in range(d_model)]), key="pe_heat")
explain(
    "Left columns (fast waves) change from one row to the next; right columns (slow waves) barely "
    "move, so together the row is a unique fingerprint of the position. Every value stays in [−1, 1].",
    "왼쪽 열(빠른 파형)은 행마다 크게 바뀌고, 오른쪽 열(느린 파형)은 거의 변하지 않습니다. 그래서 한 "
    "행 전체가 그 위치만의 고유한 지문이 됩니다. 모든 값은 [−1, 1] 범위에 있습니다.",
)

# ----------------------------------------------------------------------------- 2. waves
st.header(tr("2. Individual dimensions are sine waves", "2. 각 차원은 사인 파형입니다"))
dims_text = st.text_input(tr(f"dimensions to plot (0 … {d_model - 1}, up to 8, comma-separated)",
                             f"그릴 차원 (0 … {d_model - 1}, 최대 8개, 쉼표로 구분)"),
                          "0, 1, 6, 20", key="pe_dims")
try:
    # the slider can shrink d_model below a dimension typed earlier (the default 20 needs d_model ≥ 21):
    # skip those with a note instead of failing; only dimensions that no d_model here has are errors
    dims = parse_int_list(dims_text, 0, 511, 8, tr("dimension", "차원"))
    beyond = [dim for dim in dict.fromkeys(dims) if dim >= d_model]
    if beyond:
        listed = ", ".join(map(str, beyond))
        st.warning(tr(f"d_model = {d_model} has dimensions 0 … {d_model - 1} only: skipping {listed}.",
                      f"d_model = {d_model}이면 차원은 0 … {d_model - 1}뿐입니다. {listed}은(는) 건너뜁니다."))
    dims = [dim for dim in dims if dim < d_model]
    if not dims:
        raise InputError(f"No dimension to plot: pick numbers from 0 to {d_model - 1}.",
                         f"그릴 차원이 없습니다. 0부터 {d_model - 1} 사이의 수를 고르세요.")
    series = {}
    for dim in dict.fromkeys(dims):
        i = dim // 2
        kind = "sin" if dim % 2 == 0 else "cos"
        series[f"{dim} ({kind}, λ≈{wavelength(i, d_model):.1f})"] = pe[:, dim]
    fig = line_figure(np.arange(length), series, x_title=pos_t, y_title="PE",
                      title=tr("Chosen dimensions across positions (λ = wavelength in positions)",
                               "위치에 따른 선택한 차원의 값 (λ = 위치 단위 파장)"))
    show_figure(fig, name="pe-waves", csv=series_csv("position", np.arange(length), series), key="pe_waves")
except InputError as e:
    fail(e.en, e.ko)

# ----------------------------------------------------------------------------- 3. dot product
st.header(tr("3. Similarity depends on distance only", "3. 유사도는 거리에만 의존합니다"))
anchor = st.slider(tr("anchor position p", "기준 위치 p"), 0, length - 1, min(length // 2, length - 1), key="pe_anchor")
qs = np.arange(length)
measured = (pe[anchor] @ pe.T).numpy()  # PE(p) . PE(q) for every q
formula = dot_by_distance(torch.tensor(qs - anchor), d_model).numpy()
dots = {tr("PE(p)·PE(q), measured", "PE(p)·PE(q), 실제 계산"): measured,
        tr("Σᵢ cos((q−p)·ωᵢ), a function of q−p only", "Σᵢ cos((q−p)·ωᵢ), q−p만의 함수"): formula}
fig = line_figure(qs, dots, x_title=tr("position q", "위치 q"), y_title=tr("dot product", "내적"),
                  title=tr(f"Dot product with position p = {anchor}", f"위치 p = {anchor}와의 내적"))
fig.add_vline(x=anchor, line=dict(color="gray", dash="dot"))
fig.data[0].line.width = 5  # measured: thick, under the thin dashed formula that lies exactly on it
fig.data[1].line.update(color="black", width=1.5, dash="dash")
show_figure(fig, name="pe-dot-distance", csv=series_csv("q", qs, dots), key="pe_dot")
gap = float(np.abs(measured - formula).max())
st.markdown(tr(
    f"Largest gap between the measured dot products and the distance-only formula: **{gap:.2e}**. "
    f"The peak is at q = p, where PE(p)·PE(p) = d_model/2 = **{d_model / 2:g}**; it falls off (not "
    "strictly) with distance on both sides, the same shape wherever p is.",
    f"실제 내적과 거리만으로 계산한 식의 최대 차이: **{gap:.2e}**. 최댓값은 q = p에서 "
    f"PE(p)·PE(p) = d_model/2 = **{d_model / 2:g}**이고, 거리가 멀어질수록 양쪽으로 (단조롭지는 않게) "
    "줄어듭니다. p가 어디든 모양은 같습니다."))

# ----------------------------------------------------------------------------- 4. rotation
st.header(tr("4. A shift by k is a rotation", "4. k만큼의 이동은 회전입니다"))
explain(
    "The paper chose sinusoids because PE(pos+k) is a *linear* function of PE(pos). For each pair "
    "(sin, cos) with frequency ω the angle-addition formulas give a 2×2 rotation that depends on k "
    "but not on pos — so attention can learn “look k words back” once and use it everywhere.",
    "논문이 사인 함수를 고른 이유는 PE(pos+k)가 PE(pos)의 *선형* 함수이기 때문입니다. 주파수가 ω인 "
    "(sin, cos) 쌍마다 삼각함수 덧셈 정리가 2×2 회전 행렬을 주는데, 이 행렬은 k에만 의존하고 pos와는 "
    "무관합니다. 그래서 어텐션은 “k 단어 앞을 보라”를 한 번 배워 어디서나 쓸 수 있습니다.",
)
c1, c2, c3 = st.columns(3)
k = int(c1.number_input(tr("shift k", "이동 k"), -1000, 1000, 5, key="rot_k"))
pair = c2.slider(tr("dimension pair i → dims (2i, 2i+1)", "차원 쌍 i → 차원 (2i, 2i+1)"), 0, d_model // 2 - 1, 0,
                 key="rot_i")
p0 = c3.slider(tr("highlighted position", "강조할 위치"), 0, length - 1, min(3, length - 1), key="rot_p")
omega = float(frequencies(d_model)[pair])
M = rotation_matrix(k, pair, d_model)
st.latex(r"\begin{pmatrix}\sin((pos+k)\omega)\\ \cos((pos+k)\omega)\end{pmatrix} = M_k"
         r"\begin{pmatrix}\sin(pos\,\omega)\\ \cos(pos\,\omega)\end{pmatrix},\quad "
         r"M_k=\begin{pmatrix}\cos k\omega & \sin k\omega\\ -\sin k\omega & \cos k\omega\end{pmatrix},\quad "
         rf"\omega = 10000^{{-2\cdot{pair}/{d_model}}} = {omega:.6g}")
left, right = st.columns([2, 3])
with left:
    fig = lift_title(matrix_heatmap(M, ["sin", "cos"], ["sin′", "cos′"], decimals=4, zmin=-1, zmax=1, zmid=0,
                                    title=tr(f"M_k for k = {k}, pair i = {pair}", f"k = {k}, 쌍 i = {pair}의 M_k"),
                                    height=280))
    show_matrix(fig, M, name=f"rotation-k{k}-i{pair}", row_labels=["sin'", "cos'"], col_labels=["sin", "cos"],
                key="rot_m")
    err_pair = rotation_check(length, d_model, k, pair)
    err_all = rotation_check(length, d_model, k) if d_model <= 512 else float("nan")
    st.metric(tr(f"max |M_k·PE(pos) − PE(pos+k)|, pair {pair}, {length} positions",
                 f"최대 |M_k·PE(pos) − PE(pos+k)|, 쌍 {pair}, 위치 {length}개"), f"{err_pair:.2e}")
    st.metric(tr("same, all pairs at once (block-diagonal M_k)", "같은 값, 모든 쌍 한꺼번에 (블록 대각 M_k)"),
              f"{err_all:.2e}")
with right:
    span = max(length, p0 + k + 1) if k >= 0 else length
    pe_circle = positional_encoding(span, d_model, dtype=torch.float64)
    fig = circle_figure(pe_circle[:, 2 * pair], pe_circle[:, 2 * pair + 1], p0, k, pos_label=pos_t,
                        title=tr(f"Pair {pair}: every position is a point on the circle; +{k} turns it by kω = "
                                 f"{k * omega:.3f} rad", f"쌍 {pair}: 각 위치는 원 위의 한 점, +{k}는 kω = "
                                 f"{k * omega:.3f} rad만큼 회전"))
    show_figure(fig, name=f"rotation-circle-i{pair}", key="rot_circle",
                csv=series_csv("position", np.arange(span),
                               {"sin": pe_circle[:, 2 * pair], "cos": pe_circle[:, 2 * pair + 1]}))
st.caption(tr("Differences near 1e-15 are floating-point rounding: the identity is exact.",
              "1e-15 근처의 차이는 부동소수점 반올림 오차입니다. 등식 자체는 정확히 성립합니다."))

# ----------------------------------------------------------------------------- 5. extrapolation
st.header(tr("5. Positions beyond those seen in training", "5. 학습 때 보지 못한 위치"))
explain(
    "Suppose training only ever saw sentences up to `max_len` tokens. The sinusoidal formula is "
    "defined for every position, so a longer sentence still gets vectors that continue the same "
    "waves (the dashed line marks `max_len`). A learned table is an `nn.Embedding(max_len, d_model)`: "
    "it has exactly `max_len` rows, and there is nothing to look up after them.",
    "학습 때 최대 `max_len` 토큰 길이의 문장만 봤다고 합시다. 사인 공식은 모든 위치에 대해 정의되므로, "
    "더 긴 문장도 같은 파형이 이어지는 벡터를 받습니다(점선이 `max_len`). 학습된 위치 임베딩은 "
    "`nn.Embedding(max_len, d_model)` 표라서 정확히 `max_len`개의 행만 있고, 그 뒤로는 찾을 값이 없습니다.",
)
c1, c2 = st.columns(2)
train_len = c1.slider(tr("max_len seen in training", "학습 때 본 max_len"), 8, 256, 50, key="ext_len")
ask = int(c2.number_input(tr("look up position", "조회할 위치"), 0, 1_000_000, 2 * 50 - 1, key="ext_pos"))
ext_d = min(d_model, 64)
span = 2 * train_len
pe_ext = positional_encoding(span, ext_d, dtype=torch.float64)
table = learned_table(train_len, ext_d, seed=0)
left, right = st.columns(2)
with left:
    fig = numeric_heatmap(pe_ext.T, x_title=pos_t, y_title=dim_t, zmin=-1, zmax=1, vlines=[train_len - 0.5],
                          title=tr(f"Sinusoidal, positions 0…{span - 1} (d = {ext_d})",
                                   f"사인 인코딩, 위치 0…{span - 1} (d = {ext_d})"), height=340)
    show_figure(fig, name="extrapolation-sinusoidal", csv=matrix_to_csv(pe_ext), key="ext_sin")
with right:
    w = table.weight.detach()
    fig = numeric_heatmap(w.T, x_title=pos_t, y_title=dim_t, vlines=[train_len - 0.5], zmid=0,
                          title=tr(f"Learned table (fresh), rows 0…{train_len - 1} only",
                                   f"학습형 표 (초기 상태), 행 0…{train_len - 1}만 존재"), height=340)
    fig.update_xaxes(range=[-0.5, span - 0.5])
    show_figure(fig, name="extrapolation-learned", csv=matrix_to_csv(w), key="ext_learned")
sin_vec = positional_encoding(ask + 1, ext_d, dtype=torch.float64)[ask] if ask < 200_000 else None
err = learned_lookup_error(table, ask)
c1, c2 = st.columns(2)
with c1:
    if sin_vec is not None:
        st.success(tr(f"Sinusoidal PE({ask}): defined, first values "
                      f"{', '.join(f'{v:.3f}' for v in sin_vec[:4].tolist())} …, norm {float(sin_vec.norm()):.3f}",
                      f"사인 PE({ask}): 정의됨, 앞 값 {', '.join(f'{v:.3f}' for v in sin_vec[:4].tolist())} …, "
                      f"노름 {float(sin_vec.norm()):.3f}"))
    else:
        st.info(tr("Sinusoidal PE is defined here too; this page computes it only up to 200,000.",
                   "사인 PE는 여기서도 정의되지만, 이 페이지는 200,000까지만 계산합니다."))
with c2:
    if err:
        st.error(tr(f"Learned table row {ask}: the lookup fails — `{err}`",
                    f"학습형 표의 {ask}번 행: 조회 실패 — `{err}`"))
    else:
        st.success(tr(f"Learned table row {ask}: exists (position < max_len = {train_len}).",
                      f"학습형 표의 {ask}번 행: 존재함 (위치 < max_len = {train_len})."))
beyond = positional_encoding(3 * train_len + 8, ext_d, dtype=torch.float64)
gaps = [float((torch.einsum("pd,pd->p", beyond[train_len:2 * train_len], beyond[train_len + s:2 * train_len + s])
               - float(beyond[0] @ beyond[s])).abs().max()) for s in range(1, 9)]
st.markdown(tr(
    f"For positions p beyond max_len the neighbourhood looks the same as inside: max over p ≥ {train_len} "
    f"and distances 1…8 of |PE(p)·PE(p+Δ) − PE(0)·PE(Δ)| = **{max(gaps):.1e}**. Whether a *trained* model "
    "actually generalises to longer inputs is another matter — the paper only hoped it might.",
    f"max_len 너머의 위치 p에서도 이웃과의 관계는 안쪽과 똑같습니다: p ≥ {train_len}, 거리 1…8에 대해 "
    f"|PE(p)·PE(p+Δ) − PE(0)·PE(Δ)|의 최댓값 = **{max(gaps):.1e}**. 다만 *학습된* 모델이 실제로 더 긴 입력에 "
    "일반화하는지는 별개의 문제이며, 논문도 그럴 수 있기를 기대했을 뿐입니다."))

# ----------------------------------------------------------------------------- 6. sinusoidal vs learned
st.header(tr("6. Sinusoidal versus learned positions", "6. 사인 인코딩과 학습형 위치 임베딩"))
explain(
    "The paper also tried learned position embeddings and got nearly the same scores (Table 3, row E). "
    "They start very differently, though: cosine similarity between every pair of positions shows a "
    "smooth band for the sinusoids (neighbours are alike) and noise for a freshly initialised table "
    "(every position is a random vector; any structure has to be learned from data).",
    "논문은 학습형 위치 임베딩도 시험했고 거의 같은 점수를 얻었습니다(표 3의 E행). 하지만 출발점은 "
    "전혀 다릅니다. 모든 위치 쌍의 코사인 유사도를 보면 사인 인코딩은 매끄러운 띠 모양(이웃끼리 "
    "비슷함)이고, 막 초기화한 학습형 표는 잡음입니다(각 위치가 무작위 벡터라서 구조는 데이터로부터 "
    "배워야 합니다).",
)
sim_len = min(length, 128)
sim_sin = cosine_similarity_matrix(pe[:sim_len])
sim_learn = cosine_similarity_matrix(learned_table(sim_len, d_model, seed=0).weight.detach())
c1, c2 = st.columns(2)
for col, sim, name, title in (
        (c1, sim_sin, "similarity-sinusoidal", tr("Sinusoidal: cos-similarity", "사인 인코딩: 코사인 유사도")),
        (c2, sim_learn, "similarity-learned", tr("Learned (fresh): cos-similarity", "학습형 (초기 상태): 코사인 유사도"))):
    with col:
        fig = numeric_heatmap(sim, x_title=pos_t, y_title=pos_t, zmin=-1, zmax=1, title=title, height=420)
        show_figure(fig, name=name, csv=matrix_to_csv(sim), key=name)
off = ~torch.eye(sim_len, dtype=torch.bool)
near = torch.ones(sim_len, sim_len, dtype=torch.bool).triu(1).tril(1)
st.markdown(tr(
    f"Mean similarity of *neighbouring* positions (|p−q| = 1): sinusoidal **{float(sim_sin[near].mean()):.3f}**, "
    f"learned **{float(sim_learn[near].mean()):.3f}**. Mean over all distinct pairs: "
    f"{float(sim_sin[off].mean()):.3f} vs {float(sim_learn[off].mean()):.3f} "
    f"(first {sim_len} positions, d_model = {d_model}).",
    f"*이웃한* 위치(|p−q| = 1)의 평균 유사도: 사인 **{float(sim_sin[near].mean()):.3f}**, 학습형 "
    f"**{float(sim_learn[near].mean()):.3f}**. 서로 다른 모든 쌍의 평균: {float(sim_sin[off].mean()):.3f} 대 "
    f"{float(sim_learn[off].mean()):.3f} (처음 {sim_len}개 위치, d_model = {d_model})."))

# ----------------------------------------------------------------------------- 7. permutation
st.header(tr("7. Without positions, word order is invisible", "7. 위치 정보가 없으면 어순이 보이지 않습니다"))
explain(
    "Shuffle the words and run a real `model.Transformer` encoder (2 layers, 4 heads, d_model = 64, "
    "seeded random weights) on both orders. **Without** positional encoding, every output vector and "
    "every attention weight of the shuffled sentence is the original one, merely moved: put the rows "
    "back in the original order and the difference is zero up to rounding. “I love you” and "
    "“you love I” are the same bag of words. **With** positional encoding the numbers really change.",
    "단어 순서를 섞은 뒤 두 순서 모두를 실제 `model.Transformer` 인코더(2층, 헤드 4개, d_model = 64, "
    "시드를 고정한 무작위 가중치)에 넣어 봅니다. 위치 인코딩이 **없으면** 섞인 문장의 모든 출력 벡터와 "
    "어텐션 가중치는 원래 값이 자리만 옮겨진 것입니다. 행을 원래 순서로 되돌리면 차이는 반올림 오차 "
    "수준의 0입니다. “I love you”와 “you love I”는 같은 단어 주머니일 뿐입니다. 위치 인코딩이 "
    "**있으면** 숫자가 실제로 달라집니다.",
)
c1, c2, c3 = st.columns([3, 2, 1])
sentence = c1.text_input(tr("sentence (words separated by spaces)", "문장 (띄어쓰기로 단어 구분)"), "I love you",
                         key="perm_sentence")
orders = {"reverse": tr("reverse the words", "단어 순서 뒤집기"),
          "shuffle": tr("random shuffle", "무작위로 섞기"),
          "rotate": tr("move the first word to the end", "첫 단어를 맨 뒤로")}
order = c2.radio(tr("new order", "새 순서"), list(orders), format_func=orders.get, key="perm_order")
seed = int(c3.number_input(tr("seed", "시드"), 0, 10_000, 0, key="perm_seed"))


def _permutation(n: int, how: str, seed: int) -> list[int]:
    if how == "reverse":
        return list(range(n))[::-1]
    if how == "rotate":
        return list(range(1, n)) + [0]
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(n, generator=g).tolist()


try:
    words, cut = split_words(sentence, MAX_WORDS)
    if cut:
        st.warning(tr(f"Only the first {MAX_WORDS} words are used.", f"앞의 {MAX_WORDS}개 단어만 사용합니다."))
    if len(words) < 2:
        raise InputError("One word has no order to shuffle: type at least two words.",
                         "단어가 하나뿐이면 섞을 순서가 없습니다. 두 단어 이상 입력하세요.")
    perm = _permutation(len(words), order, seed)
    if perm == list(range(len(words))):
        st.info(tr("This shuffle left the order unchanged — try another seed.",
                   "이번 섞기는 순서를 바꾸지 않았습니다. 다른 시드를 써 보세요."))
    vocab = word_vocab(words)
    ids = [vocab[w] for w in words]
    model = seeded_encoder(vocab_size=64, d_model=64, n_heads=4, n_layers=2, max_len=64, seed=0)
    res = permutation_experiment(model, ids, perm)
    pwords = [words[j] for j in perm]
    st.markdown(f"**{tr('original', '원래 순서')}:** {' '.join(words)}  →  **{tr('shuffled', '섞은 순서')}:** "
                f"{' '.join(pwords)}")
    m1, m2 = st.columns(2)
    m1.metric(tr("without PE: max |output difference| after un-shuffling",
                 "PE 없음: 순서를 되돌린 뒤 출력 차이의 최댓값"), f"{res[False]['out_diff']:.2e}")
    m2.metric(tr("with PE: max |output difference| after un-shuffling",
                 "PE 있음: 순서를 되돌린 뒤 출력 차이의 최댓값"), f"{res[True]['out_diff']:.2e}")
    rows = [{tr("positional encoding", "위치 인코딩"): tr("off", "끔") if not pe_on else tr("on", "켬"),
             tr("max |Δ output|", "출력 차이 최댓값"): f"{r['out_diff']:.3e}",
             tr("max |Δ attention weight|", "어텐션 가중치 차이 최댓값"): f"{r['attn_diff']:.3e}",
             tr("same up to order?", "순서만 다른가?"): tr("yes", "예") if r["out_diff"] < 1e-4 else tr("no", "아니오")}
            for pe_on, r in res.items()]
    st.dataframe(rows, hide_index=True)
    c1, c2 = st.columns(2)
    layer = c1.slider(t("layer"), 1, 2, 1, key="perm_layer")
    head = c2.slider(t("head"), 1, 4, 1, key="perm_head")
    inv = np.argsort(perm)
    for pe_on in (False, True):
        r = res[pe_on]
        st.subheader(tr("with positional encoding", "위치 인코딩 있음") if pe_on
                     else tr("without positional encoding", "위치 인코딩 없음"))
        a = r["attn"][layer - 1, head - 1].numpy()
        ap = r["attn_perm"][layer - 1, head - 1].numpy()
        back = ap[inv][:, inv]
        cols = st.columns(3)
        panels = ((a, words, tr("original order", "원래 순서")),
                  (ap, pwords, tr("shuffled input", "섞은 입력")),
                  (back, words, tr("shuffled run, put back in original order", "섞은 입력의 결과를 원래 순서로 되돌림")))
        for col, (mat, labs, ttl), tag in zip(cols, panels, ("orig", "perm", "back")):
            with col:
                fig = lift_title(attention_heatmap(mat, labs, labs, title=ttl, query_title=t("query"),
                                                   key_title=t("key"), height=300 + 12 * len(labs)))
                show_matrix(fig, mat, name=f"permutation-{'pe' if pe_on else 'nope'}-{tag}", row_labels=labs,
                            col_labels=labs, key=f"perm-{int(pe_on)}-{tag}")
        st.caption(t("rows_cols") + " " + tr(
            f"Layer {layer}, head {head}. Largest difference between the left and right maps: "
            f"{float(np.abs(back - a).max()):.2e}.",
            f"레이어 {layer}, 헤드 {head}. 왼쪽과 오른쪽 그림의 최대 차이: {float(np.abs(back - a).max()):.2e}."))
    diffs = {tr("without PE", "PE 없음"): (res[False]["out_perm"][inv] - res[False]["out"]).abs().max(-1).values,
             tr("with PE", "PE 있음"): (res[True]["out_perm"][inv] - res[True]["out"]).abs().max(-1).values}
    fig = line_figure(np.arange(len(words)), diffs, mode="lines+markers", log_y=True,
                      x_title=tr("word (original position)", "단어 (원래 위치)"),
                      y_title=tr("max |Δ| over the 64 output dims", "출력 64차원 중 최대 |Δ|"),
                      title=tr("Per-word output difference after un-shuffling (log scale)",
                               "순서를 되돌린 뒤 단어별 출력 차이 (로그 축)"))
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(words))), ticktext=words)
    for tr_ in fig.data:  # log axis: an exact 0 would vanish, show it at the float32 floor instead
        tr_.y = np.maximum(np.asarray(tr_.y, dtype=float), 1e-12)
    show_figure(fig, name="permutation-output-diff", key="perm_diff",
                csv=series_csv("position", np.arange(len(words)), diffs))
except InputError as e:
    fail(e.en, e.ko)
