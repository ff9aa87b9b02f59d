"""The inspector's box for adding a real pretrained model (pages/inspector.py): a Hugging Face name, downloaded
into the pretrained folder and opened; what the download could not do explained in a sentence."""
from __future__ import annotations

import streamlit as st

from app.i18n import UserError, t
from app.resources import pretrained_dir
from app.state import keep
from app.ui import error, text
from model.hub.fetch import FetchError, fetch


def hub_box() -> None:
    with st.expander(t("inspector.hub.expander")):
        text("inspector.pretrained", folder=str(pretrained_dir()))
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        repo = c1.text_input(t("inspector.hub.name"), **keep("insp_hub_name", "Helsinki-NLP/opus-mt-en-de", url="hub"))
        if c2.button(t("inspector.hub.download"), key="insp_hub_fetch"):
            with st.spinner(t("inspector.hub.downloading")):
                try:
                    fetch(repo.strip())
                except FetchError as e:  # offline or a mistyped name is a situation to explain, not a failure
                    if e.code in ("offline", "bad_name", "unreachable"):
                        st.warning(t(f"inspector.hub.{e.code}"))
                    else:
                        error(UserError(f"inspector.hub.{e.code}"), detail=str(e))
                else:
                    st.session_state["insp_model"] = f"pretrained: {repo.strip()}"
                    st.rerun()
