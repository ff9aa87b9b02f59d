"""The masks page's three kinds of attention in the attention view (app/fast/attention_view.py): the view gets the
kind the page shows, its tokens and mask, and starts at the layer and head the page's inputs hold (which a link or
a tour stop sets); a link's layer out of range is refused as with the sliders."""
from __future__ import annotations

import numpy as np
import pytest
from app.i18n import LANGS, catalogue

from app.fast import attention_view as av
from tests.apptest_util import assert_clean, open_link, run_page
from tests.apptest_read import attention_views


@pytest.mark.parametrize("lang", LANGS)
def test_the_kind_shown_goes_to_the_view_with_its_tokens_and_mask(lang):
    at = run_page("masks.py", lang)
    assert_clean(at)
    for name in ("encoder_self", "decoder_self", "cross"):
        at.radio(key="kind").set_value(name).run()
        assert_clean(at)
        (data,) = attention_views(at)
        header, weights = av.read_payload(data)
        kind = header["kinds"][0]
        assert kind["id"] == name and kind["label"] == catalogue(lang)[f"masks.kind.{name}"]
        assert kind["causal"] is (name == "decoder_self")
        assert (kind["q"][0] == "<s>") is (name != "encoder_self")  # the decoder's input starts with <s>
        maps = weights.reshape(kind["layers"], kind["heads"], kind["nq"], kind["nk"])
        np.testing.assert_allclose(maps.sum(-1), 1.0, atol=kind["nk"] / av.SCALE)
        if name == "decoder_self":  # the mask: every later key's weight is 0
            later = np.triu(np.ones((kind["nq"], kind["nk"]), bool), 1)
            assert maps[..., later].max() == 0.0
        assert header["initial"] == {"kind": name, "layer": 1, "head": 1, "query": 0}
    assert not [s for s in at.slider if s.key in ("kind_layer", "kind_head")]  # the view picks them


def test_the_view_starts_at_the_layer_and_head_the_link_asks_for():
    at = open_link("masks.py", {"kind": "cross", "layer": "2", "kind_head": "3"}, lang="en")
    assert_clean(at)
    (data,) = attention_views(at)
    header, _ = av.read_payload(data)
    assert header["initial"] == {"kind": "cross", "layer": 2, "head": 3, "query": 0}
    assert at.query_params["layer"] == "2" and at.query_params["kind_head"] == "3"


def test_a_layer_the_model_does_not_have_is_refused_and_the_view_starts_at_the_first():
    at = open_link("masks.py", {"layer": "9", "kind_head": "1"}, lang="en")
    assert_clean(at)
    (data,) = attention_views(at)
    header, _ = av.read_payload(data)
    assert header["initial"]["layer"] == 1
    assert any("“layer”" in toast.value for toast in at.toast)
