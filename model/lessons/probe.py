"""Running a model on given ids and collecting what the app's figures need: the seeded demo model
of the masks page, masked scores and their softmax, the three kinds of attention
of an encoder-decoder, per-layer / per-head selections of recorded attention, and a decoder-only
model's next-token candidates at every position. Plain PyTorch and numpy, no streamlit.
(What a model met in training, in pieces and words: model/data/vocabulary.py.)"""
from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from model.nn.attention import masked_softmax
from model.nn.config import TransformerConfig
from model.nn.masks import causal_mask, combine
from model.messages import UserError
from model.nn.transformer import Intermediates, Transformer

SEED = 0
MASK_KINDS = ("causal", "padding", "causal_padding")  # the masks page's three views of one sentence
EXAMPLES_FILE = Path(__file__).resolve().parents[2] / "assets" / "examples.toml"


@functools.cache
def examples() -> dict:
    """The pages' example sentences (assets/examples.toml): {"inspector": {task: [{"kind": ...,
    "sentences": [...]}, ...]}, "masks": {"batch": [...], "source": ..., "target": ...}}."""
    with open(EXAMPLES_FILE, "rb") as f:
        return tomllib.load(f)


def example_groups(task: str | None) -> list[tuple[str, list[str]]]:
    """The inspector's examples for a task: (kind, sentences) in file order; [] for a task without any."""
    return [(g["kind"], list(g["sentences"])) for g in examples()["inspector"].get(task or "", [])]


def inspector_examples(task: str | None, architecture: str, from_corpus: list[str]) -> list[tuple[str, list[str]]]:
    """What the inspector offers a model: its task's examples; for an uploaded corpus, sentences of its
    training data (kind "from_corpus"); for a model whose data is unknown, the shipped model's of the
    same architecture (kind names as in assets/examples.toml)."""
    groups = example_groups(task)
    if groups:
        return groups
    if from_corpus:
        return [("from_corpus", list(from_corpus))]
    return example_groups("lm" if architecture == "decoder-only" else "en-ko")


# ----------------------------------------------------------------------------- models

def seeded_demo_model(vocab_size: int, seed: int = SEED) -> Transformer:
    """A small encoder-decoder with seeded random weights (no training), in eval mode: its
    attention patterns are arbitrary, but the masks and the shapes are exactly those of the real
    thing. The global random state is left as it was."""
    cfg = TransformerConfig(vocab_size=vocab_size, d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2,
                            n_decoder_layers=2, dropout=0.0, max_len=128)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Transformer(cfg).eval()


# ----------------------------------------------------------------------------- masks, before and after softmax

@dataclass
class MaskedScores:
    """One mask applied to one head's pre-softmax scores (all (Lq, Lk), on the CPU)."""
    mask: torch.Tensor  # True where the query may attend
    masked: torch.Tensor  # the scores with -inf where the mask forbids
    weights: torch.Tensor  # softmax of the masked scores: exact zeros where masked
    n_masked: int  # how many cells the mask forbids
    max_on_masked: float  # the largest weight on a forbidden cell (0 when the mask works)
    max_row_error: float  # max |row sum - 1| over rows that may attend somewhere

    @property
    def size(self) -> int:
        """Rows (queries) shown: fewer than the batch length for the causal view of a short sentence."""
        return int(self.mask.shape[0])


def apply_mask(scores: torch.Tensor, mask: torch.Tensor) -> MaskedScores:
    """Masked scores and their softmax (model.nn.attention.masked_softmax), with the numbers that show
    the mask works: zero weight on masked cells, rows still summing to 1."""
    scores, mask = scores.float().cpu(), mask.cpu().bool().expand_as(scores)
    masked = scores.masked_fill(~mask, float("-inf"))  # (Lq, Lk)
    weights = masked_softmax(scores, mask)  # (Lq, Lk), exact zeros where masked
    forbidden = ~mask
    on_masked = float(weights[forbidden].abs().max()) if bool(forbidden.any()) else 0.0
    live = mask.any(-1)  # (Lq,) rows that may attend somewhere
    error = float((weights.sum(-1)[live] - 1).abs().max()) if bool(live.any()) else 0.0
    return MaskedScores(mask, masked, weights, int(forbidden.sum()), on_masked, error)


def mask_views(scores: torch.Tensor, keep: torch.Tensor) -> dict[str, MaskedScores]:
    """The three masks on one sentence of a right-padded batch. scores: (L, L) of one head;
    keep: (L,) True for the sentence's real tokens.
        causal          its own n real tokens only: causal_mask(n)
        padding         every query sees every real key: the <pad> columns are forbidden
        causal_padding  combine(causal_mask(L), padding): earlier real tokens only"""
    L = scores.shape[-1]
    n = int(keep.sum())
    key_keep = keep.bool()[None, :]  # (1, L): the same key mask for every query
    return {
        "causal": apply_mask(scores[:n, :n], causal_mask(n)),
        "padding": apply_mask(scores, key_keep.expand(L, L)),
        "causal_padding": apply_mask(scores, combine(causal_mask(L), key_keep)),
    }


@torch.no_grad()
def first_layer_scores(model: Transformer, ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Pre-softmax scores QK^T/sqrt(d_k) of the first encoder layer, before any mask: (B, H, L, L)."""
    rec = Intermediates()
    was_training = model.training
    model.eval()
    try:
        model.encode(ids.to(model.device), keep.to(model.device), rec, details=True)
    finally:
        model.train(was_training)
    return rec.details["encoder_self"][0].scores.float().cpu()


# ----------------------------------------------------------------------------- the three attentions

@torch.no_grad()
def attention_maps(model: Transformer, src_ids: list[int], tgt_ids: list[int]) -> dict[str, np.ndarray]:
    """Every attention of an encoder-decoder model on one (source, decoder input) pair.

    Works for any model.Transformer with architecture "encoder-decoder" (the seeded demo model or a
    trained one). tgt_ids is the decoder input as fed in training (usually starting with BOS).
    Returns {kind: (layers, heads, L_query, L_key)} float arrays."""
    if not src_ids or not tgt_ids:
        raise UserError("masks.errors.no_tokens")
    was_training = model.training
    model.eval()
    try:
        dev = model.device
        out = model(torch.tensor([src_ids], device=dev), torch.tensor([tgt_ids], device=dev),
                    return_attention=True)
    finally:
        model.train(was_training)
    rec = out.attention
    return {kind: rec.stack(kind)[:, 0].float().cpu().numpy() for kind in rec.kinds()}


def all_heads_matrix(weights) -> np.ndarray:
    """(layers, H, Lq, Lk) -> (layers * H * Lq, Lk): every head's rows one under the other (CSV)."""
    w = np.asarray(weights)
    return w.reshape(-1, w.shape[-1])


def max_future_weight(weights) -> float:
    """The largest weight any query gives a LATER key (0 under a working causal mask).
    weights: (..., L, L)."""
    w = np.asarray(weights)
    return float(np.triu(w, 1).max()) if w.shape[-1] > 1 else 0.0


# ----------------------------------------------------------------------------- recorded attention

@torch.inference_mode()
def forward_attention(model: Transformer, ids: list[int]) -> Intermediates:
    """One recorded forward pass of an encoder-only or decoder-only model over one sequence."""
    was_training = model.training
    model.eval()
    try:
        x = torch.tensor([list(ids)], device=model.device)  # (1, L)
        return model(x, return_attention=True).attention
    finally:
        model.train(was_training)


def kind_weights(record: Intermediates, kind: str) -> torch.Tensor:
    """Batch item 0 of one kind of attention: (layers, H, Lq, Lk) float on the CPU."""
    return record.stack(kind)[:, 0].float().cpu()


def pick_map(weights: torch.Tensor, layer: int, head: int) -> torch.Tensor:
    """One (Lq, Lk) map from (layers, H, Lq, Lk); layer or head -1 averages over them (a mean of
    rows that sum to 1 still sums to 1)."""
    w = weights.mean(0) if layer < 0 else weights[layer]  # (H, Lq, Lk)
    return w.mean(0) if head < 0 else w[head]  # (Lq, Lk)


def step_cross_attention(record: Intermediates, layer: int, step: int) -> torch.Tensor:
    """Decoding step `step`'s cross-attention row in one layer, averaged over heads: (L_src,)."""
    return record.stack("cross")[layer, 0, :, step].float().cpu().mean(0)


# ----------------------------------------------------------------------------- a decoder-only model, position by position

@dataclass
class PositionCandidates:
    """What a decoder-only model predicts after the context ids[: position + 1]."""
    position: int  # 0-based index of the last context token
    top: list[tuple[int, float]]  # the k most probable next tokens, best first: (id, probability)
    actual: int | None  # the token that really comes next (None after the last one)
    actual_prob: float | None  # the probability the model gave it
    actual_rank: int | None  # 1 = the model's first choice


@torch.inference_mode()
def lm_position_candidates(model: Transformer, ids: list[int], k: int = 5) -> list[PositionCandidates]:
    """One forward pass of a decoder-only model over ids (BOS first, at most max_len of them): at every
    position, the next-token distribution (temperature 1, no top-k) that the causal mask lets it
    compute from the tokens up to there, its top k, and how it ranked the token that follows."""
    ids = list(ids)[: model.config.max_len]
    was_training = model.training
    model.eval()
    try:
        logits = model(torch.tensor([ids], device=model.device)).logits[0]  # (L, V)
    finally:
        model.train(was_training)
    probs = logits.float().softmax(-1).cpu()  # (L, V)
    out = []
    for pos in range(len(ids)):
        top_p, top_i = probs[pos].topk(min(k, probs.shape[-1]))
        nxt = ids[pos + 1] if pos + 1 < len(ids) else None
        p = float(probs[pos, nxt]) if nxt is not None else None
        rank = int((probs[pos] > probs[pos, nxt]).sum()) + 1 if nxt is not None else None
        out.append(PositionCandidates(pos, list(zip(top_i.tolist(), top_p.tolist())), nxt, p, rank))
    return out


def draw_seed(seed: int, draw: int) -> int:
    """The seed of the draw-th sampled token (0-based) in a session that chose `seed`: the same seed
    gives the same sequence of draws, a new seed a new one."""
    return seed * 1_000_003 + draw
