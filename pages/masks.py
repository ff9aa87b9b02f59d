"""Masks (causal, padding, both) before and after softmax, and the three kinds of attention of
an encoder-decoder model; encoder-only, decoder-only and encoder-decoder models compared."""
import streamlit as st

from pages.views.attention_lab import valid_index
from pages.views.masks import SEEDED, encoder_decoder_models, pick_model as _pick_model, tokenize as _tokenize
from app.charts.export import rows_csv
from app.charts.heatmaps import attention_heatmap, head_grid, heatmap_variants, matrix_heatmap
from app.fast.choice import choice_slider, follow, follow_text
from app.charts.style import amend, lift_title
from app.fast.attention_view import attention_view, available as attention_view_available, page_resets, view_bytes
from app.i18n import Message, UserError, options, t
from app.resources import parameter_count, shared_figure, shared_view
from app.state import OneBased, keep, open_tabs
from app.page_inputs import MASKS, SECTIONS
from app.ui import error, show_matrix, table, text
from model.nn.config import PRESETS
from model.lessons.mask_demo import SCORES_OF, mask_demo_batch
from model.lessons.probe import MASK_KINDS, all_heads_matrix, attention_maps, examples, max_future_weight

MAX_SENTENCES = 6
EXAMPLES = examples()["masks"]
KINDS = ("encoder_self", "decoder_self", "cross")
PAIR_KEYS = {"causal": "m-causal", "padding": "m-pad", "causal_padding": "m-both"}  # widget keys of each tab
ARCHITECTURES = {"encoder-only": "BERT, RoBERTa", "decoder-only": "GPT, LLaMA",  # with well-known models of each
                 "encoder-decoder": "Transformer (2017), T5, BART"}


def fig_once(name: str, model_key: tuple, key: tuple, build):
    """A figure of this page built once per (name, model, key, language): key holds every input it shows."""
    return shared_figure(f"masks-{name}", (model_key, *key), build)


def _one_based(label: str, n: int, key: str, where, url: str) -> int:
    """Pick 1…n with a kept, linked slider (app.ui.one_based_slider passes its own value, so it cannot
    take keep's arguments). st.slider refuses min == max: with n = 1 there is nothing to choose."""
    if n <= 1:
        where.caption(f"{label}: 1 " + t("common.only_one"))
        return 1
    return where.slider(label, 1, n, **keep(key, 1, url=url, valid=range(1, n + 1)))


def _sentences(batch_text: str) -> list[str]:
    lines = [ln.strip() for ln in (batch_text or "").splitlines() if ln.strip()]
    if not lines:
        raise UserError("masks.errors.no_sentence")
    if len(lines) > MAX_SENTENCES:
        st.warning(t("masks.too_many_sentences", n=MAX_SENTENCES))
    return lines[:MAX_SENTENCES]


def _show_pair(per_head, head, labels, name, key, fig_key, model_key):
    """Masked scores (−∞ where the mask forbids) and the softmax of them, side by side, for the head chosen (every
    head's are sent where the browser answers the head slider: app.fast.choice)."""
    view = per_head[head.value - 1]
    small = len(labels) <= 14
    c1, c2 = st.columns(2)
    with c1:
        fig = fig_once("scores", model_key, (*fig_key, head.value), lambda: lift_title(matrix_heatmap(
            view.masked, labels, labels, title=t("masks.scores_title"), x_title=f"{t('common.key')} →",
            y_title=f"{t('common.query')} ↓", zmid=0, show_text=small)))
        show_matrix(fig, view.masked, name=f"{name}-masked-scores", row_labels=labels, col_labels=labels,
                    key=f"{key}-s", follow=follow(head, traces=heatmap_variants([v.masked for v in per_head],
                                                                                show_text=small)))
    with c2:
        fig = fig_once("weights", model_key, (*fig_key, head.value), lambda: lift_title(attention_heatmap(
            view.weights, labels, labels, title=t("masks.weights_title"), query_title=t("common.query"),
            key_title=t("common.key"), show_text=small)))
        show_matrix(fig, view.weights, name=f"{name}-weights", row_labels=labels, col_labels=labels, key=f"{key}-w",
                    follow=follow(head, traces=heatmap_variants([v.weights for v in per_head], show_text=small)))
    follow_text([t("common.rows_cols") + " " + t("masks.pair_stats_zero" if v.max_on_masked == 0 else "masks.pair_stats",
                                                 n=v.n_masked, largest=v.max_on_masked, deviation=v.max_row_error)
                 for v in per_head], head, key=f"{key}-stats", fallback=st.caption)


def _padding_figure(mb, rows, cols):
    fig = lift_title(matrix_heatmap(mb.keep_matrix, cols, rows, colorscale=[[0, "#d9d9d9"], [1, "#9ecae1"]],
                                    reversescale=False, zmin=0, zmax=1, decimals=0, title=t("masks.padding_title"),
                                    x_title=t("masks.position_key"), y_title=t("masks.sentence"),
                                    height=120 + 40 * len(rows)))
    return amend(fig, every_trace=dict(showscale=False))


st.title(t("masks.title"))
text("masks.intro")

trained = encoder_decoder_models()
model_ids = [SEEDED] + list(trained)
# the shipped, trained EN→KO model (when the app has one) shows real alignments: prefer it
model_names = {m: t("masks.seeded_option") if m == SEEDED else m for m in model_ids}
choice = st.selectbox(t("masks.model"), model_ids, format_func=model_names.get, help=t("masks.model_help"),
                      **MASKS.model.keep("en-ko" if "en-ko" in trained else SEEDED, valid=model_ids))
model, tok, model_desc, seeded, model_key = _pick_model(choice, trained)
cfg = model.config
st.caption(t("masks.model_caption", desc=model_desc, d_model=cfg.d_model, heads=cfg.n_heads,
             enc=cfg.n_encoder_layers, dec=cfg.n_decoder_layers, vocab=cfg.vocab_size))

# Speed: each section below is a fragment with its own inputs, so an input of one section reruns
# that section only (the model picker above reruns the page). Model results, figures and tables are built
# once per model version, inputs and language (app.resources.shared_view / shared_figure, bounded).

# ----------------------------------------------------------------------------- 1. masks
@st.fragment(key="mask-batch")
def masks_section(model, tok, cfg, model_key):
    st.header(t("masks.masks_header"))
    batch_text = st.text_area(t("masks.batch_label", n=MAX_SENTENCES), height=110,
                              **keep("mask_batch", "\n".join(EXAMPLES["batch"]), url="batch"))
    try:
        lines = _sentences(batch_text)
        toks = [_tokenize(tok, ln, Message("masks.what.sentence", {"n": i + 1})) for i, ln in enumerate(lines)]
        batch_ids = tuple(tuple(ids) for ids, _ in toks)
        mb = shared_view("masks-batch", (model_key, batch_ids, tok.pad_id),
                         lambda: mask_demo_batch(model, [list(ids) for ids in batch_ids], tok.pad_id))
        B, L = len(mb.ids), len(mb.ids[0])
        labels = [labs + ["<pad>"] * (L - len(labs)) for _, labs in toks]
        st.markdown(t("masks.token_ids", pad=tok.pad_id, length=L))
        table(shared_view("masks-ids", (model_key, batch_ids, tuple(map(tuple, labels))), lambda: [
            {"#": b + 1, **{str(j): f"{labels[b][j]} ({mb.ids[b][j]})" for j in range(L)}} for b in range(B)]),
            key="masks-ids")
        rows, cols = [f"#{b + 1}" for b in range(B)], [str(j) for j in range(L)]
        fig = fig_once("padding", model_key, (batch_ids,), lambda: _padding_figure(mb, rows, cols))
        show_matrix(fig, mb.keep_matrix, name="padding-mask", row_labels=rows, col_labels=cols, key="pad-mask")

        c1, c2 = st.columns(2)
        st.session_state["mask_which"] = valid_index(st.session_state.get("mask_which"), B)  # labels hold the text
        sentence_names = {b: f"#{b + 1}: {lines[b][:40]}" for b in range(B)}
        which = c1.selectbox(t("masks.sentence_to_inspect"), list(sentence_names), format_func=sentence_names.get,
                             **keep("mask_which", 0, url="which", valid=sentence_names, codec=OneBased))
        head = choice_slider(t("common.head"), range(1, cfg.n_heads + 1), key="mask_head", url="head", default=1,
                             channel="mask-head", where=c2)
        heads = range(cfg.n_heads) if head.live else [head.value - 1]  # every head where the browser answers
        every = shared_view("masks-views", (model_key, batch_ids, tok.pad_id, which, tuple(heads)),
                            lambda: [mb.views(which, h) for h in heads])
        if not head.live:
            every = [every[0]] * cfg.n_heads  # the server's head, whichever is asked
        n = mb.lengths[which]
        # every tab is drawn (three small pairs of maps); open_tabs keeps the open one across language switches
        # and in the link
        for kind, tab in open_tabs({k: t(f"masks.tab.{k}") for k in MASK_KINDS}, key="mask_tab", url="tab"):
            with tab:
                text(f"masks.tab_{kind}", n=n)
                st.caption(t("masks.scores_caption", scores=t(f"masks.scores_of.{SCORES_OF[kind]}")))
                if kind == "padding" and n == L:
                    st.info(t("masks.no_padding"))
                per_head = [views[kind] for views in every]
                pair_labels = labels[which][:per_head[0].size]
                _show_pair(per_head, head, pair_labels, kind.replace("_", "-"), PAIR_KEYS[kind],
                           (batch_ids, which, kind, tuple(pair_labels)), model_key)
    except UserError as e:
        error(e)


masks_section(model, tok, cfg, model_key)

# ----------------------------------------------------------------------------- 2. three attentions
@st.fragment(key="mask-kinds")
def kinds_section(model, tok, seeded, model_key):
    st.header(t("masks.kinds_header"), anchor=SECTIONS["masks.kinds"])
    text("masks.kinds_intro")
    c1, c2 = st.columns(2)
    src_text = c1.text_input(t("masks.what.source"), **MASKS.src.keep(EXAMPLES["source"]))
    tgt_text = c2.text_input(t("masks.what.target"), **MASKS.tgt.keep(EXAMPLES["target"]))
    kind_names = options("masks.kind", KINDS)
    kind = st.radio(t("masks.attention"), KINDS, format_func=kind_names.get, horizontal=True,
                    **MASKS.kind.keep(KINDS[0], valid=KINDS))
    try:
        src_ids, src_labels = _tokenize(tok, src_text, Message("masks.what.source"))
        tgt_ids, tgt_labels = _tokenize(tok, tgt_text, Message("masks.what.target"))
        dec_ids, dec_labels = [tok.bos_id] + tgt_ids, ["<s>"] + tgt_labels  # shifted right
        ran = (tuple(src_ids), tuple(dec_ids))
        maps = shared_view("masks-maps", (model_key, *ran), lambda: attention_maps(model, src_ids, dec_ids))
        w = maps[kind]  # (layers, H, Lq, Lk)
        q_labels = src_labels if kind == "encoder_self" else dec_labels
        k_labels = dec_labels if kind == "decoder_self" else src_labels
        q_title, k_title = t(f"masks.axis.{kind}.query"), t(f"masks.axis.{kind}.key")
        rule = t("common.rows_cols_cross") if kind == "cross" else t("common.rows_cols")
        shown = (*ran, kind, tuple(q_labels), tuple(k_labels))
        if attention_view_available():  # layer, head and every map answered in the browser
            _kinds_view(w, kind, kind_names[kind], q_labels, k_labels, q_title, k_title, shown, model_key)
            st.caption(rule + " " + t("masks.shape", q=w.shape[2], k=w.shape[3]))
            _kinds_metrics(maps, ran, seeded, model_key)
            return
        c1, c2 = st.columns(2)
        layer = _one_based(t("common.layer"), w.shape[0], MASKS.layer.key, c1, MASKS.layer.url)
        head = _one_based(t("common.head"), w.shape[1], MASKS.head.key, c2, MASKS.head.url)
        left, right = st.columns([3, 2])
        with left:
            one = w[layer - 1, head - 1]  # (Lq, Lk)
            fig = fig_once("one", model_key, (*shown, layer, head), lambda: lift_title(attention_heatmap(
                one, q_labels, k_labels, query_title=q_title, key_title=k_title,
                title=f"{kind_names[kind]} · {t('common.layer')} {layer} · {t('common.head')} {head}")))
            show_matrix(fig, one, name=f"{kind}-l{layer}-h{head}", row_labels=q_labels, col_labels=k_labels,
                        key="kind_one")
            st.caption(rule + " " + t("masks.shape", q=w.shape[2], k=w.shape[3]))
        with right:
            fig = fig_once("grid", model_key, shown, lambda: head_grid(w, layer_title=t("common.layer"),
                                                            head_title=t("common.head"),
                                                            height=110 + 110 * w.shape[0]))
            show_matrix(fig, all_heads_matrix(w), name=f"{kind}-all-heads",
                        row_labels=[f"L{l + 1}H{h + 1}:{q}" for l in range(w.shape[0]) for h in range(w.shape[1])
                                    for q in q_labels], col_labels=k_labels, key="kind_grid")
            st.caption(t("masks.grid_caption"))
        _kinds_metrics(maps, ran, seeded, model_key)
    except UserError as e:
        error(e)


def _kinds_metrics(maps, ran, seeded, model_key) -> None:
    future = shared_view("masks-future", (model_key, *ran), lambda: max_future_weight(maps["decoder_self"]))
    m1, m2, m3 = st.columns(3)
    m1.metric(t("masks.metric.encoder_self"), "×".join(map(str, maps["encoder_self"].shape[2:])))
    m2.metric(t("masks.metric.decoder_self"), f"{future:g}")
    m3.metric(t("masks.metric.cross"), "×".join(map(str, maps["cross"].shape[2:])))
    if seeded:
        st.caption(t("masks.untrained_note"))


def _kinds_view(w, kind, name, q_labels, k_labels, q_title, k_title, shown, model_key) -> None:
    """The attention view of this kind (app.fast.attention_view): its first layer and head are the page's inputs
    (a link or a tour stop sets them; without their sliders they are kept as they are)."""
    layers, heads = w.shape[:2]
    keep(MASKS.layer.key, 1, url=MASKS.layer.url, valid=range(1, layers + 1))
    keep(MASKS.head.key, 1, url=MASKS.head.url, valid=range(1, heads + 1))
    layer, head = st.session_state[MASKS.layer.key], st.session_state[MASKS.head.key]
    data = shared_view("masks-view", (model_key, *shown, layer, head, page_resets()), lambda: view_bytes(
        [{"id": kind, "label": name, "weights": w, "q": q_labels, "k": k_labels, "q_title": q_title,
          "k_title": k_title, "causal": kind == "decoder_self"}], "grid",
        {"kind": kind, "layer": layer, "head": head}))
    attention_view(data, key="masks-kinds")


kinds_section(model, tok, seeded, model_key)

# ----------------------------------------------------------------------------- 3. architectures
@st.fragment(key="mask-arch")
def architectures_section():
    st.header(t("masks.arch_header"))
    preset = st.selectbox(t("masks.preset"), list(PRESETS),
                          format_func=lambda p: f"{p} (d_model={PRESETS[p].d_model}, N={PRESETS[p].n_encoder_layers}, "
                                                f"V={PRESETS[p].vocab_size:,})",
                          **keep("arch_preset", next(iter(PRESETS)), url="preset", valid=list(PRESETS)))
    base = PRESETS[preset]
    col = {c: t(f"masks.column.{c}") for c in ("architecture", "parameters", "examples", "attentions", "masks", "use")}
    arch_rows = [{col["architecture"]: t(f"masks.arch.{arch}.name"),
                  col["parameters"]: f"{parameter_count(base.replace(architecture=arch).to_dict()) / 1e6:.1f}M",  # as the overview
                  col["examples"]: known,
                  **{col[c]: t(f"masks.arch.{arch}.{c}") for c in ("attentions", "masks", "use")}}
                 for arch, known in ARCHITECTURES.items()]
    table(arch_rows, key="masks-arch")
    st.download_button(t("common.download_csv"), rows_csv(arch_rows), file_name="architectures.csv", mime="text/csv",
                       key="arch_csv")
    text("masks.arch_note")


architectures_section()
