"""The inspector's attention view (app/fast/attention_view.py): every kind of the sentence's attention, its tokens
and the view's words, as the browser gets them."""
from __future__ import annotations

from app.fast import attention_view as av
from app.i18n import options, t
from app.resources import shared_view
from model.lessons.probe import kind_weights
from pages.views.inspector import kv_labels

def view_payload(att, kind: str, src_labels, tgt_labels, kv_heads: int, steps: bool, mode: str) -> bytes:
    """The view's bytes for one kind of the sentence's attention: its query and key tokens, the grouped-query
    labels over the heads, whether a query is a decoding step (`steps`: an encoder-decoder's decoder writes one
    token a step), mode: "grid" or "heads"."""
    weights = kind_weights(att, kind).numpy()
    cross = kind == "cross"
    one = {"id": kind, "label": options("inspector.kind", [kind])[kind], "weights": weights,
           "q": src_labels if kind == "encoder_self" else tgt_labels,
           "k": tgt_labels if kind == "decoder_self" else src_labels,
           "q_title": t("inspector.target_query") if cross else t("common.query"),
           "k_title": t("inspector.source_key") if cross else t("common.key"),
           "groups": kv_labels(weights.shape[1], kv_heads), "decoder": steps and kind != "encoder_self",
           "causal": kind == "decoder_self"}
    return av.view_bytes([one], mode)


def show_view(view: tuple, att, kind: str, src_labels, tgt_labels, kv_heads: int, steps: bool, mode: str) -> None:
    """The view of one kind of attention ("grid": every head's tile and the map clicked; "heads": the head view),
    its bytes built once per sentence, kind, mode and language for the whole server (`view` names the model and
    the sentence)."""
    data = shared_view("attention-view", (*view, kind, mode, av.page_resets()), lambda: view_payload(
        att, kind, src_labels, tgt_labels, kv_heads, steps, mode))
    av.attention_view(data, key=mode)
