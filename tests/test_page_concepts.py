"""The concept pages (positional, masks, recipe, why) in both languages, driven through AppTest,
plus the pure helpers behind them (model/positions.py, model/smoothing.py, app/concepts.py)."""
import base64
import json
import math

import numpy as np
import pytest
import torch

from app.concepts import InputError, parse_int, parse_int_list, parse_pairs, split_words
from model.layers import positional_encoding
from model.positions import (permutation_experiment, rotation_check, rotation_matrix, seeded_encoder, shift_matrix,
                             word_vocab)
from model.schedule import noam_peak
from model.smoothing import loss_vs_confidence, minimise_confidence, optimal_confidence, target_distribution
from tests.apptest_util import assert_clean, run_page


# ----------------------------------------------------------------------------- helpers

def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def metric(at, startswith: str) -> float:
    hits = [v for k, v in metrics(at).items() if k.startswith(startswith)]
    assert hits, (startswith, list(metrics(at)))
    return float(hits[0].replace(",", ""))


def figures(at) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def z_of(fig: dict) -> np.ndarray:
    z = fig["data"][0]["z"]
    if isinstance(z, dict):  # plotly >= 6 sends numpy arrays as typed binary
        arr = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        shape = z.get("shape")
        if isinstance(shape, str):
            shape = [int(x) for x in shape.split(",")]
        return arr.reshape(shape) if shape else arr
    return np.array(z, dtype=float)


def title(fig: dict) -> str:
    t = fig["layout"].get("title") or {}
    return t.get("text", "") if isinstance(t, dict) else str(t)


def errors(at) -> list[str]:
    return [e.value for e in at.error]


# ----------------------------------------------------------------------------- pure helpers

def test_rotation_is_exact_and_position_free():
    d = 32
    for k in (1, 7, -3, 250):
        assert rotation_check(60, d, k) < 1e-11
        assert rotation_check(60, d, k, i=d // 2 - 1) < 1e-11
    M = rotation_matrix(5, 0, d)
    assert torch.allclose(M @ M.T, torch.eye(2, dtype=torch.float64))  # a rotation: orthogonal
    pe = positional_encoding(20, d, dtype=torch.float64)
    assert torch.allclose(pe[3:] , pe[:17] @ shift_matrix(3, d).T, atol=1e-12)


def test_permutation_equivariance_without_pe_only():
    words = "I love you".split()
    vocab = word_vocab(words)
    res = permutation_experiment(seeded_encoder(), [vocab[w] for w in words], [2, 1, 0])
    assert res[False]["out_diff"] < 1e-5 and res[False]["attn_diff"] < 1e-6
    assert res[True]["out_diff"] > 0.05


def test_label_smoothing_optimum():
    for V, eps in ((10, 0.1), (5, 0.3), (37000, 0.1)):
        q = target_distribution(V, eps)
        assert float(q.sum()) == pytest.approx(1.0)
        assert float(q[0]) == pytest.approx(1 - eps + eps / V)
        p, _ = minimise_confidence(V, eps)
        assert p == pytest.approx(optimal_confidence(V, eps), abs=1e-5)
        assert p < 1
    plain = loss_vs_confidence(torch.tensor([0.5, 0.9, 0.999]), 10, 0.0)
    assert torch.allclose(plain, -torch.log(torch.tensor([0.5, 0.9, 0.999], dtype=torch.float64)))


def test_parsers_reject_bad_input():
    assert parse_int_list("16, 64;256  1024", 1, 4096, 6) == [16, 64, 256, 1024]
    assert parse_pairs("(512, 4000); 256:4000\n1024 x 8000", ((1, 10**6), (1, 10**7)), 6) == [
        (512, 4000), (256, 4000), (1024, 8000)]
    assert parse_int("4e3", 1, 10**4) == 4000
    for bad in ("512, abc", "", "1e400", "nan", "3.5", "99999999999999999999999"):
        with pytest.raises(InputError):
            parse_int_list(bad, 1, 10**6, 6)
    with pytest.raises(InputError) as e:
        parse_pairs("512, 4000; 512", ((1, 10**6), (1, 10**7)), 6)
    assert e.value.ko  # every message exists in Korean too
    with pytest.raises(InputError):
        split_words("   ", 5)
    assert split_words(" a  b c ", 2) == (["a", "b"], True)


# ----------------------------------------------------------------------------- pages

def test_positional_page_en():
    at = run_page("positional.py", "en")
    assert_clean(at)
    assert at.title[0].value == "Positional encoding"
    assert metric(at, "max |M_k·PE(pos) − PE(pos+k)|") < 1e-12
    assert metric(at, "same, all pairs") < 1e-11
    assert metric(at, "without PE") < 1e-5
    assert metric(at, "with PE") > 0.05
    heat = next(f for f in figures(at) if title(f).startswith("PE: 100 positions"))
    assert z_of(heat).size == 100 * 128
    # a different shift and pair, a shuffled Korean sentence with an emoji, bad dimension list
    at.number_input(key="rot_k").set_value(-37)
    at.slider(key="rot_i").set_value(10)
    at.text_input(key="perm_sentence").set_value("나는 너를 정말 사랑해 😀")
    at.radio(key="perm_order").set_value("shuffle")
    at.text_input(key="pe_dims").set_value("0, abc")
    at.run()
    assert_clean(at)
    assert metric(at, "max |M_k·PE(pos) − PE(pos+k)|") < 1e-12
    assert metric(at, "without PE") < 1e-5 and metric(at, "with PE") > 0.05
    assert any("abc" in e for e in errors(at))
    # one word, then far too many words
    at.text_input(key="perm_sentence").set_value("alone").run()
    assert_clean(at)
    assert any("at least two words" in e for e in errors(at))
    at.text_input(key="perm_sentence").set_value(" ".join(f"w{i}" for i in range(64))).run()
    assert_clean(at)
    assert any("first 24 words" in w.value for w in at.warning)
    assert metric(at, "without PE") < 1e-5


def test_positional_page_ko_and_sizes():
    at = run_page("positional.py", "ko")
    assert_clean(at)
    assert at.title[0].value == "위치 인코딩"
    at.slider(key="pe_len").set_value(512)
    at.slider(key="pe_d").set_value(512)
    at.text_input(key="perm_sentence").set_value("")
    at.number_input(key="ext_pos").set_value(10)
    at.run()
    assert_clean(at)
    assert any("비어" in e for e in errors(at))  # empty sentence: a message, in Korean
    assert metric(at, "최대 |M_k·PE(pos) − PE(pos+k)|") < 1e-12
    assert any("존재" in s.value for s in at.success)  # position 10 < max_len: the learned row exists


def test_masks_page_en():
    at = run_page("masks.py", "en")
    assert_clean(at)
    caps = [c.value for c in at.caption if "largest weight on a masked cell" in c.value]
    assert len(caps) == 3 and all("**0** (exactly zero)" in c for c in caps)
    assert metric(at, "decoder self: largest weight on a future token") == 0.0
    figs = figures(at)
    weights = [f for f in figs if title(f).startswith("softmax")]
    scores = [f for f in figs if title(f).startswith("scores after the mask")]
    assert len(weights) == 3 and len(scores) == 3
    for w, s in zip(weights, scores):
        zw, zs = z_of(w), z_of(s)
        masked = np.isnan(zs)  # −∞ scores are drawn as empty cells
        assert masked.any()
        assert (zw[masked] == 0).all()  # exactly zero after the softmax
        assert np.allclose(zw.sum(-1), 1, atol=1e-6)
    # the causal one: upper triangle masked
    zc = z_of(scores[0])
    assert np.isnan(zc[np.triu_indices(zc.shape[0], 1)]).all() and not np.isnan(np.diag(zc)).any()
    # cross-attention: target queries on rows, source keys on columns
    at.radio(key="kind").set_value("cross").run()
    assert_clean(at)
    cross = next(f for f in figures(at) if title(f).startswith("encoder–decoder attention"))
    assert cross["layout"]["yaxis"]["title"]["text"].startswith("target (query)")
    assert cross["layout"]["xaxis"]["title"]["text"].startswith("source (key)")
    assert z_of(cross).shape == (5, 6)  # <s> + 4 target pieces × 6 source pieces
    # the seeded, untrained model (the default when no trained EN→KO model ships with the app)
    at.selectbox(key="mask_model").set_value("seeded, untrained model").run()
    assert_clean(at)
    assert any("untrained" in c.value for c in at.caption)
    assert metric(at, "decoder self: largest weight on a future token") == 0.0
    table = at.dataframe[-1].value
    assert list(table.iloc[:, 0]) == ["encoder-only", "decoder-only", "encoder-decoder"]
    assert table.iloc[2, 1] == "63,082,496"  # paper_base, same as the overview page


def test_masks_page_ko_bad_input():
    at = run_page("masks.py", "ko")
    assert_clean(at)
    assert at.title[0].value == "마스크와 세 가지 어텐션"
    lines = ["😀 🎉", "", "하나"] + [f"sentence {i}" for i in range(8)] + [" ".join(["word"] * 64)]
    at.text_area(key="mask_batch").set_value("\n".join(lines))
    at.text_input(key="kind_tgt").set_value("   ")
    at.run()
    assert_clean(at)
    assert any("6개 문장만" in w.value for w in at.warning)
    assert any("타깃 문장" in e for e in errors(at))
    at.text_area(key="mask_batch").set_value("\n\n").run()
    assert_clean(at)
    assert any("문장을 하나 이상" in e for e in errors(at))


def test_recipe_page_en():
    at = run_page("recipe.py", "en")
    assert_clean(at)
    table = at.dataframe[0].value
    assert len(table) == 3
    for _, row in table.iterrows():
        d, w = int(row["d_model"]), int(row["warmup"])
        assert int(row["peak step"]) == w == noam_peak(d, w)[0]
        assert float(row["peak learning rate"]) == pytest.approx(d ** -0.5 * w ** -0.5, rel=1e-4)
    assert metric(at, "largest gap torch vs by-hand") < 1e-12
    assert metric(at, "first update |Δθ|") == pytest.approx(0.1, rel=1e-6)
    assert metric(at, "best confidence, found numerically") == pytest.approx(1 - 0.1 + 0.1 / 10, abs=1e-5)
    # invalid list, a changed ε and V, and a gradient scale that does not change the first step
    at.text_input(key="sch_pairs").set_value("512, abc")
    at.slider(key="ls_eps").set_value(0.3)
    at.number_input(key="ls_V").set_value(5)
    at.select_slider(key="adam_c").set_value(1000.0)
    at.run()
    assert_clean(at)
    assert any("abc" in e for e in errors(at))
    assert len(at.dataframe[0].value) == 1  # the slider curve is still drawn
    assert metric(at, "best confidence, found numerically") == pytest.approx(1 - 0.3 + 0.3 / 5, abs=1e-5)
    assert metric(at, "first update |Δθ|") == pytest.approx(0.1, rel=1e-6)
    at.text_input(key="sch_pairs").set_value("1e30, 4000; 512 8000").run()
    assert_clean(at)
    assert any("outside" in e or "too large" in e for e in errors(at))


def test_recipe_page_ko():
    at = run_page("recipe.py", "ko")
    assert_clean(at)
    assert at.title[0].value == "학습 레시피"
    at.slider(key="sch_d").set_value(1024)
    at.slider(key="sch_w").set_value(8000)
    at.run()
    row = at.dataframe[0].value.iloc[0]
    assert int(row["최고점 스텝"]) == 8000
    assert float(row["최고 학습률"]) == pytest.approx(1024 ** -0.5 * 8000 ** -0.5, rel=1e-4)


def test_why_page_en_and_ko():
    at = run_page("why.py", "en")
    assert_clean(at)
    table = at.dataframe[0].value
    assert list(table["complexity per layer"]) == ["O(n²·d)", "O(n·d²)", "O(k·n·d²)", "O(r·n·d)"]
    assert list(table["= steps"]) == ["1", "100", "1", "1"]
    assert table["= operations"][0] == f"{100 * 100 * 512:.3g}"
    timing = at.dataframe[1].value
    assert list(timing["n"]) == [16, 64, 256]  # first view: small sizes, measured at once
    for col in timing.columns[1:4]:
        assert all(float(v) > 0 and math.isfinite(float(v)) for v in timing[col])
    # a new measurement through the form, then an invalid size list
    at.text_input(key="tm_ns").set_value("8, 32")
    at.select_slider(key="tm_d").set_value(32)
    at.button[0].click().run()
    assert_clean(at)
    assert list(at.dataframe[1].value["n"]) == [8, 32]
    at.text_input(key="tm_ns").set_value("16, abc")
    at.button[0].click().run()
    assert_clean(at)
    assert any("abc" in e for e in errors(at))
    ko = run_page("why.py", "ko")
    assert_clean(ko)
    assert ko.title[0].value == "왜 셀프 어텐션인가"
    ko.number_input(key="cx_n").set_value(10_000_000).run()
    assert_clean(ko)
    assert ko.dataframe[0].value["= 단계"][1] == "1e+07"
