"""Multi-head attention and the shape of every tensor (section 3.2.2 of the paper), then one whole
encoder layer: attention, add & norm, feed-forward, add & norm (sections 3.1 and 3.3)."""
import streamlit as st

from pages.views.attention_lab import LABEL_LIMIT
from app.charts.curves import line_chart
from app.charts.export import heads_csv, series_csv
from app.charts.heatmaps import head_multiples, head_tiles, scale_top, stage_figure
from app.i18n import UserError, t
from app.fast.attention_view import attention_view, available as attention_view_available, page_resets, view_bytes
from app.resources import computed, shared_figure, shared_view
from app.state import OneBased, keep
from app.page_inputs import MULTIHEAD, SECTIONS
from app.ui import error, show_figure, show_matrix, table, text
from model.lessons import multihead as mlab
from model.lessons import layer_walk as mwalk
from model.nn.config import PRESETS
from model.lessons.layer_walk import TOLERANCE

# Every section follows the inputs at the top, so a change reruns the page; what model/ computes is cached per
# input (app.resources.computed, bounded) and every figure is built once per input and language
# (app.resources.shared_figure). Every head's map goes to the attention view once (a tile, a cell, a query answered
# in the browser); where the view is off (ATLAS_ATTENTION_VIEW=server), with more than 16 heads, the picker of one
# head reruns only that head's map (a fragment).


@st.fragment
def one_head(weights, labels: list, name: tuple, axis_titles: dict) -> None:
    """Pick one of many heads: its map, from the weights the page computed."""
    H = len(weights)
    head_word = t("common.head")
    head_names = {h: f"{head_word} {h + 1}" for h in range(H)}
    h_pick = st.selectbox(t("multihead.maps.pick"), list(head_names), format_func=head_names.get,
                          **keep("mh_pick", 0, url="head", valid=head_names, codec=OneBased))
    title = f"{head_word} {h_pick + 1}"
    fig = shared_figure("mh-one-head", (*name, h_pick, title, *axis_titles.values()), lambda: stage_figure(
        "weights", weights[h_pick], labels, labels, title=title, **axis_titles))
    show_matrix(fig, weights[h_pick], name=f"multihead-D{name[1]}-H{H}-head{h_pick + 1}", row_labels=labels,
                col_labels=labels, key="mh-one-head")


def heads_view(weights, labels: list, view: tuple, axis_titles: dict) -> None:
    """Every head's map in the attention view (app.fast.attention_view), one layer of H heads: it opens on the head
    a link names (?head=, 1-based), as the picker of the server-drawn grid did."""
    H = len(weights)
    pick = keep("mh_pick", 0, url="head", valid=range(H), codec=OneBased, browser=True)  # the view writes its own
    head = st.session_state[pick["key"]] + 1
    top = scale_top(weights)  # every weight small (many narrow heads): the colours stretched, and said so
    if top < 1:
        st.caption(t("multihead.maps.scale_top", top=top))
    data = shared_view("mh-view", (*view, head, page_resets(), *axis_titles.values()), lambda: view_bytes(
        [{"id": "self", "label": t("multihead.maps.kind", H=H), "weights": weights[None], "q": labels, "k": labels,
          "q_title": axis_titles["query_title"], "k_title": axis_titles["key_title"], "top": top}], "grid",
        {"kind": "self", "head": head}))
    attention_view(data, key="mh-view")


st.title(t("multihead.title"))
text("multihead.intro")
st.latex(r"\begin{gathered}\mathrm{MultiHead}(Q,K,V)=\mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_H)\,W^O\\ "
         r"\mathrm{head}_i=\mathrm{Attention}(QW_i^Q,\,KW_i^K,\,VW_i^V)\end{gathered}")  # a line each: fits a narrow column
axis_titles = {"query_title": t("common.query"), "key_title": t("common.key")}

# ---------------------------------------------------------------- 1. inputs
st.header(t("multihead.input_header"))
sentence = st.text_input(t("multihead.sentence"), **MULTIHEAD.sentence.keep(t("multihead.default_sentence")))
c1, c2, c3, c4 = st.columns(4)
D = c1.select_slider("D = d_model", mlab.D_CHOICES, **MULTIHEAD.d_model.keep(64, valid=mlab.D_CHOICES))
valid_h = mlab.head_choices(D)
H = c2.selectbox(t("multihead.heads"), valid_h, **MULTIHEAD.heads.keep(mlab.default_heads(valid_h), valid=valid_h))
seed = int(c3.number_input(t("multihead.seed"), 0, 10_000, **MULTIHEAD.seed.keep(0)))
use_pe = c4.toggle(t("multihead.positions"), **MULTIHEAD.positions.keep(True))

words = sentence.split()
if len(words) > mlab.MAX_TOKENS:
    st.warning(t("multihead.too_long", count=len(words), limit=mlab.MAX_TOKENS))
    words = words[:mlab.MAX_TOKENS]
try:
    demo = computed(mlab.multihead_demo, words, D, H, seed, positions=use_pe)
except UserError as e:
    error(e)
    st.stop()

L, d_h = demo.length, demo.d_head
labels = [w[:LABEL_LIMIT] for w in words]
view = (tuple(words), D, H, seed, use_pe)  # everything the figures below depend on, with their titles
text("multihead.input_note_positions" if use_pe else "multihead.input_note", L=L, D=D, H=H, d_h=d_h)
if not demo.matches:
    error(UserError("multihead.errors.mismatch", detail=f"max |difference| = {demo.module_gap:.3g}"))

# ---------------------------------------------------------------- 2. shapes
st.header(t("multihead.shapes_header"))
text("multihead.shapes")
SYMBOLS = {"input": "[B, L, D]", "q_proj": "[B, L, D]", "k_proj": "[B, L, D]", "v_proj": "[B, L, D]",
           "split": "[B, L, H, d_h]", "transpose": "[B, H, L, d_h]", "scores": "[B, H, L, L]",
           "weights": "[B, H, L, L]", "heads": "[B, H, L, d_h]", "concat": "[B, L, D]", "output": "[B, L, D]"}
table(shared_view("mh-shapes", (*view, t("multihead.col_stage")), lambda: [{
    t("multihead.col_stage"): t(f"multihead.step.{s.name}"),
    t("multihead.col_symbols"): SYMBOLS[s.name],
    t("multihead.col_shape"): str(list(s.shape)),
} for s in demo.steps]), key="mh-shapes")
st.caption(t("multihead.shapes_note", L=L, D=D, H=H, d_h=d_h, gap=demo.module_gap))

# ---------------------------------------------------------------- 3. heads
st.header(t("multihead.maps.header"), anchor=SECTIONS["multihead.maps"])
weights = demo.weights  # (H, L, L)
st.caption(t("common.rows_cols") + " " + t("multihead.maps.untrained"))
maps_csv = lambda: heads_csv(weights, labels)  # noqa: E731  written on click (H·L² numbers)
if attention_view_available():  # every head's map sent once: a tile clicked, a cell or a query answered in the browser
    heads_view(weights, labels, view, axis_titles)
    st.download_button(t("multihead.maps.csv"), maps_csv, file_name=f"multihead-D{D}-H{H}-heads.csv", mime="text/csv",
                       key="csv-mh-view")
elif H <= 16:
    fig = shared_figure("mh-heads", (*view, t("common.head"), *axis_titles.values()), lambda: head_tiles(
        weights, labels, labels, head_title=t("common.head"), per_row=4 if H != 2 else 2, **axis_titles))
    show_figure(fig, name=f"multihead-D{D}-H{H}-heads", csv=maps_csv, key="mh-heads")
else:
    # small multiples of every head (the tokens in the hover), and one head enlarged with its labels below
    fig = shared_figure("mh-multiples", (*view, t("common.head"), *axis_titles.values()), lambda: head_multiples(
        weights, labels, labels, head_title=t("common.head"), **axis_titles))
    if (top := scale_top(weights)) < 1:  # every weight is small: the tiles' colours are stretched, and say so
        st.caption(t("multihead.maps.scale_top", top=top))
    show_figure(fig, name=f"multihead-D{D}-H{H}-all-heads", csv=maps_csv, key="mh-grid")
    one_head(weights, labels, view, axis_titles)

# ---------------------------------------------------------------- 4. single vs multi
st.header(t("multihead.compare.header"))
text("multihead.compare")
left, right = st.columns(2)
with left:
    title = t("multihead.compare.single")
    fig = shared_figure("mh-single", (*view, title, *axis_titles.values()), lambda: stage_figure(
        "weights", demo.single_weights, labels, labels, title=title, **axis_titles))
    show_matrix(fig, demo.single_weights, name=f"single-head-D{D}", row_labels=labels, col_labels=labels,
                key="mh-single")
with right:
    title = t("multihead.compare.mean", H=H, d_h=d_h)
    fig = shared_figure("mh-mean", (*view, title, *axis_titles.values()), lambda: stage_figure(
        "weights", demo.mean_weights, labels, labels, title=title, **axis_titles))
    show_matrix(fig, demo.mean_weights, name=f"multi-head-mean-D{D}-H{H}", row_labels=labels, col_labels=labels,
                key="mh-mean")
m1, m2, m3 = st.columns(3)
m1.metric(t("multihead.compare.params_single"), f"{demo.params_single:,}")
m2.metric(t("multihead.compare.params_multi", H=H), f"{demo.params_multi:,}")
m3.metric(t("multihead.compare.output_gap"), f"{demo.single_gap:.3g}")
st.caption(t("multihead.compare.same_params", count=demo.param_formula,
             identical=t("multihead.compare.yes" if demo.same_params else "multihead.compare.no")))

# ---------------------------------------------------------------- 5. cost
st.header(t("multihead.cost.header"))
text("multihead.cost")
table(shared_view("mh-costs", (*view, t("multihead.cost.projections")), lambda: [{
    "H": c.heads, "d_h": c.d_head,
    t("multihead.cost.scores_shape"): str(list(c.scores_shape)),
    t("multihead.cost.projections"): f"{c.projections:,}",
    "QKᵀ": f"{c.scores:,}", t("multihead.cost.weighted_sum"): f"{c.weighted_sum:,}",
    "Wᴼ": f"{c.output_projection:,}", t("multihead.cost.matmul"): f"{c.matmul:,}",
    t("multihead.cost.softmax_entries"): f"{c.softmax_entries:,}",
    t("multihead.cost.parameters"): f"{c.parameters:,}",
} for c in demo.costs]), key="mh-costs")
totals = demo.matmul_totals
st.caption(t("multihead.cost.same" if len(totals) == 1 else "multihead.cost.differ", L=L, D=D,
             values=", ".join(f"{v:,}" for v in totals)))
base = PRESETS["paper_base"]
text("multihead.paper", d_model=base.d_model, n_heads=base.n_heads, d_head=base.d_head)

# ---------------------------------------------------------------- 6. one layer, end to end
st.header(t("multihead.layer.header"), anchor=SECTIONS["multihead.layer"])
walk = computed(mwalk.layer_walk, words, D, H, seed, positions=use_pe)
text("multihead.layer_intro", D=D, H=H, d_ff=walk.d_ff)
st.latex(r"\begin{gathered}n_1=\mathrm{LayerNorm}(x+\mathrm{MultiHead}(x,x,x))\\ "
         r"y=\mathrm{LayerNorm}(n_1+\max(0,\,n_1W_1+b_1)\,W_2+b_2)\end{gathered}")
LAYER_FORMULAS = {"input": "x", "attention": "a = MultiHead(x, x, x)", "sum1": "x + a",
                  "norm1": "n₁ = LayerNorm(x + a)", "hidden": "h = ReLU(n₁W₁ + b₁)", "ffn": "f = hW₂ + b₂",
                  "sum2": "n₁ + f", "output": "y = LayerNorm(n₁ + f)"}
table(shared_view("mh-layer-steps", (*view, t("multihead.layer.col_stage")), lambda: [{
    t("multihead.layer.col_stage"): t(f"multihead.layer.stage.{s.name}"),
    t("multihead.layer.col_formula"): LAYER_FORMULAS[s.name],
    t("multihead.col_shape"): str(list(s.shape)),
    t("multihead.layer.col_norm"): f"{s.norms.mean():.2f}",
    t("multihead.layer.col_mean"): f"{abs(s.means).max():.3f}",
    t("multihead.layer.col_std"): f"{s.stds.min():.3f} – {s.stds.max():.3f}",
    t("multihead.layer.col_change"): t(f"multihead.layer.change.{s.name}"),
} for s in walk.steps]), key="mh-layer-steps")
m1, m2, m3 = st.columns(3)
m1.metric(t("multihead.layer.d_ff"), f"{walk.d_ff}")
m2.metric(t("multihead.layer.relu_total"), f"{walk.relu_zero_total:.1%}")
m3.metric(t("multihead.layer.gap"), f"{walk.layer_gap:.1e}", help=t("multihead.layer.gap_help", tol=TOLERANCE))
if not walk.matches:
    error(UserError("multihead.errors.layer_mismatch", detail=f"max |difference| = {walk.layer_gap:.3g}"))

positions = list(range(1, L + 1))
drawn = ("input", "attention", "norm1", "ffn", "output")
lengths = {t(f"multihead.layer.series.{name}"): walk.step(name).norms for name in drawn}
chart_titles = (t("multihead.layer.chart_title"), t("multihead.layer.chart_x"))
fig = shared_figure("mh-layer-norms", (*view, *lengths, *chart_titles), lambda: line_chart(
    positions, lengths, mode="lines+markers", title=chart_titles[0], x_title=chart_titles[1], y_title="‖v‖"))
show_figure(fig, name=f"layer-vector-lengths-D{D}-H{H}", csv=series_csv("position", positions, lengths),
            key="mh-layer-norms")
table(shared_view("mh-layer-tokens", (*view, t("multihead.layer.col_token")), lambda: [{
    "#": i + 1, t("multihead.layer.col_token"): labels[i],
    "‖x‖": f"{walk.step('input').norms[i]:.2f}", "‖a‖": f"{walk.step('attention').norms[i]:.2f}",
    t("multihead.layer.col_share_attn"): f"{walk.residual_share['attention'][i]:.1%}",
    "‖n₁‖": f"{walk.step('norm1').norms[i]:.2f}",
    t("multihead.layer.col_relu"): f"{walk.relu_zero_share[i]:.3f}",
    "‖f‖": f"{walk.step('ffn').norms[i]:.2f}",
    t("multihead.layer.col_share_ffn"): f"{walk.residual_share['ffn'][i]:.1%}",
    "‖y‖": f"{walk.step('output').norms[i]:.2f}",
} for i in range(L)]), key="mh-layer-tokens")
text("multihead.layer_result", root=walk.normed_length, D=D, d_ff=walk.d_ff,
     share_attn=float(walk.residual_share["attention"].mean()), share_ffn=float(walk.residual_share["ffn"].mean()),
     relu=walk.relu_zero_total)
