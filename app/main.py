"""Attention Atlas entrypoint: `streamlit run app/main.py`."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # streamlit puts only app/ on sys.path; pages import model/ and app/
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app import i18n, state  # noqa: E402
from app.fast import browser_warm, settle_heap_at_start  # noqa: E402
from app.i18n import t  # noqa: E402
from app.fast.warmup import page_running, wait_for_warm_up, warm_up  # noqa: E402
from app.jobs import apply_server_threads  # noqa: E402
from app.pages_list import PAGES, SECTIONS  # noqa: E402
from app.resources import device_description, leave_background  # noqa: E402
from app.ui import scroll_to_requested  # noqa: E402

# A Material icon, not the 🧭 emoji: checking an emoji loads Streamlit's emoji catalogue on the first page
st.set_page_config(page_title="Attention Atlas", page_icon=":material/explore:", layout="wide")
settle_heap_at_start()  # what the imports above loaded lives as long as the server: out of the collector's way
apply_server_threads()  # once torch is loaded: the server's torch keeps to its share of the cores, the trainers get theirs

if i18n.STATE_KEY not in st.session_state:  # first visit: the link's language, else the browser's if we speak it
    asked = st.query_params.get(state.LANG_PARAM)
    if asked in i18n.LANGS:
        st.session_state[i18n.STATE_KEY] = asked
    else:
        try:
            locale = st.context.locale
        except Exception:  # no browser (AppTest) or an old client
            locale = None
        st.session_state[i18n.STATE_KEY] = i18n.language_from_locale(locale)
        if asked is not None:
            state.ignored_link_value(state.LANG_PARAM)
else:  # the widget's value written back as the script's own: kept across a server-side page switch (st.switch_page)
    st.session_state[i18n.STATE_KEY] = st.session_state[i18n.STATE_KEY]

with st.sidebar:
    st.radio(t("common.language"), list(i18n.LANGS), format_func=i18n.LANGS.get, key=i18n.STATE_KEY,
             horizontal=True)
    with st.container(key="atlas-warm"):  # nothing to see: loads the next pages' element code while the browser is idle
        st.html("<style>.st-key-atlas-warm{display:none}</style>" + browser_warm.script(), unsafe_allow_javascript=True)
        run_under_way = st.empty()  # until the end of this run: the warm-up's script asks for no elements meanwhile
        run_under_way.html(f'<span class="{browser_warm.RUNNING}"></span>')
        browser_warm.elements()

sections: dict[str, list] = {}
for i, p in enumerate(PAGES):
    page = st.Page(str(ROOT / "pages" / p.file), title=p.title, icon=p.icon, url_path=p.url, default=(i == 0))
    sections.setdefault(p.section, []).append(page)
# every page listed in the sidebar: collapsed, Streamlit hides the pages past the tenth behind "View more"
nav = st.navigation({t(f"pages.section.{key}"): sections[key] for key in SECTIONS if key in sections}, expanded=True)
current = nav.url_path or PAGES[0].url  # the default page's url_path is ""

if current != PAGES[0].url:  # the first page imports nothing the warm-up does; the others must not import beside it
    wait_for_warm_up()
try:  # from begin_page to send_link, the run's link changes are collected and sent in one message at its end
    if state.begin_page(current):  # another page: what the last one asked to be measured, and nobody sees, is dropped
        leave_background()
    state.set_link(state.LANG_PARAM, i18n.lang())  # the link says which language it shows

    with st.sidebar:
        st.button(t("common.reset_page"), icon=":material/restart_alt:", on_click=state.reset_page, args=(current,),
                  help=t("common.reset_page_help"), key="reset_page")
        st.caption(t("common.link_hint"))
        st.caption(f"**{t('common.device')}:** {device_description()}")

    with page_running():  # the warm-up waits for this run between its steps
        nav.run()
        scroll_to_requested(current)  # a guided-tour stop opens its page at its section
finally:  # the page has drawn (or stopped): its link in one message; torch's thread budget if the page loaded
    state.send_link()  # it; then, in the background, what the next pages import
    apply_server_threads()
    warm_up()
    run_under_way.empty()  # the browser's warm-up may ask for its hidden elements again
