"""Why self-attention (section 4): Table 1 evaluated at your n, d, k, r, and one self-attention,
recurrent and convolutional layer timed on this machine's device."""
import numpy as np
import streamlit as st

from app.concepts import InputError, fmt_num, line_figure, log_x, parse_int_list, rows_csv, series_csv
from app.i18n import t, tr
from app.resources import device_description
from app.ui import explain, fail, show_figure
from model.complexity import LAYERS, complexity_table, max_path_length, per_layer_cost, time_layers
from model.device import best_device

FIRST_VIEW = dict(ns=(16, 64, 256), d=64, batch=2, repeats=3, recurrent="gru", one_thread=True)
MAX_N, MAX_SIZES = 4096, 6

NAMES = {"self_attention": ("Self-attention", "셀프 어텐션"), "recurrent": ("Recurrent", "순환(RNN)"),
         "convolutional": ("Convolutional", "합성곱(CNN)"), "restricted": ("Self-attention (restricted)",
                                                                        "셀프 어텐션 (제한)")}


def name(layer: str) -> str:
    return tr(*NAMES[layer])


st.title(tr("Why self-attention", "왜 셀프 어텐션인가"))
explain(
    "Section 4 of the paper compares layer types on three costs: the work per layer, how many "
    "operations must happen **one after another** (they cannot be parallelised), and the longest path "
    "a signal travels between two positions (short paths make long-range dependencies easier to "
    "learn). n is the sequence length, d the representation size, k the convolution kernel width and "
    "r the neighbourhood of restricted self-attention.",
    "논문 4절은 층의 종류를 세 가지 비용으로 비교합니다. 층 하나의 연산량, **차례로** 해야만 하는(병렬화할 "
    "수 없는) 연산의 수, 그리고 두 위치 사이에서 신호가 지나가야 하는 가장 긴 경로(경로가 짧을수록 먼 "
    "의존 관계를 배우기 쉽습니다)입니다. n은 시퀀스 길이, d는 표현 차원, k는 합성곱 커널 폭, r은 제한된 "
    "셀프 어텐션의 이웃 크기입니다.",
)

# ----------------------------------------------------------------------------- 1. table
st.header(tr("1. The complexity table, evaluated", "1. 복잡도 표, 직접 계산"))
c1, c2, c3, c4 = st.columns(4)
n = int(c1.number_input("n", 1, 10_000_000, 100, key="cx_n"))
d = int(c2.number_input("d", 1, 100_000, 512, key="cx_d"))
k = c3.slider("k", 2, 64, 3, key="cx_k")
r = c4.slider("r", 1, 1024, 16, key="cx_r")
rows = complexity_table(n, d, k, r)
table = [{tr("layer type", "층 종류"): name(row.layer),
          tr("complexity per layer", "층당 복잡도"): row.cost_formula,
          tr("= operations", "= 연산 수"): fmt_num(row.cost),
          tr("sequential operations", "순차 연산"): row.sequential_formula,
          tr("= steps", "= 단계"): fmt_num(row.sequential),
          tr("maximum path length", "최대 경로 길이"): row.path_formula,
          tr("= hops", "= 거리"): fmt_num(round(row.path, 2))} for row in rows]
st.dataframe(table, hide_index=True)
st.download_button(t("download_csv"), rows_csv(table), file_name="complexity-table.csv", mime="text/csv",
                   key="cx_csv")
sa, rnn = rows[0].cost, rows[1].cost
cheaper = tr("cheaper", "더 적습니다") if sa < rnn else tr("more expensive", "더 많습니다")
st.markdown(tr(
    f"At n = {n:,} and d = {d:,}, self-attention costs n²·d = **{fmt_num(sa)}** against the recurrent layer's "
    f"n·d² = **{fmt_num(rnn)}** — a ratio of {sa / rnn:.3g}, so self-attention is **{cheaper}** here. "
    f"The two are equal at n = d = {d:,}: for sentence-length inputs (n of tens) and d in the hundreds, "
    "attention is cheaper *and* needs only one sequential step.",
    f"n = {n:,}, d = {d:,}이면 셀프 어텐션의 비용은 n²·d = **{fmt_num(sa)}**, 순환 층은 n·d² = **{fmt_num(rnn)}**, "
    f"비율은 {sa / rnn:.3g}이므로 여기서는 셀프 어텐션의 연산이 **{cheaper}**. 두 값은 n = d = {d:,}에서 "
    "같아집니다. 문장 길이(n이 수십)와 수백 차원의 d에서는 어텐션이 더 싸면서 순차 단계도 하나뿐입니다."))
st.caption(tr("Constant factors are dropped, as in the paper. The convolution path O(log_k n) assumes dilated "
              "convolutions; contiguous kernels need O(n/k) layers. Restricted attention uses min(r, n).",
              "논문처럼 상수 배는 생략했습니다. 합성곱의 경로 O(log_k n)은 팽창(dilated) 합성곱을 가정하며, 연속 "
              "커널이면 O(n/k)층이 필요합니다. 제한 어텐션은 min(r, n)을 씁니다."))

# ----------------------------------------------------------------------------- 2. cost vs n
st.header(tr("2. As the sequence grows", "2. 시퀀스가 길어질 때"))
explain(
    "The same formulas for every n from 1 upwards (log scales): self-attention's n² term overtakes the "
    "recurrent layer's n·d² at n = d, while its path length stays 1 whatever n is.",
    "같은 공식을 1부터 모든 n에 대해 그렸습니다(로그 눈금). 셀프 어텐션의 n² 항은 n = d에서 순환 층의 n·d²를 "
    "넘어서지만, 경로 길이는 n이 얼마든 1로 그대로입니다.",
)
n_axis = np.unique(np.geomspace(1, max(10 * n, 10 * d, 100), 300).round())
cost = {name(layer): np.array([per_layer_cost(layer, x, d, k, r) for x in n_axis]) for layer in LAYERS}
path = {name(layer): np.array([max_path_length(layer, x, k, r) for x in n_axis]) for layer in LAYERS}
c1, c2 = st.columns(2)
with c1:
    fig = line_figure(n_axis, cost, log_x=True, log_y=True, x_title="n", y_title=tr("operations per layer", "층당 연산 수"),
                      title=tr(f"Cost per layer against n (d = {d:,}, k = {k}, r = {r})",
                               f"n에 따른 층당 비용 (d = {d:,}, k = {k}, r = {r})"))
    # shapes take data coordinates on a log axis, annotations take log10 coordinates
    fig.add_vline(x=d, line=dict(color="gray", dash="dot"))
    fig.add_vline(x=n, line=dict(color="black", dash="dash"))
    fig.add_annotation(x=log_x(d), y=1, yref="paper", text="n = d", showarrow=False, xanchor="left", yanchor="top")
    fig.add_annotation(x=log_x(n), y=0, yref="paper", text=f"n = {n:,}", showarrow=False, xanchor="left",
                       yanchor="bottom")
    show_figure(fig, name="cost-vs-n", csv=series_csv("n", n_axis, cost), key="cx_cost")
with c2:
    fig = line_figure(n_axis, path, log_x=True, log_y=True, x_title="n",
                      y_title=tr("maximum path length", "최대 경로 길이"),
                      title=tr("Longest path between two positions", "두 위치 사이의 가장 긴 경로"))
    show_figure(fig, name="path-vs-n", csv=series_csv("n", n_axis, path), key="cx_path")

# ----------------------------------------------------------------------------- 3. measured
st.header(tr("3. Measured on this machine", "3. 이 기기에서 직접 측정"))
device = best_device()
st.info(tr(f"Device: **{device_description()}**", f"장치: **{device_description()}**"))
explain(
    "The table counts operations; the clock tells the other half of the story. Below, one "
    "`model.attention.MultiHeadAttention` layer, one `torch.nn.GRU` (or LSTM) layer and one "
    "`torch.nn.Conv1d` layer process the same random batch of shape [batch, n, d]. The recurrent layer "
    "must take n steps one after another, so its time grows with n even when there is spare hardware; "
    "attention does all positions at once. Each number is the median of a few runs after a warm-up.",
    "표는 연산 수를 셉니다. 나머지 절반은 시계가 알려 줍니다. 아래에서 `model.attention.MultiHeadAttention` "
    "층 하나, `torch.nn.GRU`(또는 LSTM) 층 하나, `torch.nn.Conv1d` 층 하나가 모양 [batch, n, d]인 같은 무작위 "
    "배치를 처리합니다. 순환 층은 n 단계를 차례로 밟아야 하므로 하드웨어가 남아도 시간이 n과 함께 "
    "늘어나고, 어텐션은 모든 위치를 한꺼번에 처리합니다. 각 숫자는 워밍업 후 몇 번 잰 값의 중앙값입니다.",
)


@st.cache_data(show_spinner=False, max_entries=32)
def _measure(ns: tuple, d: int, batch: int, repeats: int, recurrent: str, one_thread: bool, device: str) -> dict:
    return time_layers(list(ns), d, batch, device, repeats, recurrent=recurrent, budget_s=3.0,
                       threads=1 if one_thread else None)


with st.form("timing"):
    c1, c2, c3, c4, c5 = st.columns(5)
    ns_text = c1.text_input(tr(f"sequence lengths n (≤ {MAX_N:,}, up to {MAX_SIZES})",
                               f"시퀀스 길이 n (≤ {MAX_N:,}, 최대 {MAX_SIZES}개)"), "16, 64, 256, 1024", key="tm_ns")
    tm_d = c2.select_slider("d", [32, 64, 128, 256], 64, key="tm_d")
    tm_b = c3.slider("batch", 1, 8, 2, key="tm_b")
    tm_rep = c4.slider(tr("repeats", "반복 횟수"), 1, 7, 3, key="tm_rep")
    tm_rnn = c5.radio(tr("recurrent layer", "순환 층"), ["gru", "lstm"], format_func=str.upper, key="tm_rnn")
    one = st.checkbox(tr("one CPU thread (steadier when the machine is busy)", "CPU 스레드 하나만 (기기가 바쁠 때 더 안정적)"),
                      value=True, key="tm_one", disabled=device.type != "cpu",
                      help=tr("Several threads that wait for each other on a shared, busy CPU make timings erratic.",
                              "바쁜 공유 CPU에서는 서로를 기다리는 여러 스레드 때문에 측정값이 들쭉날쭉해집니다."))
    run = st.form_submit_button(tr("Measure", "측정하기"), type="primary")
if run:
    try:
        ns = tuple(sorted(set(parse_int_list(ns_text, 1, MAX_N, MAX_SIZES, "n"))))
        st.session_state["tm_params"] = dict(ns=ns, d=tm_d, batch=tm_b, repeats=tm_rep, recurrent=tm_rnn,
                                             one_thread=bool(one))
    except InputError as e:
        fail(e.en, e.ko)
params = st.session_state.get("tm_params", FIRST_VIEW)
params = {**params, "one_thread": params["one_thread"] and device.type == "cpu"}
if "tm_params" not in st.session_state:
    st.caption(tr("First view: small sizes measured automatically; press **Measure** for your own.",
                  "첫 화면: 작은 크기로 자동 측정했습니다. 원하는 크기는 **측정하기**를 누르세요."))
try:
    with st.spinner(tr("measuring…", "측정 중…")):
        res = _measure(tuple(params["ns"]), params["d"], params["batch"], params["repeats"], params["recurrent"],
                       params["one_thread"], str(device))
except Exception as e:  # out of memory on a small device, a driver error…
    fail("The measurement failed.", "측정에 실패했습니다.", f"{type(e).__name__}: {str(e)[:300]}")
    res = None
if res and res["n"]:
    layer_names = {"self_attention": name("self_attention"),
                   "recurrent": f"{name('recurrent')} ({res['recurrent_kind'].upper()})",
                   "convolutional": f"{name('convolutional')} (k = 3)"}
    ms = {layer_names[key]: np.array(res[key]) * 1e3 for key in ("self_attention", "recurrent", "convolutional")}
    fig = line_figure(res["n"], ms, mode="lines+markers", log_x=True, log_y=True, x_title="n",
                      y_title=tr("milliseconds per forward pass (median)", "순전파 1회 밀리초 (중앙값)"),
                      title=tr(f"Measured: batch {res['batch']}, d = {res['d']}, {device_description()}",
                               f"측정값: batch {res['batch']}, d = {res['d']}, {device_description()}"))
    fig.update_xaxes(tickvals=res["n"], ticktext=[str(v) for v in res["n"]])
    fig.update_yaxes(dtick="D2")  # 1, 2, 5 per decade: readable on a short log range
    show_figure(fig, name="measured-layer-times", csv=series_csv("n", res["n"], ms), key="tm_fig")
    rows_t = [{"n": nv, **{lab: f"{ms[lab][i]:.3f}" for lab in ms},
               tr("recurrent µs per position", "순환 위치당 µs"): f"{res['recurrent'][i] / nv * 1e6:.1f}",
               tr("recurrent ÷ attention", "순환 ÷ 어텐션"): f"{res['recurrent'][i] / res['self_attention'][i]:.2f}×"}
              for i, nv in enumerate(res["n"])]
    st.dataframe(rows_t, hide_index=True)
    st.download_button(t("download_csv"), rows_csv(rows_t), file_name="measured-times.csv", mime="text/csv",
                       key="tm_csv")
    if len(res["n"]) >= 2:
        growth = res["recurrent"][-1] / res["recurrent"][0]
        st.markdown(tr(
            f"From n = {res['n'][0]:,} to n = {res['n'][-1]:,} ({res['n'][-1] / res['n'][0]:.0f}× longer) the "
            f"recurrent layer became **{growth:.1f}×** slower and attention "
            f"**{res['self_attention'][-1] / res['self_attention'][0]:.1f}×**.",
            f"n = {res['n'][0]:,}에서 n = {res['n'][-1]:,}로 ({res['n'][-1] / res['n'][0]:.0f}배 길게) 늘었을 때 순환 "
            f"층은 **{growth:.1f}배**, 어텐션은 **{res['self_attention'][-1] / res['self_attention'][0]:.1f}배** "
            "느려졌습니다."))
    st.caption(tr(f"Measured in {res['total_s']:.2f} s on `{res['device']}`"
                  + (f" with {res['threads']} CPU thread(s)" if res.get("threads") else "") + ".",
                  f"`{res['device']}`에서 {res['total_s']:.2f}초 동안 측정"
                  + (f", CPU 스레드 {res['threads']}개" if res.get("threads") else "") + "."))
if res and res["skipped"]:
    st.warning(tr(f"Skipped n = {', '.join(map(str, res['skipped']))}: the 3-second measuring budget would "
                  "have run out, or the attention scores alone would need more than 512 MB. Try a smaller "
                  "batch, d or fewer repeats.",
                  f"n = {', '.join(map(str, res['skipped']))}은(는) 건너뛰었습니다. 측정 시간 예산 3초를 넘기거나 "
                  "어텐션 점수 행렬만으로 512 MB를 넘을 것 같았습니다. batch, d나 반복 횟수를 줄여 보세요."))
if res and res["n"]:
    explain(
        "On a CPU with few cores, attention's n² work eventually dominates and the curves can cross — "
        "the table's n·d² vs n²·d in the flesh. On a GPU the recurrent layer's n sequential steps leave "
        "most of the chip idle, while attention's matrix products fill it: that, more than the operation "
        "count, is why the Transformer trained so much faster.",
        "코어가 적은 CPU에서는 결국 어텐션의 n² 연산이 커져서 곡선이 교차할 수 있습니다. 표의 n·d² 대 n²·d가 "
        "실제로 나타나는 것입니다. GPU에서는 순환 층의 n개 순차 단계가 칩 대부분을 놀게 하는 반면, 어텐션의 행렬 "
        "곱은 칩을 가득 채웁니다. 연산 수보다 바로 이 점이 Transformer의 학습이 훨씬 빨랐던 이유입니다.",
    )
