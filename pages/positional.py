"""Positional encoding (section 3.5): the sine waves, a shift as a rotation, extrapolation,
sinusoidal versus learned positions, and what self-attention does without any positions."""
import streamlit as st

from app.charts.curves import anchor_figure, circle_arrows, circle_figure, line_chart
from app.charts.export import matrix_csv, series_csv
from app.charts.heatmaps import attention_heatmap, heatmap_variants, matrix_heatmap, numeric_heatmap
from app.charts.style import amend, esc, lift_title
from app.fast.choice import choice_slider, follow, follow_text
from app.format import escape_md
from app.i18n import Message, UserError, options, t
from app.inputs import parse_int_list, split_words
from app.resources import computed, shared_figure
from app.state import keep
from app.page_inputs import POSITIONAL, SECTIONS
from app.ui import error, show_figure, show_matrix, table, text
from model.lessons import positions as mpos
from model.lessons.positions import (
    EXPERIMENT_MODEL, ORDERS, SINUSOIDAL_LOOKUP_LIMIT, per_word_differences, unshuffled_attention,
)

MAX_WORDS = 24
THIRD_PX = 140  # a title's line in one of three columns on a 1000 px window
MAX_DIMS, DIM_LIMIT = 8, 511  # up to 8 dimensions, each below the largest d_model the slider allows
LENGTH = 100  # positions in the first view
ANCHOR = LENGTH // 2  # the dot product's anchor position in the first view
LOG_FLOOR = 1e-12  # an exact 0 would vanish on the log axis: drawn at the float32 floor instead


# Every section below but the first runs as a fragment with its own inputs: moving one of them reruns that
# section only. Length and d_model feed sections 1 to 6, so they rerun those (one fragment around them), not the
# word-order experiment. Results of model/ are cached per
# input (app.resources.computed: bounded, so memory stays flat), figures are shared per input and language
# (app.resources.shared_figure), and the large CSVs are written when their button is clicked.


def dims_parse(text: str) -> bool:
    """A link's dimension list must parse (what a learner types is explained below the box instead)."""
    return bool(parse_int_list(text, 0, DIM_LIMIT, MAX_DIMS, Message("positional.dimension")))


def heatmap_figure(pe, length: int, d_model: int, title: str, dim_t: str, pos_t: str):
    return numeric_heatmap(pe, title=title, x_title=dim_t, y_title=pos_t, zmin=-1, zmax=1, height=460)


@st.fragment
def waves_section(length: int, d_model: int, pos_t: str) -> None:
    st.header(t("positional.waves.header"))
    dims_text = st.text_input(t("positional.waves.dims", last=d_model - 1),
                              **keep("pe_dims", "0, 1, 6, 20", url="dims", check=dims_parse))
    try:
        # the slider can shrink d_model below a dimension typed earlier (the default 20 needs d_model ≥ 21):
        # skip those with a note instead of failing; only dimensions that no d_model here has are errors
        dims = parse_int_list(dims_text, 0, DIM_LIMIT, MAX_DIMS, Message("positional.dimension"))
        beyond = [dim for dim in dict.fromkeys(dims) if dim >= d_model]
        if beyond:
            st.warning(t("positional.waves.skipping", d_model=d_model, last=d_model - 1,
                         listed=", ".join(map(str, beyond))))
        dims = [dim for dim in dims if dim < d_model]
        if not dims:
            raise UserError("positional.errors.no_dimension", last=d_model - 1)
        series = {f"{w['dim']} ({w['kind']}, λ≈{w['wavelength']:.1f})": w["values"]
                  for w in computed(mpos.dimension_waves, length, d_model, dims)}
        title = t("positional.waves.title")
        fig = shared_figure("pe-waves", (length, d_model, tuple(dims), title, pos_t), lambda: line_chart(
            range(length), series, x_title=pos_t, y_title="PE", title=title))
        show_figure(fig, name="pe-waves", csv=series_csv("position", range(length), series), key="pe_waves")
    except UserError as e:
        error(e)


def dot_csv(every: dict) -> str:
    """Every anchor's dot products (the browser shows any of them): one row per (p, q)."""
    q = every["q"]
    rows = [f"{p},{j},{every['measured'][p, j]!r},{every['formula'][p, j]!r}" for p in q for j in q]
    return "\n".join(["p,q,measured,formula", *rows]) + "\n"


@st.fragment
def dot_section(length: int, d_model: int) -> None:
    st.header(t("positional.dot.header"), anchor=SECTIONS["positional.dot"])
    # the default length's middle, or the middle of a shorter table: "reset this page" restores the defaults
    # registered on the previous run, so this one must not follow a changed length
    anchor_default = ANCHOR if ANCHOR < length else length // 2
    anchor = choice_slider(t("positional.dot.anchor"), range(length), key=POSITIONAL.anchor.key,
                           url=POSITIONAL.anchor.url, default=anchor_default, channel="pe-anchor")
    every = computed(mpos.dot_profiles, length, d_model)  # every anchor: the slider is answered in the browser
    p = anchor.value
    dots = (t("positional.dot.measured"), t("positional.dot.formula"))
    words = (*dots, t("positional.dot.x"), t("positional.dot.y"))
    fig = shared_figure("pe-dot", (length, d_model, p, t("positional.dot.title", anchor=p), *words),
                        lambda: anchor_figure(every["measured"][p], every["formula"][p], every["q"], dots, p,
                                              title=t("positional.dot.title", anchor=p), x_title=words[2],
                                              y_title=words[3]))
    moves = follow(anchor, traces=[(0, "y", every["measured"]), (1, "y", every["formula"])],
                   layouts=[{"title.text": esc(t("positional.dot.title", anchor=a)), "shapes[0].x0": a, "shapes[0].x1": a}
                            for a in range(length)])
    csv = (lambda: dot_csv(every)) if moves else series_csv("q", every["q"], dict(zip(dots, (
        every["measured"][p], every["formula"][p]))))
    show_figure(fig, name="pe-dot-distance", csv=csv, key="pe_dot", follow=moves)
    text("positional.dot_result", gap=every["gap"], peak=every["peak"])


@st.fragment
def rotation_section(length: int, d_model: int, pos_t: str) -> None:
    st.header(t("positional.rotation.header"))
    text("positional.rotation")
    c1, c2, c3 = st.columns(3)
    k = int(c1.number_input(t("positional.rotation.shift"), -1000, 1000,
                            **keep("rot_k", 5, url="shift", valid=range(-1000, 1001))))
    pair = c2.slider(t("positional.rotation.pair"), 0, d_model // 2 - 1,
                     **keep("rot_i", 0, url="pair", valid=range(d_model // 2)))
    highlight = choice_slider(t("positional.rotation.highlight"), range(length), key="rot_p", url="highlight",
                              default=min(3, length - 1), channel="pe-highlight", where=c3)
    p0 = highlight.value
    rot = computed(mpos.rotation_demo, length, d_model, k, pair, p0)
    st.latex(r"\begin{gathered}\begin{pmatrix}\sin((pos+k)\omega)\\ \cos((pos+k)\omega)\end{pmatrix} = M_k"  # a line each:
             r"\begin{pmatrix}\sin(pos\,\omega)\\ \cos(pos\,\omega)\end{pmatrix}\\ "  # fits a narrow column
             r"M_k=\begin{pmatrix}\cos k\omega & \sin k\omega\\ -\sin k\omega & \cos k\omega\end{pmatrix},\quad "
             rf"\omega = 10000^{{-2\cdot{pair}/{d_model}}} = {rot['omega']:.6g}\end{{gathered}}")
    left, right = st.columns([2, 3])
    with left:
        title = t("positional.rotation.matrix_title", k=k, pair=pair)
        fig = shared_figure("rot-matrix", (d_model, k, pair, title), lambda: lift_title(matrix_heatmap(
            rot["matrix"], ["sin", "cos"], ["sin′", "cos′"], decimals=4, zmin=-1, zmax=1, zmid=0, title=title,
            height=280)))
        show_matrix(fig, rot["matrix"], name=f"rotation-k{k}-i{pair}", row_labels=["sin'", "cos'"],
                    col_labels=["sin", "cos"], key="rot_m")
        st.metric(t("positional.rotation.error_pair", pair=pair, length=length), f"{rot['error_pair']:.2e}")
        st.metric(t("positional.rotation.error_all"), f"{rot['error_all']:.2e}")
    with right:
        title = t("positional.rotation.circle_title", pair=pair, k=k, angle=k * rot["omega"])
        fig = shared_figure("rot-circle", (length, d_model, k, pair, p0, title, pos_t), lambda: circle_figure(
            rot["sin"], rot["cos"], p0, k, pos_label=pos_t, title=title))
        # every highlighted position's arrows: to p and p + k, which may lie past the table (the server's circle for
        # one p shows the positions up to p + k)
        far = computed(mpos.rotation_demo, length, d_model, k, pair, length - 1) if highlight.live else rot
        moves = follow(highlight, traces=circle_arrows(far["sin"], far["cos"], range(length), k, pos_t))
        show_figure(fig, name=f"rotation-circle-i{pair}", key="rot_circle", follow=moves,
                    csv=series_csv("position", range(rot["positions"]), {"sin": rot["sin"], "cos": rot["cos"]}))
    st.caption(t("positional.rotation.rounding"))


@st.fragment
def extrapolation_section(d_model: int, pos_t: str, dim_t: str) -> None:
    st.header(t("positional.extrapolation.header"))
    text("positional.extrapolation")
    c1, c2 = st.columns(2)
    train_len = c1.slider(t("positional.extrapolation.max_len"), 8, 256,
                          **keep("ext_len", 50, url="max_len", valid=range(8, 257)))
    ask = int(c2.number_input(t("positional.extrapolation.position"), 0, 1_000_000,
                              **keep("ext_pos", 2 * 50 - 1, url="position", valid=range(1_000_001))))
    ext = computed(mpos.extrapolation_demo, train_len, d_model, ask)
    span = 2 * train_len
    left, right = st.columns(2)
    with left:
        title = t("positional.extrapolation.sinusoidal_title", last=span - 1, d=ext["d"])
        fig = shared_figure("ext-sin", (train_len, ext["d"], title, pos_t, dim_t), lambda: numeric_heatmap(
            ext["sinusoidal"].T, x_title=pos_t, y_title=dim_t, zmin=-1, zmax=1, vlines=[train_len - 0.5],
            height=340, title=title, narrow=True))
        show_figure(fig, name="extrapolation-sinusoidal", csv=lambda: matrix_csv(ext["sinusoidal"]), key="ext_sin")
    with right:
        title = t("positional.extrapolation.learned_title", last=train_len - 1)
        fig = shared_figure("ext-learned", (train_len, ext["d"], title, pos_t, dim_t), lambda: amend(numeric_heatmap(
            ext["learned"].T, x_title=pos_t, y_title=dim_t, vlines=[train_len - 0.5], zmid=0, title=title,
            height=340, narrow=True), dict(xaxis=dict(range=[-0.5, span - 0.5]))))
        show_figure(fig, name="extrapolation-learned", csv=lambda: matrix_csv(ext["learned"]), key="ext_learned")
    c1, c2 = st.columns(2)
    with c1:
        if ext["sin_vector"] is not None:
            st.success(t("positional.extrapolation.sinusoidal_defined", position=ask, norm=ext["sin_norm"],
                         values=", ".join(f"{v:.3f}" for v in ext["sin_vector"][:4])))
        else:
            st.info(t("positional.extrapolation.sinusoidal_not_computed", limit=SINUSOIDAL_LOOKUP_LIMIT))
    with c2:
        if ext["lookup_error"]:  # the demonstration's result, not a failure of the page
            st.info(t("positional.extrapolation.learned_missing", position=ask, last=train_len - 1,
                      max_len=train_len, error=ext["lookup_error"]))
        else:
            st.success(t("positional.extrapolation.learned_exists", position=ask, max_len=train_len))
    text("positional.extrapolation_result", max_len=train_len, gap=ext["neighbour_gap"])


@st.fragment
def permutation_maps(words: list, exp: dict) -> None:
    """The attention maps of one layer and head: its two sliders are answered in the browser (every layer and
    head is sent), or rerun these maps only where the browser cannot answer them."""
    runs, perm = exp["runs"], exp["perm"]
    c1, c2 = st.columns(2)
    # 1-based already (the sliders show layer 1 … L), so the link reads layer=1 for the first
    layer = choice_slider(t("common.layer"), range(1, exp["layers"] + 1), key="perm_layer", url="layer", default=1,
                          channel="pe-perm-layer", where=c1)
    head = choice_slider(t("common.head"), range(1, exp["heads"] + 1), key="perm_head", url="head", default=1,
                         channel="pe-perm-head", where=c2)
    every = {pe_on: [unshuffled_attention(runs[pe_on], perm, l, h) for l in range(exp["layers"])
                     for h in range(exp["heads"])] for pe_on in (False, True)}  # variant (l, h): l * heads + h
    shown = (layer.value - 1) * exp["heads"] + head.value - 1
    for pe_on in (False, True):
        st.subheader(t("positional.permutation.with_heading" if pe_on else "positional.permutation.without_heading"))
        maps = every[pe_on][shown]
        panels = (("original", words, "orig"), ("shuffled", exp["shuffled"], "perm"), ("back", words, "back"))
        for col, (which, labs, tag) in zip(st.columns(3), panels):
            with col:
                titles = (t(f"positional.permutation.panel_{which}"), t("common.query"), t("common.key"))
                fig = shared_figure("perm-map", (tuple(words), tuple(perm), layer.value, head.value, pe_on, which,
                                                 *titles),
                                    lambda: lift_title(attention_heatmap(
                                        maps[which], labs, labs, title=titles[0], query_title=titles[1],
                                        key_title=titles[2], height=300 + 12 * len(labs)), room=THIRD_PX))
                moves = follow(layer, head, traces=heatmap_variants([m[which] for m in every[pe_on]]))
                show_matrix(fig, maps[which], name=f"permutation-{'pe' if pe_on else 'nope'}-{tag}",
                            row_labels=labs, col_labels=labs, key=f"perm-{int(pe_on)}-{tag}", follow=moves)
        captions = [t("common.rows_cols") + " " + t("positional.permutation.caption", layer=l + 1, head=h + 1,
                                                   gap=every[pe_on][l * exp["heads"] + h]["gap"])
                    for l in range(exp["layers"]) for h in range(exp["heads"])]
        follow_text(captions, layer, head, key=f"perm-caption-{int(pe_on)}", fallback=st.caption)


def difference_figure(words: list, shown: dict, d_model: int):
    fig = line_chart(range(len(words)), shown, mode="lines+markers", log_y=True,
                     x_title=t("positional.permutation.diff_x"),
                     y_title=t("positional.permutation.diff_y", d_model=d_model),
                     title=t("positional.permutation.diff_title"))
    return amend(fig, dict(xaxis=dict(tickmode="array", tickvals=list(range(len(words))),
                                      ticktext=[esc(w) for w in words])))


@st.fragment
def permutation_section() -> None:
    st.header(t("positional.permutation.header"))
    text("positional.permutation", layers=EXPERIMENT_MODEL["n_layers"], heads=EXPERIMENT_MODEL["n_heads"],
         d_model=EXPERIMENT_MODEL["d_model"])
    c1, c2, c3 = st.columns([3, 2, 1])
    sentence = c1.text_input(t("positional.permutation.sentence"),
                             **keep("perm_sentence", "I love you", url="sentence"))
    orders = options("positional.permutation.orders", ORDERS)
    order = c2.radio(t("positional.permutation.order"), list(orders), format_func=orders.get,
                     **keep("perm_order", ORDERS[0], url="order", valid=ORDERS))
    seed = int(c3.number_input(t("positional.permutation.seed"), 0, 10_000,
                               **keep("perm_seed", 0, url="seed", valid=range(10_001))))
    try:
        words, cut = split_words(sentence, MAX_WORDS)
        if cut:
            st.warning(t("positional.permutation.first_words", n=MAX_WORDS))
        if len(words) < 2:
            raise UserError("positional.errors.two_words")
        exp = computed(mpos.word_order_experiment, words, order, seed)
        if exp["unchanged"]:
            st.info(t("positional.permutation.unchanged"))
        perm, runs = exp["perm"], exp["runs"]
        text("positional.orders", original=escape_md(" ".join(words)),
             shuffled=escape_md(" ".join(exp["shuffled"])))
        m1, m2 = st.columns(2)
        m1.metric(t("positional.permutation.without_pe"), f"{runs[False]['out_diff']:.2e}")
        m2.metric(t("positional.permutation.with_pe"), f"{runs[True]['out_diff']:.2e}")
        yes_no = {True: t("positional.permutation.yes"), False: t("positional.permutation.no")}
        on_off = {True: t("positional.permutation.on"), False: t("positional.permutation.off")}
        rows = [{t("positional.permutation.col_pe"): on_off[pe_on],
                 t("positional.permutation.col_output"): f"{r['out_diff']:.3e}",
                 t("positional.permutation.col_attention"): f"{r['attn_diff']:.3e}",
                 t("positional.permutation.col_same"): yes_no[r["same_order"]]}
                for pe_on, r in runs.items()]
        table(rows, key="pos-perm")
        permutation_maps(words, exp)
        names = {False: t("positional.permutation.diff_without"), True: t("positional.permutation.diff_with")}
        diffs = {names[pe_on]: per_word_differences(runs[pe_on], perm) for pe_on in (False, True)}
        shown = {names[pe_on]: per_word_differences(runs[pe_on], perm, floor=LOG_FLOOR) for pe_on in (False, True)}
        fig = shared_figure("perm-diff", (tuple(words), order, seed, *names.values(), t("positional.permutation.diff_x"),
                                          t("positional.permutation.diff_y", d_model=exp["d_model"]),
                                          t("positional.permutation.diff_title")),
                            lambda: difference_figure(words, shown, exp["d_model"]))
        show_figure(fig, name="permutation-output-diff", key="perm_diff",
                    csv=series_csv("position", range(len(words)), diffs))
    except UserError as e:
        error(e)


st.title(t("pages.positional.title"))
text("positional.intro")


@st.fragment(key="pos-encoding")
def encoding_sections() -> None:
    """Sections 1 to 6, one fragment: length and d_model feed every one of them, not the word-order experiment
    below, so moving either reruns these sections (each its own fragment inside) and leaves the experiment as it is."""
    # ----------------------------------------------------------------------------- 1. heatmap
    st.header(t("positional.picture.header"))
    c1, c2 = st.columns(2)
    length = c1.slider(t("positional.picture.length"), 8, 512,
                       **POSITIONAL.length.keep(LENGTH))
    d_model = c2.slider("d_model", 4, 512, step=4, **POSITIONAL.d_model.keep(128))
    pe = computed(mpos.encoding_table, length, d_model)  # (L, D)
    pos_t, dim_t = t("positional.position"), t("positional.dimension")
    heat_title = t("positional.picture.title", length=length, d_model=d_model)
    fig = shared_figure("pe-heat", (length, d_model, heat_title, pos_t, dim_t),
                        lambda: heatmap_figure(pe, length, d_model, heat_title, dim_t, pos_t))
    show_figure(fig, name=f"positional-encoding-{length}x{d_model}", key="pe_heat",
                csv=lambda: matrix_csv(pe, [str(i) for i in range(length)], [str(j) for j in range(d_model)]))
    text("positional.heatmap")

    waves_section(length, d_model, pos_t)  # 2. waves
    dot_section(length, d_model)  # 3. dot product
    rotation_section(length, d_model, pos_t)  # 4. rotation
    extrapolation_section(d_model, pos_t, dim_t)  # 5. extrapolation

    # ----------------------------------------------------------------------------- 6. sinusoidal vs learned
    st.header(t("positional.similarity.header"))
    text("positional.similarity")
    sim = computed(mpos.similarity_demo, length, d_model)
    c1, c2 = st.columns(2)
    for col, kind, name in ((c1, "sinusoidal", "similarity-sinusoidal"), (c2, "learned", "similarity-learned")):
        with col:
            title = t(f"positional.similarity.{kind}")
            fig = shared_figure(name, (sim["n"], d_model, title, pos_t), lambda: numeric_heatmap(
                sim[kind], x_title=pos_t, y_title=pos_t, zmin=-1, zmax=1, title=title, height=420))
            show_figure(fig, name=name, csv=lambda kind=kind: matrix_csv(sim[kind]), key=name)
    text("positional.similarity_result", near_sin=sim["neighbours"][0], near_learned=sim["neighbours"][1],
         all_sin=sim["all"][0], all_learned=sim["all"][1], n=sim["n"], d_model=d_model)


encoding_sections()  # 1-6
permutation_section()  # 7. permutation
