"""Every word the app shows, in English and Korean, through one mechanism.

- Short UI labels live in a catalogue per language: `app/locales/<lang>/<namespace>.toml`. A key is
  `<namespace>.<name>` (nested TOML tables add dots): `t("attention.title")`.
- Long explanatory prose lives in Markdown per page and language: `app/content/<lang>/<page>.md`,
  cut into named sections by marker lines `<!-- section: name -->`: `prose("attention.intro")`.
- Messages that travel from code that knows no language (model/, the trainer, the job manager) are
  a `Message`: a catalogue key plus its arguments, translated only when shown (`say(msg)`).
- Placeholders are `{name}` or `{name:format-spec}` and are filled only from the arguments given, so
  LaTeX braces in prose stay as they are. Numbers go through app.format.number (never `-0.000`).
- A count's noun agrees with it through `{name:one|other}`: the word for exactly one, else the other
  ("{n} {n:thread|threads}" reads "1 thread", "4 threads"; a verb too: "{n:differs|differ}"). Korean counts
  need no plural and write the counter word after the number ("스레드 {n}개").

Both languages must have exactly the same keys and sections, and every key the code names must
exist (tests/app/test_i18n.py). `lang()` works outside a Streamlit run too (it then returns "en")."""
from __future__ import annotations

import functools
import re
import tomllib
from pathlib import Path

from model.messages import Message, UserError  # noqa: F401  (re-exported for pages)

LANGS = {"en": "English", "ko": "한국어"}
DEFAULT = "en"
STATE_KEY = "lang"
HERE = Path(__file__).resolve().parent
LOCALES = HERE / "locales"
CONTENT = HERE / "content"

_SECTION = re.compile(r"^<!--\s*section:\s*([\w.-]+)\s*-->\s*$", re.M)
_PLACEHOLDER = re.compile(r"\{(\w+)(?::([^{}]*))?\}")


# ----------------------------------------------------------------------------- loading

def _flatten(prefix: str, table: dict, out: dict[str, str]) -> None:
    for name, value in table.items():
        key = f"{prefix}.{name}"
        if isinstance(value, dict):
            _flatten(key, value, out)
        elif isinstance(value, str):
            out[key] = value
        else:
            raise TypeError(f"{key}: catalogue values are strings, got {type(value).__name__}")


@functools.cache
def catalogue(lang_code: str) -> dict[str, str]:
    """All short labels of one language: {"namespace.name": text}."""
    out: dict[str, str] = {}
    for path in sorted((LOCALES / lang_code).glob("*.toml")):
        with open(path, "rb") as f:
            _flatten(path.stem, tomllib.load(f), out)
    return out


def parse_sections(text: str) -> dict[str, str]:
    """Markdown cut at `<!-- section: name -->` lines; text before the first marker is ignored."""
    parts = _SECTION.split(text)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


@functools.cache
def content(lang_code: str) -> dict[str, str]:
    """All prose sections of one language: {"page.section": markdown}."""
    out: dict[str, str] = {}
    for path in sorted((CONTENT / lang_code).glob("*.md")):
        for name, body in parse_sections(path.read_text(encoding="utf-8")).items():
            out[f"{path.stem}.{name}"] = body
    return out


@functools.cache
def glossary() -> dict[str, dict[str, str]]:
    """One Korean word per term: {term: {"en": ..., "ko": ..., "not": [...]}}."""
    with open(LOCALES / "glossary.toml", "rb") as f:
        return tomllib.load(f)


# ----------------------------------------------------------------------------- language

def lang() -> str:
    try:
        import streamlit as st
        value = st.session_state.get(STATE_KEY, DEFAULT)
    except Exception:  # outside a Streamlit script run
        value = DEFAULT
    return value if value in LANGS else DEFAULT


def language_from_locale(locale: str | None) -> str:
    """The first visit's language: the browser locale's language where the app speaks it ("ko", "ko-KR" -> "ko"),
    else English."""
    code = (locale or "").lower().replace("_", "-").split("-")[0]
    return code if code in LANGS else DEFAULT


# ----------------------------------------------------------------------------- lookup

def fill(text: str, args: dict) -> str:
    """Replace `{name}` / `{name:spec}` for the names given; leave every other brace alone. A spec with a `|`
    is a count's two words, `{name:one|other}`, chosen by the number as the text shows it (0.6 shown as "1" with
    ".0f" takes the word for one)."""
    if not args:
        return text
    from app.format import number, plural
    shown: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        name, spec = m.group(1), m.group(2)
        if name not in args:
            return m.group(0)
        if spec and "|" in spec:
            one, other = spec.split("|", 1)
            return plural(shown.get(name, args[name]), one, other)
        shown.setdefault(name, number(args[name], spec or ""))
        return number(args[name], spec or "")

    return _PLACEHOLDER.sub(sub, text)


def t(key: str, **args) -> str:
    """The short label `key` in the current language, with its placeholders filled."""
    table = catalogue(lang())
    if key not in table:
        raise KeyError(f"no UI string {key!r} in app/locales/{lang()}/")
    return fill(table[key], args)


def prose(key: str, **args) -> str:
    """The prose section `page.section` in the current language (Markdown)."""
    table = content(lang())
    if key not in table:
        raise KeyError(f"no prose section {key!r} in app/content/{lang()}/")
    return fill(table[key], args)


def say(message: Message) -> str:
    """A message from language-free code, in the current language. Arguments that are themselves
    Messages are translated first."""
    args = {k: say(v) if isinstance(v, Message) else v for k, v in message.args.items()}
    return t(message.code, **args)


def options(prefix: str, values) -> dict:
    """{value: label} for a selectbox/radio whose labels are the keys `prefix.<value>`."""
    return {v: t(f"{prefix}.{v}") for v in values}

