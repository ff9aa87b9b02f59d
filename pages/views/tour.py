"""The guided tour's steps: which page each opens, at which section and with which inputs (the pages' own
declarations, app.page_inputs), the question, the live answer (model.lessons.tour) and the figure that shows why
(the page's own chart builder)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlencode

import streamlit as st

from pages.views import attention_lab as lab

from app.charts.curves import bar_chart, line_chart
from app.charts.heatmaps import head_tiles, stage_figure
from app.charts.study import factor_figure
from app.charts.style import amend
from app.format import number
from app.i18n import Message, UserError, catalogue, t
from app.inputs import piece_label
from app.page_inputs import ATTENTION as A, FAMILY, INSPECTOR, LIMITS, MASKS, MULTIHEAD as MH, POSITIONAL, RECIPE, STUDY
from app.page_inputs import SECTIONS, Input
from app.state import LANG_PARAM, nearest, open_tab
from model.lessons import multihead as mlab
from model.lessons.table3 import PAPER_TABLE3, paper_row, seed_values
from pages.views import study
from model.lessons import tour
from model.lessons import worked_example as wx

EN_KO = "en-ko"  # the shipped translation model: the inspector's and the masks page's first choice
MASKED = "✕"  # written in a masked cell of a map (its weight is exactly 0, drawn white like an open 0.00)


@dataclass(frozen=True)
class Setting:
    """One input of the step's page and the value the step sets. `fixed`: the question is always computed with
    this value (it says so), whatever the page holds now."""
    input: Input
    value: Any
    fixed: bool = False

    @property
    def key(self) -> str:
        return self.input.key

    def text(self, value=None) -> str:
        return self.input.encode(self.value if value is None else value)


@dataclass
class Asked:
    """A step's question for the current inputs: `kind` "choice" (options, labels) or "number" (tolerance, and
    `decimals`, the precision the question asks for); `truth` the live answer; `also` other options that are as
    right (a tie, rows the seeds cannot tell apart); `args` for the question's text; `figure` the figure that
    shows why; `note` a sentence shown with the real answer."""
    kind: str
    truth: Any
    args: dict
    figure: Callable[[], Any]
    options: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)
    tol: float = 0.0
    decimals: int = 0
    also: frozenset = frozenset()
    note: str = ""

    def right(self, answer) -> bool:
        if answer is None:
            return False
        if self.kind == "number":
            return tour.close_enough(answer, self.truth, self.tol)
        return answer == self.truth or answer in self.also

    def shown(self, answer) -> str:
        """An answer as the question asks for it: a number at the question's precision, an option by its label."""
        if answer is None:
            return "—"
        if self.kind == "number":
            return number(float(answer), f".{self.decimals}f")
        return self.labels.get(answer, str(answer))

    def decode(self, text: str):
        """An answer from a link: a number, or the option whose link text it is (ValueError otherwise)."""
        if self.kind == "number":
            value = float(text)
            if not -1e9 <= value <= 1e9:
                raise ValueError(text)
            return value
        by_text = {encode_answer(o): o for o in self.options}
        if text not in by_text:
            raise ValueError(text)
        return by_text[text]


def encode_answer(value) -> str:
    return number(value, "g") if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Step:
    id: str
    page: str  # the page's url (app.pages_list)
    section: str  # app.page_inputs.SECTIONS: where the stop opens its page
    settings: tuple[Setting, ...]
    ask: Callable[[Callable[[str], Any]], Asked]  # called with value(key): the learner's current input

    def link(self, lang: str, value=None) -> str:
        """The page's address with the step's inputs (their current values with `value`) in its query string,
        opening at the stop's section."""
        params = {s.input.url: s.text(None if value is None else value(s.key)) for s in self.settings}
        return f"./{self.page}?" + urlencode({**params, LANG_PARAM: lang}) + f"#{SECTIONS[self.section]}"


def _tok(piece: str) -> str:
    """A model's piece as the learner reads it (SentencePiece's '▁' space marker dropped)."""
    from pages.views.inspector import label
    return label(piece_label(piece))


def _axis() -> dict:
    return {"query_title": t("common.query"), "key_title": t("common.key")}


def _qkv_labels(value, n: int, m: int) -> tuple[list[str], list[str]]:
    q = lab.parse_tokens(value(A.tokens_q.key))
    k = lab.parse_tokens(value(A.tokens_k.key)) or q
    return lab.labels_for(q, n, "q")[0], lab.labels_for(k, m, "k")[0]


def _mark_masked(fig, allowed):
    """The map with MASKED written in every cell the mask forbids, so that a masked cell cannot be read as an
    open one whose weight rounds to 0.00."""
    cells = fig["data"][0].get("text")
    if cells is None:
        return fig
    text = [[c if ok else MASKED for c, ok in zip(row, oks)] for row, oks in zip(cells, allowed.tolist())]
    return amend(fig, traces={0: {"text": text}})


def _weights_figure(w, ql, kl, causal: bool):
    fig = stage_figure("weights", w, ql, kl, title=t("tour.fig.weights"), **_axis())
    return _mark_masked(fig, tour.allowed_keys("decoder_self" if causal else "encoder_self", *w.shape))


def _qkv(value, causal: bool):
    w = tour.qkv_weights(value(A.q.key), value(A.k.key), value(A.v.key), causal)
    ql, kl = _qkv_labels(value, *w.shape)
    return w, ql, kl


def ask_top_key(value) -> Asked:
    causal = bool(value(A.causal.key))
    w, ql, kl = _qkv(value, causal)
    row = min(value(A.row.key), len(ql) - 1)
    top = tour.top_keys(w, row)
    return Asked("choice", top[0], {"query": ql[row], "row": row + 1, "mask": t(f"tour.mask_{'on' if causal else 'off'}")},
                 lambda: _weights_figure(w, ql, kl, causal),
                 options=list(range(len(kl))), labels={j: f"{j + 1}: {kl[j]}" for j in range(len(kl))},
                 also=frozenset(top))


def ask_scale(value) -> Asked:
    dk = value(A.dk.key)
    v = tour.dot_variance(dk, value(A.dk_seed.key))
    names = [t(f"tour.choices.{c}") for c in tour.SCALE_CHOICES]
    return Asked("choice", v["nearest"][0], {"dk": dk},
                 lambda: bar_chart(names + [t("tour.choices.measured")], [*v["candidates"].values(), v["var"]],
                                   decimals=2, text_outside=True,
                                   title=t("tour.fig.variance", dk=dk), y_title=t("tour.fig.variance_y")),
                 options=list(tour.SCALE_CHOICES), labels=dict(zip(tour.SCALE_CHOICES, names)),
                 also=frozenset(v["nearest"]),
                 note=t("tour.scale.tie", dk=dk) if len(v["nearest"]) > 1 else "")


def ask_masked_weight(value) -> Asked:
    w, ql, kl = _qkv(value, True)  # the question says "with the causal mask on": it is computed so
    row, col = min(value(A.row.key), len(ql) - 1), min(value(A.col.key), len(kl) - 1)
    return Asked("number", tour.weight_at(w, row, col), {"row": row + 1, "col": col + 1},
                 lambda: _weights_figure(w, ql, kl, True), tol=0.005, decimals=2)


def _words(value) -> list[str]:
    return value(MH.sentence.key).split()[:mlab.MAX_TOKENS]  # as the multi-head page reads its sentence


def _heads(value) -> int:
    """The number of heads the multi-head page shows for the learner's choice (the nearest that divides d_model)."""
    choices = mlab.head_choices(value(MH.d_model.key))
    return nearest(value(MH.heads.key), choices, mlab.default_heads(choices))


def ask_top_head(value) -> Asked:
    words = _words(value)
    w = tour.head_weights(words, value(MH.d_model.key), _heads(value), value(MH.seed.key), value(MH.positions.key))
    q, k = 0, min(1, len(words) - 1)
    heads = list(range(w.shape[0]))
    top = tour.top_heads(w, q, k)
    return Asked("choice", top[0], {"first": words[q], "second": words[k], "i": q + 1, "j": k + 1},
                 lambda: head_tiles(w, words, words, head_title=t("common.head"), **_axis()),
                 options=heads, labels={h: f"{t('common.head')} {h + 1}" for h in heads}, also=frozenset(top))


def ask_pe_dot(value) -> Asked:
    length, d, anchor = value(POSITIONAL.length.key), value(POSITIONAL.d_model.key), value(POSITIONAL.anchor.key)
    anchor = min(anchor, length - 1)
    r = tour.pe_neighbour_dot(length, d, anchor)
    prof = r["profile"]
    return Asked("number", r["dot"], {"anchor": anchor, "other": r["other"], "d_model": d},
                 lambda: line_chart(prof["q"], {t("tour.fig.dot"): prof["measured"]}, x_title=t("tour.fig.position"),
                                    y_title=t("tour.fig.dot"), title=t("tour.fig.dot_title", anchor=anchor)),
                 tol=0.05, decimals=1)


def ask_warmup(value) -> Asked:
    d, w = value(RECIPE.d_model.key), value(RECIPE.warmup.key)
    r = tour.warmup_peak(d, w)
    return Asked("number", r["step"], {"d_model": d, "warmup": w},
                 lambda: line_chart(r["steps"], {f"d_model={d}, warmup={w}": r["lr_curve"]}, x_title=t("tour.fig.step"),
                                    y_title=t("tour.fig.lr"), title=t("tour.fig.schedule")), tol=0)


def ask_smoothing(value) -> Asked:
    eps, vocab = value(RECIPE.eps.key), value(RECIPE.vocab.key)
    r = tour.smoothed_target(vocab, eps)
    bars = min(vocab, 12)
    return Asked("number", r["correct"], {"eps": number(eps, ".2f"), "vocab": vocab},
                 lambda: bar_chart([t("tour.fig.correct")] + [f"#{i}" for i in range(1, bars)], r["target"][:bars],
                                   decimals=4, text_outside=True, y_title=t("tour.fig.probability"),
                                   title=t("tour.fig.target")), tol=0.005, decimals=2)


def ask_relu(value) -> Asked:
    words = _words(value)
    shares = tour.relu_zero_shares(words, value(MH.d_model.key), _heads(value), value(MH.seed.key),
                                   value(MH.positions.key))
    return Asked("number", float(shares[0]), {"word": words[0], "d_ff": 4 * value(MH.d_model.key)},
                 lambda: bar_chart(words, shares, decimals=2, y_range="fit", text_outside=True, x_title=t("tour.fig.word"),
                                   y_title=t("tour.fig.zero_share"), title=t("tour.fig.relu")), tol=0.005, decimals=2)


def ask_table3(value) -> Asked:
    doc = study.load_table(study.SHIPPED) if value(STUDY.source.key) == "shipped" else \
        study.load_table(study.study_dir() / "table3.json")
    if doc is None:
        raise UserError("tour.table3.missing")
    group, metric = value(STUDY.group.key) or "A", value(STUDY.metric.key)
    keys = ["base"] + [p.key for p in PAPER_TABLE3 if p.group == group]
    by_row = {r["row"]: r for r in doc["rows"]}
    best = tour.best_row(by_row, keys, metric)
    if best["row"] is None:
        raise UserError("tour.table3.missing")
    names = {k: t("study.table.base") if k == "base" else paper_row(k).label for k in best["scores"]}
    scale = 100 if metric == "exact_match" else 1  # as the study page
    per_seed = {k: [x * scale for x in seed_values(by_row.get(k), metric)] or [best["scores"][k] * scale]
                for k in names}
    rows = list(names)
    label = t(f"study.metric.{metric}")
    alike = [names[k] for k in best["alike"] if k != best["row"]]
    return Asked("choice", best["row"], {"group": group, "metric": label},
                 lambda: factor_figure(
                     [names[k] for k in rows], [paper_row(k).perplexity if metric == "perplexity" else paper_row(k).bleu
                                                for k in rows],
                     [best["scores"][k] * scale for k in rows], [min(per_seed[k]) for k in rows],
                     [max(per_seed[k]) for k in rows], [len(per_seed[k]) for k in rows],
                     title=t("tour.fig.table3", group=group), paper_title=t(f"study.factor.paper_{metric}"),
                     ours_title=t(f"study.factor.ours_{metric}"), y_title=label, seeds_label=t("study.factor.seeds"),
                     per_seed=[per_seed[k] for k in rows], seed_title=t("study.factor.seed")),
                 options=rows, labels=names, also=frozenset(best["alike"]),
                 note=t("tour.table3.alike", rows="; ".join(alike)) if alike else t("tour.table3.apart"))


def ask_visible(value) -> Asked:
    from app.charts.heatmaps import attention_heatmap
    from app.resources import shared_view
    from pages.views.masks import encoder_decoder_models, pick_model, tokenize
    model, tok, _, _, model_key = pick_model(value(MASKS.model.key), encoder_decoder_models())
    src_ids, src_labels = tokenize(tok, value(MASKS.src.key), Message("masks.what.source"))
    tgt_ids, tgt_labels = tokenize(tok, value(MASKS.tgt.key), Message("masks.what.target"))
    dec_ids, dec_labels = [tok.bos_id] + tgt_ids, ["<s>"] + tgt_labels  # shifted right, as the page feeds it
    kind = value(MASKS.kind.key)
    maps = shared_view("masks-maps", (model_key, tuple(src_ids), tuple(dec_ids)),
                       lambda: tour.attention_maps_of(model, src_ids, dec_ids))  # the masks page's own cache entry
    w = maps[kind]
    q_labels = src_labels if kind == "encoder_self" else dec_labels
    k_labels = dec_labels if kind == "decoder_self" else src_labels
    layer, head = min(value(MASKS.layer.key), w.shape[0]) - 1, min(value(MASKS.head.key), w.shape[1]) - 1
    query = min(3, len(q_labels)) - 1
    r = tour.visible_keys(w, kind, layer, head, query)
    name = t(f"masks.kind.{kind}")
    return Asked("number", r["visible"], {"kind": name, "query": query + 1, "label": q_labels[query],
                                          "keys": len(k_labels)},
                 lambda: _mark_masked(attention_heatmap(
                     r["map"], q_labels, k_labels, query_title=t(f"masks.axis.{kind}.query"),
                     key_title=t(f"masks.axis.{kind}.key"),
                     title=f"{name} · {t('common.layer')} {layer + 1} · {t('common.head')} {head + 1}"), r["allowed"]),
                 tol=0)


def ask_cross(value) -> Asked:
    from app.resources import available_models, load_model, translation
    from pages.views import inspector as ins
    path = available_models().get(value(INSPECTOR.model.key))
    if path is None:
        raise UserError("tour.cross.no_model")
    loaded = load_model(path)
    if loaded.config.architecture != "encoder-decoder" or loaded.tokenizer is None:
        raise UserError("tour.cross.no_model")
    tok = loaded.tokenizer
    sentence, _ = ins.clean_input(value(INSPECTOR.text.key))
    ids = tok.encode(sentence)[:loaded.config.max_len - 2]  # as the inspector cuts it
    if not sentence or not ids:
        raise UserError("tour.cross.no_sentence")
    result = translation(path, tok.decode(ids), value(INSPECTOR.method.key) == "greedy", value(INSPECTOR.beam.key))
    if not result.steps or result.attention is None:
        raise UserError("tour.cross.no_sentence")
    step = min(value(INSPECTOR.step.key), len(result.steps)) - 1
    layer = min(value(INSPECTOR.step_layer.key), loaded.config.n_decoder_layers - 1)
    r = tour.cross_top_source(result.attention, layer, step)
    src = [_tok(p) for p in result.src_pieces]
    wrote = _tok(tok.id_to_piece(result.steps[step].token))
    return Asked("choice", r["top"], {"step": step + 1, "token": wrote, "layer": layer + 1},
                 lambda: bar_chart(src, r["row"], horizontal=True, y_range=[0, 1], text_outside=True,
                                   title=t("inspector.cross_title", layer=layer + 1), x_title=t("common.weight"),
                                   y_title=t("inspector.source_key")),
                 options=list(range(len(src))), labels={j: f"{j + 1}: {src[j]}" for j in range(len(src))})


def ask_family(value) -> Asked:
    from app.charts.family_mlm import mask_predictions
    from app.resources import of_weights
    from pages.views.family import family_models
    models = family_models("mlm")
    if not models:
        raise UserError("tour.family.no_model")
    path = next(iter(models.values()))
    try:
        r = of_weights(tour.mlm_first_guess, path, value(FAMILY.mlm_text.key), value(FAMILY.mlm_pair.key),
                       tuple(sorted(value(FAMILY.mlm_masked.key) or ())), task="mlm")
    except (UserError, IndexError):  # nothing masked: no prediction to ask about
        raise UserError("tour.family.no_mask") from None
    pieces = [pc for pc, _ in r["top"]]
    options = sorted(pieces, key=lambda pc: _tok(pc).lower())  # not in the model's order: that is the answer
    hidden = _tok(r["hidden"]) if r["hidden"] is not None else None
    title = (t("family_mlm.panel_hidden", position=r["position"], hidden=hidden) if hidden is not None
             else t("family_mlm.panel", position=r["position"]))
    return Asked("choice", r["guess"], {"position": r["position"]},
                 lambda: mask_predictions([(title, [_tok(pc) for pc in pieces], [p for _, p in r["top"]], hidden)],
                                          x_title=t("family_mlm.probability")),
                 options=options, labels={pc: _tok(pc) for pc in options})


_QKV = (Setting(A.q, wx.matrix_text(wx.EXAMPLE_Q)), Setting(A.k, wx.matrix_text(wx.EXAMPLE_K)),
        Setting(A.v, wx.matrix_text(wx.EXAMPLE_V)), Setting(A.tokens_q, ", ".join(wx.EXAMPLE_TOKENS)),
        Setting(A.tokens_k, ""))
def ask_memory(value) -> Asked:
    from app.resources import computed
    n, d, heads = min(value(LIMITS.n.key), 1024), value(LIMITS.d.key), value(LIMITS.heads.key)  # 2n: seconds at most
    r = computed(tour.memory_growth, n, d, heads)
    bars = {f"{t(f'limits.impl.{i}')}, n = {m:,}": r["peaks"][(i, m)] / 2**20 for i in ("full", "blockwise")
            for m in (n, 2 * n)}
    return Asked("choice", r["nearest"], {"n": n, "n2": 2 * n, "ratio": number(r["ratio"], ".2f")},
                 lambda: bar_chart(list(bars), list(bars.values()), decimals=2, text_outside=True,
                                   y_title=t("limits.cost.memory_y"), title=t("tour.memory.figure", d=d, heads=heads)),
                 options=list(tour.GROWTH_CHOICES), labels={c: f"×{c}" for c in tour.GROWTH_CHOICES},
                 note=t("tour.memory.note", ratio=number(r["ratio"], ".2f")))


def ask_kv(value) -> Asked:
    from model.lessons.decoding import cache_rows
    rows = cache_rows()
    names = [t("tour.kv.bar", kv=r["kv_heads"]) for r in rows]
    return Asked("number", rows[1]["bytes_per_token"], {"kv": rows[1]["kv_heads"], "heads": rows[1]["heads"]},
                 lambda: bar_chart(names, [r["bytes_per_token"] for r in rows], decimals=0, text_outside=True,
                                   y_title=t("limits.decode.per_token"), title=t("tour.kv.figure")), tol=0)


def ask_lengths(value) -> Asked:
    from app.charts.limits import spread_chart
    from pages.views.limits import lengths_study
    doc = lengths_study()
    if doc is None:
        raise UserError("limits.lengths.missing")
    r, L = tour.best_at_length(doc, 2), doc["options"]["train_len"]
    names = {k: t(f"limits.scheme.{k}") for k in r["medians"]}
    rows = {t(f"limits.scheme.{x['scheme']}"): tuple([x["accuracy"][str(m)][q] for m in doc["multiples"]]
                                                    for q in ("median", "min", "max")) for x in doc["rows"]}
    return Asked("choice", r["scheme"], {"L": L, "L2": 2 * L},
                 lambda: spread_chart([m * L for m in doc["multiples"]], rows, chance=doc["chance"],
                                      chance_label=t("limits.lengths.chance"), title=t("limits.lengths.title", L=L),
                                      x_title=t("limits.lengths.x"), y_title=t("limits.lengths.y")),
                 options=list(names), labels=names, also=frozenset(r["alike"]))


_SENTENCE = (Setting(MH.sentence, "the cat sat on the mat"), Setting(MH.d_model, 64), Setting(MH.heads, 8),
             Setting(MH.seed, 0), Setting(MH.positions, True))

STEPS: list[Step] = [
    Step("qkv", "attention", "attention.stages", _QKV + (Setting(A.causal, False), Setting(A.row, 1)), ask_top_key),
    Step("scale", "attention", "attention.scaling", (Setting(A.dk, 64), Setting(A.dk_seed, 0)), ask_scale),
    Step("mask", "attention", "attention.stages",
         _QKV + (Setting(A.causal, True, fixed=True), Setting(A.row, 0), Setting(A.col, 2)), ask_masked_weight),
    Step("heads", "multihead", "multihead.maps", _SENTENCE, ask_top_head),
    Step("attentions", "masks", "masks.kinds",
         (Setting(MASKS.model, EN_KO), Setting(MASKS.src, "the cat sees the sky."),
          Setting(MASKS.tgt, catalogue("en")["tour.preset_tgt"]), Setting(MASKS.kind, "decoder_self"),
          Setting(MASKS.layer, 1), Setting(MASKS.head, 1)), ask_visible),
    Step("layer", "multihead", "multihead.layer", _SENTENCE, ask_relu),
    Step("positions", "positional", "positional.dot",
         (Setting(POSITIONAL.length, 64), Setting(POSITIONAL.d_model, 128), Setting(POSITIONAL.anchor, 20)), ask_pe_dot),
    Step("cross", "inspector", "inspector.attention",
         (Setting(INSPECTOR.model, EN_KO), Setting(INSPECTOR.text, "My friend did not buy a red apple."),
          Setting(INSPECTOR.method, "beam"), Setting(INSPECTOR.beam, 4), Setting(INSPECTOR.tab, "steps"),
          Setting(INSPECTOR.step, 2), Setting(INSPECTOR.step_layer, 1)), ask_cross),
    Step("warmup", "recipe", "recipe.schedule", (Setting(RECIPE.d_model, 256), Setting(RECIPE.warmup, 4000)), ask_warmup),
    Step("smoothing", "recipe", "recipe.smoothing", (Setting(RECIPE.eps, 0.1), Setting(RECIPE.vocab, 10)), ask_smoothing),
    Step("table3", "study", "study.factor", (Setting(STUDY.source, "shipped"), Setting(STUDY.group, "A"),
                                             Setting(STUDY.metric, "perplexity")), ask_table3),
    Step("memory", "limits", "limits.cost", (Setting(LIMITS.n, 512), Setting(LIMITS.d, 256), Setting(LIMITS.heads, 4)),
         ask_memory),
    Step("kv", "limits", "limits.decode", (Setting(LIMITS.sentence, "I go to school."), Setting(LIMITS.steps, 40)), ask_kv),
    Step("lengths", "limits", "limits.lengths", (), ask_lengths),
    Step("family", "family", "family.mlm",
         (Setting(FAMILY.member, "mlm"), Setting(FAMILY.mlm_text, "I drank hot [MASK] in the park today."),
          Setting(FAMILY.mlm_pair, catalogue("en")["tour.preset_pair"]), Setting(FAMILY.mlm_masked, [])), ask_family),
]


def value_of(step: Step, state=None) -> Callable[[str], Any]:
    """The value a step's question is computed from: the step's own where it fixes one, else what the page holds
    now (`state`, the session's by default), else the step's setting (a page not opened in this session)."""
    state = st.session_state if state is None else state
    preset = {s.key: s.value for s in step.settings}
    fixed = {s.key for s in step.settings if s.fixed}
    tabs = {s.key for s in step.settings if s.input.tab}  # an open_tabs group: the open tab's name
    return lambda key: preset[key] if key in fixed else state.get(f"{key}__open" if key in tabs else key, preset[key])


def set_up(step: Step) -> None:
    """Give the step's page the step's inputs (as a link would), before switching to it."""
    for s in step.settings:
        if s.input.tab:
            open_tab(st.session_state, s.key, s.value)
        else:
            st.session_state[s.key] = s.value
