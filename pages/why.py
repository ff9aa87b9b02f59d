"""Why self-attention (section 4): Table 1 evaluated at your n, d, k, r, and one self-attention,
recurrent and convolutional layer timed on this machine's device."""
from datetime import datetime, timezone

import streamlit as st

from app.charts.curves import cost_figure, line_chart
from app.charts.export import rows_csv, series_csv
from app.charts.style import amend
from app.fast.choice import choice_slider, figure_variants, follow, follow_table
from app.format import large
from app.i18n import Message, UserError, t
from app.inputs import parse_int_list
from app.resources import computed, device_description, measurements, shared_figure, shared_view
from app.state import keep
from app.ui import error, show_figure, table, text
from model.lessons import complexity as mcx
from model.lessons.complexity import TIMED, complexity_table, time_layers, timing_summary
from model.nn.device import best_device

FIRST_VIEW = dict(ns=(16, 64, 256), d=64, batch=2, repeats=3, recurrent="gru", one_thread=True)
MAX_N, MAX_SIZES = 4096, 6
BUDGET_S = 3.0  # the measuring budget the warning below speaks of
TM_D_CHOICES, RECURRENT_KINDS = [32, 64, 128, 256], ["gru", "lstm"]
# Sections 1 and 2 follow n, d, k, r: the curves are cached per input (app.resources.computed), their figures
# built once per input and language (app.resources.shared_figure), so a measurement (section 3) reruns them
# cheaply.


def name(layer: str) -> str:
    return t(f"why.layers.{layer}")


def sizes(text: str) -> tuple[int, ...]:
    return tuple(sorted(set(parse_int_list(text, 1, MAX_N, MAX_SIZES, "n"))))


def sizes_parse(text: str) -> bool:
    """A link's size list must parse (what a learner types is explained after "measure" instead)."""
    return bool(sizes(text))


st.title(t("pages.why.title"))
text("why.intro")


@st.fragment(key="why-complexity")
def complexity_sections() -> None:
    """Sections 1 and 2, one fragment: n, d, k and r rerun these two sections only, not the measured one."""
    # ----------------------------------------------------------------------------- 1. table
    st.header(t("why.table.header"))
    c1, c2, c3, c4 = st.columns(4)
    n = int(c1.number_input("n", 1, 10_000_000, **keep("cx_n", 100, url="n", valid=range(1, 10_000_001))))
    d = int(c2.number_input("d", 1, 100_000, **keep("cx_d", 512, url="d", valid=range(1, 100_001))))
    # k only picks the convolutional row and curve: every kernel width is sent, and the browser answers the slider
    kernel = choice_slider("k", range(2, 65), key="cx_k", url="k", default=3, channel="why-k", where=c3)
    k = kernel.value
    r = c4.slider("r", 1, 1024, **keep("cx_r", 16, url="r", valid=range(1, 1025)))
    ks = kernel.values if kernel.live else (k,)
    tables = shared_view("why-table", (n, d, r, ks), lambda: table_rows(n, d, ks, r))
    follow_table(tables, kernel, key="why-complexity")
    every_k = [{"k": kk, **row} for kk, rows in zip(ks, tables) for row in rows]
    st.download_button(t("common.download_csv"), rows_csv(every_k if kernel.live else tables[0]),
                       file_name="complexity-table.csv", mime="text/csv", key="cx_csv")
    rows = complexity_table(n, d, k, r)
    sa, rnn = rows[0].cost, rows[1].cost
    text("why.table_result", n=n, d=d, attention=large(sa), recurrent=large(rnn), ratio=sa / rnn,
         verdict=t("why.table.cheaper" if sa < rnn else "why.table.dearer"))
    st.caption(t("why.table.note"))

    # ----------------------------------------------------------------------------- 2. cost vs n
    st.header(t("why.curves.header"))
    text("why.curves")
    over_n = computed(mcx.curves_over_n, n, d, k, r)
    conv = computed(mcx.convolutional_over_n, n, d, ks)  # the convolutional curves for each k (r does not enter)
    conv_name = name("convolutional")
    cost = {name(layer): values for layer, values in over_n["cost"].items()}
    path = {name(layer): values for layer, values in over_n["path"].items()}
    axis = (t("why.curves.cost_y"), t("why.table.path_formula"), t("why.curves.path_title"))
    c1, c2 = st.columns(2)
    with c1:
        figs = shared_view("cost-vs-n", (n, d, r, ks, *cost, *axis), lambda: with_variants([cost_figure(
            over_n, {**cost, conv_name: conv["cost"][i]}, n, d, (axis[0], t("why.curves.cost_title", d=d, k=kk, r=r)))
            for i, kk in enumerate(ks)]))
        show_figure(figs[0][ks.index(k)], name="cost-vs-n", key="cx_cost", follow=follow(kernel, traces=figs[1][0], layouts=figs[1][1]),
                    csv=lambda: series_csv("n", over_n["n"], curves_csv(cost, conv_name, conv["cost"], ks)))
    with c2:
        figs = shared_view("path-vs-n", (n, d, r, ks, *path, *axis), lambda: with_variants([line_chart(
            over_n["n"], {**path, conv_name: conv["path"][i]}, log_x=True, log_y=True, x_title="n", y_title=axis[1],
            title=axis[2]) for i in range(len(ks))]))
        show_figure(figs[0][ks.index(k)], name="path-vs-n", key="cx_path", follow=follow(kernel, traces=figs[1][0], layouts=figs[1][1]),
                    csv=lambda: series_csv("n", over_n["n"], curves_csv(path, conv_name, conv["path"], ks)))


def with_variants(figures: list) -> tuple[list, tuple]:
    """The figures for each k and what a chart that follows k needs of them (app.fast.choice.figure_variants)."""
    return figures, figure_variants(figures) if len(figures) > 1 else ([], None)


def table_rows(n: int, d: int, ks: tuple, r: int) -> list[list[dict]]:
    """Table 1 at n, d, r and each k of `ks`, as the page's table shows it (the words looked up once)."""
    head = [t(f"why.table.{column}") for column in ("layer", "cost_formula", "cost", "sequential_formula",
                                                     "sequential", "path_formula", "path")]
    names = {layer: name(layer) for layer in mcx.LAYERS}
    return [[dict(zip(head, (names[row.layer], row.cost_formula, large(row.cost), row.sequential_formula,
                             large(row.sequential), row.path_formula, large(round(row.path, 2)))))
             for row in complexity_table(n, d, k, r)] for k in ks]


def curves_csv(curves: dict, conv_name: str, conv, ks: tuple) -> dict:
    """The curves as their CSV's columns: the convolutional one for each k the page offers (the browser shows any)."""
    if len(ks) == 1:
        return curves
    return {**{label: values for label, values in curves.items() if label != conv_name},
            **{f"{conv_name} (k = {kk})": conv[i] for i, kk in enumerate(ks)}}


complexity_sections()

# ----------------------------------------------------------------------------- 3. measured
MEASURED_KEPT = 32  # measurements kept for the whole server, the oldest dropped first


def timing_figure(res: dict, ms: dict, title: str):
    fig = line_chart(res["n"], ms, mode="lines+markers", log_x=True, log_y=True, x_title="n",
                     y_title=t("why.timing.y"), title=title)
    # 1, 2, 5 per decade on y: readable on a short log range
    return amend(fig, dict(xaxis=dict(tickvals=res["n"], ticktext=[str(v) for v in res["n"]]), yaxis=dict(dtick="D2")))


def timing_section() -> None:
    """Section 3. Not a fragment on purpose: a click inside a fragment asks for a rerun that waits until the
    running script ends, so its Stop button could not stop a measurement. A click outside one stops the run at
    its next step (the progress bar's next update); sections 1 and 2 then rerun from their caches."""
    st.header(t("why.timing.header"))
    device = best_device()
    st.info(t("why.timing.device", device=device_description()))
    text("why.measure")
    with st.form("timing"):
        c1, c2, c3, c4, c5 = st.columns(5)
        # linked too, but a link only fills the form: measuring waits for the learner's click
        ns_text = c1.text_input(t("why.timing.lengths", max=MAX_N, most=MAX_SIZES),
                                **keep("tm_ns", "16, 64, 256, 1024", url="time_n", check=sizes_parse))
        tm_d = c2.select_slider("d", TM_D_CHOICES, **keep("tm_d", 64, url="time_d", valid=TM_D_CHOICES))
        tm_b = c3.slider(t("why.timing.batch"), 1, 8, **keep("tm_b", 2, url="batch", valid=range(1, 9)))
        tm_rep = c4.slider(t("why.timing.repeats"), 1, 7, **keep("tm_rep", 3, url="repeats", valid=range(1, 8)))
        tm_rnn = c5.radio(t("why.timing.recurrent"), RECURRENT_KINDS, format_func=str.upper,
                          **keep("tm_rnn", "gru", url="recurrent", valid=RECURRENT_KINDS))
        one = st.checkbox(t("why.timing.one_thread"), disabled=device.type != "cpu",
                          help=t("why.timing.one_thread_help"), **keep("tm_one", True, url="one_thread"))
        run = st.form_submit_button(t("why.timing.measure"), type="primary")
    again = False  # "Measure" always measures anew; otherwise a measurement kept on this server is shown
    if run:
        st.session_state.pop("tm_stopped", None)
        try:
            ns = sizes(ns_text)
            st.session_state["tm_params"] = dict(ns=ns, d=tm_d, batch=tm_b, repeats=tm_rep, recurrent=tm_rnn,
                                                 one_thread=bool(one))
            again = True
        except UserError as e:
            error(e)
    params = st.session_state.get("tm_params", FIRST_VIEW)
    params = {**params, "one_thread": params["one_thread"] and device.type == "cpu"}
    if "tm_params" not in st.session_state:
        st.caption(t("why.timing.first_view"))
    key = (tuple(params["ns"]), params["d"], params["batch"], params["repeats"], params["recurrent"],
           params["one_thread"], str(device))
    store = measurements("why")
    res, when = (None, None) if again else store.get(key, (None, None))
    if res is None and st.session_state.get("tm_stopped") != key:
        slot = st.empty()
        with slot.container():
            bar = st.progress(0.0, text=t("why.timing.measuring"))
            # a click reruns the page, which stops the measuring at the bar's next step
            stop = st.button(t("why.timing.stop"), key="tm_stop", icon=":material/stop_circle:")
        if stop:
            st.session_state["tm_stopped"] = key
        else:
            try:
                res = time_layers(list(key[0]), params["d"], params["batch"], device, params["repeats"],
                                  recurrent=params["recurrent"], budget_s=BUDGET_S,
                                  threads=1 if params["one_thread"] else None,
                                  progress=lambda done, n: bar.progress(done, text=t("why.timing.measuring_n", n=n)))
                store.pop(key, None)  # re-measured: now the newest
                store[key] = (res, datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"))
                while len(store) > MEASURED_KEPT:
                    store.pop(next(iter(store)))
            except Exception as e:  # out of memory on a small device, a driver error…
                error(Message("why.errors.measure_failed"), f"{type(e).__name__}: {str(e)[:300]}")
        slot.empty()
    if st.session_state.get("tm_stopped") == key:
        st.info(t("why.timing.stopped"))
    if res and res["n"]:
        summary = timing_summary(res)
        legend = {"self_attention": name("self_attention"),
                  "recurrent": f"{name('recurrent')} ({res['recurrent_kind'].upper()})",
                  "convolutional": f"{name('convolutional')} (k = 3)"}
        ms = {legend[layer]: summary["ms"][layer] for layer in TIMED}
        title = t("why.timing.title", batch=res["batch"], d=res["d"], device=device_description())
        fig = shared_figure("measured-layer-times", (key, res["total_s"], title, *ms, t("why.timing.y")),
                            lambda: timing_figure(res, ms, title))
        show_figure(fig, name="measured-layer-times", csv=series_csv("n", res["n"], ms), key="tm_fig")
        rows_t = [{"n": row["n"], **{lab: f"{ms[lab][i]:.3f}" for lab in ms},
                   t("why.timing.per_position"): f"{row['recurrent_us_per_position']:.1f}",
                   t("why.timing.ratio"): f"{row['ratio']:.2f}×"}
                  for i, row in enumerate(summary["rows"])]
        table(rows_t, key="why-timing")
        st.download_button(t("common.download_csv"), rows_csv(rows_t), file_name="measured-times.csv",
                           mime="text/csv", key="tm_csv")
        if summary["growth"]:
            g = summary["growth"]
            text("why.growth", first=res["n"][0], last=res["n"][-1], length=g["length"], recurrent=g["recurrent"],
                 attention=g["self_attention"])
        if res.get("threads"):
            st.caption(t("why.timing.measured_in_threads", seconds=res["total_s"], device=res["device"],
                         threads=res["threads"]))
        else:
            st.caption(t("why.timing.measured_in", seconds=res["total_s"], device=res["device"]))
        if when:  # not measured in this run: say when it was
            st.caption(t("why.timing.kept", when=when))
    if res and res["skipped"]:
        st.warning(t("why.timing.skipped", sizes=", ".join(map(str, res["skipped"])), budget=BUDGET_S))
    if res and res["n"]:
        text("why.closing")


timing_section()
