"""model/lessons/probe.py: running a model on given ids and collecting what the masks page and the inspector
draw (the seeded demo model, padded batches, masked scores, the three attentions, selections)."""

import numpy as np
import pytest
from app.i18n import LANGS
import torch

from model import PRESETS, Transformer
from model.nn.masks import causal_mask, combine, padding_mask
from model.lessons import probe
from model.messages import UserError

VOCAB = 40


@pytest.fixture(scope="module")
def demo():
    return probe.seeded_demo_model(VOCAB)


def test_seeded_demo_model_is_reproducible_and_leaves_the_global_rng_alone(demo):
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    again = probe.seeded_demo_model(VOCAB)
    assert torch.equal(torch.rand(3), before)  # the global random state is untouched
    cfg = demo.config
    assert (cfg.architecture, cfg.d_model, cfg.n_heads, cfg.n_encoder_layers, cfg.n_decoder_layers) == \
        ("encoder-decoder", 64, 4, 2, 2)
    assert not demo.training and cfg.dropout == 0.0
    for a, b in zip(demo.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)
    assert not torch.equal(probe.seeded_demo_model(VOCAB, seed=1).encoder[0].self_attn.qkv.weight,
                           demo.encoder[0].self_attn.qkv.weight)


def test_examples_are_data_for_every_task_and_the_masks_page():
    ex = probe.examples()
    assert set(ex["inspector"]) == {"en-ko", "lm", "copy", "reverse", "sort", "translation", "mlm"}  # + pretrained tasks
    for task in ex["inspector"]:
        groups = probe.example_groups(task)
        assert groups and all(kind and sentences and all(isinstance(s, str) and s for s in sentences)
                              for kind, sentences in groups)
    assert probe.example_groups("en-ko")[0][1][0] == "My friend did not buy a red apple."  # typed in first
    assert len(ex["masks"]["batch"]) == 3 and ex["masks"]["source"] and ex["masks"]["target"]


def test_every_kind_of_example_has_a_label_in_both_languages():
    from app.i18n import catalogue
    kinds = {kind for task in probe.examples()["inspector"] for kind, _ in probe.example_groups(task)}
    kinds.add("from_corpus")
    for lang in LANGS:
        assert sorted(k for k in kinds if f"inspector.example_kind.{k}" not in catalogue(lang)) == []


def test_en_ko_examples_use_only_words_of_the_corpus():
    """Examples show what the model handles: every word of them is a word of the corpus, and the first
    one (typed in for a new model) is one of its sentences."""
    from model.data.corpus import generate_pairs, known_words, split_english
    known = known_words()
    assert [s for _, sentences in probe.example_groups("en-ko") for s in sentences
            if not set(split_english(s)) <= known] == []
    assert probe.example_groups("en-ko")[0][1][0] in {en for en, _ in generate_pairs()}


def test_inspector_examples_for_any_model():
    assert probe.inspector_examples("lm", "decoder-only", []) == probe.example_groups("lm")
    assert probe.inspector_examples("tsv", "encoder-decoder", ["x y"]) == [("from_corpus", ["x y"])]
    assert probe.inspector_examples(None, "decoder-only", []) == probe.example_groups("lm")
    assert probe.inspector_examples("mystery", "encoder-decoder", []) == probe.example_groups("en-ko")


def test_apply_mask_gives_exact_zeros_and_rows_that_sum_to_one():
    scores = torch.randn(4, 4) * 10
    mask = causal_mask(4)
    mask[2] = False  # a query that may attend nowhere: all-zero row, left out of the row check
    view = probe.apply_mask(scores, mask)
    assert view.n_masked == 9 and view.size == 4  # 6 above the diagonal, and row 2's 3 others
    assert view.max_on_masked == 0.0 and (view.weights[~mask] == 0).all()
    assert torch.isinf(view.masked[~mask]).all() and torch.equal(view.masked[mask], scores[mask])
    assert view.max_row_error < 1e-6
    assert (view.weights[2] == 0).all()
    none = probe.apply_mask(scores, torch.ones(4, 4, dtype=torch.bool))
    assert none.n_masked == 0 and none.max_on_masked == 0.0


def test_mask_views_of_a_padded_sentence():
    L, n = 5, 3
    scores = torch.randn(L, L)
    keep = torch.tensor([True] * n + [False] * (L - n))
    views = probe.mask_views(scores, keep)
    assert list(views) == list(probe.MASK_KINDS)
    assert views["causal"].size == n and torch.equal(views["causal"].mask, causal_mask(n))
    assert views["padding"].mask[:, n:].logical_not().all() and views["padding"].mask[:, :n].all()
    ids = torch.tensor([[7, 8, 9, 0, 0]])
    expected = combine(causal_mask(L), padding_mask(ids, 0))[0, 0]  # the decoder's mask in a batch
    assert torch.equal(views["causal_padding"].mask, expected)
    for v in views.values():
        assert v.max_on_masked == 0.0 and v.max_row_error < 1e-6


def test_attention_maps_of_an_encoder_decoder(demo):
    maps = probe.attention_maps(demo, [5, 6, 7], [2, 8, 9, 10])
    assert maps["encoder_self"].shape == (2, 4, 3, 3)
    assert maps["decoder_self"].shape == (2, 4, 4, 4) and maps["cross"].shape == (2, 4, 4, 3)
    for w in maps.values():
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
    assert probe.max_future_weight(maps["decoder_self"]) == 0.0  # the causal mask works
    assert probe.max_future_weight(maps["encoder_self"]) > 0.0
    assert probe.max_future_weight(np.ones((1, 1))) == 0.0
    assert probe.all_heads_matrix(maps["cross"]).shape == (2 * 4 * 4, 3)
    demo.train()
    probe.attention_maps(demo, [5], [2])
    assert demo.training  # the mode is restored
    demo.eval()
    with pytest.raises(UserError):
        probe.attention_maps(demo, [], [2])


def test_forward_attention_and_selections():
    torch.manual_seed(0)
    lm = Transformer(PRESETS["tiny"].replace(architecture="decoder-only")).eval()
    rec = probe.forward_attention(lm, [2, 5, 6, 7])
    assert rec.kinds() == ["decoder_self"]
    w = probe.kind_weights(rec, "decoder_self")  # (layers, H, L, L)
    assert w.shape == (2, 4, 4, 4) and w.dtype == torch.float32
    torch.testing.assert_close(probe.pick_map(w, 1, 2), w[1, 2])
    torch.testing.assert_close(probe.pick_map(w, -1, 2), w[:, 2].mean(0))
    torch.testing.assert_close(probe.pick_map(w, 0, -1), w[0].mean(0))
    torch.testing.assert_close(probe.pick_map(w, -1, -1).sum(-1), torch.ones(4))  # a mean of rows summing to 1


def test_step_cross_attention_is_the_mean_over_heads(demo):
    with torch.no_grad():
        out = demo(torch.tensor([[5, 6, 7]]), torch.tensor([[2, 8, 9]]), return_attention=True)
    row = probe.step_cross_attention(out.attention, 1, 2)
    torch.testing.assert_close(row, out.attention.cross[1][0, :, 2].mean(0))
    assert float(row.sum()) == pytest.approx(1.0, abs=1e-5)


def test_lm_position_candidates_match_the_next_token_distribution():
    from model.inference.decode import lm_next_token
    torch.manual_seed(0)
    lm = Transformer(PRESETS["tiny"].replace(architecture="decoder-only", vocab_size=VOCAB)).eval()
    ids = [2, 5, 6, 7, 8]
    cands = probe.lm_position_candidates(lm, ids, k=3)
    assert [c.position for c in cands] == [0, 1, 2, 3, 4]
    assert [c.actual for c in cands] == [5, 6, 7, 8, None] and cands[-1].actual_prob is None
    for c in cands:
        probs, _ = lm_next_token(lm, ids[: c.position + 1])  # the causal mask: the same distribution alone
        torch.testing.assert_close(torch.tensor([p for _, p in c.top]), probs.topk(3).values.cpu(), atol=1e-5, rtol=0)
        if c.actual is not None:
            assert c.actual_prob == pytest.approx(float(probs[c.actual]), abs=1e-5)
            assert c.actual_rank == int((probs > probs[c.actual]).sum()) + 1
    assert len(probe.lm_position_candidates(lm, [3 + i % 30 for i in range(200)], k=1)) == lm.config.max_len


def test_draw_seeds_differ_per_draw_and_per_seed():
    seeds = {probe.draw_seed(s, d) for s in range(5) for d in range(50)}
    assert len(seeds) == 250 and probe.draw_seed(3, 4) == probe.draw_seed(3, 4)
