"""The ViT section of the family page: a small Vision Transformer classifies 8×8 handwritten digits. The
learner picks a test digit or draws one (strokes on a canvas, or edit the same picture as text), and
sees the patches as tokens, the prediction, where [CLS] attends in every layer and head, the attention
rollout, and what the learned position embeddings learned. Layout only: the model and every number come
from model.family.vit (cached in app.resources; data from model.family.digits), the figures from
app.charts.family_vit."""
from __future__ import annotations

import streamlit as st

from app.charts.family_vit import (class_probabilities, cls_attention_tiles, patch_similarity_grid,
                                   patch_similarity_variants, patch_tokens, position_similarity_map, rollout_overlay)
from app.charts.export import matrix_csv
from app.fast.canvas import pixel_canvas
from app.fast.choice import choice_slider, follow
from app.i18n import UserError, t
from app.resources import of_weights
from app.state import keep
from app.ui import error, show_figure, show_matrix, text
from model.family.digits import MAX_VALUE, blank_text, image_from_text, image_to_text, lenient_image, split
from model.family.vit import ViTConfig, classify, neighbour_similarity, position_similarity
from pages.family.vit_pretrained import render_pretrained
from pages.views.family import concept_link, pick_family_model

TASK = "vit-digits"
INDEX = "fam_vit_index"
GRID = "fam_vit_grid"
CANVAS = "fam_vit_canvas"
MAX_GRID_TEXT = 400


def _classification(model, grid: str):
    """model.family.vit.classify of a digit written as text (app.resources.of_weights caches it)."""
    return classify(model, image_from_text(grid))


def _positions(model):
    """The learned positions' similarities and the mean over neighbouring and other patches."""
    S = position_similarity(model)
    return S, neighbour_similarity(S, model.config.grid)


def _test_text(index: int) -> str:
    images, _ = split("test")
    return image_to_text(images[index])


def _use_test_digit() -> None:
    """The index's test digit onto the canvas (the number input's on_change and the button)."""
    ss = st.session_state
    ss[GRID] = _test_text(int(ss.get(INDEX, 0)))


def _clear() -> None:
    st.session_state[GRID] = blank_text()


def _drawn(rows) -> None:
    """A stroke on the canvas: the painted grid becomes the digit (and its text)."""
    st.session_state[GRID] = image_to_text(rows)


def render() -> None:
    st.header(t("family_vit.header"))
    intro = st.container()  # filled once the picker says which model (its numbers are in the text)
    c1, c2 = st.columns(2)
    concept_link("positional.py", t("family_vit.link_positional"), icon=":material/linear_scale:", where=c1)
    concept_link("multihead.py", t("family_vit.link_multihead"), icon=":material/view_module:", where=c2)
    loaded = pick_family_model(TASK, key="fam_vit_model")
    cfg = loaded.config if loaded is not None else ViTConfig()
    with intro:
        text("family_vit.intro", size=cfg.image_size, patch=cfg.patch_size, grid=cfg.grid, patches=cfg.n_patches,
             tokens=cfg.n_tokens)
    if loaded is not None:
        _digits(loaded, cfg)
    st.subheader(t("family_vit.real.header"))
    render_pretrained()  # a real ViT from the Hugging Face layout, on a picture


def _digits(loaded, cfg) -> None:
    """The digit ViT trained here: the canvas, the patches, the prediction, [CLS] attention, rollout, positions."""
    images, labels = split("test")
    n_test = len(images)
    model, path = loaded.model, loaded.path

    m1, m2 = st.columns([3, 1])
    m1.caption(t("family_vit.model_caption", params=model.num_parameters(), layers=cfg.n_layers, heads=cfg.n_heads,
                 d_model=cfg.d_model, patches=cfg.n_patches, patch=cfg.patch_size, tokens=cfg.n_tokens))
    scores = loaded.meta.get("scores") if isinstance(loaded.meta.get("scores"), dict) else {}
    if isinstance(scores.get("test_accuracy"), (int, float)):
        m2.metric(t("family_vit.test_score"), f"{scores['test_accuracy']:.1%}",
                  help=t("family_vit.test_score_help", n=scores.get("test_images", n_test)))

    # ------------------------------------------------------------ the digit
    st.subheader(t("family_vit.input_header"))
    text("family_vit.input", n_test=n_test)
    ss = st.session_state
    left, middle, right = st.columns([1, 1.3, 1])
    index = int(left.number_input(t("family_vit.index", last=n_test - 1), 0, n_test - 1, step=1,
                                  help=t("family_vit.index_help"), on_change=_use_test_digit,
                                  **keep(INDEX, 0, url="vit_index", valid=range(n_test))))
    left.button(t("family_vit.use_digit"), on_click=_use_test_digit, key="fam_vit_use", icon=":material/download:")
    left.button(t("family_vit.clear"), on_click=_clear, key="fam_vit_clear", icon=":material/ink_eraser:")
    # the canvas starts from the linked or kept test digit; "reset this page" brings back test digit 0
    default_grid = _test_text(index) if GRID not in ss else _test_text(0)
    with right:
        grid = st.text_area(t("family_vit.grid"), height=250, help=t("family_vit.grid_help"), max_chars=MAX_GRID_TEXT,
                            **keep(GRID, default_grid, url="vit_grid",
                                   valid=lambda v: isinstance(v, str) and len(v) <= MAX_GRID_TEXT))
    with middle:
        pixel_canvas(lenient_image(grid).tolist(), key=CANVAS, title=t("family_vit.canvas_title"), on_drawn=_drawn,
                     top=MAX_VALUE)

    try:
        image = image_from_text(grid)
    except UserError as e:
        if e.message.code == "family_vit.errors.grid_blank":
            st.info(t("family_vit.errors.grid_blank"), icon=":material/draw:")
        else:
            error(e)
        return
    canonical = image_to_text(image)
    true_label = int(labels[index]) if canonical == _test_text(index) else None
    if true_label is not None:
        left.caption(t("family_vit.is_test_digit", index=index, label=true_label))
    else:
        left.caption(t("family_vit.is_drawing"))

    result = of_weights(_classification, path, canonical, task=TASK, network=True)
    cls = t("family_vit.cls")

    # ------------------------------------------------------------ tokens and prediction
    tok, pred = st.columns([1, 1.4])
    with tok:
        st.subheader(t("family_vit.tokens_header", tokens=cfg.n_tokens))
        fig = patch_tokens(image, result.grid, result.cell, cls_label=cls,
                           title=t("family_vit.patch_title", patches=cfg.n_patches, patch=cfg.patch_size))
        show_figure(fig, name=f"vit-patches-{cfg.n_patches}", key="fam-vit-patches")
        text("family_vit.tokens", pixels=cfg.patch_dim, d_model=cfg.d_model)
    with pred:
        st.subheader(t("family_vit.prediction_header"))
        p1, p2 = st.columns(2)
        p1.metric(t("family_vit.predicted"), str(result.prediction))
        p2.metric(t("family_vit.probability"), f"{result.probs[result.prediction]:.1%}")
        fig = class_probabilities(result.probs, title=t("family_vit.probs_title"), x_title=t("family_vit.digit_axis"),
                                  y_title=t("family_vit.probability_axis"), predicted=result.prediction,
                                  true_label=true_label)
        show_matrix(fig, result.probs[None], name="vit-probabilities", row_labels=[t("family_vit.probability")],
                    col_labels=[str(i) for i in range(len(result.probs))], key="fam-vit-probs")

    # ------------------------------------------------------------ attention from [CLS]
    st.subheader(t("family_vit.attention_header"))
    text("family_vit.attention")
    _cls_attention(image, result, cfg, cls)

    r1, r2 = st.columns([1, 1.2])
    with r1:
        st.subheader(t("family_vit.rollout_header"))
        fig = rollout_overlay(image, result.rollout_grid, result.cell, title=t("family_vit.rollout_title"))
        show_matrix(fig, result.rollout_grid, name="vit-rollout", key="fam-vit-rollout")
    with r2:
        text("family_vit.rollout")

    # ------------------------------------------------------------ learned positions
    st.subheader(t("family_vit.positions_header"))
    _positions_section(path, cfg)


@st.fragment(key="fam-vit-cls")
def _cls_attention(image, result, cfg, cls: str) -> None:
    """Attention from [CLS], all layers or one (its own picker: a change reruns this part only)."""
    L = result.attention.shape[0]
    shown_names = {0: t("family_vit.all_layers"), **{n: t("family_vit.layer_n", n=n) for n in range(1, L + 1)}}
    which = st.selectbox(t("family_vit.layers_shown"), list(shown_names), format_func=shown_names.get,
                         **keep("fam_vit_layer", 0, url="vit_layer", valid=shown_names))
    layers = slice(None) if which == 0 else slice(which - 1, which)
    fig = cls_attention_tiles(image, result.cls_to_patches[layers], result.cls_to_cls[layers],
                              layer_title=t("family_vit.layer"), head_title=t("family_vit.head"), cls_label=cls,
                              title=t("family_vit.tiles_title"), first_layer=max(which, 1))
    rows = [f"{t('family_vit.layer')} {l + 1} {t('family_vit.head')} {h + 1}" for l in range(L)
            for h in range(result.attention.shape[1])]
    show_matrix(fig, result.attention[:, :, 0, :].reshape(len(rows), -1), name="vit-cls-attention", row_labels=rows,
                col_labels=[cls] + [str(k + 1) for k in range(cfg.n_patches)], key="fam-vit-tiles")


@st.fragment(key="fam-vit-positions")
def _positions_section(path, cfg) -> None:
    """The learned positions' similarities (they depend on the model only; the patch slider reruns this part)."""
    S, (near, far) = of_weights(_positions, path, task=TASK, network=True)
    text("family_vit.positions", patches=cfg.n_patches, grid=cfg.grid, tokens=cfg.n_tokens)
    n1, n2 = st.columns(2)
    if near == near and far == far:  # (a grid of one or two patches has no such pairs: NaN)
        n1.metric(t("family_vit.neighbours"), f"{near:.2f}", help=t("family_vit.neighbours_help"))
        n2.metric(t("family_vit.others"), f"{far:.2f}")
    names = [str(k + 1) for k in range(cfg.n_patches)]
    s1, s2 = st.columns([1.4, 1])
    with s1:
        fig = position_similarity_map(S, title=t("family_vit.similarity_title", patches=cfg.n_patches),
                                      x_title=t("family_vit.patch_axis"), y_title=t("family_vit.patch_axis"))
        show_matrix(fig, S, name="vit-position-similarity", row_labels=names, col_labels=names,
                    key="fam-vit-similarity")
    with s2:
        # a patch picked is answered in the browser: every patch's row is sent (app.fast.choice)
        picked = choice_slider(t("family_vit.pick_patch"), range(1, cfg.n_patches + 1), key="fam_vit_patch",
                               url="vit_patch", default=min(6, cfg.n_patches), channel="vit-patch")
        patch = int(picked.value)
        fig = patch_similarity_grid(S[patch - 1], cfg.grid, patch - 1,
                                    title=t("family_vit.patch_similarity_title", patch=patch))
        moves = None
        if picked.live:
            traces, layouts = patch_similarity_variants(S, cfg.grid, [t("family_vit.patch_similarity_title", patch=p)
                                                                      for p in picked.values])
            moves = follow(picked, traces=traces, layouts=layouts)
        show_figure(fig, name="vit-patch-similarity", key="fam-vit-patch-similarity", follow=moves,
                    csv=matrix_csv(S, [str(k + 1) for k in range(cfg.n_patches)],
                                   [str(k + 1) for k in range(cfg.n_patches)]) if moves else
                    matrix_csv(S[patch - 1].reshape(cfg.grid, cfg.grid)))
    if near == near and far == far:
        text("family_vit.positions_result", near=near, far=far)
