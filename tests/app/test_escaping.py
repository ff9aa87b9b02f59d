"""User text echoed in Markdown stays text.

Streamlit renders st.markdown, captions and alert boxes as Markdown: a typed `![i](http://…)` would make
every viewer's browser fetch an image, `**b**` would turn bold, `$x$` would become maths. Whatever a learner
types and the page echoes goes through app.format.escape_md. These tests type a payload into the widgets
and read every rendered body."""
from __future__ import annotations

import re

import pytest

from app.format import escape_md
from app.pages_list import PAGES
from tests.apptest_read import errors, rendered_text
from tests.apptest_util import run_page

PAYLOAD = "**b** ![i](http://example.invalid/x.png) <b>x</b> $x$"
# what Markdown would act on if it reached a body unescaped (inside a code span it is shown as typed)
MARKERS = ("**b**", "![i](", "<b>", "</b>", "$x$", "http://example.invalid")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def unescaped(body: str) -> list[str]:
    """The payload's Markdown markers that a body carries outside code spans."""
    outside = _CODE_SPAN.sub("", body)
    return [m for m in MARKERS if m in outside]


def leaks(at) -> list[tuple[str, list[str]]]:
    return [(body[:120], found) for body in rendered_text(at) if (found := unescaped(body))]


# ----------------------------------------------------------------------------- the helper

@pytest.mark.parametrize("text", [PAYLOAD, "a_b _c_ __d__", "# h\n- item\n1. one\n2) two\n===\n---\n> quote",
                                  ":red[x] :material/home: ~~s~~ | t |", "&lt;b&gt; \\* `c`"])
def test_escape_md_leaves_no_markdown(text):
    MarkdownIt = pytest.importorskip("markdown_it").MarkdownIt
    html = MarkdownIt("commonmark").enable("strikethrough").enable("table").render(escape_md(text))
    # one paragraph of plain text: no image, link, emphasis, heading, list, quote, rule, code, raw html
    assert re.fullmatch(r"<p>(.|\n)*</p>\n", html), html
    for tag in ("<img", "<a ", "<strong", "<em", "<h1", "<h2", "<ul", "<ol", "<li", "<blockquote", "<hr",
                "<code", "<s>", "<del", "<table", "<b>"):
        assert tag not in html, (tag, html)
    for marker in ("**b**", "$x$", "<b>"):
        assert marker not in escape_md(text)
    assert not re.search(r"(?<!\\)[:\[$]", escape_md(text)), "Streamlit's :colour[...], :icon: and $maths$ escaped"


def test_escape_md_shows_the_same_text():
    """Escaping changes nothing a learner sees: CommonMark turns it back into the typed characters."""
    md = pytest.importorskip("markdown_it").MarkdownIt("commonmark")
    for text in (PAYLOAD, "I go to school.", "나는 학교에 간다.", "d_model, 3.5 - 2 = 1.5!", "a\\b & c"):
        html = md.render(escape_md(text))
        plain = re.sub(r"<[^>]+>", "", html).strip()
        unescape = plain.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
        assert unescape == text


def test_escape_md_keeps_plain_words_readable():
    """Plain words, numbers and intraword underscores need no backslashes (the raw body stays readable)."""
    for text in ("I love you", "d_model", "나는 학교에 간다.", "3.5, 7"):
        assert escape_md(text) == text


# ----------------------------------------------------------------------------- the three places named in the issue

@pytest.mark.slow
def test_recipe_pairs_error_escapes_the_typed_text():
    at = run_page("recipe.py", "en")
    at.text_input(key="sch_pairs").set_value(PAYLOAD).run()
    assert errors(at), "the payload is not a pair: an error is expected"
    assert not leaks(at), leaks(at)


@pytest.mark.slow
def test_positional_dims_error_escapes_the_typed_text():
    at = run_page("positional.py", "en")
    at.text_input(key="pe_dims").set_value(PAYLOAD).run()
    assert errors(at)
    assert not leaks(at), leaks(at)


@pytest.mark.slow
def test_positional_original_line_escapes_the_typed_sentence():
    at = run_page("positional.py", "ko")
    at.text_input(key="perm_sentence").set_value(PAYLOAD).run()
    line = [body for body in rendered_text(at) if "원래 순서" in body]
    assert line, "the original/shuffled line is shown"
    assert not leaks(at), leaks(at)


# ----------------------------------------------------------------------------- every text box of every page

TEXTS = ("text_input", "text_area")


@pytest.mark.slow
@pytest.mark.parametrize("page", [p.file for p in PAGES])
def test_every_text_box_of_every_page_echoes_escaped(page):
    """Each text input / text area of the page (and those that appear after a change) gets the payload in
    turn; no markdown, caption, info, warning, error or success body may carry it unescaped."""
    at = run_page(page, "en", timeout=180)
    done: set[str] = set()
    for _ in range(2):
        keys = [w.key for kind in TEXTS for w in at.get(kind) if w.key and w.key not in done
                and not getattr(w, "disabled", False)]
        for key in keys:
            done.add(key)
            box = next((w for kind in TEXTS for w in at.get(kind) if w.key == key), None)
            if box is None:
                continue
            box.set_value(PAYLOAD).run()
            assert not at.exception, (page, key, [e.value for e in at.exception])
            assert not leaks(at), (page, key, leaks(at))
