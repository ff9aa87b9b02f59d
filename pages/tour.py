"""A guided tour through the paper: each step opens a page already set up, at the section it is about, says what to
look at, and asks one question the app answers live from the learner's current inputs on that page.

A stop starts with no answer; Check scores the first answer checked and locks it; a wrong one gets the hint, and
the real answer only on request; "Try again" resets that stop. A stop whose real answer was shown scores nothing
until the tour is reset. The tour's link carries the step, every answer, which stops were checked and shown, and
the page inputs behind the current and the checked stops, so that it opens on the same numbers and score."""
import streamlit as st

from pages.views import tour as tv
from app.i18n import UserError, t
from app.pages_list import PAGES
from app.page_inputs import SECTIONS
from app.state import fits, ignored_link_value, keep, link_value, open_tab, set_link
from app.ui import error, open_at, show_figure, text

N = len(tv.STEPS)
CHECKED = "tour_checked"  # the ids of the stops whose answer was checked, in the link as `checked`
SHOWN = "tour_shown"  # the ids of the stops whose real answer the learner asked to see, in the link as `shown`
FIRST = "tour_first"  # {stop id: the answer checked first}: the one scored, locked until the stop is tried again
PENDING = "tour_link_answers"  # {stop id: an answer's text from the link, not yet read against its options}
READ = "tour_link_read"  # the link was read (once per session, like every input's)
FILES = {p.url: p.file for p in PAGES}


def _key(step: tv.Step) -> str:
    return f"tour_a_{step.id}"


def _inputs_param(step: tv.Step, s: tv.Setting) -> str:
    return f"{step.page}.{s.input.url}"  # the page's own link name, under the page's name


def _read_link() -> None:
    """Once per session: the stops checked and shown, the page inputs and the answers a tour link carries."""
    ss = st.session_state
    ids = [s.id for s in tv.STEPS]
    for name, param in ((CHECKED, "checked"), (SHOWN, "shown")):
        ss[name] = [i for i in ids if i in set((link_value(param) or "").split(","))]
    done = set()
    for step in tv.STEPS:
        for s in step.settings:
            param = _inputs_param(step, s)
            raw = link_value(param)
            if s.fixed or raw is None or param in done:
                continue
            done.add(param)
            try:
                value = s.input.decode(raw, s.value)
                good = fits(value, s.input.valid) and isinstance(value, type(s.value))
            except (ValueError, TypeError):
                good = False
            if not good:
                ignored_link_value(param)
            elif s.input.tab:
                open_tab(ss, s.key, value)
            else:
                ss[s.key] = value
    ss[PENDING] = {step.id: raw for n, step in enumerate(tv.STEPS, 1) if (raw := link_value(f"a{n}")) is not None}
    ss[FIRST] = {}
    ss[READ] = True


def _answer(n: int, step: tv.Step, asked: tv.Asked):
    """The stop's answer: the one checked first where the stop was checked, else the learner's current one; a
    link's answer is read once its options are known (a bad value ignored; a check without an answer dropped)."""
    ss = st.session_state
    raw = ss[PENDING].pop(step.id, None)
    if raw is not None:
        try:
            ss[_key(step)] = asked.decode(raw)
            if step.id in ss[CHECKED]:
                ss[FIRST].setdefault(step.id, ss[_key(step)])
        except ValueError:
            ignored_link_value(f"a{n}")
    if step.id in ss[CHECKED] and step.id not in ss[FIRST]:
        ss[CHECKED] = [i for i in ss[CHECKED] if i != step.id]
    return ss[FIRST].get(step.id, ss.get(_key(step)))


def _move(delta: int) -> None:
    st.session_state["tour_step"] = max(1, min(N, st.session_state["tour_step"] + delta))


def _check(step_id: str, key: str) -> None:
    ss = st.session_state
    if ss.get(key) is None or step_id in ss[FIRST]:  # nothing chosen, or checked already: the first answer stays
        return
    ss[FIRST][step_id] = ss[key]
    ss[CHECKED] = [s.id for s in tv.STEPS if s.id in {*ss[CHECKED], step_id}]


def _show(step_id: str) -> None:
    st.session_state[SHOWN] = [s.id for s in tv.STEPS if s.id in {*st.session_state[SHOWN], step_id}]


def _retry(step_id: str, key: str) -> None:
    """This stop again: its check and answer forgotten (a real answer once shown stays shown)."""
    st.session_state[CHECKED] = [i for i in st.session_state[CHECKED] if i != step_id]
    st.session_state[FIRST].pop(step_id, None)
    st.session_state[key] = None


def _reset() -> None:
    """Back to the first stop, every answer, check and shown answer forgotten, in the session and in the link."""
    ss = st.session_state
    for step in tv.STEPS:
        ss[_key(step)] = None
    ss[CHECKED], ss[SHOWN], ss[PENDING], ss[FIRST] = [], [], {}, {}
    ss["tour_step"] = 1


if READ not in st.session_state:
    _read_link()
ss = st.session_state

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
    open_at(step.page, SECTIONS[step.section])
    st.switch_page(f"../pages/{FILES[step.page]}")
st.caption(t("tour.link", page=page_title))
st.code(step.link(st.session_state.get("lang", "en"), value), language=None)

try:
    asked = step.ask(value)
except UserError as e:
    error(e)
    asked = None

if asked is not None:
    key = _key(step)
    answer = _answer(n, step, asked)
    locked = step.id in ss[CHECKED]
    if locked and ss.get(key) != answer:
        ss[key] = answer  # the widget shows the answer that was checked
    st.subheader(t("tour.question"))
    st.markdown(t(f"tour.{step.id}.question", **asked.args))
    if asked.kind == "choice":
        answer = st.radio(t("tour.answer"), asked.options, format_func=asked.labels.get, horizontal=True, index=None,
                          disabled=locked, **keep(f"tour_a_{step.id}", None, valid=[None, *asked.options]))
    else:
        answer = st.number_input(t("tour.answer"), -1e9, 1e9, value=None, step=10.0 ** -asked.decimals,
                                 format=f"%.{asked.decimals}f", placeholder=t("tour.placeholder"), disabled=locked,
                                 **keep(f"tour_a_{step.id}", None, valid=lambda v: v is None or -1e9 <= v <= 1e9))
    row = st.container(horizontal=True)
    row.button(t("tour.check"), on_click=_check, args=(step.id, key), key="tour_check", icon=":material/check:",
               disabled=locked or answer is None, help=None if locked or answer is not None else t("tour.choose_first"))
    if locked:
        row.button(t("tour.retry"), on_click=_retry, args=(step.id, key), key="tour_retry", icon=":material/replay:")
        right = asked.right(answer)
        shown = step.id in ss[SHOWN]
        if not right and not shown:
            row.button(t("tour.show"), on_click=_show, args=(step.id,), key="tour_show", icon=":material/visibility:")
        if right:
            st.success(t("tour.right", answer=asked.shown(asked.truth)) + (f" {asked.note}" if asked.note else ""))
        else:
            st.warning(t(f"tour.{step.id}.hint", **asked.args))
        if shown and not right:
            st.info(t("tour.truth", answer=asked.shown(asked.truth), yours=asked.shown(answer))
                    + (f" {asked.note}" if asked.note else ""))
        if right or shown:
            show_figure(asked.figure(), name=f"tour-{step.id}", key="tour_fig")

score = 0
for i, s in enumerate(tv.STEPS, 1):  # the score, recomputed from the current inputs: right for what the pages show now
    if s.id not in ss[CHECKED] or s.id in ss[SHOWN]:
        continue
    try:
        got = s.ask(tv.value_of(s))
    except UserError:
        continue
    score += got.right(_answer(i, s, got))
st.divider()
st.markdown(t("tour.score", score=score, done=len(ss[CHECKED]), total=N, shown=len(ss[SHOWN])))

# the link: every answer, the stops checked and shown, and the page inputs behind this stop and every checked one
set_link("checked", ",".join(ss[CHECKED]) or None)
set_link("shown", ",".join(ss[SHOWN]) or None)
for i, s in enumerate(tv.STEPS, 1):
    got = ss[FIRST].get(s.id, ss.get(_key(s)))  # or the link's, for a stop not drawn yet
    set_link(f"a{i}", ss[PENDING].get(s.id) if got is None else tv.encode_answer(got))
carried = {}
for s in tv.STEPS:
    now = tv.value_of(s)
    for setting in s.settings:
        param = _inputs_param(s, setting)
        if setting.fixed:
            continue
        if s is step or s.id in ss[CHECKED]:
            carried[param] = setting.text(now(setting.key))
        else:
            carried.setdefault(param, None)
for param, text_ in carried.items():
    set_link(param, text_)
