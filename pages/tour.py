"""A guided tour through the paper: each step opens a page already set up, says what to look at, and asks one
question the app answers live from the learner's current inputs on that page."""
import streamlit as st

from pages.views import tour as tv
from app.format import number
from app.i18n import UserError, t
from app.pages_list import PAGES
from app.state import between, keep, link_value, set_link
from app.ui import error, show_figure, text

N = len(tv.STEPS)
CHECKED = "tour_checked"  # the ids of the steps whose answer the learner has checked, in the link as `checked`
FILES = {p.url: p.file for p in PAGES}


def _move(delta: int) -> None:
    st.session_state["tour_step"] = max(1, min(N, st.session_state["tour_step"] + delta))


def _check(step_id: str) -> None:
    st.session_state[CHECKED] = sorted({*st.session_state[CHECKED], step_id})


def _reset() -> None:
    """Back to step 1, every answer and every check forgotten."""
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith("tour_")]:
        del st.session_state[key]
    st.session_state["tour_step"] = 1


def _shown(asked: tv.Asked, answer) -> str:
    return number(answer) if asked.kind == "number" else asked.labels.get(answer, str(answer))


if CHECKED not in st.session_state:  # a shared link may say which steps were checked
    ids = {s.id for s in tv.STEPS}
    st.session_state[CHECKED] = sorted(set((link_value("checked") or "").split(",")) & ids)

st.title(t("tour.title"))
text("tour.intro")
names = {i: f"{i}. {t(f'tour.{s.id}.title')}" for i, s in enumerate(tv.STEPS, 1)}
n = st.selectbox(t("tour.step"), list(names), format_func=names.get,
                 **keep("tour_step", 1, url="step", valid=range(1, N + 1)))
row = st.container(horizontal=True)
row.button(t("tour.prev"), on_click=_move, args=(-1,), shortcut="Alt+P", key="tour_prev",
          icon=":material/arrow_back:")
row.button(t("tour.next"), on_click=_move, args=(1,), shortcut="Alt+N", key="tour_next",
          icon=":material/arrow_forward:")
row.button(t("tour.reset"), on_click=_reset, key="tour_reset", icon=":material/restart_alt:")
st.caption(t("tour.keys"))

step = tv.STEPS[n - 1]
value = tv.value_of(step)
st.header(names[n])
text(f"tour.{step.id}")
page_title = t(f"pages.{step.page}.title")
if st.button(t("tour.open", page=page_title), key="tour_open", icon=":material/open_in_new:", type="primary"):
    tv.set_up(step)
    st.switch_page(f"../pages/{FILES[step.page]}")
st.caption(t("tour.link", page=page_title))
st.code(step.link(st.session_state.get("lang", "en")), language=None)

try:
    asked = step.ask(value)
except UserError as e:
    error(e)
    asked = None

score = 0
if asked is not None:
    st.subheader(t("tour.question"))
    st.markdown(t(f"tour.{step.id}.question", **asked.args))
    if asked.kind == "choice":
        answer = st.radio(t("tour.answer"), asked.options, format_func=asked.labels.get, horizontal=True,
                          **keep(f"tour_a_{step.id}", asked.options[0], url=f"a{n}", valid=asked.options))
    else:
        whole = isinstance(asked.truth, int)  # a count or a step: typed without decimals
        answer = st.number_input(t("tour.answer"), -1e9, 1e9, step=1.0 if whole or asked.tol >= 1 else 0.01,
                                 format="%.0f" if whole else None,
                                 **keep(f"tour_a_{step.id}", 0.0, url=f"a{n}", valid=between(-1e9, 1e9)))
    st.button(t("tour.check"), on_click=_check, args=(step.id,), key="tour_check", icon=":material/check:")
    if step.id in st.session_state[CHECKED]:
        if asked.right(answer):
            st.success(t("tour.right", answer=_shown(asked, asked.truth)))
        else:
            st.warning(t(f"tour.{step.id}.hint", **asked.args))
            st.info(t("tour.truth", answer=_shown(asked, asked.truth), yours=_shown(asked, answer)))
        show_figure(asked.figure(), name=f"tour-{step.id}", key="tour_fig")

done = [s for s in tv.STEPS if s.id in st.session_state[CHECKED]]
for s in done:  # the score, recomputed from the current inputs: an answer is right for what the pages show now
    try:
        got = s.ask(tv.value_of(s))
    except UserError:
        continue
    score += got.right(st.session_state.get(f"tour_a_{s.id}"))
st.divider()
st.markdown(t("tour.score", score=score, done=len(done), total=N))
set_link("checked", ",".join(st.session_state[CHECKED]) or None)
