"""The masks page's head slider (the first section's masked scores and weights), answered in the browser
(app/fast/choice.py): every head's maps and numbers are sent, each variant is what the server draws for that head,
and the link and "reset this page" reach it; tests/pages/test_page_masks.py covers the server path."""
import numpy as np
import pytest
from app.i18n import LANGS

from tests.apptest_read import array_of, charts, choice_specs
from tests.apptest_util import assert_clean, open_link, run_page

PAIRS = ("m-causal", "m-pad", "m-both")


def _charts(at) -> dict:
    return {key: c for c in charts(at) for key in (f"{p}-{m}" for p in PAIRS for m in "sw") if c.id.endswith(key)
            or f"-{key}" in c.id}


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGS)
def test_every_head_is_what_the_server_draws(lang, monkeypatch):
    at = run_page("masks.py", lang)
    assert_clean(at)
    assert not [s for s in at.slider if s.key == "mask_head"]
    head = next(s for s in choice_specs(at) if s.get("channel") == "mask-head")
    heads = len(head["values"])
    assert head["values"] == list(range(1, heads + 1)) and heads >= 2 and head["param"] == "head"
    mine = _charts(at)
    assert set(mine) == {f"{p}-{m}" for p in PAIRS for m in "sw"}
    stats = [s for s in choice_specs(at) if s["kind"] == "text"]
    assert len(stats) == 3  # one under each pair of maps
    for h in (1, heads):
        monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
        server = open_link("masks.py", {"head": str(h)}, lang=lang)
        monkeypatch.delenv("ATLAS_ATTENTION_VIEW")
        theirs = _charts(server)
        for key, chart in mine.items():
            got, ref = chart.variant(h - 1)["data"][0], theirs[key].figure["data"][0]
            a, b = array_of(got["z"]).astype(float), array_of(ref["z"]).astype(float)
            assert np.array_equal(np.isnan(a), np.isnan(b)), key  # the masked cells (−∞, drawn as gaps) the same
            assert np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=1e-6, atol=1e-6), key
            assert [list(r) for r in got.get("text") or []] == [list(r) for r in ref.get("text") or []], key
        captions = [c.value for c in server.caption]
        for s in stats:
            shown = s["texts"][h - 1].replace("<b>", "**").replace("</b>", "**").replace("&lt;", "<").replace("&gt;", ">")
            assert shown in captions, (shown, captions)


@pytest.mark.slow
def test_a_link_and_reset_reach_the_head():
    at = open_link("masks.py", {"head": "2"}, lang="en")
    assert_clean(at)
    head = next(s for s in choice_specs(at) if s.get("channel") == "mask-head")
    assert head["values"][head["index"]] == 2
    assert all(c.follow["initial"] == 1 for c in _charts(at).values())
    at.button(key="reset_page").click().run()
    head = next(s for s in choice_specs(at) if s.get("channel") == "mask-head")
    assert head["values"][head["index"]] == 1 and at.query_params["head"] == "1"
