"""Training recipe (section 5.3-5.4): the warm-up learning-rate schedule, Adam's settings, label
smoothing and residual dropout — every number computed by model.training.schedule, torch.optim.Adam,
F.cross_entropy and model.nn.dropout."""
import streamlit as st

from app.charts.curves import bar_chart, line_chart
from app.charts.export import rows_csv, series_csv
from app.charts.heatmaps import heatmap_variants, highlight_shapes, matrix_heatmap
from app.charts.style import TITLE_PX, amend, colour, esc, lift_title, wrapped
from app.format import number
from app.fast.choice import choice_slider, follow, follow_metric, follow_text
from app.i18n import UserError, prose, t
from app.inputs import parse_pairs, piece_label
from app.resources import demo_model, shared_figure, shared_tokenizer, shared_view
from app.state import between, keep
from app.page_inputs import RECIPE, SECTIONS
from app.ui import error, show_figure, show_matrix, table, text
from model.nn.config import PRESETS
from model.lessons.dropout_demo import MASKS_AVERAGED, PAPER_RATES, TABLE3_DROPOUT, residual_dropout
from model.lessons.optim_demo import adam_trace
from model.lessons.probe import examples
from model.training.schedule import ADAM_BETAS, ADAM_EPS, compare_schedules
from model.training.smoothing import smoothing_demo

MAX_CURVES = 6
D_LIMITS, W_LIMITS = (1, 1_000_000), (1, 10_000_000)
BARS = 12  # target-distribution bars drawn (the correct token, then the first others)
CSV_VOCAB = 5000  # beyond this vocabulary size the CSV lists only the bars shown
DROP_TOKENS, DROP_DIMS = 16, 12  # dropout demo: tokens used, dimensions drawn (the CSV has all of them)
SEED_MAX = 1_000_000
ADAM_SCALES = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
ADAM_LRS = [1e-4, 1e-3, 0.01, 0.05, 0.1, 0.5]


# Each section below has its own inputs and is a fragment: moving one of them reruns that section only.
# Its results are computed once per inputs and its figures built once per inputs and language, for every
# session (app.resources.shared_view / shared_figure, bounded; nothing reads them but to draw).


def _pairs_parse(text: str) -> bool:
    """A link's extra curves: empty, or pairs the page can draw (what a learner types is explained instead)."""
    return not text.strip() or bool(parse_pairs(text, (D_LIMITS, W_LIMITS), MAX_CURVES - 1))


st.title(t("pages.recipe.title"))
text("recipe.intro")

# ----------------------------------------------------------------------------- 1. schedule
st.header(t("recipe.schedule.header"), anchor=SECTIONS["recipe.schedule"])
st.latex(r"lrate = d_{model}^{-0.5}\cdot\min(step^{-0.5},\; step\cdot warmup^{-1.5})")
text("recipe.schedule")


@st.fragment(key="recipe-schedule")
def schedule_section():
    c1, c2, c3 = st.columns(3)
    d_model = c1.slider("d_model", 64, 2048, step=64, **RECIPE.d_model.keep(512))
    warmup = c2.slider("warmup_steps", 100, 20_000, step=100,
                       **RECIPE.warmup.keep(4000))
    lo, hi = c3.slider(t("recipe.schedule.range"), 1, 200_000,
                       **keep("sch_range", (1, 100_000), url="range", valid=between(1, 200_000),
                              check=lambda v: v[0] <= v[1]))
    extra_text = st.text_input(t("recipe.schedule.pairs", most=MAX_CURVES - 1),
                               **keep("sch_pairs", "512, 8000; 256, 4000", url="pairs", check=_pairs_parse))
    log_x = st.checkbox(t("recipe.schedule.log"), **keep("sch_log", False, url="log"))
    pairs = [(d_model, warmup)]
    try:
        if extra_text.strip():
            pairs += parse_pairs(extra_text, (D_LIMITS, W_LIMITS), MAX_CURVES - 1)
    except UserError as e:
        error(e)
    sched = shared_view("schedules", (tuple(pairs), lo, hi, log_x),
                        lambda: compare_schedules(pairs, lo, hi, log=log_x))
    series = {f"d_model={c['d_model']}, warmup={c['warmup']}": c["lr"] for c in sched["curves"]}
    shown = [c for c in sched["curves"] if c["peak_shown"]]
    peaks = {t("recipe.schedule.peaks"): ([c["peak_step"] for c in shown], [c["peak_lr"] for c in shown],
                                          [f"{c['peak_step']:,}: {c['peak_lr']:.2e}" for c in shown])}
    fig = shared_figure("sch_fig", (tuple(pairs), lo, hi, log_x), lambda: line_chart(
        sched["steps"], series, markers=peaks, log_x=log_x, x_title=t("recipe.schedule.x"), y_title=t("recipe.schedule.y"),
        height=430, title=t("recipe.schedule.title")))
    show_figure(fig, name="warmup-schedule", csv=series_csv("step", sched["steps"], series), key="sch_fig")
    table([{"d_model": c["d_model"], "warmup": c["warmup"], t("recipe.schedule.peak_step"): c["peak_step"],
            t("recipe.schedule.peak_lr"): f"{c['peak_lr']:.4e}", "d^-0.5 · w^-0.5": f"{c['closed_form']:.4e}",
            t("recipe.schedule.lr_end", step=sched["end"]): f"{c['lr_end']:.4e}"} for c in sched["curves"]],
          key="sch-peaks")
    first = sched["curves"][0]
    text("recipe.schedule_result", d_model=d_model, warmup=warmup, peak_step=first["peak_step"], peak_lr=first["peak_lr"])


schedule_section()

# ----------------------------------------------------------------------------- 2. Adam
st.header(t("recipe.adam.header"))
text("recipe.adam", betas=ADAM_BETAS, eps=ADAM_EPS)


@st.fragment(key="recipe-adam")
def adam_section():
    c1, c2, c3, c4 = st.columns(4)
    theta0 = c1.number_input(t("recipe.adam.theta"), -100.0, 100.0,
                             **keep("adam_theta", 1.0, url="theta", valid=between(-100.0, 100.0)))
    scale = c2.select_slider(t("recipe.adam.scale"), ADAM_SCALES, **keep("adam_c", 1.0, url="scale", valid=ADAM_SCALES))
    lr = c3.select_slider(t("recipe.adam.lr"), ADAM_LRS, **keep("adam_lr", 0.1, url="lr", valid=ADAM_LRS))
    n_steps = c4.slider(t("recipe.adam.steps"), 1, 30, **keep("adam_steps", 5, url="steps", valid=range(1, 31)))
    trace = shared_view("adam_trace", (theta0, scale, lr, n_steps), lambda: adam_trace(theta0, scale, lr, n_steps))
    adam_rows = [{t("recipe.adam.step"): r["step"], "θ": number(r["theta"], ".6g"), t("recipe.adam.grad"): number(r["grad"], ".4g"),
                  "m": number(r["m"], ".4g"), "v": f"{r['v']:.4g}", "m̂": number(r["m_hat"], ".4g"), "v̂": f"{r['v_hat']:.4g}",
                  t("recipe.adam.update"): number(r["update"], ".4g"), t("recipe.adam.new_theta"): number(r["new_theta"], ".6g")}
                 for r in trace["rows"]]
    table(adam_rows, key="adam-steps")
    st.download_button(t("common.download_csv"), rows_csv(adam_rows), file_name="adam-steps.csv", mime="text/csv",
                       key="adam_csv")
    c1, c2 = st.columns(2)
    c1.metric(t("recipe.adam.first_update"), f"{abs(trace['first_update']):.6g}")
    c2.metric(t("recipe.adam.worst_gap"), f"{trace['worst_gap']:.1e}")
    text("recipe.adam_result")


adam_section()

# ----------------------------------------------------------------------------- 3. label smoothing
st.header(t("recipe.smoothing.header"), anchor=SECTIONS["recipe.smoothing"])
text("recipe.smoothing")


@st.fragment(key="recipe-smoothing")
def smoothing_section():
    c1, c2 = st.columns(2)
    eps = c1.slider("ε (label_smoothing)", 0.0, 0.5, step=0.01, **RECIPE.eps.keep(0.1))
    V = int(c2.number_input(t("recipe.smoothing.vocab"), 2, 50_000,
                            **RECIPE.vocab.keep(10)))
    ls = shared_view("smoothing", (V, eps), lambda: smoothing_demo(V, eps))
    q = ls["target"]
    bars = min(V, BARS)
    left, right = st.columns(2)
    with left:
        fig = shared_figure("ls_target", (V, eps), lambda: bar_chart(
            [t("recipe.smoothing.correct")] + [f"#{i}" for i in range(1, bars)], q[:bars],
            colors=[colour(1)] + [colour(0)] * (bars - 1), y_range="fit", decimals=4, text_outside=True,
            x_title=t("recipe.smoothing.token"), y_title=t("recipe.smoothing.target_y"),
            title=t("recipe.smoothing.target_title", eps=eps, vocab=V)))
        listed = V if V <= CSV_VOCAB else bars
        show_figure(fig, name="label-smoothing-target", key="ls_target",
                    csv=series_csv("token", range(listed), {"target": q[:listed]}))
        if V > bars:
            st.caption(t("recipe.smoothing.others", n=V - bars, share=eps / V))
    with right:
        curves = {t("recipe.smoothing.plain"): ls["plain"], t("recipe.smoothing.smoothed", eps=eps): ls["smoothed"]}
        p_num, l_num = ls["best"]
        marks = {t("recipe.smoothing.minimum"): ([p_num], [l_num], [f"p = {p_num:.4f}"])}
        fig = shared_figure("ls_loss", (V, eps), lambda: amend(line_chart(
            ls["confidence"], curves, markers=marks, x_title=t("recipe.smoothing.x"), y_title=t("recipe.smoothing.y"),
            title=t("recipe.smoothing.loss_title")), dict(yaxis=dict(range=[0, ls["loss_top"]]))))
        show_figure(fig, name="label-smoothing-loss", csv=series_csv("confidence", ls["confidence"], curves), key="ls_loss")
    c1, c2, c3, c4 = st.columns(4)
    c1.metric(t("recipe.smoothing.best"), number(p_num, ".6f"))
    c2.metric(t("recipe.smoothing.formula"), number(ls["formula"], ".6f"))
    c3.metric(t("recipe.smoothing.best_loss"), number(l_num, ".4f"))
    c4.metric(t("recipe.smoothing.entropy"), number(ls["entropy"], ".4f"))
    text("recipe.smoothing_none" if eps == 0 else "recipe.smoothing_result")  # ε = 0: no minimum inside (0, 1)


smoothing_section()

# ----------------------------------------------------------------------------- 4. dropout
st.header(t("recipe.dropout.header"))
text("recipe.dropout", base=PAPER_RATES["base"], big=PAPER_RATES["big_en_de"], big_fr=PAPER_RATES["big_en_fr"])
table([{"P_drop": f"{rate:.1f}", t("recipe.dropout.ppl"): f"{ppl:.2f}", "BLEU": f"{bleu:.1f}",
        t("recipe.dropout.row"): t("recipe.dropout.base_row" if rate == PRESETS["paper_base"].dropout
                                   else "recipe.dropout.ablation_row")}
       for rate, ppl, bleu in TABLE3_DROPOUT], key="dropout-table3")
st.caption(t("recipe.dropout.table_note"))

st.subheader(t("recipe.dropout.demo_header"))
text("recipe.dropout_demo")


P_DROPS = tuple(round(0.05 * i, 2) for i in range(19))  # the dropout demo's rates: 0, 0.05 … 0.9


def _next_seed():
    st.session_state["drop_seed"] = (int(st.session_state["drop_seed"]) + 1) % (SEED_MAX + 1)


@st.fragment(key="recipe-dropout")
def dropout_section():
    c1, c2, c3 = st.columns([3, 2, 1])
    sentence = c1.text_input(t("recipe.dropout.sentence"),
                             **keep("drop_sentence", examples()["masks"]["source"], url="sentence"))
    # P_drop only picks one of the masks drawn for this sentence and seed: answered in the browser (every rate's mask
    # is sent), or a Streamlit slider where the browser cannot answer it
    rate = choice_slider("P_drop", P_DROPS, key="drop_p", url="p_drop", default=PAPER_RATES["base"],
                         channel="drop-p", where=c2, format_value=lambda v: f"{v:.2f}")
    drop_seed = int(c3.number_input(t("recipe.dropout.seed"), 0, SEED_MAX,
                                    **keep("drop_seed", 0, url="seed", valid=range(SEED_MAX + 1))))
    c3.button(t("recipe.dropout.new_seed"), on_click=_next_seed, key="drop_new_seed")
    tok = shared_tokenizer()
    ids, pieces = tok.encode(sentence or ""), tok.pieces(sentence or "")
    if not ids:
        error(UserError("recipe.dropout.empty"))
        return
    if len(ids) > DROP_TOKENS:
        st.caption(t("recipe.dropout.cut", n=len(ids), used=DROP_TOKENS))
        ids, pieces = ids[:DROP_TOKENS], pieces[:DROP_TOKENS]
    labels = [piece_label(piece) for piece in pieces]
    rates = rate.values if rate.live else (rate.value,)
    drops = shared_view("residual_dropout", (tok.vocab_size, tuple(ids), rates, drop_seed), lambda: [
        residual_dropout(demo_model(tok.vocab_size), ids, p, drop_seed) for p in rates])
    p_drop = rate.value
    drop = drops[rates.index(p_drop)]
    width = drop.sublayer.shape[1]
    dims = [str(j + 1) for j in range(width)]
    shown = min(DROP_DIMS, width)
    tops = [max(float(abs(d.dropped).max()), 1e-9) for d in drops]  # one colour scale for both: the scaling shows
    top = tops[rates.index(p_drop)]
    axes = dict(x_title=t("recipe.dropout.dimension"), y_title=t("recipe.smoothing.token"), zmin=-top, zmax=top,
                zmid=0)
    scales = [(0, "zmin", [-v for v in tops]), (0, "zmax", tops)]
    view = (tok.vocab_size, tuple(ids), p_drop, drop_seed)
    after_titles = [t("recipe.dropout.after_title", p=d.p, seed=drop_seed) for d in drops]
    left, right = st.columns(2)
    with left:
        fig = shared_figure("drop_before", view, lambda: lift_title(matrix_heatmap(
            drop.sublayer[:, :shown], dims[:shown], labels, **axes,
            title=t("recipe.dropout.before_title", shown=shown, width=width))))
        show_matrix(fig, drop.sublayer, name="sublayer-output", row_labels=labels, col_labels=dims, key="drop_before",
                    follow=follow(rate, traces=scales))
    with right:
        fig = shared_figure("drop_after", view, lambda: lift_title(matrix_heatmap(
            drop.dropped[:, :shown], dims[:shown], labels, **axes, highlight=~drop.kept[:, :shown],
            title=after_titles[rates.index(p_drop)])))
        moves = follow(rate, traces=[*heatmap_variants([d.dropped[:, :shown] for d in drops], show_text=True),
                                     *scales],
                       layouts=[{"title.text": wrapped(esc(title), room=TITLE_PX),
                                 "shapes": highlight_shapes(~d.kept[:, :shown])}
                                for d, title in zip(drops, after_titles)])
        show_matrix(fig, drop.dropped, name=f"dropout-p{p_drop:g}-seed{drop_seed}", row_labels=labels,
                    col_labels=dims, key="drop_after", follow=moves)
    (m1, m2), (m3, m4) = st.columns(2), st.columns(2)  # two a row: each label fits its box in both languages
    with m1:
        follow_metric([(t("recipe.dropout.zero_share", p=d.p), f"{d.zero_share:.3f}") for d in drops], rate,
                      key="drop-zero")
    with m2:
        follow_metric([(t("recipe.dropout.scale"), f"{d.scale:.4g}") for d in drops], rate, key="drop-scale")
    with m3:
        follow_metric([(t("recipe.dropout.mean_before"), number(d.mean_before, ".4f")) for d in drops], rate,
                      key="drop-mean-before")
    with m4:
        follow_metric([(t("recipe.dropout.mean_after"), number(d.mean_after, ".4f")) for d in drops], rate,
                      key="drop-mean-after",
                      help=[t("recipe.dropout.mean_after_help", n=MASKS_AVERAGED, mean=d.mean_over_masks) for d in drops])
    follow_text([t("recipe.dropout.checks", kept_gap=d.kept_gap, n=d.masks_averaged, mean=d.mean_over_masks,
                   average_gap=d.average_gap, eval_gap=d.eval_gap, cells=d.kept.size) for d in drops], rate,
                key="drop-checks", fallback=st.caption)
    follow_text([prose("recipe.dropout_result", p=d.p, scale=d.scale) for d in drops], rate, key="drop-result")


dropout_section()

# checkpoint averaging (section 6.1): always shown, whatever the dropout demo holds
text("recipe.averaging")
