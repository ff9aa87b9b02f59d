"""model/mask_demo.py: the masks page's batch, each mask shown on the attention that really uses it —
the causal masks on the decoder's self-attention scores, the padding mask on the encoder's."""
import numpy as np
import pytest
import torch

from model import mask_demo, probe

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
    encoder_only = probe.mask_batch(demo, SEQS, pad_id=0)
    assert torch.equal(batch.encoder_scores, encoder_only.scores)
    assert not torch.allclose(batch.decoder_scores, batch.encoder_scores)


def test_a_decoder_only_model_has_no_encoder_scores():
    from model.config import TransformerConfig
    from model.transformer import Transformer
    torch.manual_seed(0)
    lm = Transformer(TransformerConfig(vocab_size=VOCAB, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
                                       n_decoder_layers=1, dropout=0.0, max_len=16,
                                       architecture="decoder-only")).eval()
    b = mask_demo.mask_demo_batch(lm, SEQS, pad_id=0)
    assert b.encoder_scores is None and b.decoder_scores.shape == (3, 2, 5, 5)
    views = b.views(1, 0)
    assert set(views) == {"causal", "causal_padding"}
    assert np.allclose(views["causal_padding"].weights[:2].sum(-1).numpy(), 1)
