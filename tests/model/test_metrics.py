"""BLEU, exact match, and per-head attention statistics on hand-made matrices."""
import math
import unicodedata

import numpy as np
import pytest
import torch

from model.inference.metrics import bleu, exact_match, head_statistics, layer_averages, summarize_heads
from model.nn.transformer import Intermediates

KO = ["나는 오늘 뜨거운 커피를 마셨다.", "그녀는 어제 학교에 갔다."]


def test_bleu_identical_and_disjoint():
    assert bleu(KO, KO) == pytest.approx(100.0)
    assert bleu(["가나다라마바사"], ["아자차카타파하"]) == pytest.approx(0.0, abs=1e-6)
    assert bleu(["the cat sat on the mat"], ["the cat sat on the mat"], korean=False) == pytest.approx(100.0)
    assert bleu(["a b c d e"], ["v w x y z"], korean=False) == pytest.approx(0.0, abs=1e-6)
    assert bleu([], []) == 0.0
    with pytest.raises(ValueError):
        bleu(["a"], [])


def test_bleu_korean_partial_credit_and_nfc():
    # one particle differs (를 -> 가): character BLEU keeps most of the credit, word BLEU drops a lot
    hyp = ["나는 오늘 뜨거운 커피가 마셨다."]
    ref = [KO[0]]
    char = bleu(hyp, ref)
    assert 50 < char < 100
    assert bleu(hyp, ref, tokenize="13a") < char
    # decomposed jamo (NFD) compare equal to composed syllables
    assert bleu([unicodedata.normalize("NFD", KO[0])], [KO[0]]) == pytest.approx(100.0)


def test_bleu_multiple_references():
    assert bleu(["the cat sat on the mat"], [["a dog", "the cat sat on the mat"]], korean=False) == pytest.approx(100.0)


def test_exact_match():
    assert exact_match(["a  b", "c"], ["a b", "d"]) == 0.5
    assert exact_match([], []) == 0.0


def test_identity_heads():
    L = 6
    (s,) = head_statistics(torch.eye(L)[None])
    assert s["diagonal"] == pytest.approx(1.0)
    assert s["mean_distance"] == pytest.approx(0.0)
    assert s["entropy"] == pytest.approx(0.0, abs=1e-9)
    assert s["previous"] == pytest.approx(0.0) and s["max_weight"] == pytest.approx(1.0)
    assert s["first"] == pytest.approx(1 / L)


def test_uniform_head():
    L = 7
    (s,) = head_statistics(np.full((1, L, L), 1.0 / L))  # arrays work too
    assert s["entropy"] == pytest.approx(math.log(L), abs=1e-9)
    assert s["entropy_norm"] == pytest.approx(1.0, abs=1e-9)
    assert s["diagonal"] == pytest.approx(1 / L) and s["first"] == pytest.approx(1 / L)


def test_shifted_identity_and_causal():
    L = 5
    w = torch.zeros(L, L)
    w[0, 0] = 1.0
    w[torch.arange(1, L), torch.arange(0, L - 1)] = 1.0  # every query looks one token back
    (s,) = head_statistics(w[None])
    assert s["previous"] == pytest.approx(1.0)
    assert s["entropy"] == pytest.approx(0.0, abs=1e-9)
    assert s["mean_distance"] == pytest.approx((L - 1) / L)  # row 0 has distance 0
    (c,) = head_statistics(w[None], causal=True)  # row 0 (trivial under the causal mask) left out
    assert c["mean_distance"] == pytest.approx(1.0) and c["diagonal"] == pytest.approx(0.0)
    # causal uniform rows: entropy_norm is 1 against the q + 1 visible keys
    cu = torch.tril(torch.ones(L, L))
    cu = cu / cu.sum(-1, keepdim=True)
    (u,) = head_statistics(cu[None], causal=True)
    assert u["entropy_norm"] == pytest.approx(1.0, abs=1e-6)


def test_cross_shapes_and_masked_rows():
    w = torch.zeros(2, 4, 3)  # Lq = 4 > Lk = 3
    w[0, torch.arange(3), torch.arange(3)] = 1.0
    w[0, 3, 2] = 1.0
    w[1, :, -1] = 1.0  # a head that always looks at the last source token (EOS)
    h0, h1 = head_statistics(w)
    assert h0["diagonal"] == pytest.approx(1.0)  # only rows q < Lk count
    assert h1["last"] == pytest.approx(1.0) and h1["first"] == 0.0
    w2 = torch.eye(3)[None].clone()
    w2[0, 2] = 0.0  # a fully masked query row is ignored
    (s,) = head_statistics(w2)
    assert s["diagonal"] == pytest.approx(1.0)
    (e,) = head_statistics(torch.zeros(1, 2, 2))
    assert math.isnan(e["entropy"])
    with pytest.raises(ValueError):
        head_statistics(torch.zeros(2, 2))


def test_summarize_heads():
    H, L = 3, 4
    rec = Intermediates(decoder_self=[torch.tril(torch.ones(1, H, L, L)).softmax(-1) for _ in range(2)])
    rows = summarize_heads(rec, "decoder_self")
    assert len(rows) == 2 * H
    assert [(r["layer"], r["head"]) for r in rows] == [(l, h) for l in range(2) for h in range(H)]
    assert all(r["kind"] == "decoder_self" for r in rows)


def test_layer_averages():
    stats = [{"layer": 0, "entropy": 1.0, "diagonal": math.nan}, {"layer": 0, "entropy": 3.0, "diagonal": 0.5},
             {"layer": 1, "entropy": 2.0, "diagonal": 1.0}]
    rows = layer_averages(stats, keys=("entropy", "diagonal"))
    assert rows == [{"layer": 0, "entropy": 2.0, "diagonal": 0.5},  # NaNs are left out of the mean
                    {"layer": 1, "entropy": 2.0, "diagonal": 1.0},
                    {"layer": None, "entropy": 2.0, "diagonal": 0.75}]
    assert layer_averages([]) == []
    rec = Intermediates(decoder_self=[torch.eye(3)[None, None].expand(1, 2, 3, 3)])
    (only, overall) = layer_averages(summarize_heads(rec, "decoder_self"))
    assert only["layer"] == 0 and overall["layer"] is None and only["diagonal"] == pytest.approx(1.0)


def test_layer_averages_of_all_nan_is_nan_without_a_warning():
    import math
    import warnings
    stats = [{"layer": 0, "entropy": float("nan")}, {"layer": 0, "entropy": float("nan")}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "Mean of empty slice" would fail here
        rows = layer_averages(stats, keys=("entropy",))
    assert math.isnan(rows[0]["entropy"]) and math.isnan(rows[-1]["entropy"])
