"""Numbers and counts read right in both languages.

- A number that rounds to zero is written `0.000`, never `-0.000`: every formatting function of app/format.py,
  every placeholder of the catalogue (`t()` fills them through app.format.number) and every number a chart writes
  in its cells.
- A count's noun agrees with it in English ("1 thread", "2 threads"): every catalogue string with a number
  placeholder before a counted noun, rendered with 1 and with 2 through `t()`. Korean has no plural: its counts
  take a counter word (개, 번, 줄, 스텝, …) and no English-style "(s)"."""
from __future__ import annotations

import re

import numpy as np
import pytest
from app.i18n import LANGS

from app import format as fmt
from app.i18n import catalogue, fill

ZEROISH = (-0.0, -1e-9, -4e-5, np.float32(-1e-7), np.float64(-0.0))
# A signed number whose digits are all zero: "-0", "-0.000", "−0.0%", "-0.00e+00"
SIGNED_ZERO = re.compile(r"(?<![\w.])[-−](0+(?:[.,]0+)?)(?:e[+-]?0+)?%?(?![\d.]*[1-9])")


def signed_zeros(text: str) -> list[str]:
    return [m.group(0) for m in SIGNED_ZERO.finditer(text)]


def test_the_checker_sees_a_signed_zero():
    assert signed_zeros("mean −0.000 and -0.0% then -0.00e+00") == ["−0.000", "-0.0%", "-0.00e+00"]
    assert signed_zeros("a-0 x = -0.001 and 10-05 and -1e-09 and 0.000") == []


@pytest.mark.parametrize("value", ZEROISH, ids=repr)
def test_formatting_functions_never_write_minus_zero(value):
    shown = [fmt.number(value, spec) for spec in ("", ".3f", ".1f", ".0f", ".2%", ".4g", ",.0f", ".1e")]
    shown += [fmt.compact(value), fmt.fixed(value), fmt.fixed(value, 1), fmt.percent(value), fmt.large(value),
              fmt.count(value), fmt.vector([value, value])]
    assert [s for s in shown if signed_zeros(s)] == []


def test_real_negatives_keep_their_sign():
    assert fmt.number(-0.0006, ".3f") == "-0.001" and fmt.fixed(-1.5) == "-1.500"
    assert fmt.number(-1e-9, ".2e") == "-1.00e-09" and fmt.compact(-1e-9) == "-1e-09"
    assert fmt.number(float("-inf"), ".3f") == "-inf" and fmt.number(-3) == "-3"


def test_cell_numbers_never_read_minus_zero():
    from app.charts.heatmaps import cell_text
    cells = cell_text(np.array([[-0.0, -1e-9, -0.004, 0.5]]), decimals=2)
    assert cells == [["0", "0.00", "0.00", "0.50"]]


NUMBER_SPEC = re.compile(r"\{(\w+):([^{}|]*[dfgeE%n,])\}")


@pytest.mark.parametrize("lang", list(LANGS))
def test_no_catalogue_number_reads_minus_zero(lang):
    """Every catalogue placeholder with a number format, filled with a tiny negative through t()'s fill."""
    bad = {}
    for key, text in catalogue(lang).items():
        names = {m.group(1) for m in NUMBER_SPEC.finditer(text) if not m.group(2).endswith("d")}
        if not names:
            continue
        for value in (-0.0, -1e-9):
            shown = fill(text, {name: value for name in names})
            if signed_zeros(shown):
                bad[key] = shown
    assert bad == {}


# ----------------------------------------------------------------------------- counts

# A number placeholder, then at most two words before the noun it counts ("{enc} encoder layers").
COUNTED = re.compile(r"\{(\w+)(?::[^{}|]*)?\}\s+((?:[a-z][\w-]*\s+){0,2}?)([a-zA-Z]+)\b")
# Nouns the app counts, by their plural (what a catalogue string writes after a number).
NOUNS = {"threads": "thread", "runs": "run", "lines": "line", "rows": "row", "columns": "column",
         "tokens": "token", "cells": "cell", "queries": "query", "keys": "key", "heads": "head",
         "layers": "layer", "steps": "step", "pairs": "pair", "words": "word", "sentences": "sentence",
         "positions": "position", "pieces": "piece", "characters": "character", "numbers": "number",
         "masks": "mask", "seeds": "seed", "patches": "patch", "dimensions": "dimension", "digits": "digit",
         "pictures": "picture", "boxes": "box", "parameters": "parameter", "entries": "entry",
         "checkpoints": "checkpoint", "GPUs": "GPU", "bytes": "byte", "minutes": "minute", "images": "image",
         "repeats": "repeat", "samples": "sample", "values": "value", "items": "item", "dims": "dim"}
SINGULARS = {v: k for k, v in NOUNS.items()}


def _counted(text: str):
    """(placeholder, noun) for each count in an English text (the noun as written)."""
    for m in COUNTED.finditer(text):
        noun = m.group(3)
        if noun in NOUNS or noun in SINGULARS:
            yield m.group(1), noun


def _render(text: str, n) -> str:
    names = set(re.findall(r"\{(\w+)(?::[^{}]*)?\}", text))
    return fill(text, {name: n for name in names})


def _disagreements(text: str) -> list[str]:
    """Each number of the text rendered with 1 and with 2, with the noun it counts: the first of the next three
    words that is a counted noun, or the last of nouns in a row ("key tokens" counts tokens)."""
    bad = []
    for n, wrong in ((1, NOUNS), (2, SINGULARS)):
        shown = _render(text, n)
        for m in re.finditer(rf"(?<![\w.×]){n}((?:\s+[A-Za-z][\w/-]*){{1,3}})", shown):  # (not a product: 8×8)
            words = m.group(1).split()
            if words[0] in ("per", "of"):  # "2 per key/value head", "2 of each head's": the count is not of those
                continue
            i = next((i for i, w in enumerate(words) if w in NOUNS or w in SINGULARS), None)
            if i is None:
                continue
            while i + 1 < len(words) and (words[i + 1] in NOUNS or words[i + 1] in SINGULARS):
                i += 1
            if words[i] in wrong:
                bad.append(f"{n} {' '.join(words[:i + 1])}")
        if n == 1 and "(s)" in shown:
            bad.append("(s)")
    return bad


def test_the_count_checker_sees_a_plural_after_one():
    assert _disagreements("CPU · {threads} threads") == ["1 threads"]
    assert _disagreements("{n} row(s)") == ["(s)", "2 row"]
    assert _disagreements("{n} key tokens") == ["1 key tokens"]
    assert _disagreements("{n} key {n:token|tokens}") == []
    assert _disagreements("{kv} key/value heads") == ["1 key/value heads"]
    assert _disagreements("({g} per key/value head)") == []
    assert _disagreements("{n} {n:thread|threads}") == []
    assert _disagreements("{done} of {total} {total:run|runs} finished") == []
    assert fill("{n} {n:run|runs}, {k:differs|differ}", {"n": 1, "k": 3}) == "1 run, differ"


def test_english_counts_agree_with_one_and_two():
    """Each English catalogue string with a count, rendered with every number 1 and then 2 through fill(): the
    noun after each number agrees with it."""
    en = catalogue("en")
    bad = {key: found for key, text in en.items() if list(_counted(text)) and (found := _disagreements(text))}
    assert bad == {}


def test_plural_forms_are_english_only_and_korean_counts_take_a_counter():
    """Korean strings need no `{n:one|other}`; none writes "(s)" or an English plural after a number."""
    ko = catalogue("ko")
    assert {k: v for k, v in ko.items() if re.search(r"\{\w+:[^{}]*\|[^{}]*\}", v) or "(s)" in v} == {}


@pytest.mark.slow
@pytest.mark.parametrize("page", [p.file for p in __import__("app.pages_list", fromlist=["PAGES"]).PAGES])
def test_no_page_shows_minus_zero(page):
    """Every page at its defaults, every box and tab: prose, metrics, tables and the numbers written in charts."""
    from tests.apptest_read import charts, rendered_text
    from tests.apptest_util import assert_clean, each_view, run_page
    at = run_page(page, "en", timeout=240)
    assert_clean(at)
    found = []
    for view in each_view(at):
        texts = rendered_text(view) + [m.value for m in view.metric] + [m.label for m in view.metric]
        for chart in charts(view):
            for trace in chart.figure.get("data", []):
                cells = trace.get("text")
                if isinstance(cells, list):
                    texts += [c for row in cells for c in (row if isinstance(row, list) else [row]) if isinstance(c, str)]
        found += [z for text in texts for z in signed_zeros(text)]
    assert found == []


def _page_numbers(at) -> list[str]:
    from tests.apptest_read import rendered_text
    return rendered_text(at) + [m.value for m in at.metric]


@pytest.mark.slow
@pytest.mark.parametrize("page", ["attention.py", "multihead.py", "positional.py", "masks.py", "recipe.py", "why.py"])
def test_no_slider_extreme_shows_minus_zero(page):
    """Each slider of the page at its smallest and then its largest value (the settings where a computed zero comes
    out as a tiny negative): no signed zero in the prose, messages or metrics."""
    from tests.apptest_util import assert_clean, run_page
    at = run_page(page, "en", timeout=240)
    found = []
    for key in [s.key for s in at.slider if s.key and not isinstance(s.value, tuple)]:
        for end in ("min", "max"):
            slider = next((s for s in at.slider if s.key == key), None)
            if slider is None:
                break
            slider.set_value(getattr(slider, end)).run()
            assert_clean(at)
            found += [(key, end, z) for text in _page_numbers(at) for z in signed_zeros(text)]
    assert found == []
