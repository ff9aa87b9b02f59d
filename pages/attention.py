"""Scaled dot-product attention, step by step (section 3.2.1 of the paper)."""
import streamlit as st
from streamlit.errors import StreamlitAPIException

from pages.views import attention_lab as lab
from app.charts.curves import bar_chart, histogram_overlay, line_chart
from app.charts.export import columns_csv
from app.charts.heatmaps import stage_figure
from app.format import vector
from app.i18n import UserError, t
from app.resources import device_description, shared_figure, shared_view
from app.state import keep, open_tabs
from app.page_inputs import ATTENTION, SECTIONS
from app.ui import error, show_figure, show_matrix, table, text
from model.lessons import lab as mlab
from model.lessons import worked_example as wx
from model.nn.device import best_device

st.title(t("attention.title"))
text("attention.intro")
st.latex(r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")

axis_titles = {"query_title": t("common.query"), "key_title": t("common.key")}
stage_titles = {**axis_titles, "dim_title": t("attention.value_dimension")}
REPEATS = 5  # timing runs of each scoring
TIME_NS = [64, 128, 256, 512, 1024]  # sizes the timing can use
SATURATED_SHARE = 0.01  # the gradient at c = √dₖ below this share of its size at c = 1: the softmax has saturated

# ---------------------------------------------------------------- 1. inputs
DEFAULTS = {
    "att_tokens_q": ", ".join(wx.EXAMPLE_TOKENS),
    "att_tokens_k": "",
    "att_q": wx.matrix_text(wx.EXAMPLE_Q),
    "att_k": wx.matrix_text(wx.EXAMPLE_K),
    "att_v": wx.matrix_text(wx.EXAMPLE_V),
}


def _parses(name: str):
    """`check=` for a matrix from a link: it must be one the page can read (else the link's value is
    ignored with a notice). What the learner types is not checked here: the page explains its errors."""
    return lambda text: wx.parse_matrix(text, name) is not None


def _reset_example():
    """The blog post's inputs again, without a mask, with the first cell picked and the exercise hidden."""
    st.session_state.update(DEFAULTS, att_row=0, att_col=0, att_causal=False, att_stage="raw", att_reveal=False)


st.header(t("attention.inputs_header"))
text("attention.inputs", article=wx.EXAMPLE_SOURCE)
c1, c2 = st.columns(2)
tokens_q_text = c1.text_input(t("attention.tokens_q"),
                              **ATTENTION.tokens_q.keep(DEFAULTS["att_tokens_q"]))
tokens_k_text = c2.text_input(t("attention.tokens_k"),
                              **ATTENTION.tokens_k.keep(DEFAULTS["att_tokens_k"]))
cq, ck, cv = st.columns(3)
q_text = cq.text_area(t("attention.matrix_q"), height=150,
                      **ATTENTION.q.keep(DEFAULTS["att_q"], check=_parses("Q")))
k_text = ck.text_area(t("attention.matrix_k"), height=150,
                      **ATTENTION.k.keep(DEFAULTS["att_k"], check=_parses("K")))
v_text = cv.text_area(t("attention.matrix_v"), height=150,
                      **ATTENTION.v.keep(DEFAULTS["att_v"], check=_parses("V")))
o1, o2 = st.columns([1, 3])
o1.button(t("attention.reset"), on_click=_reset_example, key="att_reset")
causal = o2.toggle(t("attention.causal"), **ATTENTION.causal.keep(False))


# Speed: every section below the inputs is a fragment with its own controls, so moving one of
# them reruns that section only; the inputs above rerun the page. Figures and long CSV exports are built
# once per inputs and language (app.resources.shared_figure / shared_view, bounded) and then only drawn.
try:
    work = wx.worked_from_text(q_text, k_text, v_text, causal)
except UserError as e:
    error(e)
    work = None


def fig_once(name: str, key: tuple, build):
    """A figure of this page built once per (name, key, language): key holds every input it shows."""
    return shared_figure(f"attention-{name}", key, build)


if work is not None:
    n, m, stages = work.n, work.m, work.stages
    q_tokens = lab.parse_tokens(tokens_q_text)
    k_tokens = lab.parse_tokens(tokens_k_text) if (tokens_k_text or "").strip() else q_tokens
    q_labels, q_ok = lab.labels_for(q_tokens, n, "q")
    k_labels, k_ok = lab.labels_for(k_tokens, m, "k")
    if not q_ok:
        st.warning(t("attention.labels_q", n=n, count=len(q_tokens)))
    if not k_ok:
        st.warning(t("attention.labels_k", m=m, count=len(k_tokens)))
    if causal and n > m:
        st.info(t("attention.causal_empty_rows"))
    st.caption(t("attention.sizes", n=n, m=m, d_k=work.d_k, d_v=work.d_v) + " " + t("common.rows_cols"))
    # everything the worked figures depend on: the matrices, the mask and the labels
    view = (q_text, k_text, v_text, causal, tuple(q_labels), tuple(k_labels))


@st.fragment(key="att-stages")
def stages_section(work, view, q_labels, k_labels, causal, titles):
    """2. Stage by stage: the stage picker and "show all stages" change only this section. `titles`: the maps'
    axis titles, in the page's language."""
    n, m, stages = work.n, work.m, work.stages
    st.header(t("attention.stages_header"), anchor=SECTIONS["attention.stages"])
    stage_list = mlab.visible_stages(causal)
    names = {s: lab.stage_name(s) for s in stage_list}
    captions = {s: t(f"attention.stage.{s}.caption") for s in stage_list}
    show_all = st.toggle(t("attention.show_all"), **keep("att_all", False, url="all_stages"))
    if not show_all:  # (the mask stage, with the mask now off, goes back to the first stage)
        current = st.segmented_control(t("attention.stage_picker"), stage_list, format_func=names.get,
                                       **keep("att_stage", stage_list[0], url="stage", valid=stage_list)) \
            or stage_list[0]
        selected = [current]
    else:
        selected = stage_list

    def draw_stage(stage: str) -> None:
        values = stages.stage(stage)
        fig = fig_once("stage", (*view, stage), lambda: stage_figure(stage, values, q_labels, k_labels,
                                                                     title=names[stage], **titles))
        cols = k_labels if stage != "output" else [f"{j + 1}" for j in range(work.d_v)]
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
        heading = t("attention.stage_heading", number=stage_list.index(selected[0]) + 1, total=len(stage_list),
                    name=names[selected[0]])
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
    st.caption(t("attention.row_sums", sums=vector(stages.row_sums, 8)))


@st.fragment(key="att-cell")
def cell_section(work, q_labels, k_labels):
    """3. Where one number comes from: the row and column pickers change only this section."""
    n, m = work.n, work.m
    st.header(t("attention.cell.header"))
    for key, size in (("att_row", n), ("att_col", m)):  # the options change as rows and tokens change
        if key in st.session_state:  # a stale label the browser still shows ("4: q4") -> its number
            st.session_state[key] = lab.valid_index(st.session_state[key], size)
    row_names = {x: f"{x + 1}: {q_labels[x]}" for x in range(n)}
    col_names = {x: f"{x + 1}: {k_labels[x]}" for x in range(m)}
    r1, r2 = st.columns(2)
    i = r1.selectbox(t("attention.cell.row"), list(row_names), format_func=row_names.get,
                     **ATTENTION.row.keep(0, valid=row_names))
    j = r2.selectbox(t("attention.cell.col"), list(col_names), format_func=col_names.get,
                     **ATTENTION.col.keep(0, valid=col_names))
    for line in lab.cell_lines(wx.cell_trace(work, i, j), q_labels[i], k_labels[j]):
        st.markdown(line)
    text("attention.cell_note")


if work is not None:
    stages_section(work, view, q_labels, k_labels, causal, stage_titles)
    cell_section(work, q_labels, k_labels)


@st.fragment(key="att-printed")
def printed_section(titles):
    """4. The exercise on the blog post's printed example, and its chain check: depends on nothing above but
    the maps' axis titles, in the page's language."""
    st.header(t("attention.printed.header"))
    text("attention.printed_intro", article=wx.EXAMPLE_SOURCE)
    report = shared_view("att-report", (), wx.example_report)
    half_unit = f"{wx.half_unit():.{wx.PRINTED_DECIMALS + 1}f}"  # the rounding error of the print
    text("attention.check_yourself", decimals=wx.PRINTED_DECIMALS, half_unit=half_unit)
    reveal = st.toggle(t("attention.printed.reveal"), **keep("att_reveal", False, url="reveal"))
    ex_labels = wx.EXAMPLE_TOKENS
    # Only the open tab is drawn (a tab's click reruns this section): four tabs drawn at once were a fifth of
    # the browser's work when the page opened. The tabs' names are formulas, the same in both languages.
    for name, tab in open_tabs({key: lab.DISPLAY[key] for key in wx.PRINTED_STAGE}, key="att_printed_tab",
                               url="printed"):
        if not tab.open:
            continue
        stage = wx.PRINTED_STAGE[name]
        printed = report.printed[name]
        shown, slug = lab.DISPLAY[name], name.replace("'", "-prime")
        ex_cols = ex_labels if name != "O" else [str(j + 1) for j in range(printed.shape[1])]
        with tab:
            cells = lab.cell_options(shown, printed, ex_labels, ex_cols)
            picked = st.multiselect(t("attention.printed.pick", name=shown), list(cells), format_func=cells.get,
                                    placeholder=t("common.choose_options"),
                                    **keep(f"att_guess_{slug}", [], valid=cells))
            left, right = st.columns(2)
            with left:
                fig = fig_once("printed", (slug, reveal), lambda: stage_figure(
                    stage, printed, ex_labels, ex_labels, highlight=report.differs[name] if reveal else None,
                    title=t("attention.printed.as_printed", name=shown), **titles))
                show_matrix(fig, printed, name=f"printed-{slug}", row_labels=ex_labels, col_labels=ex_cols,
                            key=f"att-printed-{slug}")
            with right:
                if reveal:
                    fig = fig_once("computed", (slug,), lambda: stage_figure(
                        stage, report.rounded[name], ex_labels, ex_labels,
                        title=t("attention.printed.computed", name=shown), **titles))
                    show_matrix(fig, report.computed[name], name=f"computed-{slug}", row_labels=ex_labels,
                                col_labels=ex_cols, key=f"att-computed-{slug}")
                else:
                    st.info(t("attention.printed.hidden"))
            if reveal:
                guess = wx.score_guess(report.differs[name], picked)
                st.markdown(t("attention.printed.score", found=guess.found, wrong=guess.wrong,
                              false_alarms=guess.false_alarms, name=shown))
                st.caption(t("attention.printed.cells_differ", name=shown, n_diff=report.n_diff(name),
                             total=printed.size))

    if reveal:
        st.subheader(t("attention.chain.header"))
        text("attention.chain_intro", half_unit=half_unit)
        rows = wx.chain_rows(report)
        table(lab.chain_table(rows), key="att-chain")
        for sentence in lab.chain_sentences(rows):
            st.markdown("- " + sentence)
        st.markdown(f"**{lab.chain_verdict(report)}**")


printed_section(stage_titles)

# ---------------------------------------------------------------- 5. dot-product vs additive
TIMING_RUN = "att_timing_run"  # the timing under way: [n, h, model.lessons.lab.time_scoring_steps(...), last step]
STEP_SECONDS = 0.2  # timed runs per rerun of the timing: as many as fit in this, at least one


@st.fragment(key="att-additive")
def additive_section(work, view, q_labels, k_labels, causal, titles):
    """5. Dot-product versus additive scoring: h, the seed and the timing change only this section. `titles`:
    the maps' query and key axis titles, in the page's language."""
    n, m, stages = work.n, work.m, work.stages
    a1, a2 = st.columns(2)
    hidden = a1.slider(t("attention.additive.hidden"), 1, 128,
                       **keep("att_hidden", 16, url="hidden", valid=range(1, 129)))
    add_seed = int(a2.number_input(t("attention.additive.seed"), 0, 10_000,
                                   **keep("att_add_seed", 0, url="add_seed", valid=range(10_001))))
    w_add = shared_view("att-additive", (*view, hidden, add_seed),
                        lambda: mlab.additive_weights(work.q, work.k, hidden, add_seed, causal))
    left, right = st.columns(2)
    with left:
        fig = fig_once("dot-weights", view, lambda: stage_figure(
            "weights", stages.weights, q_labels, k_labels, title=t("attention.additive.dot_title"), **titles))
        show_matrix(fig, stages.weights, name="dot-product-weights", row_labels=q_labels, col_labels=k_labels,
                    key="att-dot-weights")
    with right:
        fig = fig_once("add-weights", (*view, hidden, add_seed), lambda: stage_figure(
            "weights", w_add, q_labels, k_labels, title=t("attention.additive.add_title", hidden=hidden),
            **titles))
        show_matrix(fig, w_add, name="additive-weights", row_labels=q_labels, col_labels=k_labels,
                    key="att-add-weights")
    st.caption(t("common.rows_cols") + " " + t("attention.additive.maps_differ"))
    flops = mlab.scoring_flops(n, m, work.d_k, hidden)
    table([{t("attention.additive.col_scoring"): t(f"attention.additive.{kind}"),
            t("attention.additive.col_formula"): formula,
            t("attention.additive.col_flops"): f"{flops[kind]:,}",
            t("attention.additive.col_memory"): f"{flops[f'{kind}_memory']:,}"}
           for kind, formula in (("dot", "2·n·m·dₖ + n·m"), ("additive", "2·n·dₖ·h + 2·m·dₖ·h + 4·n·m·h"))],
          key="att-flops")
    st.caption(t("attention.additive.flops_note", n=n, m=m, d_k=work.d_k, hidden=hidden))
    timing_part(hidden)


def rerun_section() -> None:
    """Rerun the fragment this runs in. When it runs inside a larger run (the whole page, or section 5 after
    h changed during the timing), Streamlit allows no fragment rerun: then the page reruns."""
    try:
        st.rerun(scope="fragment")
    except (StreamlitAPIException, RuntimeError):
        st.rerun()


@st.fragment(key="att-timing")
def timing_part(hidden: int) -> None:
    """Time both scorings on this device. A large n takes seconds, so the timed runs go in slices of about
    STEP_SECONDS, one slice per rerun of this fragment: a progress bar between them, and a Cancel button
    that takes effect after the slice under way. A small n is timed in one slice."""
    device = best_device()
    ss = st.session_state
    t1, t2 = st.columns([1, 2])
    big_n = t1.select_slider(t("attention.additive.time_n"), TIME_NS,
                             **keep("att_time_n", 256, url="time_n", valid=TIME_NS))
    running = ss.get(TIMING_RUN)
    if running is None:
        if t1.button(t("attention.additive.time_button"), key="att_time_btn"):
            running = ss[TIMING_RUN] = [big_n, hidden, mlab.time_scoring_steps(big_n, 64, hidden, device,
                                                                              repeats=REPEATS), None]
            ss.pop("att_timing_cancelled", None)
    elif t1.button(t("attention.additive.cancel"), key="att_time_cancel"):
        ss.pop(TIMING_RUN)[2].close()  # the timed runs not yet made are never made
        ss["att_timing_cancelled"] = True
        running = None
    if running is not None:
        tn, th, steps, last = running
        done = last.done if last else 0
        t2.progress(done / (2 * REPEATS), text=t("attention.additive.timing", done=done, total=2 * REPEATS, n=tn))
        step = mlab.timing_slice(steps, STEP_SECONDS)  # (each scoring's warm-up runs just before its first run)
        if step.result is None:
            running[3] = step
        else:
            ss.pop(TIMING_RUN)
            ss["att_timing"] = (tn, th, step.result)
        rerun_section()  # draws the progress, takes a cancel, then the next slice (or the result)
    timing = ss.get("att_timing")
    with t2:
        if ss.get("att_timing_cancelled"):
            st.caption(t("attention.additive.cancelled"))
        if timing is None:
            st.caption(t("attention.additive.time_hint", device=device_description(device)))
        else:
            tn, th, times = timing
            st.metric(t("attention.additive.dot"), f"{times['dot'] * 1e3:.3f} ms")
            st.metric(t("attention.additive.additive_h", hidden=th), f"{times['additive'] * 1e3:.3f} ms",
                      delta=f"×{times['ratio']:.1f}", delta_color="off")
            st.caption(t("attention.additive.time_note", repeats=REPEATS, n=tn, device=device_description(device)))


st.header(t("attention.additive.header"))
text("attention.additive_intro")
if work is None:
    st.info(t("attention.additive.needs_inputs"))
else:
    additive_section(work, view, q_labels, k_labels, causal, axis_titles)


# ---------------------------------------------------------------- 6. why sqrt(d_k)
@st.fragment(key="att-scaling")
def scaling_section():
    """6. Why √dₖ: dₖ and the seed change only this section."""
    st.header(t("attention.scaling.header"), anchor=SECTIONS["attention.scaling"])
    text("attention.sqrt_intro")
    s1, s2 = st.columns([3, 1])
    dk_demo = s1.slider("dₖ", 1, 512, **ATTENTION.dk.keep(64))
    demo_seed = int(s2.number_input(t("attention.scaling.seed"), 0, 10_000,
                                    **ATTENTION.dk_seed.keep(0)))
    samples = shared_view("att-samples", (dk_demo, demo_seed), lambda: mlab.dot_product_samples(dk_demo, 4000, demo_seed))
    m1, m2, m3 = st.columns(3)
    m1.metric(t("attention.scaling.var_raw"), f"{samples.var_raw:.2f}",
              help=t("attention.scaling.var_raw_help", d_k=dk_demo))
    m2.metric(t("attention.scaling.var_scaled"), f"{samples.var_scaled:.3f}",
              help=t("attention.scaling.var_scaled_help"))
    m3.metric(t("attention.scaling.samples"), f"{samples.n_samples:,}")
    fig = fig_once("hist", (dk_demo, demo_seed), lambda: histogram_overlay(
        {"q·k": samples.raw, "q·k / √dₖ": samples.scaled},
        title=t("attention.scaling.hist_title", count=samples.n_samples, d_k=dk_demo),
        x_title=t("attention.scaling.score"), y_title=t("attention.scaling.density")))
    # the 4,000 samples as CSV are written when the learner asks for them (a deferred download)
    show_figure(fig, name=f"dot-products-dk{dk_demo}", key="att-hist",
                csv=lambda: columns_csv({"q.k": samples.raw, "q.k/sqrt(d_k)": samples.scaled}))

    st.subheader(t("attention.scaling.saturation"))
    sat = mlab.saturation_example()
    b1, b2 = st.columns(2)
    for col, scores, weights, extra, key in ((b1, sat.small, sat.p_small, {}, "small"),
                                             (b2, sat.big, sat.p_big, {"colors": "#d62728", "decimals": 6}, "big")):
        listed = ", ".join(f"{x:g}" for x in scores)
        with col:
            fig = fig_once("softmax", (key,), lambda: bar_chart(
                [f"s={x:g}" for x in scores], weights, title=f"softmax([{listed}])", y_title=t("common.weight"),
                y_range=[0, 1.05], **extra))
            show_figure(fig, name=f"softmax-{listed.replace(', ', '-')}",
                        csv=columns_csv({"score": scores, "softmax": weights}), key=f"att-sm-{key}")
    text("attention.saturation", factor=sat.factor, top_small=sat.top_small, top_big=sat.top_big)

    grad = shared_view("att-grad", (dk_demo,), lambda: mlab.gradient_report(dk_demo))
    fig = fig_once("grad", (dk_demo,), lambda: line_chart(
        grad.curve["scale"], {t("attention.scaling.grad_max"): grad.curve["max_abs"],
                              t("attention.scaling.grad_norm"): grad.curve["frobenius"]},
        title=t("attention.scaling.grad_title"), x_title=t("attention.scaling.grad_x"),
        y_title=t("attention.scaling.grad_y"), log_x=True, log_y=True, vline=grad.sqrt_dk,
        vline_label=f"c = √{dk_demo}"))
    show_figure(fig, name="softmax-gradient-vs-scale", key="att-grad", csv=shared_view(
        "att-grad-csv", (dk_demo,), lambda: columns_csv(
            {"scale": grad.curve["scale"], "max_abs_jacobian": grad.curve["max_abs"],
             "frobenius_jacobian": grad.curve["frobenius"], "max_weight": grad.curve["max_weight"]})))
    # what the note says follows the numbers: at dₖ = 1 scaling changes nothing; while the gradient at c = √dₖ keeps
    # a sizeable share of its size at c = 1 the softmax is not saturated
    share = grad.at_sqrt_dk / grad.at_one if grad.at_one else 0.0
    note = ("attention.gradient_note_same" if dk_demo == 1 else
            "attention.gradient_note_partial" if share >= SATURATED_SHARE else "attention.gradient_note")
    text(note, d_k=dk_demo, sqrt_dk=grad.sqrt_dk, at_sqrt_dk=grad.at_sqrt_dk, at_one=grad.at_one, share=share)


scaling_section()
