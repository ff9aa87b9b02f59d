"""Numbers as text, one way for the whole app (language-free: units that differ by language come
from the catalogue, `common.unit_*`)."""
from __future__ import annotations

import math
import re

import numpy as np


_NUMBER_TYPES = (int, float, np.integer, np.floating)


def number(value, spec: str = "") -> str:
    """`format(value, spec)` for every number the app writes, except that a value that rounds to zero is written
    without a minus sign: -0.0 and -0.00004 with ".3f" read "0.000", not "-0.000" (a sign on a zero says nothing
    true). Anything that is not a number is formatted as it is."""
    text = format(value, spec)
    if isinstance(value, _NUMBER_TYPES) and not isinstance(value, bool) and text[:1] in "-−" \
            and not any(c in "123456789" for c in text.split("e")[0].split("E")[0]) and "inf" not in text:
        return text[1:]
    return text


def plural(n, one: str, other: str) -> str:
    """The word that agrees with the count n in English: `one` for exactly 1, else `other`. n may be the number as
    a text already shows it ("1", "1,000", "1.0")."""
    try:
        return one if float(str(n).replace(",", "")) == 1 else other
    except (TypeError, ValueError):
        return other


def _finite(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(v)


def compact(x: float, sig: int = 4) -> str:
    """A compact number for cells and formulas: 0.2, 0.1155, 1.51, 1e+30, −∞."""
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 1e-4:
        return number(x, ".3g")
    return number(x, f".{sig}g")


def vector(v, max_items: int = 6) -> str:
    """[0.3, 0.7, 0.5, …] with at most max_items entries."""
    v = list(np.asarray(v, float))
    body = ", ".join(compact(x) for x in v[:max_items])
    return f"[{body}{', …' if len(v) > max_items else ''}]"


def large(x: float) -> str:
    """Readable large numbers: 1.2e+12 style beyond a million, commas below, ∞ for infinity."""
    if x == math.inf:
        return "∞"
    if abs(x) >= 1e6:
        return number(x, ".3g")
    if float(x).is_integer():
        return f"{int(x):,}"
    return number(x, ".3g")


def fixed(v, digits: int = 3) -> str:
    """A metric with fixed decimals, or – when there is none yet."""
    return number(v, f".{digits}f") if _finite(v) else "–"


def percent(v) -> str:
    return number(100 * v, ".1f") + "%" if _finite(v) else "–"


def count(n) -> str:
    """1.03M, 12.5k, 640."""
    if n is None:
        return "–"
    n = float(n)
    if n >= 1e6:
        return f"{n / 1e6:.2f}M"
    if n >= 1e3:
        return f"{n / 1e3:.1f}k"
    return number(n, ".0f")


def size_bytes(n) -> str:
    n = float(n or 0)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def duration_parts(seconds) -> tuple[int, int, int] | None:
    """(hours, minutes, seconds) of a duration, or None when it is unknown. The page joins them with
    the units of its language (app.ui.fmt_duration)."""
    if not _finite(seconds):
        return None
    s = int(round(max(float(seconds), 0)))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return h, m, s



# Markdown that acts anywhere in a line: emphasis, code, links and images, raw HTML and autolinks, tables,
# strikethrough, maths, entities, Streamlit's `:colour[...]` / `:material/icon:` directives, backslashes.
_MD_INLINE = r"[\\`*\[\]<>|~$:&]"
# `_` opens or closes emphasis only at a word's edge (CommonMark): an intraword one (d_model) is text.
_MD_UNDERSCORE = r"(?<![^\W_])_|_(?![^\W_])"
# What acts only at a line's start: headings, lists, quotes, rules, setext underlines, numbered items.
_MD_LINE_START = r"(?<![^\n])[ \t]*(?:[-+#=>]|\d{1,9}[.)](?=\s|$))"
_MD = re.compile(f"{_MD_LINE_START}|{_MD_INLINE}|{_MD_UNDERSCORE}")


def _escape_match(m: re.Match) -> str:
    s = m.group(0)
    if len(s) == 1:
        return "\\" + s
    return s[:-1] + "\\" + s[-1]  # a line-start marker: escape its last character (`#`, `-`, the `.` of `1.`)


def escape_md(text) -> str:
    """User text shown as it is inside Markdown (st.markdown, captions, alert boxes, t() arguments):
    `**b**`, `![i](http://…)`, `<b>`, `$x$`, `:red[x]`, `# h` stay text. Only what Markdown would act on is
    backslash-escaped, so plain words, numbers and `d_model` read the same in the page's source."""
    return _MD.sub(_escape_match, str(text))


def code_span(text) -> str:
    """Text shown verbatim as Markdown inline code: a backtick inside cannot close the span, and a blank
    line cannot end the paragraph (a line break inside a code span is shown as a space anyway)."""
    return "`" + " ".join(str(text).replace("`", "ʼ").split("\n")) + "`"


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return escape_md(value).replace("\n", " ")


_NUMBER_LIKE = re.compile(r"^[\s+\-−]*[\d.,]+[\s\dMkGB%.,·⁰¹²³⁴⁵⁶⁷⁸⁹⁻–\-]*$")


def _table(rows: list[dict]) -> tuple[list[str], list[list[str]], list[bool]]:
    """The columns (in order of first appearance), each row's cells as Markdown-escaped text, and which columns
    hold numbers (right-aligned)."""
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]

    def numeric(j: int) -> bool:
        values = [r[j] for r in cells if r[j]]
        return bool(values) and all(_NUMBER_LIKE.match(v) for v in values)

    return columns, cells, [numeric(j) for j in range(len(columns))]


def markdown_table(rows: list[dict]) -> str:
    """Rows (dicts with the same keys) as a Markdown table: every cell escaped (a `|` or `*` in a name stays
    text), empty for None, and columns of numbers right-aligned. Drawn with st.markdown it needs neither pandas
    nor the browser's data-grid code, which a first page would otherwise load."""
    columns, cells, numeric = _table(rows)
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |",
             "|" + "|".join("---:" if right else ":---" for right in numeric) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in cells]
    return "\n".join(lines)


def _unescaped(cell: str) -> str:
    """A Markdown-escaped cell as it reads (the backslashes escape_md added, dropped)."""
    return _ESCAPED.sub(r"\1", cell)


_ESCAPED = re.compile(r"\\(.)")


def html_table(rows: list[dict]) -> str:
    """markdown_table's table as HTML (the same columns, cells and alignment), every cell's text escaped: a table
    that follows a browser choice (app.fast.choice.follow_table)."""
    import html
    columns, cells, numeric = _table(rows)

    def row(tag: str, texts: list[str]) -> str:
        return "<tr>" + "".join(f'<{tag} style="text-align: {"right" if right else "left"};">'
                                f"{html.escape(_unescaped(text), quote=False)}</{tag}>"
                                for text, right in zip(texts, numeric)) + "</tr>"

    return ("<table><thead>" + row("th", [_cell(c) for c in columns]) + "</thead><tbody>"
            + "".join(row("td", r) for r in cells) + "</tbody></table>")
