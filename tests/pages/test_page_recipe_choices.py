"""The recipe page's dropout rate, answered in the browser (app/fast/choice.py): every rate's mask is sent, and what
the browser gets for each rate (the two maps, the four metrics, the check and the result) is what the server draws
for that rate; the server path (tests/pages/test_page_recipe.py) stays as it was."""
import html

import numpy as np
import pytest
from app.i18n import LANGS

from tests.apptest_read import array_of, charts, choice_specs, metrics, outlined, title
from tests.apptest_util import assert_clean, open_link, run_page

RATES = [round(0.05 * i, 2) for i in range(19)]


def _chart(at, key: str):
    return next(c for c in charts(at) if key in c.id)


def _plain(text: str) -> str:
    """A followed text as the server's Markdown has it (the browser's copy is HTML: code marked, < > & escaped)."""
    return html.unescape(text.replace("<code>", "`").replace("</code>", "`"))


def _server(monkeypatch, lang: str, **values):
    """The page drawn by the server (a Streamlit slider) for these values, opened from a link."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    at = open_link("recipe.py", {k: str(v) for k, v in values.items()}, lang=lang)
    monkeypatch.delenv("ATLAS_ATTENTION_VIEW")
    return at


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_every_rate_is_what_the_server_draws(lang, monkeypatch):
    at = open_link("recipe.py", {"seed": "3"}, lang=lang)
    assert_clean(at)
    assert not [s for s in (*at.slider, *at.select_slider) if s.key == "drop_p"]
    specs = choice_specs(at)
    slider = next(s for s in specs if s["kind"] == "slider")
    assert slider["channel"] == "drop-p" and slider["param"] == "p_drop"
    assert slider["values"] == RATES and slider["values"][slider["index"]] == 0.1
    followers = [s for s in specs if s["kind"] == "text" and s["channels"][0]["name"] == "drop-p"]
    assert len(followers) == 6  # four metrics, the check, the result
    before, after = _chart(at, "drop_before"), _chart(at, "drop_after")
    assert after.follow["initial"] == RATES.index(0.1) and title(after.variant(2)) == title(after.figure)
    for p in (0.0, 0.35, 0.9):
        i = RATES.index(p)
        server = _server(monkeypatch, lang, seed=3, p_drop=p)
        assert_clean(server)
        for key, got in (("drop_before", before.variant(i)), ("drop_after", after.variant(i))):
            ref = _chart(server, key).figure
            assert title(got) == title(ref), (key, p)
            for attr in ("zmin", "zmax"):
                assert got["data"][0][attr] == pytest.approx(ref["data"][0][attr]), (key, attr, p)
            assert np.allclose(array_of(got["data"][0]["z"]), array_of(ref["data"][0]["z"]), atol=1e-6, equal_nan=True)
            assert [list(r) for r in got["data"][0]["text"]] == [list(r) for r in ref["data"][0]["text"]]
            assert (got["layout"].get("shapes") or []) == (ref["layout"].get("shapes") or []), (key, p)
        shown = {}
        for s in followers[:4]:
            label, value = (_plain(part.split(">", 1)[1]) for part in s["texts"][i].split("</div>")[:2])
            shown[label] = value
        assert shown == {k: v for k, v in metrics(server).items() if k in shown} and len(shown) == 4
        told = [_plain(s["texts"][i]) for s in followers[4:]]
        assert told[0] in [c.value for c in server.caption]
        assert told[1] in [m.value for m in server.markdown]
    # the rate drops more cells as it grows: the outlines are the zeroed cells
    assert after.variant(0)["layout"].get("shapes", []) == []
    cells = [outlined(after.variant(i)) for i in (2, 18)]
    assert len(cells[1]) > len(cells[0]) > 0
    assert outlined(after.variant(2)) == {(int(i), int(j)) for i, j in zip(*np.nonzero(
        array_of(after.variant(2)["data"][0]["z"]) == 0))}  # the outlined cells are the zeroed ones


@pytest.mark.slow
def test_a_link_and_reset_reach_the_rate():
    at = open_link("recipe.py", {"p_drop": "0.45"}, lang="en")
    assert_clean(at)
    slider = next(s for s in choice_specs(at) if s["kind"] == "slider")
    assert slider["values"][slider["index"]] == 0.45
    assert _chart(at, "drop_after").follow["initial"] == RATES.index(0.45)
    at.button(key="reset_page").click().run()
    slider = next(s for s in choice_specs(at) if s["kind"] == "slider")
    assert slider["values"][slider["index"]] == 0.1
    assert at.query_params["p_drop"] == "0.1"


def test_an_empty_sentence_sends_no_rates():
    at = run_page("recipe.py", "en", setup=lambda at: at.session_state.__setitem__("drop_sentence", ""))
    assert_clean(at)
    assert [e.value for e in at.error]
    assert _chart(at, "ls_loss") and not [c for c in charts(at) if "drop_" in c.id]
