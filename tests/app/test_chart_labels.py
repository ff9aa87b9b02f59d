"""Token labels reach a figure escaped exactly once.

Plotly reads every label as a small subset of HTML: a raw `<s>` vanishes and strikes the rest through, a raw
`<b>x</b>` turns bold. So a label is escaped once, by the chart builder that draws it (app.charts.style.esc /
labels); a page hands builders the tokens as they are. Escaped twice, the learner reads `&lt;s&gt;`.

Two tests hold that: every builder of app/charts (found as tests/app/test_charts.py finds them, by return
annotation) given tokens that need escaping shows each exactly once escaped; and every chart on the pages that draw
tokens (AppTest, the figure as the chart element receives it) carries no label escaped twice."""
from __future__ import annotations

import json
import re

import pytest
from app.i18n import LANGS

from tests.apptest_read import charts
from tests.apptest_util import assert_clean, open_link

# Tokens Plotly would read as markup, and what each must be in a figure: escaped once.
RAW = ("<s>", "a&b", "<b>x</b>")
ONCE = ("&lt;s&gt;", "a&amp;b", "&lt;b&gt;x&lt;/b&gt;")
# What a second escaping leaves: an entity whose own `&` was escaped again.
TWICE = re.compile(r"&amp;(?:lt|gt|amp|quot|#\d+);")


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def twice_escaped(fig: dict) -> list[str]:
    return [s for s in _strings(fig) if TWICE.search(s)]


# ----------------------------------------------------------------------------- the pages

@pytest.mark.parametrize("lang", list(LANGS))
def test_gpt_maps_show_the_start_token_escaped_once(lang, monkeypatch):
    """The decoder-only member's axes begin with `<s>`: Plotly must be given `&lt;s&gt;`, which it shows as
    `<s>`, not `&amp;lt;s&amp;gt;`, which it shows as `&lt;s&gt;`. The map as the server draws it (the attention
    view draws tokens as text: tests/pages/test_page_family_view.py)."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    at = open_link("family.py", {"member": "gpt"}, lang=lang)
    assert_clean(at)
    figs = {c.id: c.figure for c in charts(at)}
    heat = [f for f in figs.values() if any(tr.get("type") == "heatmap" for tr in f["data"])]
    assert heat, "the causal map is drawn"
    axis = heat[0]["data"][0]["x"]
    assert axis[0] == "&lt;s&gt;", axis[:3]
    for fig in figs.values():
        assert twice_escaped(fig) == []


@pytest.mark.parametrize("lang", ["en"])
def test_gpt_typed_markup_is_shown_as_typed(lang, monkeypatch):
    """Text a learner types with `&` and tags reaches the bars and the map (as the server draws it) once escaped."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    at = open_link("family.py", {"member": "gpt", "gpt_text": "you & <b>me</b>"}, lang=lang)
    assert_clean(at)
    for c in charts(at):
        assert twice_escaped(c.figure) == [], c.id
        for s in _strings(c.figure["data"]):
            assert "<b>me" not in s, (c.id, s)


# ----------------------------------------------------------------------------- every builder

def _with_markup(samples: dict) -> dict:
    """The builders' samples with every token, label and name made of the markup tokens."""
    tokens = list(RAW) + ["a", "a"]
    out = dict(samples)
    for name in ("labels", "query_labels", "key_labels", "q_labels", "k_labels", "x_labels", "y_labels"):
        out[name] = tokens
    out["names"] = [RAW[0], RAW[2]]
    out["runs"] = {RAW[1]: samples["records"]}
    out["panels"] = [(RAW[2], list(RAW), [0.5, 0.3, 0.2], RAW[0]), (RAW[1], ["b", RAW[1]], [0.6, 0.4], None)]
    out["gt_labels"] = [RAW[0], RAW[1]]
    out["pred_labels"] = [RAW[2], "q2 " + RAW[1]]
    out["titles"] = [RAW[i % 3] for i in range(len(tokens))]
    out["query_self_attention.labels"] = tokens
    out["cls_label"] = RAW[0]
    for name in WORD_PARAMETERS:  # titles, axis titles and names: words from the catalogue are text too
        out[name] = f"{name} {RAW[0]} {RAW[1]}"
    out["series"] = {RAW[0]: [1.0, None, 3.0], RAW[1]: [3, 2, 1]}
    out["histogram_overlay.series"] = {RAW[0]: samples["histogram_overlay.series"]["a"]}
    return out


# Words a builder writes into its figure (titles, axis titles, legend names), from the catalogue: `<pad>` in
# "0 = <pad>" is text, and Plotly would drop it.
WORD_PARAMETERS = ("title", "x_title", "y_title", "query_title", "key_title", "head_title", "layer_title",
                   "value_title", "pos_label", "train_name", "val_name", "token_name", "exact_name", "lr_name",
                   "tps_name", "paper_title", "ours_title", "seeds_label", "seed_title", "gt_name", "pred_name",
                   "dim_title", "colorbar_title", "vline_label")


# The parameters of a builder that carry tokens or names into the figure: its samples above have markup.
TOKEN_PARAMETERS = {"labels", "query_labels", "key_labels", "q_labels", "k_labels", "x_labels", "y_labels",
                    "names", "runs", "panels", "gt_labels", "pred_labels", "titles", "cls_label", "series",
                    *WORD_PARAMETERS}


def _token_builders() -> list[str]:
    import inspect

    from tests.app.test_charts import _builders
    return sorted(name for name, fn in _builders().items()
                  if TOKEN_PARAMETERS & set(inspect.signature(fn).parameters))


def test_builders_that_draw_tokens_are_found():
    assert {"heatmaps.numeric_heatmap", "curves.line_chart", "family_vit.class_probabilities", "family_vit.position_similarity_map",
            "heatmaps.attention_heatmap", "curves.bar_chart", "headview.head_view", "family_mlm.mask_predictions",
            "study.factor_figure", "training.compare_figure"} <= set(_token_builders())


@pytest.mark.parametrize("name", _token_builders())
def test_every_builder_escapes_token_labels_exactly_once(name):
    """Each markup token appears in the figure's JSON escaped once, never raw and never escaped twice."""
    import plotly.io as pio

    from tests.app.test_charts import _builders, _call, _samples
    samples = _with_markup(_samples())
    fig = _call(name, _builders()[name], samples)
    drawn = json.loads(pio.to_json(fig, validate=False))
    texts = list(_strings(drawn["data"])) + list(_strings(drawn["layout"]))
    joined = "\n".join(texts)
    assert twice_escaped(drawn) == [], name
    for raw in RAW:
        assert raw not in joined, (name, raw)
    assert any(once in joined for once in ONCE), (name, "no token reached the figure")


def test_a_label_that_is_already_an_entity_is_shown_as_typed():
    """A token that is literally `&lt;` is text too: escaped once it reads `&lt;` on screen, not `<`."""
    from app.charts import style
    assert style.labels(["&lt;", "<s>"]) == ["&amp;lt;", "&lt;s&gt;"]


def test_pages_hand_builders_raw_tokens():
    """Escaping is the builders' job: a page that escapes a token before handing it to a builder escapes it twice.
    The pages import no escaping helper of app.charts.style except to write a figure's ticks themselves
    (style.amend), where no builder escapes."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    offenders = []
    for path in sorted((root / "pages").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for m in re.finditer(r"from app\.charts\.style import ([^\n]+)", source):
            names = {n.strip().split(" as ")[0] for n in m.group(1).strip("()").split(",")}
            if "labels" in names:
                offenders.append(str(path.relative_to(root)))
    assert offenders == []


PAGES_WITH_TOKENS = [("inspector.py", {}), ("attention.py", {}), ("multihead.py", {}), ("masks.py", {}),
                     ("positional.py", {}), ("recipe.py", {}), ("why.py", {}), ("family.py", {"member": "mlm"}),
                     ("family.py", {"member": "gpt"}), ("family.py", {"member": "vit"}),
                     ("family.py", {"member": "detr"})]


# Markup the builders write themselves (bold panel titles, line breaks in hover texts, plotly's <extra>): any other
# tag in a figure is a word Plotly would swallow.
OWN_MARKUP = re.compile(r"</?(?:b|br|i|sub|sup|extra)>")
TAG = re.compile(r"<[^<>\s][^<>]*>")


@pytest.mark.slow
@pytest.mark.parametrize("lang", list(LANGS))
@pytest.mark.parametrize("page,params", PAGES_WITH_TOKENS, ids=lambda x: x if isinstance(x, str) else
                         "-".join(x.values()) or "default")
def test_every_chart_on_a_page_shows_its_words_as_text(page, params, lang, monkeypatch):
    """Every chart each page draws at its defaults carries no label escaped twice (a page gave a builder a label it
    had escaped itself) and no raw tag but the builders' own markup (a catalogue title's `<pad>`). The inspector's
    maps as the server draws them (the attention view draws tokens as text: tests/browser/test_browser_attention_view.py)."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    at = open_link(page, params, lang=lang, timeout=180)
    assert_clean(at)
    assert charts(at), "the page draws charts"
    found = {c.id: twice_escaped(c.figure) for c in charts(at)}
    assert {k: v for k, v in found.items() if v} == {}
    raw = {c.id: [s for s in _strings(c.figure) if TAG.search(OWN_MARKUP.sub("", s))] for c in charts(at)}
    assert {k: v for k, v in raw.items() if v} == {}
