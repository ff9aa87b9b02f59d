"""model/lessons/mask_demo.py: the masks page's batch, each mask shown on the attention that really uses it —
the causal masks on the decoder's self-attention scores, the padding mask on the encoder's."""
import numpy as np
import pytest
import torch

from model.lessons import mask_demo, probe
from model.lessons.mask_demo import mask_demo_batch
from model.nn.masks import pad_batch

VOCAB = 40
SEQS = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14]]


@pytest.fixture(scope="module")
def demo():
    return probe.seeded_demo_model(VOCAB)


@pytest.fixture(scope="module")
def batch(demo):
    return mask_demo.mask_demo_batch(demo, SEQS, pad_id=0)


def test_the_batch_is_padded_on_the_right(batch):
    assert batch.ids == [[5, 6, 7, 8, 9], [10, 11, 0, 0, 0], [12, 13, 14, 0, 0]]
    assert batch.lengths == [5, 2, 3]
    assert batch.keep_matrix.tolist() == [[1] * 5, [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]]
    assert mask_demo.SCORES_OF == {"causal": "decoder_self", "padding": "encoder_self",
                                   "causal_padding": "decoder_self"}


@torch.no_grad()
def test_causal_views_are_the_decoders_own_self_attention(demo, batch):
    """The causal views' weights are exactly what the decoder's first layer computes (its own causal
    and padding masks), not the encoder's scores with a causal mask laid on them."""
    ids = torch.tensor(batch.ids)
    keep = ids != 0
    out = demo(ids, ids, src_pad_mask=keep, tgt_pad_mask=keep, return_attention=True)
    dec, enc = out.attention.decoder_self[0], out.attention.encoder_self[0]  # (B, H, L, L)
    for b, n in enumerate(batch.lengths):
        for h in range(demo.config.n_heads):
            views = batch.views(b, h)
            both = views["causal_padding"].weights
            assert torch.allclose(both[:n], dec[b, h, :n], atol=1e-6)  # the real queries' rows
            assert torch.allclose(views["causal"].weights, dec[b, h, :n, :n], atol=1e-6)
            assert torch.allclose(views["padding"].weights[:n], enc[b, h, :n], atol=1e-6)
            assert views["causal"].max_on_masked == 0 and views["causal_padding"].max_on_masked == 0
    # and the decoder's scores are not the encoder's
    ids, keep = pad_batch(SEQS, 0)
    assert torch.equal(batch.encoder_scores, probe.first_layer_scores(demo, ids, keep))
    assert not torch.allclose(batch.decoder_scores, batch.encoder_scores)


def test_a_decoder_only_model_has_no_encoder_scores():
    from model.nn.config import TransformerConfig
    from model.nn.transformer import Transformer
    torch.manual_seed(0)
    lm = Transformer(TransformerConfig(vocab_size=VOCAB, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
                                       n_decoder_layers=1, dropout=0.0, max_len=16,
                                       architecture="decoder-only")).eval()
    b = mask_demo.mask_demo_batch(lm, SEQS, pad_id=0)
    assert b.encoder_scores is None and b.decoder_scores.shape == (3, 2, 5, 5)
    views = b.views(1, 0)
    assert set(views) == {"causal", "causal_padding"}
    assert np.allclose(views["causal_padding"].weights[:2].sum(-1).numpy(), 1)


def test_mask_batch_pads_and_scores_do_not_depend_on_padding(demo):
    seqs = [[5, 6, 7, 8], [9, 10], [11, 12, 13]]
    mb = mask_demo_batch(demo, seqs, pad_id=0)
    assert mb.ids == [[5, 6, 7, 8], [9, 10, 0, 0], [11, 12, 13, 0]] and mb.lengths == [4, 2, 3]
    assert mb.encoder_scores.shape == (3, 4, 4, 4)
    assert mb.keep_matrix.tolist() == [[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]]
    # scores are taken before any mask, in the first layer: a sentence alone gives the same block
    alone = mask_demo_batch(demo, [seqs[1]], pad_id=0).encoder_scores[0]  # (H, 2, 2)
    torch.testing.assert_close(mb.encoder_scores[1, :, :2, :2], alone, atol=1e-5, rtol=0)
    views = mb.views(1, 0)
    assert views["causal"].size == 2 and views["padding"].n_masked == 2 * 4
