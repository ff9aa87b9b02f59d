"""Table 3 in miniature: the paper's ablation rows beside the same rows trained here (model/training/study.py),
by factor, with the seeds' spread, a reading of which conclusions our miniature reproduces, and a rerun
of any rows in the background."""
from __future__ import annotations

import streamlit as st

from app import format as fmt
from app.charts.export import rows_csv
from app.charts.study import factor_figure
from app.i18n import UserError, options, t
from app.resources import computed, shared_figure
from app.state import keep
from app.page_inputs import SECTIONS, STUDY
from app.ui import error, machine_said, show_figure, table as ui_table, text
from model.lessons import table3
from model.lessons.table3 import MINI_BASE, PAPER_TABLE3, STUDY_ROWS, paper_row
from model.training.study import step_seconds
from pages.views import study

GROUPS = ("A", "B", "C", "D", "E")


def pm(row: dict, metric: str, scale: float = 1.0, digits: int = 2) -> str:
    """The median over seeds and, with more than one seed, their range."""
    m = table3.centre(row, metric)
    if m is None:
        return "—"
    stats = row.get(metric) or {}
    lo, hi = stats.get("min"), stats.get("max")
    if int(row.get("seeds_done", 0)) < 2 or lo is None or hi is None:
        return f"{m * scale:.{digits}f}"  # one seed: no range to show
    return f"{m * scale:.{digits}f} ({lo * scale:.{digits}f}–{hi * scale:.{digits}f})"


def mini_text(row: dict) -> str:
    ch = row.get("mini_changes") or {}
    names = {"n_heads": "h", "n_encoder_layers": "N", "n_decoder_layers": None, "dropout": "P_drop",
             "label_smoothing": "ε_ls", "positional": "positions"}
    parts = [f"{names.get(k, k)}={v}" for k, v in ch.items() if names.get(k, k) is not None]
    return ", ".join(parts) or t("study.table.base")


@st.fragment(key="study-factor")
def factor_section(doc: dict, rows: dict) -> None:
    """Section 2: one factor of Table 3 at a time (its own inputs: a change reruns this section only)."""
    st.header(t("study.factor.header"), anchor=SECTIONS["study.factor"])
    group_labels = options("study.group", GROUPS)
    group = st.segmented_control(t("study.factor.label"), GROUPS, format_func=group_labels.__getitem__,
                                 **STUDY.group.keep("A", valid=GROUPS)) or "A"
    metric_labels = options("study.metric", ("perplexity", "exact_match"))
    metric = st.radio(t("study.metric.label"), ("perplexity", "exact_match"), horizontal=True,
                      format_func=metric_labels.__getitem__,
                      **STUDY.metric.keep("perplexity"))
    keys = ["base"] + [p.key for p in PAPER_TABLE3 if p.group == group]
    names = [t("study.table.base") if k == "base" else paper_row(k).label for k in keys]
    paper_values = [paper_row(k).perplexity if metric == "perplexity" else paper_row(k).bleu for k in keys]
    scale = 100.0 if metric == "exact_match" else 1.0
    means, lows, highs, seeds, per_seed = [], [], [], [], []
    for k in keys:
        r = rows.get(k, {})
        m = table3.centre(r, metric)
        stats = r.get(metric) or {}
        means.append(None if m is None else m * scale)
        lows.append((stats.get("min") if stats.get("min") is not None else m or 0) * scale)
        highs.append((stats.get("max") if stats.get("max") is not None else m or 0) * scale)
        seeds.append(int(r.get("seeds_done", 0)))
        per_seed.append([v * scale for v in stats.get("values") or [] if isinstance(v, (int, float))])
    fig = shared_figure("study_factor", (study.table_stamp(doc), group, metric), lambda: factor_figure(
        names, paper_values, means, lows, highs, seeds, title=t("study.factor.title", group=group_labels[group]),
        paper_title=t(f"study.factor.paper_{metric}"), ours_title=t(f"study.factor.ours_{metric}"),
        y_title=t(f"study.metric.{metric}"), seeds_label=t("study.factor.seeds"), per_seed=per_seed,
        seed_title=t("study.factor.seed")))
    csv_rows = [{"row": k, "paper": pv, "ours_mean": m, "ours_min": lo, "ours_max": hi, "seeds": s}
                for k, pv, m, lo, hi, s in zip(keys, paper_values, means, lows, highs, seeds)]
    show_figure(fig, name=f"table3-{group}-{metric}", csv=rows_csv(csv_rows), key="study_factor")
    st.caption(t("study.factor.note"))


st.title(t("pages.study.title"))
text("study.intro", d_model=MINI_BASE.d_model, heads=MINI_BASE.n_heads, layers=MINI_BASE.n_encoder_layers,
     d_ff=MINI_BASE.d_ff, d_k=MINI_BASE.head_k)

# ----------------------------------------------------------------------------- which table
shipped = study.load_table(study.SHIPPED)
mine = study.load_table(study.study_dir() / "table3.json")
sources = [s for s, doc in (("shipped", shipped), ("mine", mine)) if doc is not None]
if not sources:
    st.info(t("study.no_table"))
    doc = None
else:
    labels = options("study.source", sources)
    source = st.radio(t("study.source.label"), sources, format_func=labels.__getitem__, horizontal=True,
                      **STUDY.source.keep(sources[0], valid=sources))
    doc = shipped if source == "shipped" else mine

if doc is not None:
    opts = doc.get("options") or {}
    done = sum(int(r.get("seeds_done", 0)) for r in doc["rows"])
    st.caption(t("study.made", runs=done, total=len(STUDY_ROWS) * int(opts.get("seeds", 0) or 0),
                 steps=study.whole(opts.get("steps")), batch=opts.get("batch_size", "?"),
                 minutes=float(doc.get("seconds", 0.0)) / 60, machine=fmt.escape_md(machine_said(str(doc.get("machine", "?")))),
                 decoded=opts.get("decode_limit", "?")))
    st.code(doc.get("command") or "", language="bash", wrap_lines=True)  # the whole command, at any width

    # ------------------------------------------------------------------------- 1. the two tables
    st.header(t("study.table.header"))
    rows = {r["row"]: r for r in doc["rows"]}
    table = []
    for p in PAPER_TABLE3:
        if p.key not in rows:
            continue
        r = rows[p.key]
        table.append({
            t("study.table.row"): f"({p.group})" if p.group != "base" else t("study.table.base"),
            t("study.table.paper_change"): p.label if p.key != "base" else "—",
            t("study.table.paper_ppl"): f"{p.perplexity:.2f}", t("study.table.paper_bleu"): f"{p.bleu:.1f}",
            t("study.table.mini_change"): mini_text(r),
            t("study.table.params"): fmt.count(r.get("parameters")) if r.get("parameters") else "—",
            t("study.table.ppl"): pm(r, "perplexity", digits=3),
            t("study.table.exact"): pm(r, "exact_match", 100, 1),
            t("study.table.bleu"): pm(r, "bleu", 1, 1),
            t("study.table.seeds"): f"{r.get('seeds_done', 0)}/{r.get('seeds', 0)}",
        })
    ui_table(table, key="study-paper-vs-ours")  # scrolls sideways where wider than the page
    st.caption(t("study.table.note"))
    text("study.setting", steps=study.whole(opts.get("steps")), batch=opts.get("batch_size", "?"),
         warmup=opts.get("warmup", "?"), factor=opts.get("lr_factor", 1.0), d_model=MINI_BASE.d_model,
         seeds=opts.get("seeds", "?"))
    stuck = table3.plateau_runs(doc)
    if stuck["stuck"]:
        st.warning(t("study.plateau", stuck=stuck["stuck"], runs=stuck["runs"], limit=table3.PLATEAU,
                     steps=study.whole(opts.get("steps")), rows=stuck["rows"]))
    elif stuck["runs"]:
        st.markdown(t("study.no_plateau", runs=stuck["runs"], limit=table3.PLATEAU, worst=stuck["worst"]))

# ------------------------------------------------------------------------- 2. by factor
    factor_section(doc, rows)

    # ------------------------------------------------------------------------- 3. the reading
    st.header(t("study.reading.header"))
    least = min((int(r.get("seeds_done", 0)) for r in doc["rows"]), default=0)
    st.markdown(t("study.reading.rule", seeds=max(least, 1), alpha=100 * table3.ALPHA,
                  chance=100 * table3.separation_p_value(max(least, 1), max(least, 1))))
    for v in table3.verdicts(doc):
        claim = t(f"study.claims.{v.claim.key}")
        quote = t(f"study.paper_says.{v.claim.key}")
        if v.ours is None:
            st.markdown(f"- {claim} — {t('study.outcome.missing')}  \n  {quote}")
            continue
        icon = {"reproduced": ":green[:material/check_circle:]", "contradicted": ":red[:material/cancel:]",
                "unclear": ":gray[:material/help:]"}[v.outcome]
        (wlo, whi), (blo, bhi) = v.ranges
        evidence = (t("study.reading.apart", p=v.p_value) if v.p_value is not None else t("study.reading.overlap"))
        if v.outcome == "unclear" and v.p_value is not None:  # apart, but so few seeds part by chance too often
            evidence = t("study.reading.too_few", p=v.p_value, alpha=table3.ALPHA)
        st.markdown(f"- {icon} {claim} " + t("study.reading.line", outcome=t(f"study.outcome.{v.outcome}"),
                                             pw=v.paper[0], pb=v.paper[1], ow=v.ours[0], ob=v.ours[1],
                                             wlo=wlo, whi=whi, blo=blo, bhi=bhi, sw=v.seeds[0], sb=v.seeds[1],
                                             evidence=evidence) + f"  \n  {quote}")
    counts = {k: sum(v.outcome == k for v in table3.verdicts(doc)) for k in ("reproduced", "contradicted", "unclear")}
    st.markdown(t("study.reading.summary", **counts))
    text("study.why_differ", steps=study.whole(opts.get("steps")))

# ----------------------------------------------------------------------------- 4. rerun
st.header(t("study.rerun.header"))
text("study.rerun")


# While a study trains its progress is read every second; while none does, every few seconds, only to notice one
# started in another tab or from the command line (a start in this tab redraws the page at once).
WATCH_S = 1.0 if study.progress()["state"] == "running" else 3.0


@st.fragment(run_every=WATCH_S)
def rerun_watch() -> None:
    """The rerun's progress and its stop button: a study started in another tab shows here within WATCH_S, and
    when it ends the whole page runs again to show its table and the form."""
    prog = study.progress()
    seen = st.session_state.get("study_seen_state")
    st.session_state["study_seen_state"] = prog["state"]
    if seen is not None and (seen == "running") != (prog["state"] == "running"):
        st.rerun(scope="app")  # started or ended since the page was drawn: redraw the tables and the form
    if prog["state"] != "running":
        return
    st.info(t("study.rerun.running", done=prog["done"], total=prog["total"]))
    for c in prog["current"]:
        st.progress(min(1.0, c["step"] / max(1, c["total"] or 1)),
                    text=t("study.rerun.current", name=c["run"], step=study.whole(c["step"]),
                           total=study.whole(c["total"])))
    if st.button(t("study.rerun.stop"), key="study_stop"):
        study.stop()


def estimate_caption(chosen: list[str], seeds: int, shipped: dict | None) -> None:
    """How long the chosen runs take here: from this machine's own finished runs of a row where there are
    some, else the `shipped` study's times scaled by this machine's measured step time against its maker's."""
    here = study.seconds_here()
    scale = None
    if shipped and shipped.get("step_seconds"):
        scale = computed(step_seconds) / float(shipped["step_seconds"])
    per_run = {}
    for r in (shipped or {}).get("rows", []):
        m = table3.centre(r, "seconds")
        per_run[r["row"]] = None if m is None or scale is None else m * scale
    known = [here.get(k, per_run.get(k)) for k in chosen]
    if chosen and all(v is not None for v in known):
        basis = t("study.rerun.estimate_mine") if all(k in here for k in chosen) else t("study.rerun.estimate_scaled")
        st.caption(t("study.rerun.estimate", runs=len(chosen) * seeds, minutes=sum(known) * seeds / 60, basis=basis))
    else:
        st.caption(t("study.rerun.estimate_unknown", runs=len(chosen) * seeds))


@st.fragment
def rerun_form(shipped: dict | None) -> None:
    prog = study.progress()
    if prog["state"] == "running":
        return
    if prog["state"] == "failed":
        error(UserError("study.errors.failed", problem=fmt.escape_md(prog.get("error") or "?")))
    elif prog["state"] in ("stopped", "interrupted"):
        st.warning(t("study.rerun.stopped", done=prog["done"], total=prog["total"]))
    elif prog["state"] == "done":
        st.success(t("study.rerun.done", done=prog["done"]))
    row_labels = {k: (t("study.table.base") if k == "base" else f"({paper_row(k).group}) {paper_row(k).label}")
                  for k in STUDY_ROWS}
    chosen = st.multiselect(t("study.rerun.rows"), list(STUDY_ROWS), format_func=row_labels.__getitem__,
                            placeholder=t("common.choose_options"),
                            **keep("study_rows", ["base", "A-h1"], url="rows",
                                   valid=lambda v: isinstance(v, list) and all(r in STUDY_ROWS for r in v)))
    seeds = int(st.number_input(t("study.rerun.seeds"), 1, study.MAX_SEEDS,
                                **keep("study_seeds", 1, url="seeds", valid=range(1, study.MAX_SEEDS + 1))))
    fresh = st.checkbox(t("study.rerun.fresh"), **keep("study_fresh", True, url="fresh", valid=(True, False)))
    estimate_caption(chosen, seeds, shipped)
    if st.button(t("study.rerun.start"), type="primary", key="study_start"):
        try:
            study.start(chosen, seeds, fresh=fresh)
        except UserError as e:
            error(e)
        else:
            st.session_state["study_seen_state"] = "running"
            st.rerun(scope="app")


rerun_watch()
rerun_form(shipped)
