"""The why page's kernel width k, answered in the browser (app/fast/choice.py): k picks only the convolutional row of
Table 1 and the convolutional curves, so every k's table and curves are sent, and what the browser gets for each k
is what the server draws for it; the server path (tests/pages/test_page_why.py) stays as it was."""
import html
import re

import numpy as np
import pytest
from app.i18n import LANGS

from model.lessons import complexity as mcx
from tests.apptest_read import array_of, charts, choice_specs, tables, title
from tests.apptest_util import assert_clean, open_link

KS = list(range(2, 65))


def _chart(at, key: str):
    return next(c for c in charts(at) if key in c.id)


def _server(monkeypatch, lang: str, **values):
    """The page drawn by the server (a Streamlit slider) for these values, opened from a link."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    at = open_link("why.py", {k: str(v) for k, v in values.items()}, lang=lang)
    monkeypatch.delenv("ATLAS_ATTENTION_VIEW")
    return at


def _rows(table_html: str) -> list[list[str]]:
    """The cells of an HTML table the browser gets, as text."""
    return [[html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", table_html)]


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_every_k_is_what_the_server_draws(lang, monkeypatch):
    at = open_link("why.py", {"n": "300", "d": "64", "r": "9"}, lang=lang)
    assert_clean(at)
    assert not [s for s in at.slider if s.key == "cx_k"]
    specs = choice_specs(at)
    slider = next(s for s in specs if s["kind"] == "slider")
    assert slider["channel"] == "why-k" and slider["param"] == "k"
    assert slider["values"] == KS and slider["values"][slider["index"]] == 3
    table = next(s for s in specs if s["kind"] == "text" and s.get("table"))
    assert table["initial"] == KS.index(3) and len(table["texts"]) == len(KS)
    cost, path = _chart(at, "cx_cost"), _chart(at, "cx_path")
    assert title(cost.variant(KS.index(3))) == title(cost.figure)
    for k in (2, 17, 64):
        i = KS.index(k)
        server = _server(monkeypatch, lang, n=300, d=64, r=9, k=k)
        assert_clean(server)
        ref = tables(server)[0]
        assert _rows(table["texts"][i]) == [list(ref.columns)] + [[str(v) for v in row] for row in ref.values.tolist()]
        for mine, key in ((cost, "cx_cost"), (path, "cx_path")):
            got, theirs = mine.variant(i), _chart(server, key).figure
            assert title(got) == title(theirs), (key, k)
            assert got["layout"]["yaxis"] == theirs["layout"]["yaxis"], (key, k)
            for a, b in zip(got["data"], theirs["data"]):
                assert np.allclose(array_of(a["y"]).astype(float), array_of(b["y"]).astype(float), rtol=1e-6)
    # the convolutional curve is the model's, for each k
    conv = mcx.convolutional_over_n(300, 64, (5,))
    assert np.allclose(array_of(cost.variant(KS.index(5))["data"][2]["y"]).astype(float), conv["cost"][0], rtol=1e-6)
    assert np.allclose(conv["cost"][0], mcx.curves_over_n(300, 64, 5, 9)["cost"]["convolutional"])


@pytest.mark.slow
def test_a_link_and_reset_reach_k():
    at = open_link("why.py", {"k": "40"}, lang="en")
    assert_clean(at)
    slider = next(s for s in choice_specs(at) if s["kind"] == "slider")
    assert slider["values"][slider["index"]] == 40
    assert _chart(at, "cx_cost").follow["initial"] == KS.index(40)
    at.button(key="reset_page").click().run()
    slider = next(s for s in choice_specs(at) if s["kind"] == "slider")
    assert slider["values"][slider["index"]] == 3
    assert at.query_params["k"] == "3"
