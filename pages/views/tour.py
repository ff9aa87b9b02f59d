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
from app.i18n import UserError, catalogue, t
from app.state import LANG_PARAM, OneBased, encode, open_tab
from model.lessons import multihead as mlab
from model.lessons.table3 import PAPER_TABLE3, paper_row
from pages.views import study
from pages.family.mlm import Positions
from model.lessons import tour
from model.lessons import worked_example as wx

MASK_TOKENS = 20  # the masks page's cut (pages/masks.py MAX_TOKENS)
EN_KO = "en-ko"  # the shipped translation model: the inspector's and the masks page's first choice


@dataclass(frozen=True)
class Setting:
    """One input of the step's page: its session key, its name in the page's link, the value the step sets.
    `tab`: the key of one of the page's open_tabs groups, and the value the tab to open."""
    key: str
    url: str
    value: Any
    codec: Any = None
    tab: bool = False

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
    scale = 100 if metric == "exact_match" else 1  # as the study page
    by_row = {r["row"]: r for r in doc["rows"]}
    spread = [x * scale for k in best["scores"] for x in ((by_row[k].get(metric) or {}).get(e) for e in ("min", "max"))
              if isinstance(x, (int, float))]
    bars = [v * scale for v in best["scores"].values()]
    return Asked("choice", best["row"], {"group": group, "metric": t(f"study.metric.{metric}")},
                 lambda: bar_chart(list(names.values()), bars, decimals=3, y_range=tour.tight_range(bars, spread),
                                   y_title=t(f"study.metric.{metric}"), title=t("tour.fig.table3", group=group)),
                 options=list(names), labels=names)


def _mask_model(choice: str):
    """The masks page's model for its picker's choice: the trained encoder-decoder (cached loader), else the
    seeded demonstration model; (model, tokenizer, cache path or None)."""
    from app.resources import available_models, demo_model, load_model, shared_tokenizer
    path = available_models().get(choice) if choice != "seeded" else None
    if path is not None:
        loaded = load_model(path)
        if loaded.config.architecture == "encoder-decoder" and loaded.tokenizer is not None:
            return loaded.model, loaded.tokenizer, path
    tok = shared_tokenizer()
    return demo_model(tok.vocab_size), tok, None


def _mask_tokens(tok, text: str, what: str) -> tuple[list[int], list[str]]:
    """Ids and labels of one sentence as the masks page tokenizes it (cut to its MAX_TOKENS)."""
    from app.inputs import piece_label
    from app.i18n import Message
    text = (text or "").strip()
    if not text:
        raise UserError("masks.errors.empty", what=Message(f"masks.what.{what}"))
    return tok.encode(text)[:MASK_TOKENS], [piece_label(p) for p in tok.pieces(text)][:MASK_TOKENS]


def ask_visible(value) -> Asked:
    from app.charts.heatmaps import attention_heatmap
    from app.resources import of_weights
    model, tok, path = _mask_model(value("mask_model"))
    src_ids, src_labels = _mask_tokens(tok, value("kind_src"), "source")
    tgt_ids, tgt_labels = _mask_tokens(tok, value("kind_tgt"), "target")
    dec_ids, dec_labels = [tok.bos_id] + tgt_ids, ["<s>"] + tgt_labels  # shifted right, as the page feeds it
    kind = value("kind")
    w = (of_weights(tour.attention_of, path, src_ids, dec_ids, kind, network=True) if path is not None
         else tour.attention_of(model, src_ids, dec_ids, kind))
    q_labels = src_labels if kind == "encoder_self" else dec_labels
    k_labels = dec_labels if kind == "decoder_self" else src_labels
    layer, head = min(value("kind_layer"), w.shape[0]) - 1, min(value("kind_head"), w.shape[1]) - 1
    query = min(3, len(q_labels)) - 1
    r = tour.visible_keys(w, kind, layer, head, query)
    name = t(f"masks.kind.{kind}")
    return Asked("number", r["visible"], {"kind": name, "query": query + 1, "label": q_labels[query],
                                          "keys": len(k_labels)},
                 lambda: attention_heatmap(r["map"], q_labels, k_labels, query_title=t(f"masks.axis.{kind}.query"),
                                           key_title=t(f"masks.axis.{kind}.key"),
                                           title=f"{name} · {t('common.layer')} {layer + 1} · {t('common.head')} {head + 1}"),
                 tol=0)


def ask_cross(value) -> Asked:
    from app.resources import available_models, load_model, translation
    from pages.views import inspector as ins
    path = available_models().get(value("insp_model"))
    if path is None:
        raise UserError("tour.cross.no_model")
    loaded = load_model(path)
    if loaded.config.architecture != "encoder-decoder" or loaded.tokenizer is None:
        raise UserError("tour.cross.no_model")
    tok = loaded.tokenizer
    sentence, _ = ins.clean_input(value("insp_text"))
    ids = tok.encode(sentence)[:loaded.config.max_len - 2]  # as the inspector cuts it
    if not sentence or not ids:
        raise UserError("tour.cross.no_sentence")
    result = translation(path, tok.decode(ids), value("insp_method") == "greedy", value("insp_beam"))
    if not result.steps or result.attention is None:
        raise UserError("tour.cross.no_sentence")
    step = min(value("insp_step"), len(result.steps)) - 1
    layer = min(value("insp_step_layer"), loaded.config.n_decoder_layers - 1)
    r = tour.cross_top_source(result.attention, layer, step)
    src = ins.labels(result.src_pieces)
    wrote = ins.label(tok.id_to_piece(result.steps[step].token))
    return Asked("choice", r["top"], {"step": step + 1, "token": wrote, "layer": layer + 1},
                 lambda: bar_chart(src, r["row"], horizontal=True, y_range=[0, 1],
                                   title=t("inspector.cross_title", layer=layer + 1), x_title=t("common.weight"),
                                   y_title=t("inspector.source_key")),
                 options=list(range(len(src))), labels={j: f"{j + 1}: {src[j]}" for j in range(len(src))})


def ask_family(value) -> Asked:
    from app.charts.family_mlm import mask_predictions
    from app.resources import of_weights
    from pages.views.family import family_models
    from pages.views.inspector import label, labels
    models = family_models("mlm")
    if not models:
        raise UserError("tour.family.no_model")
    path = next(iter(models.values()))
    try:
        r = of_weights(tour.mlm_first_guess, path, value("fam_mlm_text"), value("fam_mlm_pair"),
                       tuple(sorted(value("fam_mlm_masked") or ())), task="mlm")
    except (UserError, IndexError):  # nothing masked: no prediction to ask about
        raise UserError("tour.family.no_mask") from None
    pieces = [pc for pc, _ in r["top"]]
    options = sorted(pieces, key=lambda pc: label(pc).lower())  # not in the model's order: that is the answer
    title = (t("family_mlm.panel_hidden", position=r["position"], hidden=label(r["hidden"])) if r["hidden"] is not None
             else t("family_mlm.panel", position=r["position"]))
    return Asked("choice", r["guess"], {"position": r["position"]},
                 lambda: mask_predictions([(title, labels(pieces), [p for _, p in r["top"]],
                                            label(r["hidden"]) if r["hidden"] is not None else None)],
                                          x_title=t("family_mlm.probability")),
                 options=options, labels={pc: label(pc) for pc in options})


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
    Step("attentions", "masks", (Setting("mask_model", "model", EN_KO), Setting("kind_src", "src", "the cat sees the sky."),
                                 Setting("kind_tgt", "tgt", catalogue("en")["tour.preset_tgt"]), Setting("kind", "kind", "decoder_self"),
                                 Setting("kind_layer", "layer", 1), Setting("kind_head", "kind_head", 1)), ask_visible),
    Step("layer", "multihead", (Setting("mh_sentence", "sentence", "the cat sat on the mat"), Setting("mh_d", "d_model", 64),
                                Setting("mh_h", "heads", 8), Setting("mh_seed", "seed", 0), Setting("mh_pe", "positions", True)),
         ask_relu),
    Step("positions", "positional", (Setting("pe_len", "length", 64), Setting("pe_d", "d_model", 128),
                                     Setting("pe_anchor", "anchor", 20)), ask_pe_dot),
    Step("cross", "inspector", (Setting("insp_model", "model", EN_KO),
                                Setting("insp_text", "text", "My friend did not buy a red apple."),
                                Setting("insp_method", "decoding", "beam"), Setting("insp_beam", "beam", 4),
                                Setting("insp_tab", "tab", "steps", tab=True), Setting("insp_step", "step", 2), Setting("insp_step_layer", "step_layer", 1, OneBased)),
         ask_cross),
    Step("warmup", "recipe", (Setting("sch_d", "d_model", 256), Setting("sch_w", "warmup", 4000)), ask_warmup),
    Step("smoothing", "recipe", (Setting("ls_eps", "eps", 0.1), Setting("ls_V", "vocab", 10)), ask_smoothing),
    Step("table3", "study", (Setting("study_source", "source", "shipped"), Setting("study_group", "factor", "A"),
                             Setting("study_metric", "metric", "perplexity")), ask_table3),
    Step("family", "family", (Setting("fam_member", "member", "mlm"),
                              Setting("fam_mlm_text", "mlm_text", "I drank hot [MASK] in the park today."),
                              Setting("fam_mlm_pair", "mlm_pair", catalogue("en")["tour.preset_pair"]),
                              Setting("fam_mlm_masked", "mlm_masked", [], Positions)), ask_family),
]


def value_of(step: Step) -> Callable[[str], Any]:
    """The learner's current value of a step's input: what the page holds now, or the step's setting where the
    learner has not opened that page in this session."""
    preset = {s.key: s.value for s in step.settings}
    return lambda key: st.session_state.get(key, preset[key])


def set_up(step: Step) -> None:
    """Give the step's page the step's inputs (as a link would), before switching to it."""
    for s in step.settings:
        if s.tab:
            open_tab(st.session_state, s.key, s.value)
        else:
            st.session_state[s.key] = s.value
