"""Residual dropout (section 5.4 of the paper), shown on a real sentence.

The paper applies dropout to the output of every sub-layer before it is added to the sub-layer's
input and normalised, LayerNorm(x + Dropout(Sublayer(x))) (model.nn.layers.Residual.post), and to the
sums of the embeddings and the positional encodings (model.nn.layers.Embedding.forward). Here the
sub-layer output is that of the first encoder layer's self-attention, and the mask comes from
the models' own dropout (model.nn.dropout.Dropout, the module in every Residual and Embedding) in training mode:
each entry is zeroed with probability p, the others are multiplied by 1 / (1 - p), so the expected value of
every entry is unchanged. Plain PyTorch and
numpy, no streamlit."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.nn.dropout import Dropout
from model.nn.transformer import Transformer

# The paper's rates: the base model (section 5.4); the big model (Table 3, EN-DE); the big model
# trained for English-to-French, which "used dropout rate P_drop = 0.1, instead of 0.3" (section 6.1).
PAPER_RATES = {"base": 0.1, "big_en_de": 0.3, "big_en_fr": 0.1}
# Table 3, the base row and rows (D): (P_drop, perplexity, BLEU) on the EN-DE development set newstest2013.
TABLE3_DROPOUT = ((0.0, 5.77, 24.6), (0.1, 4.92, 25.8), (0.2, 4.95, 25.5))
MASKS_AVERAGED = 2000  # masks drawn to show that the expectation is preserved


@torch.no_grad()
def sublayer_output(model: Transformer, ids: list[int]) -> torch.Tensor:
    """(L, D): the first encoder layer's self-attention output on one sentence, before dropout and
    before the residual add — what Dropout(Sublayer(x)) takes. The embedding is run in eval mode
    (its own dropout off), so only the mask drawn below drops anything."""
    was_training = model.training
    model.eval()
    try:
        x = model.src_embed(torch.tensor([list(ids)], device=model.device))  # (1, L, D)
        layer = model.encoder[0]
        y, _, _ = layer.self_attn(layer.res1.pre(x))  # (1, L, D)
    finally:
        model.train(was_training)
    return y[0].float().cpu()


@dataclass
class ResidualDropout:
    """One dropout mask on a sub-layer output, and what it does."""
    p: float
    seed: int
    sublayer: np.ndarray  # (L, D) y, before dropout
    kept: np.ndarray  # (L, D) bool: the entries the mask keeps
    dropped: np.ndarray  # (L, D) Dropout(p)(y) in training mode
    kept_gap: float  # max |dropped - y / (1 - p)| over the kept entries (0 up to float rounding)
    mean_over_masks: float  # mean entry of dropout(y), averaged over MASKS_AVERAGED masks
    average_gap: float  # max over entries |mean over the masks of dropout(y) - y|
    masks_averaged: int
    eval_gap: float  # max |Dropout in eval mode (y) - y|: 0, dropout is off at inference

    @property
    def scale(self) -> float:
        return 1.0 / (1.0 - self.p)

    @property
    def zero_share(self) -> float:
        """The share of entries this mask zeroed (about p)."""
        return float(1.0 - self.kept.mean())

    @property
    def mean_before(self) -> float:
        return float(self.sublayer.mean())

    @property
    def mean_after(self) -> float:
        """The mean entry after this one mask (close to mean_before; equal in expectation)."""
        return float(self.dropped.mean())


def residual_dropout(model: Transformer, ids: list[int], p: float, seed: int,
                     masks_averaged: int = MASKS_AVERAGED) -> ResidualDropout:
    """Draw a seeded dropout mask with the models' Dropout(p) on the sentence's sub-layer output (the global
    random state is left as it was). p must be in [0, 1)."""
    if not 0.0 <= p < 1.0:
        raise ValueError("p must be in [0, 1)")
    y = sublayer_output(model, ids)  # (L, D)
    drop = Dropout(p).train()
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        dropped = drop(y)  # (L, D): zeros where dropped, y / (1 - p) elsewhere
        many = drop(y.expand(masks_averaged, *y.shape))  # (N, L, D), fresh masks
    kept = dropped != 0
    kept |= (y == 0)  # an exact zero in y stays zero either way: count it as kept
    scaled = y / (1.0 - p)
    average = many.mean(0)
    with torch.no_grad():
        eval_out = Dropout(p).eval()(y)
    return ResidualDropout(
        p=float(p), seed=int(seed), sublayer=y.numpy(), kept=kept.numpy(), dropped=dropped.numpy(),
        kept_gap=float((dropped - scaled)[kept].abs().max()) if bool(kept.any()) else 0.0,
        mean_over_masks=float(average.mean()), average_gap=float((average - y).abs().max()),
        masks_averaged=int(masks_averaged), eval_gap=float((eval_out - y).abs().max()))
