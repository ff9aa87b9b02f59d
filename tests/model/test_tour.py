"""The tour's answers are the pages' own numbers for the same inputs, and follow the inputs."""
import numpy as np
import pytest

from model.lessons import lab, multihead, positions, table3, tour
from model.lessons import worked_example as wx
from model.training.schedule import noam_lr
from model.training.smoothing import smoothing_demo

Q, K, V = (wx.matrix_text(m) for m in (wx.EXAMPLE_Q, wx.EXAMPLE_K, wx.EXAMPLE_V))


def test_top_key_is_the_pages_weights_argmax_and_follows_the_inputs():
    w = tour.qkv_weights(Q, K, V, False)
    page = lab.checked_stages(wx.parse_matrix(Q, "Q"), wx.parse_matrix(K, "K"), wx.parse_matrix(V, "V")).weights
    np.testing.assert_allclose(w, page)
    assert [tour.top_key(w, r) for r in range(3)] == [int(np.argmax(page[r])) for r in range(3)]
    assert tour.top_key(w, 1) == 2
    # a query along the second key's largest entry now picks that key
    q2 = "0.1 0.3 0.5\n0 9 0\n0.7 0.8 0.9"
    assert tour.top_key(tour.qkv_weights(q2, K, V, False), 1) == 1


def test_masked_weight_is_zero_above_the_diagonal_and_shared_below():
    w = tour.qkv_weights(Q, K, V, True)
    assert tour.weight_at(w, 0, 2) == 0.0 and tour.weight_at(w, 0, 0) == pytest.approx(1.0)
    open_ = tour.qkv_weights(Q, K, V, False)
    assert tour.weight_at(open_, 0, 2) > 0.3  # the same cell without the mask
    assert tour.weight_at(w, 1, 0) + tour.weight_at(w, 1, 1) == pytest.approx(1.0)


def test_dot_variance_grows_like_dk():
    for dk in (16, 64, 256):
        v = tour.dot_variance(dk)
        assert v["var"] == pytest.approx(lab.dot_product_samples(dk).var_raw)
        assert v["nearest"] == ("dk",) and v["var_scaled"] == pytest.approx(1.0, rel=0.15)


def test_a_tie_between_the_candidates_makes_each_of_them_nearest():
    """At dₖ = 1 the three candidates 1, √dₖ and dₖ are all 1: none is nearer than another."""
    assert tour.dot_variance(1)["nearest"] == tour.SCALE_CHOICES
    assert len(tour.dot_variance(4)["nearest"]) == 1


def test_tied_keys_and_heads_are_all_top():
    w = np.array([[0.4, 0.4, 0.2], [0.1, 0.2, 0.7]])
    assert tour.top_keys(w, 0) == [0, 1] and tour.top_keys(w, 1) == [2]
    heads = np.stack([np.eye(2) * 0.5 + 0.25, np.eye(2) * 0.5 + 0.25])  # two heads with the same map
    assert tour.top_heads(heads, 0, 1) == [0, 1]


def test_top_head_is_the_pages_weights_and_follows_the_seed():
    words = "the cat sat on the mat".split()
    w = tour.head_weights(words, 64, 8, 0, True)
    page = multihead.multihead_demo(words, 64, 8, 0, positions=True).weights
    np.testing.assert_allclose(w, page)
    assert tour.top_head(w, 0, 1) == int(np.argmax(page[:, 0, 1]))
    picks = {tour.top_head(tour.head_weights(words, 64, 8, s, True), 0, 1) for s in range(6)}
    assert len(picks) > 1, "the answer must depend on the learner's seed"


def test_pe_neighbour_dot_is_the_positional_pages_profile():
    r = tour.pe_neighbour_dot(64, 128, 20)
    assert r["other"] == 21
    assert r["dot"] == pytest.approx(positions.dot_profile(64, 128, 20)["measured"][21])
    assert r["dot"] < 64 and tour.pe_neighbour_dot(64, 32, 20)["dot"] < 16  # below the peak d_model / 2
    assert tour.pe_neighbour_dot(64, 128, 63)["other"] == 62  # the table's last position looks back


@pytest.mark.parametrize("d_model,warmup", [(256, 4000), (512, 8000), (64, 100)])
def test_warmup_peak_is_at_warmup_steps_and_on_the_curve(d_model, warmup):
    r = tour.warmup_peak(d_model, warmup)
    assert r["step"] == warmup == r["grid_peak"]
    lr = lambda s: noam_lr(s, d_model, warmup)  # noqa: E731
    assert lr(warmup) >= lr(warmup - 1) and lr(warmup) >= lr(warmup + 1)


def test_smoothed_target_is_the_recipe_pages_bars():
    for vocab, eps in ((10, 0.1), (4, 0.3), (1000, 0.0)):
        r = tour.smoothed_target(vocab, eps)
        assert r["correct"] == pytest.approx(smoothing_demo(vocab, eps)["target"][0])
        assert r["correct"] == pytest.approx(1 - eps + eps / vocab)
    assert tour.smoothed_target(10, 0.2)["correct"] != tour.smoothed_target(10, 0.1)["correct"]


def test_relu_zero_shares_are_the_layer_walks_and_follow_the_seed():
    from model.lessons import layer_walk
    words = "the cat sat on the mat".split()
    shares = tour.relu_zero_shares(words, 64, 8, 0, True)
    np.testing.assert_allclose(shares, layer_walk.layer_walk(words, 64, 8, 0, True).relu_zero_share)
    assert shares.shape == (6,) and ((0 < shares) & (shares < 1)).all()
    assert tour.relu_zero_shares(words, 64, 8, 1, True)[0] != shares[0]


def test_best_row_follows_the_metric_and_the_scores():
    rows = {"base": {"perplexity": {"median": 5.0}, "exact_match": {"median": 0.4}},
            "A-h1": {"perplexity": {"median": 6.0}, "exact_match": {"median": 0.5}},
            "A-h4": {"perplexity": {"mean": 4.0}}, "A-h16": {}}
    keys = ["base", "A-h1", "A-h4", "A-h16"]
    assert tour.best_row(rows, keys, "perplexity")["row"] == "A-h4"  # a table with means only: the mean
    assert tour.best_row(rows, keys, "exact_match")["row"] == "A-h1"
    rows["base"]["perplexity"]["median"] = 3.0
    assert tour.best_row(rows, keys, "perplexity")["row"] == "base"
    assert tour.best_row({}, keys, "perplexity")["row"] is None


def test_rows_the_seeds_cannot_tell_from_the_best_are_alike():
    """1.142 against 1.148 with seeds spread over 1.13…1.16: the seeds do not tell the two rows apart."""
    rows = {"base": {"perplexity": {"median": 1.148, "values": [1.13, 1.148, 1.16]}},
            "A-h1": {"perplexity": {"median": 1.142, "values": [1.135, 1.142, 1.155]}},
            "A-h4": {"perplexity": {"median": 1.30, "values": [1.28, 1.30, 1.31]}}}
    best = tour.best_row(rows, ["base", "A-h1", "A-h4"], "perplexity")
    assert best["row"] == "A-h1" and best["alike"] == ["base", "A-h1"]
    rows["base"]["perplexity"]["values"] = [1.147, 1.148, 1.149]
    rows["A-h1"]["perplexity"]["values"] = [1.141, 1.142, 1.143]
    assert tour.best_row(rows, ["base", "A-h1", "A-h4"], "perplexity")["alike"] == ["A-h1"]


def test_best_row_on_the_shipped_study_is_what_its_medians_say():
    from pages.views import study
    doc = study.load_table(study.SHIPPED)
    rows = {r["row"]: r for r in doc["rows"]}
    keys = ["base"] + [p.key for p in table3.PAPER_TABLE3 if p.group == "A"]
    best = tour.best_row(rows, keys, "perplexity")
    assert best["scores"][best["row"]] == min(table3.centre(rows[k], "perplexity") for k in best["scores"])


# ----------------------------------------------------------------------------- the stops on trained models
from pathlib import Path  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / "assets" / "models"


@pytest.fixture(scope="module")
def en_ko():
    from model.training.checkpoint import load_model_dir
    return load_model_dir(MODELS / "en-ko")


def test_visible_keys_follow_the_kind_of_attention_and_the_query(en_ko):
    from model.lessons.probe import attention_maps
    tok = en_ko.tokenizer
    src, tgt = tok.encode("the cat sees the sky."), tok.encode("고양이는 하늘을 본다.")
    dec = [tok.bos_id] + tgt
    maps = attention_maps(en_ko.model, src, dec)
    for kind, keys in (("decoder_self", None), ("encoder_self", len(src)), ("cross", len(src))):
        w = tour.attention_maps_of(en_ko.model, src, dec)[kind]
        np.testing.assert_allclose(w, maps[kind])  # the masks page's maps
        for q in range(min(4, w.shape[2])):
            r = tour.visible_keys(w, kind, 0, 0, q)
            np.testing.assert_allclose(r["map"], maps[kind][0, 0])
            assert r["visible"] == (q + 1 if keys is None else keys), (kind, q)  # causal: itself and before
            # what the map shows: exactly zero weight on every key the mask forbids, the whole row on the rest
            assert (r["map"][q][~r["allowed"][q]] == 0).all()
            assert r["map"][q][r["allowed"][q]].sum() == pytest.approx(1.0, abs=1e-5)
    longer = tok.encode("the teacher bought a red apple in the park yesterday.")
    w = tour.attention_maps_of(en_ko.model, longer, dec)["cross"]
    assert tour.visible_keys(w, "cross", 0, 0, 2)["visible"] == len(longer) != len(src)


def test_cross_top_source_is_the_inspectors_step_bars_and_follows_the_step(en_ko):
    from model.inference.decode import translate
    from model.lessons.probe import step_cross_attention
    r = translate(en_ko, "My friend did not buy a red apple.")
    layer = en_ko.config.n_decoder_layers - 1
    tops = []
    for step in range(len(r.steps)):
        got = tour.cross_top_source(r.attention, layer, step)
        bars = step_cross_attention(r.attention, layer, step).numpy()
        np.testing.assert_allclose(got["row"], bars)
        assert got["top"] == int(np.argmax(bars))
        tops.append(got["top"])
    assert len(set(tops)) > 1, "the answer must move with the decoding step"
    # the decoder writes "friend" (친구는) at step 2 while looking at "friend"
    assert r.src_pieces[tour.cross_top_source(r.attention, layer, 1)["top"]] == "▁friend"


def test_mlm_first_guess_is_the_family_pages_prediction_and_follows_the_sentence():
    from model.family import load_family_dir
    from model.family.mlm import fill_masks
    mlm = load_family_dir(MODELS / "mlm", expect="mlm")
    text = "I drank hot [MASK] in the park today."
    got = tour.mlm_first_guess(mlm, text, "", ())
    page = fill_masks(mlm.model, mlm.extra, text, None, []).predictions[0]
    assert got["guess"] == page.top[0][0] and got["top"] == list(page.top) and got["position"] == page.position
    other = tour.mlm_first_guess(mlm, "The [MASK] sat on the mat.", "", ())
    assert other["guess"] != got["guess"] or other["position"] != got["position"]
    with pytest.raises(Exception):
        tour.mlm_first_guess(mlm, "no mask here", "", ())
