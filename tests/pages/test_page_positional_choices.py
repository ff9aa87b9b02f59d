"""The positional page's choices that only change the drawing (the dot product's anchor, the circle's highlighted
position, the permutation maps' layer and head), answered in the browser (app/fast/choice.py): what the browser gets
for each value is what the server draws for that value, the link and "reset this page" reach them, and the server
path (tests/pages/test_page_positional.py) stays as it was."""
import numpy as np
import pytest
from app.i18n import LANGS, catalogue

from tests.apptest_read import array_of, charts, choice_specs, title
from tests.apptest_util import assert_clean, open_link, run_page

CHANNELS = {"pe-anchor": "anchor", "pe-highlight": "highlight", "pe-perm-layer": "layer", "pe-perm-head": "head"}


def _chart(at, key: str):
    return next(c for c in charts(at) if key in c.id)


def _sliders(at) -> dict:
    return {s["channel"]: s for s in choice_specs(at) if s["kind"] == "slider"}


def _server(monkeypatch, lang: str, **values):
    """The page drawn by the server (Streamlit sliders) for these values, opened from a link."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    at = open_link("positional.py", {k: str(v) for k, v in values.items()}, lang=lang)
    monkeypatch.delenv("ATLAS_ATTENTION_VIEW")
    return at


def _ys(fig) -> list[np.ndarray]:
    return [array_of(trace["y"]).astype(float) for trace in fig["data"]]


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_every_variant_is_what_the_server_draws(lang, monkeypatch):
    at = run_page("positional.py", lang)
    assert_clean(at)
    sliders = _sliders(at)
    assert set(sliders) == set(CHANNELS)
    assert not [s for s in at.slider if s.key in ("pe_anchor", "rot_p", "perm_layer", "perm_head")]
    anchor = sliders["pe-anchor"]
    assert anchor["values"] == list(range(100)) and anchor["values"][anchor["index"]] == 50
    assert anchor["param"] == "anchor" and anchor["label"] == catalogue(lang)["positional.dot.anchor"]
    dot, circle = _chart(at, "pe_dot"), _chart(at, "rot_circle")
    maps = {tag: _chart(at, f"perm-1-{tag}") for tag in ("orig", "perm", "back")}
    captions = [s for s in choice_specs(at) if s["kind"] == "text"]
    assert len(captions) == 2  # one under each row of maps
    # the variant for the server's own values is the figure as sent
    assert dot.follow["initial"] == 50 and title(dot.variant(50)) == title(dot.figure)
    for a, p, layer, head in ((0, 97, 1, 1), (37, 0, 2, 3), (99, 60, 2, 4)):
        server = _server(monkeypatch, lang, anchor=a, highlight=p, layer=layer, head=head)
        ref = _chart(server, "pe_dot").figure
        got = dot.variant(a)
        assert title(got) == title(ref)
        assert got["layout"]["shapes"][0]["x0"] == ref["layout"]["shapes"][0]["x0"] == a
        for mine, theirs in zip(_ys(got), _ys(ref)):
            assert np.allclose(mine, theirs, rtol=1e-6, atol=1e-5)
        ref_circle, got_circle = _chart(server, "rot_circle").figure, circle.variant(p)
        for i in (2, 3):  # the arrows to p and p + k (none where p + k is past the last position)
            assert got_circle["data"][i]["text"] == ref_circle["data"][i]["text"]
            assert np.allclose(array_of(got_circle["data"][i]["x"]), array_of(ref_circle["data"][i]["x"]), atol=1e-6)
        v = (layer - 1) * 4 + head - 1
        for tag, chart in maps.items():
            ref_map = _chart(server, f"perm-1-{tag}").figure["data"][0]
            got_map = chart.variant(v)["data"][0]
            assert np.allclose(array_of(got_map["z"]), array_of(ref_map["z"]), atol=1e-6)
            assert [list(r) for r in got_map["text"]] == [list(r) for r in ref_map["text"]]
        ref_captions = [c.value for c in server.caption if catalogue(lang)["common.rows_cols"] in c.value]
        shown = [c["texts"][v] for c in captions]
        assert [x.replace("&lt;", "<").replace("&gt;", ">") for x in shown] == ref_captions[-2:]
    # the arrow to p + k may point past the table: the server's circle for p = 97 shows positions up to 102
    assert circle.variant(97)["data"][3]["text"][1].endswith(" 102")


@pytest.mark.slow
def test_a_link_and_reset_reach_the_browser_choices():
    at = open_link("positional.py", {"anchor": "12", "highlight": "40", "layer": "2", "head": "4", "length": "64"},
                   lang="en")
    assert_clean(at)
    s = _sliders(at)
    assert [s[c]["values"][s[c]["index"]] for c in CHANNELS] == [12, 40, 2, 4]
    assert s["pe-anchor"]["values"] == list(range(64))
    assert _chart(at, "pe_dot").follow["initial"] == 12
    asked = {c: s[c]["asked"] for c in CHANNELS}
    at.button(key="reset_page").click().run()
    s = _sliders(at)
    assert [s[c]["values"][s[c]["index"]] for c in CHANNELS] == [50, 3, 1, 1]
    assert all(s[c]["asked"] != asked[c] for c in CHANNELS), "a reset must win over the learner's last choice"
    # the page asked anew: the link says so (otherwise the browser writes it, on a learner's move)
    assert [at.query_params[n] for n in CHANNELS.values()] == ["50", "3", "1", "1"]
    asked = {c: s[c]["asked"] for c in CHANNELS}
    at.query_params["anchor"] = "77"  # as the browser writes it on a move: the server leaves it
    at.run()
    assert {c: _sliders(at)[c]["asked"] for c in CHANNELS} == asked  # a rerun asks for the same
    assert at.query_params["anchor"] == "77"


@pytest.mark.slow
def test_a_shorter_table_offers_fewer_anchors_and_keeps_the_asked_one():
    at = open_link("positional.py", {"anchor": "90"}, lang="en")
    at.slider(key="pe_len").set_value(40).run()
    assert_clean(at)
    s = _sliders(at)["pe-anchor"]
    assert s["values"] == list(range(40)) and s["values"][s["index"]] == 39  # the nearest that fits
    dot = _chart(at, "pe_dot")
    assert len(dot.follow["traces"][0]["packed"]["shape"]) == 2 and dot.follow["traces"][0]["packed"]["shape"][0] == 40
    at.slider(key="pe_len").set_value(100).run()
    s = _sliders(at)["pe-anchor"]
    assert s["values"][s["index"]] == 90  # the learner's own comes back where it fits again
