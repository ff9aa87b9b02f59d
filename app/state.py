"""What a learner set survives: one mechanism for every input of every page.

A page draws an input as

    n = st.slider(label, 1, 50, **keep("why_n", 10, url="n", valid=range(1, 51)))

and `keep`:
- starts the widget from `default` the first time (the widget itself gets no value/index/default);
- keeps its value for the whole browser session, across page and language switches
  (Streamlit's `persist_state="session"`: a page that is not drawn does not forget its inputs);
- keeps the value the learner gave whenever it fits the input's current options (`valid=`), and shows the
  nearest one that fits when it does not (layer 6 of a model that now has 4 is layer 4; the learner's 6 comes
  back when the range does); where there is no nearest (an option that is gone), the default;
- with `url=`: reads the value once from a shared link (`?n=12`) and writes the current value back to
  the address bar, so the view can be sent to someone else. A bad value in a link (unknown option,
  out of range, malformed, over MAX_URL_TEXT characters) is ignored and named in a short notice;
  the text of a link is only ever put into widgets, never rendered as Markdown or HTML;
- remembers the default, so the sidebar's "reset this page" puts every input of the page back.

main.py tells this module which page runs (`begin_page`), keeps `lang` in the URL and clears the other
parameters when the learner moves to another page (each page owns its link)."""
from __future__ import annotations

import math
from typing import Any

import streamlit as st

PAGE = "_page"               # url of the page being drawn
DEFAULTS = "_defaults"       # {page: {key: default}}: what "reset this page" restores
URLS = "_link_names"         # {page: {key: its name in the link, or None}}: what a page's link can carry
ASKED = "_asked"             # {key: the value the learner gave}, where the input now shows the nearest that fits
SHOWN = "_shown"             # {key: the value keep gave the widget last time}: a difference is the learner's move
RANGES = "_ranges"           # {key: what `valid` said last time (signature)}: a change may make a slider new
TAB_DEFAULTS = "_tab_defaults"  # {page: {open_tabs key: its first tab}}: what "reset this page" opens
WRITTEN = "_link_written"    # {name: the text this session's inputs last wrote there}: not a shared link's value
SEEN = "_link_seen"          # keys whose link value was already considered (a link applies once)
DRAWN_IN = "_drawn_in"       # {key: the language its widget was last drawn in}
RESETS = "_resets"           # {page: how many times "reset this page" ran}: the browser's choices start again
LANG_PARAM = "lang"
RUN_PARAM = "run"            # a training run that an in-app link opens (opened_run)
MAX_URL_TEXT = 4000          # a link's value longer than this is refused (a sentence, a matrix)


class BadValue(ValueError):
    """A value from a link that does not fit its input."""


# ----------------------------------------------------------------------------- values <-> URL text

class OneBased:
    """A 0-based index shown 1-based in links (layer=1 is the first layer); `mean` for -1 (the average)."""

    @staticmethod
    def encode(value: int) -> str:
        return "mean" if value == -1 else str(int(value) + 1)

    @staticmethod
    def decode(text: str, default: int) -> int:
        return -1 if text.strip().lower() == "mean" else _decode_scalar(text, 0) - 1


def _decode_scalar(text: str, like: Any) -> Any:
    """URL text as the type of `like` (bool, int, float or str)."""
    s = text.strip()
    if isinstance(like, bool):
        if s.lower() in ("1", "true", "on", "yes"):
            return True
        if s.lower() in ("0", "false", "off", "no"):
            return False
        raise BadValue(text)
    if isinstance(like, int):
        if len(s) > 24:
            raise BadValue(text)
        try:
            return int(s)
        except ValueError:
            raise BadValue(text) from None
    if isinstance(like, float):
        if len(s) > 40:
            raise BadValue(text)
        try:
            f = float(s)
        except ValueError:
            raise BadValue(text) from None
        if not math.isfinite(f):
            raise BadValue(text)
        return f
    return text


def decode(text: str, default: Any) -> Any:
    """A link's text as a value shaped like `default`: a scalar, a tuple (range slider, `1,100`) or a
    list (multiselect, `0,2,3`; empty text is the empty list)."""
    if not isinstance(text, str) or len(text) > MAX_URL_TEXT:
        raise BadValue("too long")
    if isinstance(default, tuple):
        parts = text.split(",")
        if len(parts) != len(default):
            raise BadValue(text)
        return tuple(_decode_scalar(p, d) for p, d in zip(parts, default))
    if isinstance(default, list):
        like = default[0] if default else ""
        return [_decode_scalar(p, like) for p in text.split(",")] if text.strip() else []
    return _decode_scalar(text, default)


def encode(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (tuple, list)):
        return ",".join(encode(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def fits(value: Any, valid) -> bool:
    """Whether a value fits `valid`: None (anything), a range or collection of allowed values (every item
    of a list/tuple value must be in it), or a predicate (False or an exception means no)."""
    if valid is None:
        return True
    if callable(valid) and not isinstance(valid, (range, list, tuple, set, frozenset, dict)):
        try:
            return bool(valid(value))
        except Exception:  # a predicate that cannot read the value refuses it
            return False
    items = value if isinstance(value, (list, tuple)) else [value]
    try:
        return all(v in valid for v in items)
    except TypeError:
        return False


class between:  # noqa: N801 (used like a function: valid=between(0.0, 1.0))
    """`valid=` for a number input: lo ≤ value ≤ hi (a tuple value: each end)."""

    def __init__(self, lo: float, hi: float):
        self.lo, self.hi = lo, hi

    def __call__(self, v) -> bool:
        vs = v if isinstance(v, tuple) else (v,)
        return all(_number(x) and self.lo <= x <= self.hi for x in vs)

    def __repr__(self) -> str:
        return f"between({self.lo!r}, {self.hi!r})"


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


_NONE = object()


def nearest(value: Any, valid, default: Any = _NONE) -> Any:
    """`value` if it fits `valid`, else the value that fits nearest to it: a number clamped into a range or
    between() (onto the range's steps), the closest of numeric options, a list without its items that no
    longer fit. Where nothing is nearer than another (a word that is no option any more), `default`
    (itself brought into `valid` where it does not fit); without a default, None."""
    if fits(value, valid):
        return value
    found = _closest(value, valid)
    if found is not _NONE and fits(found, valid):
        return found
    if default is _NONE or fits(default, valid):
        return None if default is _NONE else default
    found = _closest(default, valid)
    return default if found is _NONE else found


def _closest(value: Any, valid) -> Any:
    options = isinstance(valid, (range, list, tuple, set, frozenset, dict))
    if isinstance(value, list):  # a multiselect: the choices that still apply (all gone: no nearest)
        kept = [v for v in value if fits(v, valid)] if options else []
        return kept if kept else _NONE
    if isinstance(value, tuple) and isinstance(valid, between) and all(_number(v) for v in value):
        return tuple(min(max(v, valid.lo), valid.hi) for v in value)
    if not _number(value):
        return _NONE
    if isinstance(valid, between):
        return min(max(value, valid.lo), valid.hi)
    if isinstance(valid, range):
        if len(valid) == 0:
            return _NONE
        i = min(max(round((value - valid.start) / valid.step), 0), len(valid) - 1)
        return valid[i]
    if isinstance(valid, (list, tuple, set, frozenset, dict)):
        numbers = [v for v in valid if _number(v)]
        return min(numbers, key=lambda v: (abs(v - value), v)) if numbers else _NONE
    return _NONE


def _signature(valid) -> Any:
    """What `valid` allows, as a small comparable value (None for a predicate: it says nothing of its range)."""
    if isinstance(valid, range):
        return ("range", valid.start, valid.stop, valid.step)
    if isinstance(valid, between):
        return ("between", valid.lo, valid.hi)
    if isinstance(valid, (set, frozenset)):
        valid = sorted(valid, key=repr)
    if isinstance(valid, (list, tuple, dict)):
        try:
            return ("in", len(valid), hash(tuple(valid)))
        except TypeError:
            return None
    return None


# ----------------------------------------------------------------------------- Streamlit side

def begin_page(page: str) -> bool:
    """Called by main.py before the page runs (send_link ends its run). Moving to another page (returns True) drops
    the previous page's link parameters (the new page writes its own); a session's first page keeps its opening link."""
    ss = st.session_state
    ss[PAGE_RUN] = True  # until send_link: this run's link changes wait for its end
    previous, ss[PAGE] = ss.get(PAGE), page
    if left := previous is not None and previous != page:
        _clear_link()
    return left


# ----------------------------------------------------------------------------- the link, sent once per run
# Each write to st.query_params is a message to the browser, and each message there is a new entry in the
# browser's history and a re-render of the whole app: opening the attention page wrote its 16 parameters one
# by one (an entry per parameter, each a press of Back to leave it, and each a re-render). So a run
# collects its changes here and main.py sends them at its end (send_link), in one message. A fragment's own
# rerun has no such end (main.py does not run, only the fragment's function): its changes (one control's) are
# sent at once. main.py's runs are marked from begin_page to send_link (PAGE_RUN); a change made outside them
# is a fragment's.
LINK = "_link_changes"       # this run's changes: {"clear": drop the other parameters first, "set": {name: text|None}}
PAGE_RUN = "_page_run"       # main.py's run is under way (begin_page ... send_link)


def link_value(name: str) -> str | None:
    """The parameter as the link will read once this run's changes are sent."""
    changes = st.session_state.get(LINK)
    if changes is not None:
        if name in changes["set"]:
            return changes["set"][name]
        if changes["clear"]:
            return None
    return st.query_params.get(name)


def set_link(name: str, text: str | None) -> None:
    """Put `text` in the link under `name` (None: take the parameter out), sent with the run's other changes."""
    if link_value(name) == text:
        return
    st.session_state.setdefault(LINK, {"clear": False, "set": {}})["set"][name] = text
    if not st.session_state.get(PAGE_RUN, False):  # a fragment's own rerun: no run of main.py under way
        send_link()


def opened_run() -> str | None:
    """The run that a link of the training page opens here (?run=<id>, read once), or None. A link, not
    st.switch_page: a server-side switch leaves the old page's run_every timers firing onto the new page."""
    if (value := st.query_params.get(RUN_PARAM)) is not None:
        set_link(RUN_PARAM, None)
    return value


def _clear_link() -> None:
    """Every parameter but the language out of the link (a page owns its link)."""
    lang = link_value(LANG_PARAM)
    st.session_state[LINK] = {"clear": True, "set": {LANG_PARAM: lang} if lang is not None else {}}
    # not sent here: begin_page runs in main.py's run, reset_page is a button's callback outside any fragment (main.py runs next)


def send_link() -> None:
    """Send this run's changes to the link, in one message (none if the link stays as it is). main.py's run ends
    here: later changes, until its next begin_page, are a fragment's, sent at once."""
    st.session_state.pop(PAGE_RUN, None)  # first: sending may be interrupted by a rerun requested meanwhile
    changes = st.session_state.get(LINK)
    if changes is None:
        return
    now = st.query_params.to_dict()
    new = {} if changes["clear"] else dict(now)
    for name, text in changes["set"].items():
        if text is None:
            new.pop(name, None)
        else:
            new[name] = text
    if new != now:
        st.query_params.from_dict(new)  # one message (a rerun requested meanwhile may interrupt it: kept for the next run)
    st.session_state.pop(LINK, None)


def keep(key: str, default: Any, *, url: str | None = None, valid=None, check=None, codec=None, browser=False) -> dict:
    """Prepare the input `key` (see the module's docstring); returns the widget's keyword arguments.

    valid: what the widget can hold (a range, the options, between(lo, hi), a predicate); for a slider, exactly
           its range. A kept value outside it shows as the nearest value inside (the learner's own value
           returns when it fits again); a linked value outside it is refused.
    check: a further test for values from a link only (a matrix that parses): a learner's own the page explains.
    codec: how the value is written in a link (default: by the type of `default`; OneBased for indices).
    browser: the link is read here, written by the browser (app.fast.choice: a choice answered in the page)."""
    ss = st.session_state
    page = ss.get(PAGE, "")
    ss.setdefault(DEFAULTS, {}).setdefault(page, {})[key] = default
    ss.setdefault(URLS, {}).setdefault(page, {})[key] = url
    asked, shown, ranges = ss.setdefault(ASKED, {}), ss.setdefault(SHOWN, {}), ss.setdefault(RANGES, {})
    if url is not None:
        seen = ss.setdefault(SEEN, set())
        if key not in seen:
            seen.add(key)
            raw = _shared_value(url)
            if raw is not None:
                try:
                    value = codec.decode(raw, default) if codec else decode(raw, default)
                    if not fits(value, valid) or not fits(value, check):
                        raise BadValue(raw)
                except (BadValue, ValueError, TypeError):
                    _ignored(url)
                else:
                    ss[key] = value
    if key not in ss:
        ss[key] = default
    if key not in shown or not _same(ss[key], shown[key]):  # the learner (a link, a reset) set it: theirs
        asked[key] = ss[key]
    signature = _signature(valid)
    wanted = asked.get(key, ss[key])
    value = nearest(wanted, valid, default)
    if not _same(value, ss[key]) or (key in ranges and ranges[key] != signature):
        # A slider whose range changed is a new widget to Streamlit, drawn at its minimum unless its value is set
        # again before it is drawn; any other input shows the value set here.
        ss[key] = value
    ranges[key], shown[key] = signature, value
    _resend_after_language_switch(key)
    if url is not None and not browser:
        _write_link(url, codec.encode(ss[key]) if codec else encode(ss[key]))
    return {"key": key, "persist_state": "session"}


def _shared_value(name: str) -> str | None:
    """The link's value of `name`, unless this session's own inputs wrote it: one name can serve several keys
    (the training page keeps a number of steps per model size, all under `steps`), and a key drawn for the
    first time must start from its default, not from what its sibling wrote."""
    raw = link_value(name)
    return None if raw is not None and st.session_state.get(WRITTEN, {}).get(name) == raw else raw


def _write_link(name: str, text: str) -> None:
    st.session_state.setdefault(WRITTEN, {})[name] = text
    set_link(name, text)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _resend_after_language_switch(key: str) -> None:
    """The browser matches a radio's, select box's, select slider's and multiselect's value by its option's
    label. A language switch changes every label, and Streamlit then draws the widget with nothing chosen
    (a radio without its dot) although the value is kept — and a click elsewhere could send that empty
    choice back. Setting the value again before the widget is drawn sends it to the browser anew."""
    from app.i18n import STATE_KEY
    ss = st.session_state
    lang = ss.get(STATE_KEY)
    drawn = ss.setdefault(DRAWN_IN, {})
    if drawn.get(key, lang) != lang:
        ss[key] = ss[key]
    drawn[key] = lang


def _ignored(name: str) -> None:
    """A link's value that did not fit: one short notice naming the parameter (never its text)."""
    from app.i18n import t
    st.toast(t("common.link_ignored", name=name), icon=":material/link_off:")


def ignored_link_value(name: str) -> None:
    """For main.py's own link parameter (the language)."""
    _ignored(name)


def reset_page(page: str) -> None:
    """The sidebar's "reset this page" (an on_click callback): every input of the page back to its
    default, and the page's link parameters dropped."""
    ss = st.session_state
    for key, default in ss.get(DEFAULTS, {}).get(page, {}).items():
        ss[key] = default
        ss.get(ASKED, {}).pop(key, None)
    for key, name in ss.get(TAB_DEFAULTS, {}).get(page, {}).items():
        open_tab(ss, key, name)
    ss[RESETS] = {**ss.get(RESETS, {}), page: ss.get(RESETS, {}).get(page, 0) + 1}
    _clear_link()


BOXES: set[str] = set()  # the keys open_box has drawn (tests open every box to reach what is inside)
TABS: dict[str, list[str]] = {}  # open_tabs' keys and their tab names (tests open every tab in turn: open_tab)


def open_box(label: str, *, key: str):
    """An expander that knows whether it is open (`box.open`), so that a page draws heavy contents (hundreds
    of buttons) only while a learner looks at them. It stays as the learner left it across reruns, language
    switches and page visits; Streamlit alone would forget: a language switch changes the label, and with it
    the expander's identity. open_box_now opens it (e.g. a sentence with new unknown words)."""
    ss = st.session_state
    memo = f"{key}__open"
    BOXES.add(memo)
    ss[key] = ss.get(memo, False)
    return st.expander(label, key=key, on_change=_remember_box, args=(key, memo))


def open_box_now(key: str) -> None:
    """Open the open_box `key` from the next time it is drawn (e.g. from outside the fragment it is drawn in)."""
    st.session_state[f"{key}__open"] = True


def _remember_box(key: str, memo: str) -> None:
    st.session_state[memo] = bool(st.session_state.get(key))


def open_tabs(labels: dict[str, str], *, key: str, url: str | None = None):
    """Tabs of which the page draws only the open one (`tab.open`): a click on another tab reruns the page.
    `labels` maps a fixed name to its label in the current language. The open tab is remembered by name in
    `{key}__open`, so that it stays open across reruns, language switches and page visits (a language switch
    changes the labels, and with them the tabs' identity). With `url=`, the open tab's name is in the link
    (read once from a shared link, like keep's inputs); "reset this page" opens the first tab again.
    Returns (name, tab) pairs."""
    ss = st.session_state
    memo = f"{key}__open"
    names = list(labels)
    TABS[key] = names
    page = ss.get(PAGE, "")
    ss.setdefault(URLS, {}).setdefault(page, {})[key] = url
    ss.setdefault(TAB_DEFAULTS, {}).setdefault(page, {})[key] = names[0]
    by_label = {label: name for name, label in labels.items()}
    if ss.get(key) in by_label:  # the tab a learner opened in this language
        ss[memo] = by_label[ss[key]]
    if url is not None and key not in ss.setdefault(SEEN, set()):
        ss[SEEN].add(key)
        raw = _shared_value(url)
        if raw is not None:
            if raw in labels:
                ss[memo] = raw
            else:
                _ignored(url)
    name = ss.get(memo) if ss.get(memo) in labels else names[0]
    ss[key], ss[memo] = labels[name], name
    if url is not None:
        _write_link(url, name)
    return list(zip(names, st.tabs(list(labels.values()), default=labels[name], key=key, on_change="rerun")))


def open_tab(session_state, key: str, name: str) -> None:
    """What a click on open_tabs' tab `name` does, for tests (AppTest's session_state, or Streamlit's)."""
    session_state[f"{key}__open"] = name
    session_state[key] = None  # no label of any language: the remembered name decides
