"""The DETR section of the family page: a trained DETR finds rectangles, circles and triangles in a
picture; each object query's cross-attention shows where it looked. Layout only: the model and every
number come from model.family.detr (cached in app.resources), the figures from app.charts.family_detr."""
from __future__ import annotations

import random

import streamlit as st

from app.charts.family_detr import attention_overlay, class_colour, query_grid, query_self_attention, scene_figure
from app.i18n import t
from app.resources import of_weights
from app.state import OneBased, between, keep
from app.ui import show_figure, show_matrix, text
from model.family.detr import detect, generate
from model.family.shapes import CLASSES
from pages.views.family import pick_family_model

TASK = "detr-shapes"
MAX_SEED = 999_999
GREY = "#888888"


def extra_boxes(scores: dict) -> int | None:
    """Kept predictions that found no object (duplicates and false alarms) in the card's test split, from its
    recall, precision and object count: found objects / precision - found objects."""
    try:
        found = float(scores["found"]) * int(scores["objects"])
        return round(found / float(scores["precision"]) - found)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def _new_seed() -> None:
    st.session_state["fam_detr_seed"] = random.randrange(MAX_SEED + 1)


def _detection(model, seed: int, threshold: float):
    """model.family.detr.detect on the generated picture of `seed` (app.resources.of_weights caches it)."""
    scene = generate(seed, model.config.image_size)
    return detect(model, scene.image, threshold, (scene.classes, scene.boxes))


def _class_name(c: int) -> str:
    return t(f"family_detr.class.{CLASSES[int(c)]}")


def _box_text(box) -> str:
    return ", ".join(f"{float(v):.2f}" for v in box)


def render() -> None:
    st.header(t("family_detr.header"))
    text("family_detr.intro")
    c1, c2 = st.columns(2)
    c1.page_link("../pages/masks.py", label=t("family_detr.link_masks"), icon=":material/grid_on:")
    c2.page_link("../pages/multihead.py", label=t("family_detr.link_multihead"), icon=":material/view_module:")

    loaded = pick_family_model(TASK, key="fam_detr_model")
    if loaded is None:
        return
    cfg, model = loaded.config, loaded.model
    st.caption(t("family_detr.model_caption", d_model=cfg.d_model, heads=cfg.n_heads, enc=cfg.n_encoder_layers,
                 dec=cfg.n_decoder_layers, queries=cfg.n_queries, grid=cfg.grid,
                 params=model.num_parameters()))
    text("family_detr.recipe")

    # ------------------------------------------------------------ inputs
    c1, c2, c3 = st.columns([2, 1, 3], vertical_alignment="bottom")
    seed = int(c1.number_input(t("family_detr.seed"), 0, MAX_SEED, step=1, help=t("family_detr.seed_help"),
                               **keep("fam_detr_seed", 0, url="detr_seed", valid=range(MAX_SEED + 1))))
    c2.button(t("family_detr.new_image"), on_click=_new_seed, key="fam_detr_new", icon=":material/casino:")
    threshold = float(c3.slider(t("family_detr.threshold"), 0.0, 1.0, step=0.05, help=t("family_detr.threshold_help"),
                                **keep("fam_detr_threshold", 0.5, url="detr_threshold", valid=between(0.0, 1.0))))

    det = of_weights(_detection, loaded.path, seed, threshold, task=TASK, network=True)
    N = len(det.scores)

    m1, m2, m3, m4 = st.columns(4)
    m1.metric(t("family_detr.found"), f"{int(det.found.sum())} / {len(det.gt_classes)}", help=t("family_detr.found_help"))
    m2.metric(t("family_detr.shown"), f"{int(det.keep.sum())} / {N}")
    scores = loaded.meta.get("scores") if isinstance(loaded.meta.get("scores"), dict) else {}
    if isinstance(scores.get("found"), (int, float)):
        m3.metric(t("family_detr.test_score"), f"{scores['found']:.1%}",
                  help=t("family_detr.test_score_help", images=scores.get("images", "?")))
    extra = extra_boxes(scores)
    if extra is not None:  # recall alone would hide the duplicates: precision beside it
        m4.metric(t("family_detr.test_precision"), f"{scores['precision']:.1%}",
                  help=t("family_detr.test_precision_help", extra=extra, images=scores["images"]))

    # ------------------------------------------------------------ picture and queries
    labels = [f"q{i + 1} {_class_name(det.classes[i])} {det.scores[i]:.2f}" for i in range(N)]
    left, right = st.columns([1, 1])
    with left:
        shown = [i for i in range(N) if det.keep[i]]
        fig = scene_figure(det.image, det.gt_boxes, [_class_name(c) for c in det.gt_classes],
                           det.boxes[shown], [labels[i] for i in shown], det.classes[shown],
                           title=t("family_detr.scene_title", seed=seed), gt_name=t("family_detr.ground_truth"),
                           pred_name=t("family_detr.prediction"))
        show_figure(fig, name=f"detr-picture-{seed}", key="fam-detr-scene")
        if not shown:
            st.info(t("family_detr.nothing_shown"))
    with right:
        st.subheader(t("family_detr.queries_header", n=N))
        matched = {int(q): j for j, q in enumerate(det.match_query) if q >= 0}
        st.dataframe([{
            t("family_detr.col_query"): f"q{i + 1}",
            t("family_detr.col_class"): _class_name(det.classes[i]),
            t("family_detr.col_probability"): round(float(det.scores[i]), 3),
            t("family_detr.col_no_object"): round(float(det.probs[i, -1]), 3),
            t("family_detr.col_box"): _box_text(det.boxes[i]),
            t("family_detr.col_shown"): bool(det.keep[i]),
            t("family_detr.col_object"): (_class_name(det.gt_classes[matched[i]]) + f" #{matched[i] + 1}"
                                          if i in matched else ""),
            t("family_detr.col_iou"): round(float(det.match_iou[matched[i]]), 2) if i in matched else None,
        } for i in range(N)], hide_index=True, height=35 * (N + 1) + 3)

    # ------------------------------------------------------------ every query's cross-attention
    st.subheader(t("family_detr.grid_header"))
    text("family_detr.grid")
    no_object = t("family_detr.no_object")
    titles = [t("family_detr.grid_title", number=i + 1,
                label=f"{_class_name(det.classes[i])} {det.scores[i]:.2f}" if det.keep[i]
                else f"{no_object} {det.probs[i, -1]:.2f}") for i in range(N)]
    fig = query_grid(det.image, det.cross_map(-1, -1), titles,
                     boxes=[det.boxes[i] if det.keep[i] else None for i in range(N)],
                     colours=[class_colour(det.classes[i]) if det.keep[i] else GREY for i in range(N)],
                     value_title=t("family_detr.grid_value"))
    show_figure(fig, name=f"detr-queries-{seed}", key="fam-detr-grid")

    # ------------------------------------------------------------ one query, layer, head
    st.subheader(t("family_detr.detail_header"))
    text("family_detr.detail")
    _detail(det, labels, seed, no_object)


@st.fragment(key="fam-detr-detail")
def _detail(det, labels: list[str], seed: int, no_object: str) -> None:
    """One query, layer and head (its own pickers: a change reruns this part only)."""
    N = len(det.scores)
    n_layers, n_heads = det.cross.shape[0], det.cross.shape[1]
    queries = list(range(N))
    layers = list(range(n_layers))
    heads = [-1, *range(n_heads)]
    head_word, layer_word, mean_word = t("family_detr.head"), t("family_detr.layer"), t("family_detr.mean_heads")
    head_name = lambda h: mean_word if h < 0 else f"{head_word} {h + 1}"  # noqa: E731
    c1, c2, c3 = st.columns(3)
    q = c1.selectbox(t("family_detr.query"), queries, format_func=lambda i: labels[i],
                     **keep("fam_detr_query", 0, url="detr_query", valid=queries, codec=OneBased))
    layer = c2.selectbox(layer_word, layers, format_func=lambda i: f"{layer_word} {i + 1}",
                         **keep("fam_detr_layer", n_layers - 1, url="detr_layer", valid=layers, codec=OneBased))
    head = c3.selectbox(head_word, heads, format_func=head_name,
                        **keep("fam_detr_head", -1, url="detr_head", valid=heads, codec=OneBased))
    left, right = st.columns(2)
    with left:
        weights = det.cross_map(layer, head)[q]
        label = f"{_class_name(det.classes[q])} {det.scores[q]:.2f}" if det.keep[q] else no_object
        fig = attention_overlay(det.image, weights, box=det.boxes[q] if det.keep[q] else None,
                                box_colour=class_colour(det.classes[q]),
                                title=t("family_detr.overlay_title", number=q + 1, label=label, layer=layer + 1,
                                        which=head_name(head)),
                                value_title=t("family_detr.grid_value"))
        show_matrix(fig, weights, name=f"detr-{seed}-q{q + 1}-layer{layer + 1}-cross", key="fam-detr-overlay")
    with right:
        st.markdown(f"**{t('family_detr.self_header')}**")
        text("family_detr.self")
        short = [f"q{i + 1}" for i in range(N)]
        sm = det.self_map(layer, head)
        fig = query_self_attention(sm, short, title=t("family_detr.self_title", layer=layer + 1, which=head_name(head)),
                                   query_title=t("family_detr.query"), key_title=t("family_detr.query"))
        show_matrix(fig, sm, name=f"detr-{seed}-layer{layer + 1}-self", row_labels=short, col_labels=short,
                    key="fam-detr-self")
