"""The paper's own limits, measured here: attention's quadratic cost (and three answers to it run on our own
code), the decoder's one token at a time (with and without the KV cache), lengths never seen in training (a
study trained here), and scale (dev loss against parameters from the Table 3 study)."""
from dataclasses import replace

import streamlit as st

from app.charts.curves import line_chart
from app.charts.export import rows_csv, series_csv
from app.charts.heatmaps import attention_heatmap, matrix_heatmap
from app.charts.limits import measured_chart, scale_chart, spread_chart
from app.format import escape_md, number
from app.i18n import t
from app.page_inputs import LIMITS, SECTIONS
from app.resources import SHIPPED, computed, shared_figure, weights_stamp
from app.ui import machine_said, newest, show_figure, table, text
from model.lessons import decoding as dec
from model.lessons import extrapolation as ex
from model.lessons import limits as lim
from pages.views.limits import (BLOCKS, D_CHOICES, GLOBALS, HEAD_CHOICES, KS, N_CHOICES, WINDOWS, cost_calls,
                                lengths_study, mb, refusal_note, scale_study, setting_texts)

SMALL_N = 16  # the scores and the window drawn at this n
MOVE_WAIT_S = 0.05  # after a move, the page waits this long for a measurement before showing the last one
ERROR_N, ERROR_KS = 256, (8, 16, 32, 64, 128, 256)


def draw_cost(setting: lim.Setting, results: list[dict], names: dict[str, str]) -> None:
    """The measured table, its reading and the two curves, for the setting they were measured at."""
    n, d, heads = setting.n, setting.d, setting.heads
    at_n = {r["impl"]: r for r in results if r["n"] == n}
    rows = []
    for impl in lim.IMPLS:
        r = at_n[impl]
        refused = r["refused"]
        rows.append({t("limits.cost.impl"): names[impl],
                     t("limits.cost.ms"): "—" if refused else number(r["seconds"] * 1000, ".2f"),
                     t("limits.cost.peak"): "—" if refused else mb(r["peak_bytes"]),
                     t("limits.cost.estimate"): mb(lim.estimate_bytes(impl, setting)),
                     t("limits.cost.note"): refusal_note(refused)})
    table(rows, key="limits-cost")
    st.download_button(t("common.download_csv"), rows_csv(rows), file_name="attention-cost.csv", mime="text/csv",
                       key="lim_cost_csv")
    full, blockwise = at_n["full"], at_n["blockwise"]
    if full["refused"] is None and blockwise["refused"] is None:
        text("limits.cost_result", n=n, full=mb(full["peak_bytes"]), blockwise=mb(blockwise["peak_bytes"]),
             ratio=full["peak_bytes"] / max(blockwise["peak_bytes"], 1), block=setting.block)
    else:
        text("limits.cost_refused", n=n)
    sizes = sorted({r["n"] for r in results})
    for metric, key in (("seconds", "time"), ("peak_bytes", "memory")):
        scale = 1000 if metric == "seconds" else 1 / 2**20
        series = {names[impl]: [None if r["refused"] else r[metric] * scale
                                for r in results if r["impl"] == impl] for impl in lim.IMPLS}
        title = t(f"limits.cost.{key}_title", d=d, heads=heads)
        fig = shared_figure(f"limits-{key}", (setting, key, title),
                            lambda: measured_chart(sizes, series, title=title, y_title=t(f"limits.cost.{key}_y")))
        show_figure(fig, name=f"attention-{key}", key=f"lim_{key}", csv=series_csv("n", sizes, series))


st.title(t("pages.limits.title"))
text("limits.intro")


@st.fragment(key="limits-cost")
def cost_section() -> None:
    """Section 1 as one fragment: its sliders rerun this section only (and the note's watcher the page)."""
    # ----------------------------------------------------------------------------- 1. quadratic cost
    st.header(t("limits.cost.header"), anchor=SECTIONS["limits.cost"])
    text("limits.cost")
    c1, c2, c3 = st.columns(3)
    n = c1.select_slider("n", N_CHOICES, **LIMITS.n.keep(1024, valid=N_CHOICES))
    d = c2.select_slider("d", D_CHOICES, **LIMITS.d.keep(256, valid=D_CHOICES))
    heads = c3.select_slider(t("limits.cost.heads"), HEAD_CHOICES, **LIMITS.heads.keep(4, valid=HEAD_CHOICES))
    c1, c2, c3, c4 = st.columns(4)
    block = c1.slider(t("limits.cost.block"), *BLOCKS[:2], step=BLOCKS[2], **LIMITS.block.keep(64))
    window = c2.slider(t("limits.cost.window"), *WINDOWS[:2], step=WINDOWS[2], **LIMITS.window.keep(32))
    global_tokens = c3.slider(t("limits.cost.global"), *GLOBALS[:2], step=GLOBALS[2], **LIMITS.global_tokens.keep(1))
    k = c4.slider(t("limits.cost.k"), *KS[:2], step=KS[2], **LIMITS.k.keep(64))
    setting = lim.Setting(n=n, d=d, heads=heads, block=block, window=window, global_tokens=global_tokens, k=k)
    names = {impl: t(f"limits.impl.{impl}") for impl in lim.IMPLS}

    # Measured in the server's measuring process, one call at a time: a move of a slider answers at once with the last
    # measurement (said to be so) and the new one shows when it lands. A session's first visit waits for it.
    shown, results = newest("cost", setting, cost_calls(setting), lambda shown: t(
        "limits.cost.measuring", **dict(zip(("now", "shown"), setting_texts(setting, shown)))), MOVE_WAIT_S)
    draw_cost(shown, results, names)

    small = replace(setting, n=SMALL_N, window=min(window, SMALL_N), k=min(k, SMALL_N))
    labels = [str(i + 1) for i in range(SMALL_N)]
    c1, c2 = st.columns(2)
    with c1:
        weights = computed(lim.score_matrix, small)
        title = t("limits.cost.scores_title", n=SMALL_N)
        fig = shared_figure("limits-scores", (small, title), lambda: attention_heatmap(
            weights, labels, labels, title=title, query_title=t("limits.query"), key_title=t("limits.key"),
            show_text=False))
        show_figure(fig, name="scores", key="lim_scores")
    with c2:
        kept, _ = computed(lim.window_demo, SMALL_N, window, global_tokens)
        title = t("limits.cost.window_title", window=window, global_tokens=global_tokens)
        fig = shared_figure("limits-window", (SMALL_N, window, global_tokens, title), lambda: matrix_heatmap(
            kept.astype(float), labels, labels, title=title, x_title=t("limits.key") + " →",
            y_title=t("limits.query") + " ↓", zmin=0.0, zmax=1.0, colorscale="Blues", reversescale=False,
            show_text=False))
        show_figure(fig, name="window-mask", key="lim_window_mask")
    n_diff = min(n, 512)
    # each answer's difference keyed by the knobs it reads: a move of one answer's knob computes that answer's only
    diff = {impl: computed(lim.difference_of, impl, lim.relevant(impl, replace(setting, n=n_diff)))
            for impl in lim.IMPLS[1:]}
    text("limits.differences", n=n_diff, share=computed(lim.window_demo, n_diff, window, global_tokens)[1] * 100, blockwise=diff["blockwise"]["max"],
         window=diff["window"]["relative"], linformer=diff["linformer"]["relative"], k=min(k, n, 512))
    errors = computed(lim.linformer_error, lim.Setting(n=ERROR_N, d=setting.d, heads=setting.heads), ERROR_KS)
    title = t("limits.cost.linformer_title", n=ERROR_N)
    series = {names["linformer"]: [e["relative"] for e in errors]}
    fig = shared_figure("limits-linformer", (setting.d, setting.heads, title), lambda: line_chart(
        [e["k"] for e in errors], series, mode="lines+markers", log_x=True, x_title="k", y_title=t("limits.relative"),
        title=title, height=320))
    show_figure(fig, name="linformer-error", key="lim_linformer", csv=series_csv("k", [e["k"] for e in errors], series))
    text("limits.cost_closing")


cost_section()


@st.fragment(key="limits-decode")
def decode_section() -> None:
    """Section 2 as one fragment: the sentence and the number of tokens rerun this section only."""
    # ----------------------------------------------------------------------------- 2. one token at a time
    st.header(t("limits.decode.header"), anchor=SECTIONS["limits.decode"])
    text("limits.decode")
    c1, c2 = st.columns([3, 1])
    sentence = c1.text_input(t("limits.decode.sentence"), **LIMITS.sentence.keep("I go to school."))
    steps = c2.slider(t("limits.decode.steps"), 4, 63, **LIMITS.steps.keep(40))
    asked = (sentence.strip()[:400], steps)
    if asked[0]:
        # timed in the background too: the last answer at once, said to be so, and the new one when it lands
        folder = SHIPPED["en-ko"]
        decode_calls = [(dec.decoding_demo_in, (str(folder), weights_stamp(folder), *asked))]
        (shown_sentence, shown_steps), (run,) = newest("decode", asked, decode_calls, lambda shown: t(
            "limits.decode.measuring", tokens=steps, shown_tokens=shown[1], sentence=escape_md(shown[0][:80])),
            MOVE_WAIT_S)
        xs = list(range(1, run["steps"] + 1))
        per_step = {t("limits.decode.no_cache"): [s * 1000 for s in run["no_cache"]],
                    t("limits.decode.cache"): [s * 1000 for s in run["cache"]]}
        title = t("limits.decode.title")
        fig = shared_figure("limits-decode", (shown_sentence, shown_steps, title), lambda: line_chart(
            xs, per_step, mode="lines+markers", x_title=t("limits.decode.step"), y_title=t("limits.decode.ms"),
            title=title, height=340))
        show_figure(fig, name="decoding-per-token", key="lim_decode", csv=series_csv("step", xs, per_step))
        rate = run["tokens_per_second"]
        speedup = rate["cache"] / max(rate["no_cache"], 1e-12)
        text("limits.decode_result" if speedup >= 1.1 else "limits.decode_result_small", steps=run["steps"], cache=rate["cache"], no_cache=rate["no_cache"],
             speedup=speedup,
             same=t("limits.decode.same" if run["same_tokens"] else "limits.decode.differ"))
    else:
        st.info(t("limits.decode.empty"))
    cache_rows = dec.cache_rows()
    table([{t("limits.decode.kv_heads"): r["kv_heads"], t("limits.decode.per_token"): f"{r['bytes_per_token']:,}",
            t("limits.decode.context"): mb(r["bytes_context"])} for r in cache_rows], key="limits-kv")
    text("limits.kv", base=cache_rows[0]["bytes_per_token"], gqa=cache_rows[1]["bytes_per_token"],
         mqa=cache_rows[2]["bytes_per_token"])


decode_section()

# ----------------------------------------------------------------------------- 3. lengths never seen
st.header(t("limits.lengths.header"), anchor=SECTIONS["limits.lengths"])
study = lengths_study()
if study is None:
    st.info(t("limits.lengths.missing"))
else:
    L = study["options"]["train_len"]
    text("limits.lengths", L=L, L2=2 * L, L4=4 * L, symbols=study["options"]["symbols"], seeds=study["options"]["seeds"],
         steps=study["options"]["steps"], chance=study["chance"] * 100)
    xs = [m * L for m in study["multiples"]]
    spread = {t(f"limits.scheme.{r['scheme']}"): tuple([r["accuracy"][str(m)][key] for m in study["multiples"]]
                                                       for key in ("median", "min", "max")) for r in study["rows"]}
    title = t("limits.lengths.title", L=L)
    fig = shared_figure("limits-lengths", (title, study["date"]), lambda: spread_chart(
        xs, spread, chance=study["chance"], chance_label=t("limits.lengths.chance"), title=title,
        x_title=t("limits.lengths.x"), y_title=t("limits.lengths.y")))
    show_figure(fig, name="lengths", key="lim_lengths")
    cells = lambda r, m: (t("limits.lengths.refused")  # noqa: E731
                          if r["accuracy"][str(m)]["median"] is None else
                          f"{r['accuracy'][str(m)]['median'] * 100:.1f} % ({r['accuracy'][str(m)]['min'] * 100:.1f}"
                          f"–{r['accuracy'][str(m)]['max'] * 100:.1f})")
    table([{t("limits.lengths.scheme"): t(f"limits.scheme.{r['scheme']}"),
            **{t("limits.lengths.at", n=m * L): cells(r, m) for m in study["multiples"]}} for r in study["rows"]],
          key="limits-lengths")
    for v in ex.length_verdicts(study):
        st.markdown(t(f"limits.claims.{v['claim']}") + " — **" + t(f"limits.outcome.{v['outcome']}") + "**")
    text("limits.lengths_closing", L=L, rows=2 * L + 2, seconds=study["seconds"] / 60,
         command=study["command"], machine=machine_said(study["machine"]), date=study["date"])

# ----------------------------------------------------------------------------- 4. scale
st.header(t("limits.scale.header"), anchor="scale")
points, fit = scale_study()
if fit is None:
    st.info(t("limits.scale.missing"))
else:
    title = t("limits.scale.title")
    curve = ex.fitted_curve(fit)
    fig = shared_figure("limits-scale", (title, fit["alpha"]), lambda: scale_chart(
        [(p["parameters"], p["dev_loss"], p["row"]) for p in points], curve, title=title,
        x_title=t("limits.scale.x"), y_title=t("limits.scale.y"), points_label=t("limits.scale.points"),
        fit_label=t("limits.scale.fit", exponent=-fit["alpha"])))
    show_figure(fig, name="scale", key="lim_scale", csv=rows_csv(points))
    text("limits.scale", alpha=fit["alpha"], se=fit["alpha_se"], r2=fit["r2"], points=fit["points"],
         low=fit["min_parameters"], high=fit["max_parameters"], ratio=fit["ratio"], decades=fit["decades"],
         kaplan=ex.KAPLAN_ALPHA, kaplan_decades=ex.KAPLAN_DECADES)
