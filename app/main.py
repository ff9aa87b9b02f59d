"""Attention Atlas entrypoint: `streamlit run app/main.py`."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # streamlit puts only app/ on sys.path; pages import model/ and app/
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app import i18n  # noqa: E402
from app.i18n import t, tr  # noqa: E402
from app.pages_list import PAGES, SECTIONS  # noqa: E402
from app.resources import device_description  # noqa: E402

st.set_page_config(page_title="Attention Atlas", page_icon="🧭", layout="wide")

with st.sidebar:
    st.radio(t("language"), list(i18n.LANGS), format_func=i18n.LANGS.get, key="lang", horizontal=True)

sections: dict[str, list] = {}
for i, p in enumerate(PAGES):
    page = st.Page(str(ROOT / "pages" / p.file), title=tr(p.en, p.ko), icon=p.icon, url_path=p.url, default=(i == 0))
    sections.setdefault(p.section, []).append(page)
nav = st.navigation({tr(en, ko): sections[key] for key, en, ko in SECTIONS if key in sections})

with st.sidebar:
    st.caption(f"**{t('device')}:** {device_description()}")

nav.run()
