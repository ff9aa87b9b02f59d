"""The guided tour's steps: which page each opens and with which inputs (the page's own session keys and link
names, checked against the pages by tests/pages/test_page_tour.py), the question, the live answer
(model.lessons.tour) and the figure that shows why (the page's own chart builder)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlencode

import streamlit as st

from pages.views import attention_lab as lab

from app.charts.curves import bar_chart, line_chart
from app.charts.heatmaps import head_tiles, stage_figure
from app.i18n import UserError, t
from app.state import LANG_PARAM, OneBased, encode
from model.lessons import multihead as mlab
from model.lessons.table3 import PAPER_TABLE3, paper_row
from pages.views import study
from model.lessons import tour
from model.lessons import worked_example as wx


@dataclass(frozen=True)
class Setting:
    """One input of the step's page: its session key, its name in the page's link, the value the step sets."""
    key: str
    url: str
    value: Any
    codec: Any = None

    def text(self) -> str:
        return self.codec.encode(self.value) if self.codec else encode(self.value)


@dataclass
class Asked:
    """A step's question for the current inputs: `kind` "choice" (options, labels) or "number" (tolerance);
    `truth` the live answer; `args` for the question's text; `figure` the figure that shows why."""
    kind: str
    truth: Any
    args: dict
    figure: Callable[[], Any]
    options: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)
    tol: float = 0.0

    def right(self, answer) -> bool:
        if answer is None:
            return False
        if self.kind == "number":
            return tour.close_enough(answer, self.truth, self.tol)
        return answer == self.truth


@dataclass(frozen=True)
class Step:
    id: str
    page: str  # the page's url (app.pages_list)
    settings: tuple[Setting, ...]
    ask: Callable[[Callable[[str], Any]], Asked]  # called with value(key): the learner's current input

    def link(self, lang: str) -> str:
        """The page's address with the step's inputs in its query string."""
        return f"./{self.page}?" + urlencode({**{s.url: s.text() for s in self.settings}, LANG_PARAM: lang})


def _axis() -> dict:
    return {"query_title": t("common.query"), "key_title": t("common.key")}


def _qkv_labels(value, n: int, m: int) -> tuple[list[str], list[str]]:
    q = lab.parse_tokens(value("att_tokens_q"))
    k = lab.parse_tokens(value("att_tokens_k")) or q
    return lab.labels_for(q, n, "q")[0], lab.labels_for(k, m, "k")[0]


def _qkv(value):
    w = tour.qkv_weights(value("att_q"), value("att_k"), value("att_v"), value("att_causal"))
    ql, kl = _qkv_labels(value, *w.shape)
    return w, ql, kl


def ask_top_key(value) -> Asked:
    w, ql, kl = _qkv(value)
    row = min(value("att_row"), len(ql) - 1)
    return Asked("choice", tour.top_key(w, row), {"query": ql[row], "row": row + 1},
                 lambda: stage_figure("weights", w, ql, kl, title=t("tour.fig.weights"), **_axis()),
                 options=list(range(len(kl))), labels={j: f"{j + 1}: {kl[j]}" for j in range(len(kl))})


def ask_scale(value) -> Asked:
    dk = value("att_dk")
    v = tour.dot_variance(dk, value("att_dk_seed"))
    return Asked("choice", v["nearest"], {"dk": dk},
                 lambda: bar_chart([t(f"tour.choices.{c}") for c in tour.SCALE_CHOICES] + [t("tour.choices.measured")],
                                   [*v["candidates"].values(), v["var"]], decimals=2,
                                   title=t("tour.fig.variance", dk=dk), y_title=t("tour.fig.variance_y")),
                 options=list(tour.SCALE_CHOICES), labels={c: t(f"tour.choices.{c}") for c in tour.SCALE_CHOICES})


def ask_masked_weight(value) -> Asked:
    w, ql, kl = _qkv(value)
    row, col = min(value("att_row"), len(ql) - 1), min(value("att_col"), len(kl) - 1)
    return Asked("number", tour.weight_at(w, row, col), {"row": row + 1, "col": col + 1},
                 lambda: stage_figure("weights", w, ql, kl, title=t("tour.fig.weights"), **_axis()), tol=0.01)


def ask_top_head(value) -> Asked:
    words = value("mh_sentence").split()[:mlab.MAX_TOKENS]  # as the multi-head page reads its sentence
    w = tour.head_weights(words, value("mh_d"), value("mh_h"), value("mh_seed"), value("mh_pe"))
    q, k = 0, min(1, len(words) - 1)
    heads = list(range(w.shape[0]))
    return Asked("choice", tour.top_head(w, q, k), {"first": words[q], "second": words[k]},
                 lambda: head_tiles(w, words, words, head_title=t("common.head"), **_axis()),
                 options=heads, labels={h: f"{t('common.head')} {h + 1}" for h in heads})


def ask_pe_dot(value) -> Asked:
    length, d, anchor = value("pe_len"), value("pe_d"), value("pe_anchor")
    anchor = min(anchor, length - 1)
    r = tour.pe_neighbour_dot(length, d, anchor)
    prof = r["profile"]
    return Asked("number", r["dot"], {"anchor": anchor, "other": r["other"], "d_model": d},
                 lambda: line_chart(prof["q"], {t("tour.fig.dot"): prof["measured"]}, x_title=t("tour.fig.position"),
                                    y_title=t("tour.fig.dot"), title=t("tour.fig.dot_title", anchor=anchor)), tol=0.5)


def ask_warmup(value) -> Asked:
    d, w = value("sch_d"), value("sch_w")
    r = tour.warmup_peak(d, w)
    return Asked("number", r["step"], {"d_model": d},
                 lambda: line_chart(r["steps"], {f"d_model={d}, warmup={w}": r["lr_curve"]}, x_title=t("tour.fig.step"),
                                    y_title=t("tour.fig.lr"), title=t("tour.fig.schedule")), tol=0)


def ask_smoothing(value) -> Asked:
    eps, vocab = value("ls_eps"), value("ls_V")
    r = tour.smoothed_target(vocab, eps)
    bars = min(vocab, 12)
    return Asked("number", r["correct"], {"eps": eps, "vocab": vocab},
                 lambda: bar_chart([t("tour.fig.correct")] + [f"#{i}" for i in range(1, bars)], r["target"][:bars],
                                   decimals=4, y_title=t("tour.fig.probability"), title=t("tour.fig.target")), tol=0.005)


def ask_relu(value) -> Asked:
    words = value("mh_sentence").split()[:mlab.MAX_TOKENS]
    shares = tour.relu_zero_shares(words, value("mh_d"), value("mh_h"), value("mh_seed"), value("mh_pe"))
    return Asked("number", float(shares[0]), {"word": words[0], "d_ff": 4 * value("mh_d")},
                 lambda: bar_chart(words, shares, decimals=2, y_range="fit", x_title=t("tour.fig.word"),
                                   y_title=t("tour.fig.zero_share"), title=t("tour.fig.relu")), tol=0.02)


def ask_table3(value) -> Asked:
    doc = study.load_table(study.SHIPPED) if value("study_source") == "shipped" else \
        study.load_table(study.study_dir() / "table3.json")
    if doc is None:
        raise UserError("tour.table3.missing")
    group, metric = value("study_group") or "A", value("study_metric")
    keys = ["base"] + [p.key for p in PAPER_TABLE3 if p.group == group]
    best = tour.best_row({r["row"]: r for r in doc["rows"]}, keys, metric)
    if best["row"] is None:
        raise UserError("tour.table3.missing")
    names = {k: t("study.table.base") if k == "base" else paper_row(k).label for k in best["scores"]}
    return Asked("choice", best["row"], {"group": group, "metric": t(f"study.metric.{metric}")},
                 lambda: bar_chart(list(names.values()), [v * (100 if metric == "exact_match" else 1)  # as the study page
                                                          for v in best["scores"].values()], decimals=3, y_range="fit",
                                   y_title=t(f"study.metric.{metric}"), title=t("tour.fig.table3", group=group)),
                 options=list(names), labels=names)


_QKV = (Setting("att_q", "q", wx.matrix_text(wx.EXAMPLE_Q)), Setting("att_k", "k", wx.matrix_text(wx.EXAMPLE_K)),
        Setting("att_v", "v", wx.matrix_text(wx.EXAMPLE_V)), Setting("att_tokens_q", "tokens_q", ", ".join(wx.EXAMPLE_TOKENS)),
        Setting("att_tokens_k", "tokens_k", ""))

STEPS: list[Step] = [
    Step("qkv", "attention", _QKV + (Setting("att_causal", "causal", False), Setting("att_row", "row", 1, OneBased)),
         ask_top_key),
    Step("scale", "attention", (Setting("att_dk", "dk", 64), Setting("att_dk_seed", "dk_seed", 0)), ask_scale),
    Step("mask", "attention", _QKV + (Setting("att_causal", "causal", True), Setting("att_row", "row", 0, OneBased),
                                      Setting("att_col", "col", 2, OneBased)), ask_masked_weight),
    Step("heads", "multihead", (Setting("mh_sentence", "sentence", "the cat sat on the mat"), Setting("mh_d", "d_model", 64),
                                Setting("mh_h", "heads", 8), Setting("mh_seed", "seed", 0), Setting("mh_pe", "positions", True)),
         ask_top_head),
    Step("layer", "multihead", (Setting("mh_sentence", "sentence", "the cat sat on the mat"), Setting("mh_d", "d_model", 64),
                                Setting("mh_h", "heads", 8), Setting("mh_seed", "seed", 0), Setting("mh_pe", "positions", True)),
         ask_relu),
    Step("positions", "positional", (Setting("pe_len", "length", 64), Setting("pe_d", "d_model", 128),
                                     Setting("pe_anchor", "anchor", 20)), ask_pe_dot),
    Step("warmup", "recipe", (Setting("sch_d", "d_model", 256), Setting("sch_w", "warmup", 4000)), ask_warmup),
    Step("smoothing", "recipe", (Setting("ls_eps", "eps", 0.1), Setting("ls_V", "vocab", 10)), ask_smoothing),
    Step("table3", "study", (Setting("study_source", "source", "shipped"), Setting("study_group", "factor", "A"),
                             Setting("study_metric", "metric", "perplexity")), ask_table3),
]


def value_of(step: Step) -> Callable[[str], Any]:
    """The learner's current value of a step's input: what the page holds now, or the step's setting where the
    learner has not opened that page in this session."""
    preset = {s.key: s.value for s in step.settings}
    return lambda key: st.session_state.get(key, preset[key])


def set_up(step: Step) -> None:
    """Give the step's page the step's inputs (as a link would), before switching to it."""
    for s in step.settings:
        st.session_state[s.key] = s.value
