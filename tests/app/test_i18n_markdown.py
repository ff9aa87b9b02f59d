"""Catalogue strings and prose say what they are written to say: Markdown eats none of their words.

Every catalogue string and prose section may be drawn as Markdown (st.markdown, captions, messages, widget
labels). Words in square brackets followed by words in parentheses are a link there: `[MASK](마스크)` showed as a
broken link to "마스크" and the word [MASK] itself was gone. A line that starts `[x]: y` is a link definition and
is not shown at all; a pair of `~` strikes the text between (Streamlit's Markdown reads GFM's single tilde); an
odd `$` opens maths that runs to the next one. These tests read every string with a CommonMark parser."""
from __future__ import annotations

import re
from urllib.parse import unquote

import pytest

from app.i18n import LANGS, catalogue, content

# A link may go to the web or to one of the app's pages (`pages/attention.py`, `attention.py`, `/attention`).
REAL_TARGET = re.compile(r"^(?:https?://|mailto:)\S+$|^(?:pages/)?[\w-]+\.py$|^/[\w/-]*$")
_CODE = re.compile(r"(`+).+?\1", re.S)
_MATHS = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S)


def _texts():
    for lang in LANGS:
        for key, text in catalogue(lang).items():
            yield lang, key, text
        for key, text in content(lang).items():
            yield lang, f"prose {key}", text


def _walk(tokens):
    for tok in tokens:
        yield tok
        if tok.children:
            yield from _walk(tok.children)


def eaten(text: str) -> list[str]:
    """What Markdown would turn from words into something else in `text` (empty when nothing)."""
    from markdown_it import MarkdownIt
    env: dict = {}
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text, env)
    out = [f"link definition [{name}]" for name in (env.get("references") or {})]
    for tok in _walk(tokens):
        if tok.type in ("link_open", "image"):
            target = unquote(str(tok.attrs.get("href") or tok.attrs.get("src") or ""))
            if not REAL_TARGET.match(target):
                out.append(f"{tok.type} to {target!r}")
    plain = _MATHS.sub("", _CODE.sub("", text))
    if plain.count("~") >= 2:
        out.append("a pair of ~ strikes the words between")
    if _CODE.sub("", text).count("$") % 2:
        out.append("an odd $ opens maths")
    return out


def test_the_checker_sees_what_markdown_eats():
    assert eaten("문장 (가릴 단어 자리에 [MASK](마스크)를 쓰세요)") == ["link_open to '마스크'"]
    assert eaten("[x]: where\nand more") == ["link definition [X]"]
    assert eaten("about ~5 s or ~10 s") and eaten("costs $5") and eaten("![i](pic)")
    for fine in ("[MASK] then [CLS]", "[1, 2, 3]: the scores", "see [the paper](https://arxiv.org/abs/1706.03762)",
                 "go to [masks](pages/masks.py)", "$x^2$ and `a ~ b ~ c`", "d_model = 512 · `$HOME`"):
        assert eaten(fine) == [], fine


@pytest.mark.parametrize("lang", list(LANGS))
def test_no_catalogue_string_or_prose_section_loses_words_to_markdown(lang):
    found = {key: what for code, key, text in _texts() if code == lang and (what := eaten(text))}
    assert found == {}
