"""The inspector's attention view as the server sends it (app/fast/attention_view.py): the payload's numbers are
the model's attention (the server-drawn map of the same sentence, within half a uint16 step), its tokens the
sentence's, its words the page's language; the payload's format read back exactly."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from app.i18n import LANGS, catalogue

from app.fast import attention_view as av
from app.resources import SHIPPED
from app.state import open_tab
from tests.apptest_read import attention_views, figures, title, z_of
from tests.apptest_util import assert_clean, run_page

SENTENCE = "My friend did not buy a red apple."


def _setup(at):
    at.session_state["insp_model"] = "en-ko"
    at.session_state["insp_text"] = SENTENCE


# ----------------------------------------------------------------------------- the format

def test_weights_go_as_uint16_steps_and_come_back_within_one_step():
    w = np.random.default_rng(0).dirichlet(np.ones(7), size=(2, 3, 5))  # (layers, heads, Lq, Lk=7)
    w[0, 0, 0] = np.nan  # a fully masked row can give NaN
    w[1, 2, 4, 0] = 1.5  # and nothing outside 0…1 is sent
    one = {"id": "cross", "label": "x", "weights": w, "q": list("abcde"), "k": ["<s>", "😀", *"vwxyz"],
           "q_title": "q", "k_title": "k", "groups": None, "decoder": True}
    data = av.payload([one], {"layer": "층"}, (("0", "rgb(0,0,0)"), ("1", "rgb(1,1,1)")), ["#111"], "grid")
    (n,) = struct.unpack_from("<I", data)
    assert (4 + n) % 2 == 0  # the weights start at an even offset
    header, back = av.read_payload(data)
    assert header["kinds"][0]["k"][1] == "😀" and header["words"]["layer"] == "층"
    assert back.shape == (w.size,)
    back = back.reshape(w.shape)
    assert back[0, 0, 0].tolist() == [0.0] * 7 and back[1, 2, 4, 0] == 1.0
    mask = np.ones(w.shape, bool)
    mask[0, 0, 0], mask[1, 2, 4, 0] = False, False
    assert np.abs(back - w)[mask].max() <= 0.5 / av.SCALE + 1e-12


def test_several_kinds_are_laid_end_to_end():
    a, b = np.full((1, 2, 3, 3), 1 / 3), np.full((2, 1, 2, 4), 0.25)
    kinds = [{"id": k, "label": k, "weights": w, "q": ["x"] * w.shape[2], "k": ["y"] * w.shape[3], "q_title": "q",
              "k_title": "k", "groups": None, "decoder": False} for k, w in (("encoder_self", a), ("cross", b))]
    header, back = av.read_payload(av.payload(kinds, {}, (), [], "heads"))
    assert [k["offset"] for k in header["kinds"]] == [0, a.size] and back.size == a.size + b.size
    assert json.loads(json.dumps(header))["mode"] == "heads"
    assert [k["top"] for k in header["kinds"]] == [1.0, 1.0]  # the darkest colour at a weight of 1 unless asked
    kinds[1]["top"] = 0.26
    header, _ = av.read_payload(av.payload(kinds, {}, (), [], "heads"))
    assert [k["top"] for k in header["kinds"]] == [1.0, 0.26]


# ----------------------------------------------------------------------------- the page

pytestmark = pytest.mark.skipif(not (SHIPPED["en-ko"] / "model.safetensors").is_file(),
                                reason="the shipped en-ko model is not built")


@pytest.mark.parametrize("lang", LANGS)
def test_the_grid_tab_sends_the_models_attention_once_in_the_pages_language(lang, monkeypatch):
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    server = run_page("inspector.py", lang, setup=_setup)
    assert_clean(server)
    detail = next(f for f in figures(server) if catalogue(lang)["inspector.kind.encoder_self"] in title(f))
    expected = z_of(detail)  # layer 1, head 1 of the encoder's self-attention, as the server draws it
    monkeypatch.delenv("ATLAS_ATTENTION_VIEW")
    at = run_page("inspector.py", lang, setup=_setup)
    assert_clean(at)
    (data,) = attention_views(at)
    header, weights = av.read_payload(data)
    kind = header["kinds"][0]
    assert kind["id"] == "encoder_self" and header["mode"] == "grid"
    assert kind["label"] == catalogue(lang)["inspector.kind.encoder_self"]
    assert header["words"]["layer"] == catalogue(lang)["common.view.layer"]
    assert kind["q"] == kind["k"] and len(kind["q"]) == kind["nq"] == expected.shape[0]
    maps = weights[:kind["layers"] * kind["heads"] * kind["nq"] * kind["nk"]].reshape(
        kind["layers"], kind["heads"], kind["nq"], kind["nk"])
    np.testing.assert_allclose(maps[0, 0], expected, rtol=0, atol=0.5 / av.SCALE + 1e-12)
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=kind["nk"] / av.SCALE)
    assert not [f for f in figures(at) if catalogue(lang)["inspector.kind.encoder_self"] in title(f)]  # no map drawn twice


def test_the_head_tab_sends_the_head_view_and_each_kind_its_tokens_and_mask():
    at = run_page("inspector.py", "en", setup=_setup)
    open_tab(at.session_state, "insp_tab", "head")
    for name in ("decoder_self", "cross"):
        at.session_state["insp_kind"] = name
        at.run()
        assert_clean(at)
        (data,) = attention_views(at)
        header, _ = av.read_payload(data)
        kind = header["kinds"][0]
        assert header["mode"] == "heads" and kind["id"] == name and kind["decoder"] is True
        assert kind["causal"] is (name == "decoder_self")  # the view marks the later keys as masked, from the mask
    assert kind["k"][-1] == "</s>" and kind["q"] != kind["k"]  # cross: target queries, source keys
    assert kind["qTitle"] == catalogue("en")["inspector.target_query"]
