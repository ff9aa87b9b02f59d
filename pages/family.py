"""The Transformer family: BERT (encoder-only), GPT (decoder-only), ViT and DETR as small models trained
here, one member at a time (each member is a view of its own, pages/family/<member>.py: imported when picked)."""
import importlib

import streamlit as st

from app.i18n import t
from app.state import keep
from app.ui import text

MEMBERS = ("mlm", "gpt", "vit", "detr")

st.title(t("family.title"))
text("family.intro")
member = st.segmented_control(t("family.member"), MEMBERS, format_func=lambda m: t(f"family.members.{m}"),
                              **keep("fam_member", "mlm", url="member", valid=MEMBERS))
member = member or "mlm"  # a segmented control can be cleared by clicking the selected option
importlib.import_module(f"pages.family.{member}").render()
