"""One way to speak two languages: both catalogues and both sets of prose have exactly the same keys
and placeholders, every key the code names exists, and each glossary term has one Korean word."""
import re
from pathlib import Path

import pytest

from app import i18n

ROOT = Path(__file__).resolve().parents[2]
CODE = sorted(p for d in ("app", "pages", "model") for p in (ROOT / d).rglob("*.py"))
PLACEHOLDER = re.compile(r"\{(\w+)(?::[^{}]*)?\}")
LITERAL_CALL = re.compile(r"(?<![.\w])(t|prose|text|Message|UserError|options)\(\s*(f?)([\"'])(.*?)\3")


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


@pytest.mark.parametrize("table", [i18n.catalogue, i18n.content])
def test_both_languages_have_the_same_keys(table):
    en, ko = table("en"), table("ko")
    assert en, "the English catalogue is empty"
    assert sorted(set(en) - set(ko)) == [], "missing in Korean"
    assert sorted(set(ko) - set(en)) == [], "missing in English"


@pytest.mark.parametrize("table", [i18n.catalogue, i18n.content])
def test_both_languages_have_the_same_placeholders(table):
    en, ko = table("en"), table("ko")
    bad = {k: (placeholders(en[k]), placeholders(ko[k])) for k in en
           if k in ko and placeholders(en[k]) != placeholders(ko[k])}
    # prose may contain LaTeX braces: only names that look like ours count there
    assert bad == {}


def test_no_empty_entries():
    for lang in i18n.LANGS:
        assert [k for k, v in i18n.catalogue(lang).items() if not v.strip()] == []
        assert [k for k, v in i18n.content(lang).items() if not v.strip()] == []


def code_keys():
    for path in CODE:
        text = path.read_text(encoding="utf-8")
        for m in LITERAL_CALL.finditer(text):
            yield path.relative_to(ROOT), m.group(1), bool(m.group(2)), m.group(4)


def test_every_key_used_in_code_exists():
    labels, sections = i18n.catalogue("en"), i18n.content("en")
    missing = []
    for where, fn, is_f, key in code_keys():
        table = sections if fn in ("prose", "text") else labels
        if fn == "options":
            ok = any(k.startswith(key + ".") for k in table)
        elif is_f:  # t(f"masks.kind.{kind}"): the literal prefix must start some key
            prefix = key.split("{", 1)[0]
            ok = any(k.startswith(prefix) for k in table)
        else:
            ok = key in table
        if not ok:
            missing.append(f"{where}: {fn}({key!r})")
    assert missing == []


def test_i18n_finds_what_it_must():
    assert i18n.fill("{n:,} of {total} \\frac{a}{b}", {"n": 12000, "total": 3}) == "12,000 of 3 \\frac{a}{b}"
    assert i18n.parse_sections("x\n<!-- section: a -->\nA\n\n<!-- section: b.c -->\nB\n") == {"a": "A", "b.c": "B"}
    assert i18n.language_from_locale("ko-KR") == "ko" and i18n.language_from_locale("en-US") == "en"
    assert i18n.language_from_locale(None) == "en"
    with pytest.raises(KeyError):
        i18n.t("no.such.key")


def test_messages_translate_nested():
    msg = i18n.Message("common.rows_cols")
    assert i18n.say(msg) == i18n.catalogue("en")["common.rows_cols"]
    assert i18n.Message.from_dict(msg.to_dict()) == msg
    assert i18n.Message.from_dict({"code": 3}) is None


def _word(term: str) -> re.Pattern:
    return re.compile(r"\b" + re.escape(term) + r"(s|es)?\b", re.I)


def test_glossary_one_korean_word_per_term():
    en, ko = i18n.catalogue("en"), i18n.catalogue("ko")
    problems = []
    for name, entry in i18n.glossary().items():
        pattern = _word(entry["en"])
        allowed = [entry["ko"], *entry.get("also", [])]
        for key, text in en.items():
            if not pattern.search(text):
                continue
            if not any(w in ko[key] for w in allowed):
                problems.append(f"{key}: '{entry['en']}' without '{entry['ko']}': {ko[key]}")
            for wrong in entry.get("not", []):
                if wrong in ko[key]:
                    problems.append(f"{key}: '{entry['en']}' as '{wrong}' (use '{entry['ko']}'): {ko[key]}")
    assert problems == []


def test_a_browser_in_any_language_of_the_app_opens_in_it():
    """A new language needs no code beyond LANGS: its browser locale ("xx", "xx-YY", "xx_YY") opens the app in it."""
    from app.i18n import DEFAULT, LANGS, language_from_locale
    for code in LANGS:
        assert language_from_locale(code) == code
        assert language_from_locale(f"{code.upper()}-ZZ") == language_from_locale(f"{code}_ZZ") == code
    assert language_from_locale("zz-ZZ") == language_from_locale(None) == DEFAULT
