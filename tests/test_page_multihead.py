"""The multi-head attention page and the step-by-step helper it relies on (model/lab.py)."""
from __future__ import annotations

import json

import pytest
import torch

from model import lab as mlab
from tests.apptest_util import assert_clean, run_page

SHAPE_COL = {"en": "shape (this run)", "ko": "모양 (이번 실행)"}


def shapes_shown(at, lang="en") -> list[str]:
    return list(at.dataframe[0].value[SHAPE_COL[lang]])


def expected_shapes(L, D, H) -> list[str]:
    dh = D // H
    return [str(s) for s in ([1, L, D], [1, L, D], [1, L, D], [1, L, D], [1, L, H, dh], [1, H, L, dh],
                             [1, H, L, L], [1, H, L, L], [1, H, L, dh], [1, L, D], [1, L, D])]


def run_with(lang="en", **state):
    def setup(at):
        for k, v in state.items():
            at.session_state[k] = v
    return run_page("multihead.py", lang, setup=setup)


# ---------------------------------------------------------------- the helper mirrors the module

@pytest.mark.parametrize("D, H, L", [(8, 1, 1), (16, 4, 5), (48, 6, 7), (64, 64, 3)])
def test_step_by_step_equals_module(D, H, L):
    mha = mlab.seeded_mha(D, H, seed=3)
    x = torch.randn(2, L, D, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out, steps = mlab.multihead_steps(mha, x)
        fused, _, _ = mha(x)
        explicit, w, _ = mha(x, need_weights=True)
    assert torch.allclose(out, fused, atol=1e-5) and torch.allclose(out, explicit, atol=1e-6)
    assert torch.allclose(mlab.step_tensor(steps, "weights"), w)
    shapes = {s.name: s.shape for s in steps}
    dh = D // H
    assert shapes["split"] == (2, L, H, dh) and shapes["transpose"] == (2, H, L, dh)
    assert shapes["scores"] == (2, H, L, L) and shapes["heads"] == (2, H, L, dh) and shapes["output"] == (2, L, D)


def test_seeded_weights_do_not_depend_on_heads_or_touch_global_rng():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a, b = mlab.seeded_mha(32, 1, seed=7), mlab.seeded_mha(32, 8, seed=7)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_flops_do_not_change_with_heads():
    x = torch.randn(1, 9, 64)
    counts = []
    for h in (1, 2, 4, 8, 16, 64):
        with torch.no_grad():
            _, steps = mlab.multihead_steps(mlab.seeded_mha(64, h), x)
        f = mlab.multihead_flops(steps, h)
        counts.append(f["projections"] + f["scores"] + f["weighted_sum"] + f["output_projection"])
        assert f["scores"] == 2 * 9 * 9 * 64 and f["softmax_entries"] == h * 81
    assert len(set(counts)) == 1


def test_word_embeddings_are_deterministic():
    a = mlab.word_embeddings(["나는", "🙂", "나는"], 16)
    assert torch.equal(a[0], a[2]) and not torch.equal(a[0], a[1])
    assert torch.equal(a, mlab.word_embeddings(["나는", "🙂", "나는"], 16))


# ---------------------------------------------------------------- the page

@pytest.mark.parametrize("lang", ["en", "ko"])
def test_default_page_shapes(lang):
    at = run_with(lang, mh_sentence="the cat sat on the mat")
    assert_clean(at)
    assert not at.error
    assert shapes_shown(at, lang) == expected_shapes(6, 64, 8)
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(figs) == 1 + 2  # all heads tiled, then single head vs mean of heads
    assert [a["text"] for a in figs[0]["layout"]["annotations"]] == [
        f"<b>{'head' if lang == 'en' else '헤드'} {h}</b>" for h in range(1, 9)]
    assert len(at.get("download_button")) == len(at.get("plotly_chart"))
    cost = at.dataframe[1].value
    assert list(cost["H"]) == [1, 2, 4, 8, 16, 32, 64]
    assert cost.iloc[:, 7].nunique() == 1  # matmul total is the same for every H
    assert cost.iloc[:, -1].nunique() == 1  # and so is the parameter count


def test_changing_d_and_h_changes_the_shapes():
    at = run_with(mh_sentence="나는 학교에 간다 🙂")
    at.select_slider(key="mh_d").set_value(48)
    at.run()
    assert_clean(at)
    h_box = at.selectbox(key="mh_h")
    assert list(h_box.options) == [str(h) for h in (1, 2, 3, 4, 6, 8, 12, 16, 24, 48)]
    h_box.set_value(12)
    at.run()
    assert_clean(at)
    assert shapes_shown(at) == expected_shapes(4, 48, 12)
    tiles = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert len(tiles["layout"]["annotations"]) == 12
    assert tiles["layout"]["xaxis"]["ticktext"][:4] == ["나는", "학교에", "간다", "🙂"]
    assert tiles["data"][0]["zmin"] == 0 and tiles["data"][0]["zmax"] == 1
    at.selectbox(key="mh_h").set_value(24)  # more than 16 heads: the compact grid plus one labelled head
    at.run()
    assert_clean(at)
    labelled = json.loads(at.get("plotly_chart")[1].proto.spec)["data"][0]
    assert labelled["x"] == ["나는", "학교에", "간다", "🙂"] and labelled["zmax"] == 1


def test_invalid_h_after_changing_d_falls_back_to_a_divisor():
    at = run_with(mh_d=64, mh_h=64)
    at.select_slider(key="mh_d").set_value(24)
    at.run()
    assert_clean(at)
    H = at.selectbox(key="mh_h").value
    assert 24 % H == 0
    assert shapes_shown(at)[5] == str([1, H, 6, 24 // H])


def test_empty_and_too_long_sentences():
    at = run_with(mh_sentence="   ")
    assert_clean(at)
    assert at.error
    at = run_with("ko", mh_sentence=" ".join(f"단어{i}" for i in range(70)), mh_d=16, mh_h=2)
    assert_clean(at)
    assert at.warning and "64" in at.warning[0].value
    assert shapes_shown(at, "ko")[6] == str([1, 2, 64, 64])
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert not fig["data"][0].get("text")  # 64×64 maps hide the numbers in their cells
