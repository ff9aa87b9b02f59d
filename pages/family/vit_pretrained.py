"""The ViT section's second part: a real Vision Transformer in the Hugging Face layout (e.g.
google/vit-base-patch16-224), found in pretrained/, in the Hugging Face cache or at a folder the learner types,
reads a picture (one drawn for the app, or an upload): its five most probable classes, each head's [CLS] attention
over the patches, and the attention rollout. Layout only: the model runs through model.hub.vit (cached in
app.resources), the figures come from app.charts.family_vit_image. Drawn only while its box is open."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.charts.curves import bar_chart
from app.charts.family_vit_image import head_attention_tiles, image_rollout, rollout_range
from app.format import escape_md
from app.i18n import UserError, t
from app.resources import load_model, of_weights, pretrained_dir
from app.state import keep, open_box
from app.ui import error, show_matrix, text
from model.errors import CheckpointError
from model.hub import hub_cache_dir
from model.hub.vit import image_models, read_image, see_picture, shipped_images
from model.lessons.pictures import departure_from_even, picture_fit

FOLDER = "__folder__"  # the model picker's last option: a folder typed by the learner
UPLOAD = "__upload__"  # the picture picker's last option: the learner's own file
MAX_PATH = 500
NEARLY_EVEN = 0.25  # a rollout whose every share is within 25 % of the even 1/P picks out no patch


def render_pretrained() -> None:
    box = open_box(t("family_vit.real.box"), key="fam_vit_real_box")
    with box:
        if box.open:
            _section()


def _section() -> None:
    text("family_vit.real_intro")
    models = image_models(pretrained_dir(), hub_cache_dir())
    options = [*models, FOLDER]
    names = {FOLDER: t("family_vit.real.folder_option"), **{n: n for n in models}}
    choice = st.selectbox(t("family_vit.real.model"), options, format_func=names.get,
                          **keep("fam_vit_real_model", options[0], url="vit_real_model", valid=lambda v: v in options))
    if not models:
        st.info(t("family_vit.real.none", folder=str(pretrained_dir())), icon=":material/info:")
    if choice == FOLDER:
        typed = st.text_input(t("family_vit.real.folder"), max_chars=MAX_PATH, help=t("family_vit.real.folder_help"),
                              **keep("fam_vit_real_folder", "",
                                     valid=lambda v: isinstance(v, str) and len(v) <= MAX_PATH)).strip()
        if not typed:
            return
        folder = Path(typed).expanduser()
    else:
        folder = models[choice]
    try:
        loaded = load_model(folder)
    except CheckpointError as e:
        error(UserError("family_vit.real.cannot_load"), detail=str(e)[:300])
        return
    if loaded.meta.get("family") != "vit":
        error(UserError("family_vit.real.not_vit", kind=str(loaded.meta.get("model_type") or "?")))
        return
    cfg = loaded.config
    st.caption(t("family_vit.real.caption", params=loaded.model.num_parameters(), layers=cfg.n_layers,
                 heads=cfg.n_heads, d_model=cfg.d_model, side=cfg.image_size, patch=cfg.patch_size,
                 patches=cfg.n_patches, tokens=cfg.n_tokens,
                 licence=escape_md(loaded.meta.get("licence") or t("family_vit.real.licence_unknown"))))  # the model's own words: text, not Markdown

    pictures = shipped_images()
    picks = [*pictures, UPLOAD]
    labels = {UPLOAD: t("family_vit.real.upload_option"), **{n: t(f"family_vit.real.pictures.{n}") for n in pictures}}
    pick = st.segmented_control(t("family_vit.real.picture"), picks, format_func=labels.get,
                                **keep("fam_vit_real_picture", picks[0], url="vit_real_picture",
                                       valid=picks)) or picks[0]
    if pick == UPLOAD:
        upload = st.file_uploader(t("family_vit.real.upload"), type=["png", "jpg", "jpeg", "webp", "gif", "bmp"],
                                  key="fam_vit_real_file")
        if upload is None:
            st.info(t("family_vit.real.upload_first"), icon=":material/upload:")
            return
        data = upload.getvalue()
    else:
        data = pictures[pick].read_bytes()
    try:
        seen = of_weights(see_picture, folder, data)
        h, w = read_image(data).shape[:2]
    except ValueError as e:
        error(UserError("family_vit.real.bad_picture"), detail=str(e)[:300])
        return
    fit = picture_fit(h, w, loaded.tokenizer)
    if fit != "kept":  # the learner's picture is not what the model reads: say how it was made square
        st.caption(t(f"family_vit.real.fit_{fit}", h=h, w=w, side=seen.image.shape[0]))

    left, right = st.columns([1, 1.4])
    with left:
        st.image(seen.image, caption=t("family_vit.real.as_seen", side=seen.image.shape[0], grid=seen.grid,
                                       patch=seen.patch), width="content")
    with right:
        if seen.top:
            names_top = [name for name, _ in seen.top]
            fig = bar_chart(names_top, [p for _, p in seen.top], title=t("family_vit.real.top_title"),
                            x_title=t("family_vit.probability_axis"), horizontal=True, decimals=3,
                            height=80 + 44 * len(seen.top))
            show_matrix(fig, [[p for _, p in seen.top]], name="vit-real-top5", row_labels=[t("family_vit.probability")],
                        col_labels=names_top, key="fam-vit-real-top")
        else:
            st.info(t("family_vit.real.no_head"), icon=":material/visibility:")

    L = seen.cls_to_patches.shape[0]
    st.subheader(t("family_vit.attention_header"))
    layer_names = {n: t("family_vit.layer_n", n=n) for n in range(1, L + 1)}
    layer = int(st.selectbox(t("family_vit.real.layer"), list(layer_names), format_func=layer_names.get,
                             **keep("fam_vit_real_layer", L, url="vit_real_layer", valid=range(1, L + 1))))
    cls = t("family_vit.cls")
    fig = head_attention_tiles(seen.image, seen.cls_to_patches, seen.cls_to_cls, layer=layer - 1,
                               head_title=t("family_vit.head"), cls_label=cls,
                               title=t("family_vit.real.tiles_title", layer=layer))
    heads = seen.cls_to_patches.shape[1]
    show_matrix(fig, seen.cls_to_patches[layer - 1].reshape(heads, -1), name=f"vit-real-layer-{layer}-cls",
                row_labels=[f"{t('family_vit.head')} {h + 1}" for h in range(heads)],
                col_labels=[str(k + 1) for k in range(seen.grid ** 2)], key="fam-vit-real-tiles")
    r1, r2 = st.columns([1, 1.2])
    with r1:
        fig = image_rollout(seen.image, seen.rollout, title=t("family_vit.rollout_title"),
                            scale_title=t("family_vit.real.rollout_scale"))
        show_matrix(fig, seen.rollout, name="vit-real-rollout", key="fam-vit-real-rollout")
    with r2:
        text("family_vit.real_rollout", layers=L)
        departure, n = departure_from_even(seen.rollout), seen.rollout.size
        st.caption(t("family_vit.real.evenness", n=n, even=1 / n, pct=100 * departure, high=rollout_range(seen.rollout)[1]))
        if departure < NEARLY_EVEN:
            st.info(t("family_vit.real.nearly_even"), icon=":material/info:")
