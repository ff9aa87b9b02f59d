"""The decoder-only (GPT-style) section of the family page: the shipped `lm` with its causal maps (the numbers
from model.family.gpt, cached in app.resources). Its every layer x head map goes to the browser once, in the
attention view (app.fast.attention_view), which answers the layer and head there; with ATLAS_ATTENTION_VIEW=server
a layer slider and the server-drawn mean over heads instead."""
from __future__ import annotations

import streamlit as st

from app.charts.curves import bar_chart
from app.charts.heatmaps import attention_heatmap
from app.fast.attention_view import attention_view, available as attention_view_available, page_resets, view_bytes
from app.i18n import UserError, t
from app.inputs import piece_label
from app.resources import SHIPPED, of_weights, shared_view, weights_key
from app.state import keep
from app.ui import error, show_figure, text
from model.training.checkpoint import CheckpointError
from model.family.gpt import MAX_TOKENS, future_weight, next_token_view
from pages.views.family import concept_link


def render() -> None:
    st.header(t("family_gpt.header"))
    text("family_gpt.changed")
    c1, c2 = st.columns(2)
    concept_link("masks.py", t("family_gpt.link_masks"), ":material/grid_on:", where=c1)
    concept_link("inspector.py", t("family_gpt.link_inspector"), ":material/visibility:", where=c2)
    sentence = st.text_input(t("family_gpt.sentence"), max_chars=300,
                             **keep("fam_gpt_text", t("family_gpt.default_sentence"), url="gpt_text"))
    if not (SHIPPED["lm"] / "config.json").is_file():
        st.info(t("family.no_model", task="lm"))
        return
    try:
        view = of_weights(next_token_view, SHIPPED["lm"], sentence)
    except UserError as e:
        error(e)
        return
    except CheckpointError as e:
        error(UserError("family.cannot_load", name="lm", detail=str(e)[:300]))
        return
    if view.truncated:
        st.warning(t("family_gpt.truncated", limit=MAX_TOKENS))
    left, right = st.columns(2)
    with left:
        show_figure(bar_chart([piece_label(p) for p, _ in view.top], [p for _, p in view.top],
                              horizontal=True, y_range=[0, 1], title=t("family_gpt.next"),
                              x_title=t("family_gpt.probability")), name="gpt-next-token", key="gpt-next-token")
    with right:
        pieces = [piece_label(p) for p in view.pieces]  # raw tokens: the view and the builder draw them as text
        if attention_view_available():  # layer and head answered in the browser
            _view(view.attention, pieces, sentence)
        else:
            _server_map(view.attention, pieces)
    st.caption(t("family_gpt.future", value=future_weight(view.attention)))


def _view(weights, pieces: list[str], sentence: str) -> None:
    """The attention view of the lm's causal self-attention: it starts at the kept layer (a link's `gpt_layer`,
    kept without its slider) and at the mean over heads, as the server-drawn map showed. The bytes are shared by
    every session asking for the same first view; the page's resets are part of what it asks (view_bytes)."""
    n_layers = weights.shape[0]
    keep("fam_gpt_layer", n_layers, url="gpt_layer", valid=range(1, n_layers + 1))
    layer = st.session_state["fam_gpt_layer"]
    data = shared_view("fam-gpt-view", (*weights_key(SHIPPED["lm"]), sentence, layer, page_resets()), lambda: view_bytes(
        [{"id": "lm", "label": t("family_gpt.view_label"), "weights": weights, "q": pieces, "k": pieces,
          "q_title": t("common.query"), "k_title": t("common.key"), "causal": True}], "grid",
        {"kind": "lm", "layer": layer, "head": 0}, param="gpt_view"))  # head 0: the mean over heads
    attention_view(data, key="fam-gpt")


def _server_map(weights, pieces: list[str]) -> None:
    """The server-drawn map (ATLAS_ATTENTION_VIEW=server): a layer slider and that layer's mean over heads."""
    n_layers, n_heads = weights.shape[:2]
    layer = st.slider(t("family_gpt.layer"), 1, n_layers, **keep("fam_gpt_layer", n_layers, url="gpt_layer",
                                                               valid=range(1, n_layers + 1))) if n_layers > 1 else 1
    show_figure(attention_heatmap(weights[layer - 1].mean(0), pieces, pieces,
                                  title=t("family_gpt.map_title", layer=layer, heads=n_heads),
                                  query_title=t("common.query"), key_title=t("common.key")),
                name="gpt-causal-attention", key="gpt-causal-attention")
