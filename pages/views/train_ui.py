"""Text for the training page that is not a single catalogue lookup: durations and run status
messages. No st.* calls (tested without Streamlit)."""
from __future__ import annotations


from app import i18n
from app.format import duration_parts, escape_md
from model.messages import Message



def fmt_duration(seconds, lang: str | None = None) -> str:
    """"1 h 5 min", "1 min 15 s", "15 s" with the units of `lang` (train.unit.*); "–" when unknown."""
    parts = duration_parts(seconds)
    if parts is None:
        return "–"
    h, m, s = parts
    units = (("h", h), ("min", m)) if h else (("min", m), ("s", s)) if m else (("s", s),)
    table = i18n.catalogue(lang or i18n.lang())
    return " ".join(i18n.fill(table[f"train.unit.{unit}"], {"n": n}) for unit, n in units)


def status_text(message: Message | str | None) -> str:
    """A run's status message for the page: a Message translated; an English sentence stored by an
    older version, or a code this version does not know, shown verbatim as plain text."""
    if message is None:
        return ""
    if isinstance(message, Message):
        try:
            return i18n.say(message)
        except (KeyError, ValueError, TypeError):  # a damaged or newer status.json
            message = str(message)
    return escape_md(message)
