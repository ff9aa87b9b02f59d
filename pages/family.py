"""The Transformer family: BERT (encoder-only), GPT (decoder-only), ViT and DETR as small models trained
here, one member at a time (each member is a view of its own, pages/family/<member>.py: imported when picked)."""
import importlib

import streamlit as st

from app.format import code_span
from app.i18n import t
from app.state import opened_run
from app.page_inputs import FAMILY
from app.ui import text
from pages.views.family import MEMBER_OF_TASK, family_models

MEMBERS = ("mlm", "gpt", "vit", "detr")

st.title(t("family.title"))
text("family.intro")
opened = opened_run()  # "Open on the family page" on the training page: its member, with the run picked
if opened is not None:
    for task, picked in MEMBER_OF_TASK.items():
        if f"run: {opened}" in family_models(task):
            st.session_state["fam_member"] = picked
            st.session_state[f"fam_{picked}_model"] = f"run: {opened}"
            break
    else:
        st.warning(t("family.run_missing", id=code_span(opened[:100])))  # from the link: shown verbatim
member = st.segmented_control(t("family.member"), MEMBERS, format_func=lambda m: t(f"family.members.{m}"),
                              **FAMILY.member.keep("mlm", valid=MEMBERS))
member = member or "mlm"  # a segmented control can be cleared by clicking the selected option
importlib.import_module(f"pages.family.{member}").render()
