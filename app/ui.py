"""Small Streamlit helpers shared by pages: figures with their downloads, prose, errors, sliders."""
from __future__ import annotations

import json
import re

import streamlit as st

from app.charts.export import matrix_csv
from app.fast import plot
from app.format import code_span, escape_md, markdown_table
from app.i18n import Message, UserError, prose, say, t


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", s).strip("-").lower() or "figure"


def show_figure(fig, *, name: str, key: str, csv: str | None = None, clickable: bool = False,
                follow=None) -> dict | None:
    """Draw a plotly figure (app.fast.plot: PNG download from its toolbar) and a CSV download of its numbers.
    `key` names the chart from one run to the next (the browser updates it in place); `name` its files.
    Returns the point clicked in a clickable chart (app.fast.plot), in the run the click started.
    follow: the figure's variants for browser choices (app.fast.choice.follow)."""
    clicked = plot(fig, key=key, clickable=clickable, follow=follow)
    if csv is not None:
        st.download_button(t("common.download_csv"), csv, file_name=f"{_slug(name)}.csv", mime="text/csv",
                           key=f"csv-{key}")
    return clicked


def show_matrix(fig, values, *, name: str, key: str, row_labels=None, col_labels=None, follow=None) -> None:
    show_figure(fig, name=name, csv=matrix_csv(values, row_labels, col_labels), key=key, follow=follow)


# Tables drawn as Markdown keep each cell on one line (a Korean word would otherwise break letter by letter in a
# narrow column) and scroll sideways when wider than the page, as the data grid did. A table cut off at an edge
# says so: that edge fades out (a mask, so it works on the light and the dark theme) for as long as there is
# more beyond it, following the scroll (a scroll-driven animation; a table that fits has no scroll timeline, so
# no fade), and the scroll bar stays visible. Browsers without scroll-driven animations show the scroll bar only.
# The registered properties' syntax writes its "<" as the CSS escape \3c: st.html's sanitiser drops a style whose
# text holds a "<". The scroller is the element that holds the table (`div:has(> table)` inside our keyed container):
# the table itself stays a table.
_TABLE_CSS = """<style>
[class*='st-key-atlas-table'] th, [class*='st-key-atlas-table'] td {white-space: nowrap}
[class*='st-key-atlas-table'] div:has(> table) {overflow-x: auto; scrollbar-width: thin}
@property --atlas-fade-left {syntax: '\\3c length>'; inherits: false; initial-value: 0px}
@property --atlas-fade-right {syntax: '\\3c length>'; inherits: false; initial-value: 0px}
@keyframes atlas-table-fade {0% {--atlas-fade-left: 0px; --atlas-fade-right: 48px} 10% {--atlas-fade-left: 48px}
  90% {--atlas-fade-right: 48px} 100% {--atlas-fade-left: 48px; --atlas-fade-right: 0px}}
@supports (animation-timeline: scroll()) {
  [class*='st-key-atlas-table'] div:has(> table) {
    animation: atlas-table-fade linear both; animation-timeline: scroll(self inline);
    mask-image: linear-gradient(to right, transparent, #000 var(--atlas-fade-left),
                                #000 calc(100% - var(--atlas-fade-right)), transparent)}
}
</style>"""


def table(rows: list[dict], *, key: str) -> None:
    """A small table of text and numbers that needs no sorting, drawn as Markdown (app.format.markdown_table):
    no pandas on the server, no data-grid code in the browser (the overview's first run: 0.4 s of pandas)."""
    if rows:
        with table_box(key):
            st.markdown(markdown_table(rows))


def table_box(key: str):
    """The box a table is drawn in (table(), app.fast.choice.follow_table): its cells kept on one line, scrolled
    sideways with faded edges where the page is narrower than the table."""
    st.html(_TABLE_CSS)
    return st.container(key=f"atlas-table-{key}")


def one_based_slider(label: str, n: int, *, key: str, container=None) -> int:
    """Pick 1…n with a slider. st.slider refuses min_value == max_value, and a model trained with one
    layer or one head has n = 1: then there is nothing to choose, so say so and return 1."""
    where = container if container is not None else st
    if n <= 1:
        where.caption(f"{label}: 1 " + t("common.only_one"))
        return 1
    return where.slider(label, 1, n, 1, key=key)


def text(key: str, **args) -> None:
    """A prose section (Markdown) of the current page, in the current language."""
    st.markdown(prose(key, **args))


def plain_args(message: Message) -> Message:
    """The message with every text argument escaped for Markdown (what a learner typed, a file name):
    `**b**` or `![i](http://…)` in a message stays text. Numbers and nested Messages (translated from the
    catalogue, escaped in turn) keep their meaning."""
    args = {k: plain_args(v) if isinstance(v, Message) else escape_md(v) if isinstance(v, str) else v
            for k, v in message.args.items()}
    return Message(message.code, args)


def error(problem: UserError | Message, detail: str | None = None, icon: str | None = None) -> None:
    """A clear message instead of a traceback. Text arguments (often what was typed) are escaped; the
    detail (a file name, the original exception text) is shown verbatim as code, never as Markdown."""
    if isinstance(problem, UserError):
        detail = detail or problem.detail
        problem = problem.message
    st.error(say(plain_args(problem)) + (f"\n\n{code_span(detail)}" if detail else ""), icon=icon)



SCROLL_TO = "_scroll_to"  # (page url, header anchor): the section the next run of that page opens at


def open_at(page: str, anchor: str) -> None:
    """Ask the next run of `page` (e.g. after st.switch_page) to scroll to the section whose header has `anchor`."""
    st.session_state[SCROLL_TO] = (page, anchor)


def scroll_to_requested(page: str) -> None:
    """main.py, once the page has drawn: scroll to the section open_at asked for, once. The charts above it draw
    after the page and push it down, so the section is brought back into view while they settle, unless the
    learner scrolls first."""
    want = st.session_state.get(SCROLL_TO)
    if not want or want[0] != page:
        return
    del st.session_state[SCROLL_TO]
    anchor = json.dumps(str(want[1]))
    st.html("<script>(() => { const stop = () => clearInterval(timer); let n = 0;"
            f" const go = () => {{ const el = document.getElementById({anchor}); if (el) el.scrollIntoView();"
            " if (++n > 12) stop(); }; const timer = setInterval(go, 150); go();"
            " for (const e of ['wheel', 'touchstart', 'keydown', 'mousedown'])"
            " window.addEventListener(e, stop, {once: true, capture: true}); })()</script>",
            unsafe_allow_javascript=True)


def machine_said(text: str) -> str:
    """A machine as a study document records it ("x86_64, 2 cores, torch 2.13.0+cpu"), its cores counted in the
    page's language; the rest (architecture, library versions) is data and stays as written."""
    return re.sub(r"\b(\d+) cores?\b", lambda m: t("common.cores", n=int(m.group(1))), text)


PENDING = "atlas-pending"  # the key (class st-key-atlas-pending-<name>) of a note that something is being computed


def pending(name: str, note: str, calls: list[tuple], every_s: float = 0.5) -> None:
    """While the calls given to app.resources.in_background are computed: `note` (what is being computed and what
    is shown meanwhile), and a small fragment that asks every `every_s` seconds whether they are done and runs the
    whole page again once they are, so the new value shows when it lands. A full run that finds them done draws
    neither, which stops the asking."""
    from app.resources import background_done

    with st.container(key=f"{PENDING}-{name}"):
        st.info(note)

    @st.fragment(run_every=every_s)
    def watch() -> None:
        if background_done(calls):
            st.rerun(scope="app")

    watch()


def newest(name: str, asked, calls: list[tuple], note, wait_s: float) -> tuple:
    """(what was asked, values) of the newest computation this session has for `name`: `asked` and the values of
    app.resources.in_background's `calls` when they come within `wait_s` seconds (a session's first ask waits for
    them), else the last ones it showed, under the note `note(what those were asked for)` and its watcher
    (`pending`), until the new ones land."""
    from app.resources import in_background
    slot = f"_newest_{name}"
    got = in_background(name, calls, wait_s=None if slot not in st.session_state else wait_s)
    if got is not None:
        st.session_state[slot] = (asked, got)
    else:
        pending(name, note(st.session_state[slot][0]), calls)
    return st.session_state[slot]
