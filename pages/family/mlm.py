"""The family page's BERT-style section: a small encoder-only masked language model trained here on the
teaching corpus fills in the [MASK]s a learner types or clicks, and its bidirectional self-attention is
shown beside the shipped decoder-only `lm` reading the same tokens (full squares vs causal triangles): each in
an attention view (app.fast.attention_view), which answers layer, head and tile in the browser, with a table of
the attention every head puts on later tokens; with ATLAS_ATTENTION_VIEW=server the server-drawn grids and one
layer and head picked below them instead. Layout only: the computation is model.family.mlm (cached in app.resources), the figures app/charts/family_mlm.py."""
from __future__ import annotations

import streamlit as st

from app.charts.export import csv_text
from app.charts.family_mlm import mask_predictions
from app.charts.heatmaps import attention_heatmap, head_grid
from app.fast.attention_view import attention_view, available as attention_view_available, page_resets, view_bytes
from app.i18n import UserError, prose, say, t
from app.resources import of_weights, shared_figure, shared_view, weights_key
from app.state import OneBased, keep
from app.page_inputs import FAMILY, SECTIONS
from app.ui import error, show_figure, show_matrix, table, text
from model.training.checkpoint import CheckpointError
from model.family.mlm import fill_masks, later_share, tokens
from pages.views.family import concept_link, pick_family_model
from pages.views.inspector import label, labels
from app.format import escape_md

MAX_CHARS = 400  # per text box; the model reads at most max_len pieces anyway


def _fill(loaded, text_a: str, text_b: str, positions: tuple[int, ...]):
    """model.family.mlm.fill_masks on a loaded family model (app.resources.of_weights caches it)."""
    return fill_masks(loaded.model, loaded.extra, text_a, text_b or None, list(positions))


def _lm():
    """The shipped decoder-only model (LoadedModel), or None when it is missing or damaged."""
    from app.resources import SHIPPED, load_model
    path = SHIPPED["lm"]
    if not (path / "config.json").is_file():
        return None, path
    try:
        return load_model(path), path
    except CheckpointError:
        return None, path


def _keep_masks_through_edits(seq) -> None:
    """Clicked masks belong to tokens: after an edit of either text each one that still applies stays on its
    token, wherever the token moved (model.family.mlm.Tokens.follow); one whose token is gone is dropped.
    The first run keeps what it was given (a link's masks)."""
    ss = st.session_state
    before, now = ss.get("fam_mlm_masked_for"), (list(seq.pieces), list(seq.segments))
    if before is not None and list(before) != list(now) and ss.get("fam_mlm_masked"):
        ss["fam_mlm_masked"] = seq.follow(before, list(ss["fam_mlm_masked"]))
    ss["fam_mlm_masked_for"] = now


def render() -> None:
    st.header(t("family_mlm.header"), anchor=SECTIONS["family.mlm"])
    text("family_mlm.intro")
    concept_link("masks.py", t("family_mlm.link_masks"), icon=":material/change_history:")
    loaded = pick_family_model("mlm", key="fam_mlm_model")
    if loaded is None:
        return
    tok, cfg = loaded.extra, loaded.config
    scores = (loaded.meta or {}).get("scores") or {}
    if "test_accuracy" in scores:
        st.caption(t("family_mlm.card", acc=scores["test_accuracy"], top5=scores.get("test_top5_accuracy", 0.0),
                     en=scores.get("test_accuracy_en", 0.0), ko=scores.get("test_accuracy_ko", 0.0),
                     en_pair=scores.get("test_accuracy_en_with_ko", 0.0),
                     ko_pair=scores.get("test_accuracy_ko_with_en", 0.0), steps=_count(loaded.meta.get("steps"))))
    text("family_mlm.training")

    # ------------------------------------------------------------------ inputs
    text_a = st.text_input(t("family_mlm.text"), max_chars=MAX_CHARS,
                           **FAMILY.mlm_text.keep(prose("family_mlm.default_text")))
    text_b = st.text_input(t("family_mlm.pair"), max_chars=MAX_CHARS,
                           **FAMILY.mlm_pair.keep(prose("family_mlm.default_pair")))
    try:
        seq = tokens(tok, text_a, text_b, cfg.max_len)
    except UserError as e:
        error(e)
        return
    _keep_masks_through_edits(seq)
    if seq.cut:
        st.warning(t("family_mlm.cut", n=cfg.max_len))
    choices = seq.content_positions(tok)
    picked = []
    if choices:  # nothing to click when every token is already [MASK]
        picked = st.pills(t("family_mlm.pick"), choices, selection_mode="multi",
                          format_func=lambda p: escape_md(label(seq.pieces[p])),
                          **FAMILY.mlm_masked.keep([], valid=choices))
    try:
        result = of_weights(_fill, loaded.path, text_a, text_b, tuple(sorted(picked or ())), task="mlm")
    except UserError as e:
        if e.message.code == "family_mlm.errors.nothing_masked":
            st.info(say(e.message))
        else:
            error(e)
        return

    # ------------------------------------------------------------------ predictions
    st.subheader(t("family_mlm.predictions_header"))
    panels, rows = [], []
    for p in result.predictions:
        title = (t("family_mlm.panel_hidden", position=p.position, hidden=label(p.hidden)) if p.hidden is not None
                 else t("family_mlm.panel", position=p.position))
        panels.append((title, labels([pc for pc, _ in p.top]), [pr for _, pr in p.top],
                       label(p.hidden) if p.hidden is not None else None))
        rows.append({t("family_mlm.col_position"): p.position, t("family_mlm.col_segment"): result.segments[p.position],
                     t("family_mlm.col_hidden"): label(p.hidden) if p.hidden is not None else "–",
                     t("family_mlm.col_guess"): label(p.top[0][0]), t("family_mlm.col_prob"): round(p.top[0][1], 3),
                     t("family_mlm.col_rank"): str(p.hidden_rank) if p.hidden_rank is not None else "–"})
    show_figure(mask_predictions(panels, x_title=t("family_mlm.probability")), name="mlm-predictions",
                csv=csv_text(["position", "rank", "piece", "probability"],
                             [(p.position, r + 1, pc, pr) for p in result.predictions for r, (pc, pr) in enumerate(p.top)]),
                key="fam-mlm-predictions")
    table(rows, key="fam-mlm-rows")
    text("family_mlm.predictions_note")

    # ------------------------------------------------------------------ attention: bidirectional vs causal
    st.subheader(t("family_mlm.attention_header"))
    text("family_mlm.attention_intro")
    piece_labels = labels(result.pieces)
    lm, lm_path = _lm()
    lm_weights, lm_labels, lm_note, lm_max = None, None, "family_mlm.no_lm", 0
    if lm is not None and len(result.ids) > lm.config.max_len:  # a model trained here with a longer max_len
        lm, lm_note, lm_max = None, "family_mlm.lm_too_long", lm.config.max_len
    if lm is not None:
        from app.resources import forward_pass
        from model.lessons.probe import kind_weights
        lm_ids = result.filled_ids()
        lm_labels = labels([lm.tokenizer.id_to_piece(i) for i in lm_ids])
        lm_weights = kind_weights(forward_pass(lm_path, lm_ids), "decoder_self")  # (layers, H, T, T)
    layer_word, head_word = t("common.layer"), t("common.head")
    view = (*weights_key(loaded.path), text_a, text_b, tuple(sorted(picked or ())))
    if attention_view_available():  # layer, head and tile answered in the browser
        _views(view, result, piece_labels, lm_weights, lm_labels, lm_path, t(lm_note, n=lm_max))
        st.caption(t("common.rows_cols"))
        return
    left, right = st.columns(2)
    with left:
        st.markdown(t("family_mlm.bert_side"))
        show_figure(shared_figure("fam-mlm-grid", (*view, "mlm"), lambda: head_grid(
            result.attention, layer_title=layer_word, head_title=head_word)), name="mlm-all-heads", key="fam-mlm-grid")
    with right:
        st.markdown(t("family_mlm.lm_side"))
        if lm_weights is None:
            st.info(t(lm_note, n=lm_max))
        else:
            show_figure(shared_figure("fam-mlm-grid", (*view, "lm", *weights_key(lm_path)), lambda: head_grid(
                lm_weights, layer_title=layer_word, head_title=head_word)), name="lm-all-heads", key="fam-mlm-lm-grid")
    _head_detail(result, piece_labels, lm_weights, lm_labels)
    st.caption(t("common.rows_cols"))


def _views(view: tuple, result, piece_labels, lm_weights, lm_labels, lm_path, no_lm: str) -> None:
    """Both models in attention views side by side, each starting at the kept layer and head (a link's
    `mlm_layer` / `mlm_head`, kept without their pickers; the lm's the nearest it has), each with its share of
    attention on later tokens for every layer and head."""
    n_layers, n_heads = result.attention.shape[:2]
    keep("fam_mlm_layer", n_layers - 1, url="mlm_layer", valid=range(n_layers), codec=OneBased)
    keep("fam_mlm_head", 0, url="mlm_head", valid=range(n_heads), codec=OneBased)
    layer, head = st.session_state["fam_mlm_layer"], st.session_state["fam_mlm_head"]
    view = (*view, page_resets())  # part of what the page asks its views for (view_bytes)
    q_title, k_title = t("common.query"), t("common.key")
    left, right = st.columns(2)
    with left:
        st.markdown(t("family_mlm.bert_side"))
        data = shared_view("fam-mlm-view", (*view, "mlm", layer, head), lambda: view_bytes(
            [{"id": "mlm", "label": t("family_mlm.view_mlm"), "weights": result.attention, "q": piece_labels,
              "k": piece_labels, "q_title": q_title, "k_title": k_title, "causal": False}], "grid",
            {"kind": "mlm", "layer": layer + 1, "head": head + 1}, param="mlm_view"))  # each view its own link name
        attention_view(data, key="fam-mlm")
        _later_table(result.attention, "fam-mlm-later")
    with right:
        st.markdown(t("family_mlm.lm_side"))
        if lm_weights is None:
            st.info(no_lm)
            return
        lm_layer, lm_head = min(layer, lm_weights.shape[0] - 1), min(head, lm_weights.shape[1] - 1)
        if (lm_layer, lm_head) != (layer, head):  # a model trained here with more layers or heads than the lm
            st.caption(t("family_mlm.lm_smaller", layers=lm_weights.shape[0], heads=lm_weights.shape[1]))
        data = shared_view("fam-mlm-view", (*view, "lm", *weights_key(lm_path), lm_layer, lm_head), lambda: view_bytes(
            [{"id": "lm", "label": t("family_mlm.view_lm"), "weights": lm_weights, "q": lm_labels, "k": lm_labels,
              "q_title": q_title, "k_title": k_title, "causal": True}], "grid",
            {"kind": "lm", "layer": lm_layer + 1, "head": lm_head + 1}, param="lm_view"))
        attention_view(data, key="fam-mlm-lm")
        _later_table(lm_weights, "fam-mlm-lm-later")


def _later_table(weights, key: str) -> None:
    """The share of attention on later tokens (mean of the rows) of every layer (rows) and head (columns): all of
    it at once, so no choice of layer or head has to ask the server."""
    later = later_share(weights)
    layer_word, head_word = t("common.layer"), t("common.head")
    st.caption(t("family_mlm.later_table"))
    table([{layer_word: str(li + 1), **{f"{head_word} {h + 1}": f"{v:.1%}" for h, v in enumerate(row)}}
           for li, row in enumerate(later)], key=key)


@st.fragment(key="fam-mlm-detail")
def _head_detail(result, piece_labels, lm_weights, lm_labels) -> None:
    """One layer and head of both models (its own pickers: a change reruns this part only)."""
    layer_word, head_word = t("common.layer"), t("common.head")
    n_layers, n_heads = result.attention.shape[:2]
    c1, c2 = st.columns(2)
    layer = c1.selectbox(layer_word, range(n_layers), format_func=lambda i: f"{i + 1}",
                         **keep("fam_mlm_layer", n_layers - 1, url="mlm_layer", valid=range(n_layers), codec=OneBased))
    head = c2.selectbox(head_word, range(n_heads), format_func=lambda i: f"{i + 1}",
                        **keep("fam_mlm_head", 0, url="mlm_head", valid=range(n_heads), codec=OneBased))
    later = later_share(result.attention)
    left, right = st.columns(2)
    with left:
        w = result.attention[layer, head]
        fig = attention_heatmap(w, piece_labels, piece_labels, query_title=t("common.query"), key_title=t("common.key"),
                                title=t("family_mlm.map_title", model="mlm", layer=layer + 1, head=head + 1))
        show_matrix(fig, w, name=f"mlm-L{layer + 1}-H{head + 1}", row_labels=piece_labels, col_labels=piece_labels,
                    key="fam-mlm-map")
        st.metric(t("family_mlm.later"), f"{later[layer, head]:.1%}")
    with right:
        if lm_weights is not None:
            lm_layer = min(layer, lm_weights.shape[0] - 1)
            lm_head = min(head, lm_weights.shape[1] - 1)
            if (lm_layer, lm_head) != (layer, head):
                st.caption(t("family_mlm.lm_smaller", layers=lm_weights.shape[0], heads=lm_weights.shape[1]))
            w = lm_weights[lm_layer, lm_head]
            fig = attention_heatmap(w, lm_labels, lm_labels, query_title=t("common.query"), key_title=t("common.key"),
                                    title=t("family_mlm.map_title", model="lm", layer=lm_layer + 1, head=lm_head + 1))
            show_matrix(fig, w, name=f"lm-L{lm_layer + 1}-H{lm_head + 1}", row_labels=lm_labels, col_labels=lm_labels,
                        key="fam-mlm-lm-map")
            st.metric(t("family_mlm.later"), f"{later_share(lm_weights)[lm_layer, lm_head]:.1%}")


def _count(value) -> str:
    """A count from the model's files as the page writes counts ("6,000"), "?" when it is not one."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "?"
