"""The masks page's batch: each mask shown on the scores of the attention that really uses it.

The encoder masks only padding; the causal (look-ahead) mask belongs to the decoder's self-attention.
So the causal and causal + padding views take the pre-softmax scores of the decoder's first
self-attention layer (the batch's sentences read as decoder input), the padding view those of the
encoder's first layer (model.lessons.probe.first_layer_scores). Plain PyTorch and numpy, no streamlit."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from model.nn.masks import pad_batch
from model.lessons.probe import MaskedScores, first_layer_scores, mask_views
from model.nn.transformer import Intermediates, Transformer

# which attention's scores each view of the masks page shows (model.lessons.probe.MASK_KINDS)
SCORES_OF = {"causal": "decoder_self", "padding": "encoder_self", "causal_padding": "decoder_self"}


@torch.no_grad()
def decoder_first_layer_scores(model: Transformer, ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Pre-softmax scores QKᵀ/√d_k of the decoder's first self-attention layer, before any mask:
    (B, H, L, L). The ids are the decoder's input (B, L); keep (B, L) is True for real tokens. These
    scores depend on the decoder input alone; an encoder-decoder model also runs its encoder on the
    same ids, because its decoder layers need a memory to attend to."""
    was_training = model.training
    model.eval()
    rec = Intermediates()
    try:
        dev = model.device
        ids, keep = ids.to(dev), keep.to(dev)
        memory = model.encode(ids, keep) if model.config.architecture == "encoder-decoder" else None
        model.decode(ids, memory, keep, keep, record=rec, details=True)
    finally:
        model.train(was_training)
    return rec.details["decoder_self"][0].scores.float().cpu()


@dataclass
class MaskDemoBatch:
    """A right-padded batch, with the first encoder and first decoder self-attention scores on it."""
    ids: list[list[int]]  # (B, L), padded with pad_id
    keep: torch.Tensor  # (B, L) True for real tokens
    lengths: list[int]  # real tokens per sentence
    encoder_scores: torch.Tensor | None  # (B, H, L, L) before any mask; None without an encoder
    decoder_scores: torch.Tensor  # (B, H, L, L) before any mask

    @property
    def keep_matrix(self) -> np.ndarray:
        """(B, L) 1.0 for a real token, 0.0 for <pad> (the padding mask as a picture)."""
        return self.keep.float().numpy()

    def views(self, sentence: int, head: int) -> dict[str, MaskedScores]:
        """The masks on one sentence (0-based) and one head (0-based), each on its own attention's
        scores (SCORES_OF); no padding view for a model without an encoder."""
        keep = self.keep[sentence]
        decoder = mask_views(self.decoder_scores[sentence, head], keep)
        out = {"causal": decoder["causal"]}
        if self.encoder_scores is not None:
            out["padding"] = mask_views(self.encoder_scores[sentence, head], keep)["padding"]
        out["causal_padding"] = decoder["causal_padding"]
        return out


def mask_demo_batch(model: Transformer, seqs: Sequence[Sequence[int]], pad_id: int) -> MaskDemoBatch:
    """Pad the sentences (model.nn.masks.pad_batch) and score them in the first encoder layer (if the
    model has an encoder) and in the first decoder self-attention layer."""
    ids, keep = pad_batch(seqs, pad_id)
    enc = first_layer_scores(model, ids, keep) if model.config.has_encoder else None
    return MaskDemoBatch(ids.tolist(), keep, [len(s) for s in seqs], enc, decoder_first_layer_scores(model, ids, keep))
