"""The family page's text attention in the attention view (app/fast/attention_view.py): the GPT section's causal
maps of the shipped `lm`, and the BERT section's bidirectional `mlm` beside the `lm`, each sent whole to the browser,
which answers layer, head and tile; each view starts at the layer and head the page's kept inputs hold (a link sets
them). With ATLAS_ATTENTION_VIEW=server the server-drawn pickers and maps are still there."""
from __future__ import annotations

import numpy as np
import pytest
from app.i18n import LANGS, catalogue, content

from app.fast import attention_view as av
from app.resources import SHIPPED
from model.data.corpus import ASSETS
from tests.apptest_read import attention_views, charts, tables
from tests.apptest_util import assert_clean, open_link, run_page, toasts

MLM = ASSETS / "models" / "mlm"
pytestmark = pytest.mark.skipif(not all((d / "config.json").is_file() for d in (SHIPPED["lm"], MLM)),
                                reason="no shipped lm or mlm model")


def _kinds(data: bytes) -> tuple[dict, list[tuple[dict, np.ndarray]]]:
    """The view's header and each kind with its weights as (layers, heads, Lq, Lk)."""
    header, weights = av.read_payload(data)
    out = []
    for kind in header["kinds"]:
        n = kind["layers"] * kind["heads"] * kind["nq"] * kind["nk"]
        out.append((kind, weights[kind["offset"]:kind["offset"] + n].reshape(
            kind["layers"], kind["heads"], kind["nq"], kind["nk"])))
    return header, out


@pytest.fixture(scope="module")
def lm():
    from model.training.checkpoint import load_model_dir
    return load_model_dir(SHIPPED["lm"])


@pytest.fixture(scope="module")
def mlm():
    from model.family import load_family_dir
    return load_family_dir(MLM, expect="mlm")


# ----------------------------------------------------------------------------- the GPT section

@pytest.mark.parametrize("lang", LANGS)
def test_the_gpt_view_holds_the_lms_causal_maps_and_starts_at_the_last_layers_mean(lang, lm):
    from app.inputs import piece_label
    from model.family.gpt import next_token_view
    words = catalogue(lang)
    at = open_link("family.py", {"member": "gpt"}, lang=lang)
    assert_clean(at)
    (data,) = attention_views(at)
    header, [(kind, maps)] = _kinds(data)
    expected = next_token_view(lm, words["family_gpt.default_sentence"])
    assert kind["id"] == "lm" and kind["label"] == words["family_gpt.view_label"]
    assert kind["causal"] is True and header["mode"] == "grid"
    assert kind["q"] == kind["k"] == [piece_label(p) for p in expected.pieces]
    assert maps.shape == expected.attention.shape
    np.testing.assert_allclose(maps, expected.attention, atol=1e-4)
    n_layers = expected.attention.shape[0]
    assert header["initial"] == {"kind": "lm", "layer": n_layers, "head": 0, "query": 0}  # 0: the mean over heads
    assert not [s for s in at.slider if s.key == "fam_gpt_layer"]  # the view picks the layer
    assert not [c for c in charts(at) if any(tr.get("type") == "heatmap" for tr in c.figure["data"])]  # no server map
    future = [c.value for c in at.caption if c.value.startswith(words["family_gpt.future"].split("{")[0])]
    assert future, "the caption on later words stays"


def test_the_gpt_view_starts_at_the_layer_a_link_asks_for():
    at = open_link("family.py", {"member": "gpt", "gpt_layer": "1"}, lang="en")
    assert_clean(at)
    (data,) = attention_views(at)
    header, _ = av.read_payload(data)
    assert header["initial"] == {"kind": "lm", "layer": 1, "head": 0, "query": 0}
    assert at.query_params["gpt_layer"] in ("1", ["1"])  # kept in the link without its slider
    bad = open_link("family.py", {"member": "gpt", "gpt_layer": "9"}, lang="en")
    assert_clean(bad)
    (data,) = attention_views(bad)
    header, _ = av.read_payload(data)
    assert header["initial"]["layer"] == header["kinds"][0]["layers"] and toasts(bad)


def test_typed_markup_reaches_the_gpt_view_as_text():
    """The view draws tokens as text (canvas fillText, textContent): they reach it as they are, never escaped."""
    at = open_link("family.py", {"member": "gpt", "gpt_text": "you & <b>me</b>"}, lang="en")
    assert_clean(at)
    (data,) = attention_views(at)
    tokens = av.read_payload(data)[0]["kinds"][0]["q"]
    assert tokens[0] == "<s>" and not [x for x in tokens if "&lt;" in x or "&amp;" in x], tokens


def test_the_gpt_server_path_still_has_its_slider_and_map(monkeypatch):
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    at = open_link("family.py", {"member": "gpt", "gpt_layer": "1"}, lang="en")
    assert_clean(at)
    assert not attention_views(at)
    (slider,) = [s for s in at.slider if s.key == "fam_gpt_layer"]
    assert slider.value == 1
    heat = [c for c in charts(at) if any(tr.get("type") == "heatmap" for tr in c.figure["data"])]
    assert len(heat) == 1
    slider.set_value(2).run()
    assert_clean(at)
    assert at.query_params["gpt_layer"] in ("2", ["2"])


# ----------------------------------------------------------------------------- the BERT section

def _mlm_reference(mlm, lm, lang: str):
    """What the page shows at its defaults, computed here with the models' own code: the mlm's attention, and the
    lm's decoder self-attention over the same tokens with every [MASK] filled by the mlm's first choice."""
    from model.family.mlm import fill_masks
    from model.lessons.probe import forward_attention, kind_weights
    prose = content(lang)
    result = fill_masks(mlm.model, mlm.extra, prose["family_mlm.default_text"], prose["family_mlm.default_pair"] or None, [])
    lm_weights = kind_weights(forward_attention(lm.model, result.filled_ids()), "decoder_self").numpy()
    return result, lm_weights


@pytest.mark.parametrize("lang", LANGS)
def test_the_bert_section_shows_both_models_in_views_with_every_heads_later_share(lang, mlm, lm):
    from model.family.mlm import later_share
    from pages.views.inspector import labels
    words = catalogue(lang)
    at = open_link("family.py", {"member": "mlm"}, lang=lang)
    assert_clean(at)
    left, right = attention_views(at)
    result, lm_weights = _mlm_reference(mlm, lm, lang)
    header, [(kind, maps)] = _kinds(left)
    assert kind["id"] == "mlm" and kind["label"] == words["family_mlm.view_mlm"] and kind["causal"] is False
    assert header["mode"] == "grid" and kind["q"] == kind["k"] == labels(result.pieces)
    np.testing.assert_allclose(maps, result.attention, atol=1e-4)
    n_layers = result.attention.shape[0]
    assert header["initial"] == {"kind": "mlm", "layer": n_layers, "head": 1, "query": 0}
    header, [(kind, maps)] = _kinds(right)
    assert kind["id"] == "lm" and kind["label"] == words["family_mlm.view_lm"] and kind["causal"] is True
    np.testing.assert_allclose(maps, lm_weights, atol=1e-4)
    assert header["initial"] == {"kind": "lm", "layer": min(n_layers, lm_weights.shape[0]), "head": 1, "query": 0}
    # the share of attention on later tokens: every layer x head of each model, in a table under its view
    later = tables(at)[-2:]
    for shown, weights in zip(later, (result.attention, lm_weights)):
        share = later_share(weights)
        assert shown.shape == (share.shape[0], 1 + share.shape[1])
        assert list(shown.columns) == [words["common.layer"]] + [f"{words['common.head']} {h + 1}"
                                                                for h in range(share.shape[1])]
        assert [list(row[1:]) for row in shown.itertuples(index=False)] == [[f"{v:.1%}" for v in r] for r in share]
    assert set(later[1].iloc[:, 1:].to_numpy().ravel()) == {"0.0%"}  # the causal triangle
    assert "0.0%" not in set(later[0].iloc[:, 1:].to_numpy().ravel())  # the full square
    assert not [w for w in at.selectbox if w.key in ("fam_mlm_layer", "fam_mlm_head")]  # the views pick them
    assert len(charts(at)) == 1  # the predictions only: no server-drawn grid or map


def test_the_bert_views_start_at_the_layer_and_head_a_link_asks_for():
    at = open_link("family.py", {"member": "mlm", "mlm_layer": "1", "mlm_head": "3"}, lang="en")
    assert_clean(at)
    left, right = (av.read_payload(d)[0] for d in attention_views(at))
    assert left["initial"] == {"kind": "mlm", "layer": 1, "head": 3, "query": 0}
    assert right["initial"] == {"kind": "lm", "layer": 1, "head": 3, "query": 0}
    assert at.session_state["fam_mlm_layer"] == 0 and at.session_state["fam_mlm_head"] == 2
    assert at.query_params["mlm_head"] in ("3", ["3"])


def test_the_bert_server_path_still_has_its_grids_pickers_and_metrics(monkeypatch):
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    at = open_link("family.py", {"member": "mlm", "mlm_head": "2"}, lang="en")
    assert_clean(at)
    assert not attention_views(at)
    assert len(charts(at)) == 5  # predictions, two grids, two maps
    assert at.selectbox(key="fam_mlm_head").value == 1
    mlm_later, lm_later = (m.value for m in at.metric)
    assert lm_later == "0.0%" and mlm_later != "0.0%"
    at.selectbox(key="fam_mlm_layer").set_value(0).run()
    assert_clean(at)
    assert at.query_params["mlm_layer"] in ("1", ["1"])


def test_the_bert_server_paths_pickers_rerun_their_section_only(monkeypatch):
    """With the server-drawn maps, the layer and head pickers are a fragment: a change reruns that part only."""
    from tests.pages.test_section_reruns_attention_masks import fragment_reruns, keep_calls
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    run_page("family.py", "en")
    with keep_calls() as drawn:
        at = run_page("family.py", "en")
        assert_clean(at)
        at.selectbox(key="fam_mlm_head").set_value(2)
        drawn.clear()
        with fragment_reruns(at, "fam-mlm-detail"):
            at.run()
        assert_clean(at)
    assert drawn and set(drawn) <= {"fam_mlm_layer", "fam_mlm_head"}, drawn


def test_a_larger_mlm_trained_here_starts_the_lm_view_at_its_nearest_layer_and_head(monkeypatch, tmp_path):
    """An mlm with more layers and heads than the lm (a run of the training page): its view starts where the link
    says, the lm's at the nearest layer and head it has, and the page says so."""
    import types

    import torch

    from model.family import save_family_dir
    from model.family.mlm import MlmTask
    task = MlmTask(0)
    torch.manual_seed(0)
    big = task.build(task.default_config(types.SimpleNamespace(d_model=32, heads=8, d_ff=64, layers=3, dropout=0.0,
                                                               max_len=64))).eval()
    save_family_dir(tmp_path / "runs" / "big" / "model", task, big, {"steps": 0})
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    at = open_link("family.py", {"member": "mlm", "mlm_model": "run: big", "mlm_layer": "3", "mlm_head": "7"},
                   lang="en")
    assert_clean(at)
    left, right = (av.read_payload(d)[0] for d in attention_views(at))
    assert (left["kinds"][0]["layers"], left["kinds"][0]["heads"]) == (3, 8)
    assert left["initial"] == {"kind": "mlm", "layer": 3, "head": 7, "query": 0}
    lm_layers, lm_heads = right["kinds"][0]["layers"], right["kinds"][0]["heads"]
    assert right["initial"] == {"kind": "lm", "layer": lm_layers, "head": lm_heads, "query": 0}
    said = catalogue("en")["family_mlm.lm_smaller"].split("{")[0]
    assert [c for c in at.caption if c.value.startswith(said)]
    later = tables(at)[-2]
    assert later.shape == (3, 1 + 8)  # every layer and head of the larger model


def test_a_reset_asks_the_views_anew_and_each_session_gets_its_own_count():
    """"Reset this page" is part of what the page asks its views for: after it, the view's first choice wins over
    the learner's last one; the bytes are shared between sessions, so another session still asks as before."""
    at = open_link("family.py", {"member": "gpt", "gpt_layer": "1"}, lang="en")
    assert_clean(at)
    assert av.read_payload(attention_views(at)[0])[0]["asked"] == "lm.1.0.0|0"
    at.button(key="reset_page").click().run()
    assert_clean(at)
    assert av.read_payload(attention_views(at)[0])[0]["asked"].endswith("|1")
    other = open_link("family.py", {"member": "gpt", "gpt_layer": "1"}, lang="en")
    assert av.read_payload(attention_views(other)[0])[0]["asked"] == "lm.1.0.0|0"
