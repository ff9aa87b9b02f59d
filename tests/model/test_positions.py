"""model/lessons/positions.py: the positional-encoding experiments, on the model's own encoding."""
import math

import numpy as np
import pytest
import torch

from model.nn.layers import pe_frequencies, positional_encoding
from model.lessons.positions import (
    EXPERIMENT_MODEL, SIMILARITY_MAX_LEN, SINUSOIDAL_LOOKUP_LIMIT, dimension_waves, dot_profile, encoding_table,
    extrapolation_demo, per_word_differences, permutation, permutation_experiment, rotation_check, rotation_demo,
    rotation_matrix, seeded_encoder, shift_matrix, similarity_demo, unshuffled_attention, wavelength,
    word_order_experiment, word_vocab,
)


def test_one_frequency_formula_behind_the_encoding():
    d = 16
    w = pe_frequencies(d)
    assert w.dtype == torch.float64 and w.shape == (d // 2,)
    assert [float(x) for x in w] == pytest.approx([1 / 10000 ** (2 * i / d) for i in range(d // 2)], rel=1e-14)
    pe = positional_encoding(30, d, dtype=torch.float64)
    pos = torch.arange(30, dtype=torch.float64)[:, None]
    torch.testing.assert_close(pe[:, 0::2], torch.sin(pos * w), atol=0, rtol=0)
    torch.testing.assert_close(pe[:, 1::2], torch.cos(pos * w), atol=0, rtol=0)
    assert pe_frequencies(7).shape == (4,)  # odd d_model: the last pair has only its sine
    assert wavelength(0, d) == pytest.approx(2 * math.pi)
    assert wavelength(d // 2 - 1, d) == pytest.approx(2 * math.pi * 10000 ** ((d - 2) / d))


def test_rotation_is_exact_and_position_free():
    d = 32
    for k in (1, 7, -3, 250):
        assert rotation_check(60, d, k) < 1e-11
        assert rotation_check(60, d, k, i=d // 2 - 1) < 1e-11
    M = rotation_matrix(5, 0, d)
    assert torch.allclose(M @ M.T, torch.eye(2, dtype=torch.float64))  # a rotation: orthogonal
    pe = positional_encoding(20, d, dtype=torch.float64)
    assert torch.allclose(pe[3:], pe[:17] @ shift_matrix(3, d).T, atol=1e-12)


def test_rotation_demo():
    r = rotation_demo(100, 128, 5, 3, 98)
    assert r["omega"] == pytest.approx(10000 ** (-6 / 128))
    assert r["matrix"].shape == (2, 2) and r["error_pair"] < 1e-12 and r["error_all"] < 1e-11
    assert r["positions"] == 104 and r["sin"].shape == r["cos"].shape == (104,)  # long enough for 98 + 5
    assert np.allclose(r["sin"] ** 2 + r["cos"] ** 2, 1)
    assert rotation_demo(100, 128, -37, 10, 3)["positions"] == 100


def test_waves_and_dot_profile():
    waves = dimension_waves(50, 16, [0, 1, 6, 1])
    assert [(w["dim"], w["kind"], w["pair"]) for w in waves] == [(0, "sin", 0), (1, "cos", 0), (6, "sin", 3)]
    assert np.allclose(waves[2]["values"], encoding_table(50, 16)[:, 6])
    assert waves[2]["wavelength"] == pytest.approx(wavelength(3, 16))
    with pytest.raises(ValueError):
        dimension_waves(50, 16, [16])
    prof = dot_profile(100, 128, 40)
    assert prof["gap"] < 1e-9 and prof["peak"] == 64
    assert prof["measured"][40] == pytest.approx(64) and prof["measured"].argmax() == 40
    assert np.allclose(prof["measured"][40 + 3], prof["measured"][40 - 3])  # symmetric in the distance


def test_extrapolation_past_max_len():
    ext = extrapolation_demo(50, 128, 99)
    assert ext["d"] == 64 and ext["sinusoidal"].shape == (100, 64) and ext["learned"].shape == (50, 64)
    assert "IndexError" in ext["lookup_error"]  # the learned table has no row 99
    assert ext["sin_vector"].shape == (64,) and ext["sin_norm"] == pytest.approx(math.sqrt(32))
    assert ext["neighbour_gap"] < 1e-9
    inside = extrapolation_demo(50, 16, 10)
    assert inside["lookup_error"] is None and inside["d"] == 16
    far = extrapolation_demo(8, 16, SINUSOIDAL_LOOKUP_LIMIT)
    assert far["sin_vector"] is None and far["sin_norm"] is None and far["lookup_error"]


def test_similarity_sinusoidal_neighbours_are_alike():
    sim = similarity_demo(300, 64)
    assert sim["n"] == SIMILARITY_MAX_LEN and sim["sinusoidal"].shape == (SIMILARITY_MAX_LEN,) * 2
    assert np.allclose(np.diag(sim["sinusoidal"]), 1) and np.allclose(np.diag(sim["learned"]), 1)
    assert sim["neighbours"][0] > 0.9 and abs(sim["neighbours"][1]) < 0.2  # fresh table: noise
    assert sim["all"][0] > sim["all"][1]


def test_permutations():
    assert permutation(4, "reverse") == [3, 2, 1, 0]
    assert permutation(4, "rotate") == [1, 2, 3, 0]
    shuffled = permutation(10, "shuffle", seed=3)
    assert sorted(shuffled) == list(range(10)) and shuffled == permutation(10, "shuffle", seed=3)
    with pytest.raises(ValueError):
        permutation(3, "sideways")


def test_permutation_equivariance_without_pe_only():
    words = "I love you".split()
    vocab = word_vocab(words)
    res = permutation_experiment(seeded_encoder(), [vocab[w] for w in words], [2, 1, 0])
    assert res[False]["out_diff"] < 1e-5 and res[False]["attn_diff"] < 1e-6
    assert res[True]["out_diff"] > 0.05


def test_word_order_experiment_and_its_views():
    words = "the cat sat on the mat".split()
    exp = word_order_experiment(words, "reverse")
    assert exp["shuffled"] == words[::-1] and not exp["unchanged"]
    assert (exp["layers"], exp["heads"], exp["d_model"]) == (EXPERIMENT_MODEL["n_layers"],
                                                             EXPERIMENT_MODEL["n_heads"], EXPERIMENT_MODEL["d_model"])
    runs = exp["runs"]
    assert runs[False]["same_order"] and not runs[True]["same_order"]
    for layer in range(exp["layers"]):
        maps = unshuffled_attention(runs[False], exp["perm"], layer, exp["heads"] - 1)
        assert maps["original"].shape == maps["back"].shape == (6, 6) and maps["gap"] < 1e-5
        assert np.allclose(maps["shuffled"].sum(-1), 1, atol=1e-5)
    assert unshuffled_attention(runs[True], exp["perm"], 0, 0)["gap"] > 1e-3
    without, with_pe = (per_word_differences(runs[pe], exp["perm"]) for pe in (False, True))
    assert without.shape == (6,) and without.max() < 1e-5 and with_pe.min() > 1e-3
    floored = per_word_differences(runs[False], exp["perm"], floor=1e-12)
    assert floored.min() >= 1e-12 and np.allclose(floored, np.maximum(without, 1e-12))
    assert word_order_experiment(["a", "b"], "shuffle", seed=0)["unchanged"]  # this shuffle keeps the order
    assert not word_order_experiment(["a", "b"], "shuffle", seed=1)["unchanged"]
    with pytest.raises(ValueError):
        word_order_experiment(["alone"], "reverse")
