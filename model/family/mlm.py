"""BERT (Devlin et al., 2018) in miniature: the paper's encoder alone, trained here as a masked language
model on the teaching corpus, in English, in Korean, and on English–Korean pairs.

The model IS `model.nn.transformer.Transformer` with a TransformerConfig of architecture "encoder-only":
the same EncoderLayer / MultiHeadAttention code as the translator, with no causal mask, so every token
attends to both sides. Where it follows BERT rather than the paper (each a config option):
- token + position + segment embeddings, summed, then a LayerNorm (segment_vocab=2, embed_norm; no
  sqrt(d_model) scale); positions "learned" as in BERT, so the three embeddings are all learned tables
  as in BERT's figure 2: every sequence of the corpus fits in max_len=64 (a pair is at most 51
  pieces), so the table never has to reach past what training shows (sinusoids would extrapolate,
  but nothing here is longer), and it costs only 64 x d_model parameters;
- GELU in the feed-forward network; the masked-LM head (dense -> GELU -> LayerNorm) before the
  output layer, which is the tied token embedding plus a bias; no label smoothing.

Segments: Transformer.encode / forward take segment ids (segments=), added to the token and position
embeddings as in BERT.

The data (the tokenizer with BERT's specials, the three kinds of example, BERT's masking and the fixed
scoring batches) is model/family/mlm_data.py; here are the model's use of segments, the scores, the
trainer's task and what the page runs."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from model.family import FamilyTask
from model.family.mlm_data import (
    IGNORE, KIND_SHARES, KINDS, MlmBatch, MlmTokenizer, encoded_splits, fixed_batches, join_segments, make_batch,
    shared_tokenizer,
)
from model.messages import UserError
from model.nn.config import TransformerConfig
from model.nn.transformer import Intermediates, Transformer

TOP = 5
EVAL_PAIRS = 200  # valid pairs scored at every evaluation (x 3 kinds = 600 sequences: a second or two)
EVAL_SEED, TEST_SEED = 1, 2  # the fixed maskings of valid and test
DEFAULTS = {"d_model": 128, "n_heads": 4, "d_ff": 512, "layers": 2, "dropout": 0.1, "max_len": 64}


# ----------------------------------------------------------------------------- the model with segments

def encode_with_segments(model: Transformer, ids: torch.Tensor, segments: torch.Tensor | None = None,
                         pad_mask: torch.Tensor | None = None, record: Intermediates | None = None) -> torch.Tensor:
    """Transformer.encode with segment ids (token + position + segment embeddings, then the encoder layers).
    ids, segments: (B, L); pad_mask (B, L) True = real token -> hidden states (B, L, D)."""
    return model.encode(ids, pad_mask, record, segments=segments)


def masked_logits(model: Transformer, batch: MlmBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits (N, vocab), labels (N,)) at the N positions that are scored: the output layer runs on
    those positions only."""
    h = encode_with_segments(model, batch.ids, batch.segments, batch.pad_mask)
    chosen = batch.labels != IGNORE
    return model.project(h[chosen]), batch.labels[chosen]


@torch.no_grad()
def score_batches(model: Transformer, batches: list[MlmBatch], device, top: int = TOP) -> dict:
    """loss, perplexity, top-1 and top-k accuracy over all masked positions; top-1 accuracy per kind
    (accuracy_<kind>)."""
    was = model.training
    model.eval()
    try:
        total, n, hit1, hitk = 0.0, 0, 0, 0
        per_kind: dict[str, list[int]] = {}
        for b in batches:
            b = b.to(device)
            logits, labels = masked_logits(model, b)
            total += float(F.cross_entropy(logits.float(), labels, reduction="sum"))
            n += labels.numel()
            best = logits.topk(min(top, logits.size(-1)), dim=-1).indices
            right1 = best[:, 0] == labels
            hit1 += int(right1.sum())
            hitk += int((best == labels[:, None]).any(-1).sum())
            rows = torch.nonzero(b.labels != IGNORE)[:, 0].tolist()  # the batch row of each scored position
            for r, ok in zip(rows, right1.tolist()):
                counts = per_kind.setdefault(b.kinds[r], [0, 0])
                counts[0] += int(ok)
                counts[1] += 1
    finally:
        model.train(was)
    loss = total / max(n, 1)
    out = {"loss": loss, "perplexity": float(np.exp(min(loss, 50.0))), "accuracy": hit1 / max(n, 1),
           f"top{top}_accuracy": hitk / max(n, 1), "masked_tokens": float(n)}
    for k, (right, count) in per_kind.items():
        out[f"accuracy_{k}"] = right / max(count, 1)
    return out


# ----------------------------------------------------------------------------- the task

class MlmTask(FamilyTask):
    """The trainer's view of the BERT-style member (see model.family.FamilyTask)."""
    name = "mlm"
    config_class = TransformerConfig
    throughput_unit = "tokens"  # masked (scored) tokens
    standard_metrics = {"val_loss": "valid_loss", "val_token_acc": "valid_accuracy", "val_exact": "valid_top5_accuracy"}

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        self._eval: dict[tuple[str, int], list[MlmBatch]] = {}
        self.max_len = DEFAULTS["max_len"]  # batches are cut to the built model's max_len

    @property
    def tokenizer(self) -> MlmTokenizer:
        return shared_tokenizer()

    # -- model
    def default_config(self, args=None) -> TransformerConfig:
        pick = lambda name, attr: getattr(args, attr, None) if getattr(args, attr, None) is not None else DEFAULTS[name]
        layers = pick("layers", "layers")
        max_len = pick("max_len", "max_len")
        return TransformerConfig(
            vocab_size=self.tokenizer.vocab_size, d_model=pick("d_model", "d_model"), n_heads=pick("n_heads", "heads"),
            d_ff=pick("d_ff", "d_ff"), n_encoder_layers=layers, n_decoder_layers=0,
            dropout=pick("dropout", "dropout"), max_len=max_len, architecture="encoder-only", norm_first=False,
            positional="learned", tie_embeddings=True, label_smoothing=0.0, pad_id=self.tokenizer.pad_id,
            activation="gelu", embed_scale=False, norm_eps=1e-12, output_bias=True, segment_vocab=2,
            embed_norm=True, mlm_transform=True)

    def build(self, config: TransformerConfig) -> Transformer:
        if config.architecture != "encoder-only" or config.segment_vocab < 2:
            raise ValueError("the mlm member is an encoder-only Transformer with 2 segments")
        model = Transformer(config)
        self.max_len = config.max_len
        std = config.d_model ** -0.5  # position and segment tables on the token table's scale (nn.Embedding: 1)
        for table in (model.src_embed.segment, getattr(model.src_embed, "position", None)):
            if table is not None:
                torch.nn.init.normal_(table.weight, std=std)
        return model

    # -- data and loss
    def batch(self, step: int, seed: int, rank: int, batch_size: int, device) -> MlmBatch:
        train = encoded_splits(self.seed)["train"]
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, int(step), int(rank)])
        idx = rng.integers(0, len(train), size=batch_size)
        kinds = [KINDS[int(rng.choice(len(KINDS), p=KIND_SHARES))]] * batch_size  # one kind a step: less padding
        return make_batch(self.tokenizer, [train[int(i)] for i in idx], kinds, rng, self.max_len).to(device)

    def loss(self, model: Transformer, batch: MlmBatch) -> tuple[torch.Tensor, int]:
        if hasattr(model, "module"):  # DistributedDataParallel: its forward is the only way to sync gradients
            raise NotImplementedError("the mlm member trains in one process for now: its loss runs the output "
                                      "layer on the masked positions only, outside forward(), which "
                                      "DistributedDataParallel needs to synchronise gradients")
        logits, labels = masked_logits(model, batch)
        return F.cross_entropy(logits, labels, label_smoothing=model.config.label_smoothing), labels.numel()

    # -- scores
    def _fixed(self, split: str, max_len: int) -> list[MlmBatch]:
        key = (split, max_len)
        if key not in self._eval:
            pairs = encoded_splits(self.seed)[split]
            if split == "valid":
                pairs = pairs[:EVAL_PAIRS]
            self._eval[key] = fixed_batches(self.tokenizer, pairs, EVAL_SEED if split == "valid" else TEST_SEED,
                                            max_len)
        return self._eval[key]

    def evaluate(self, model: Transformer, device) -> dict:
        s = score_batches(model, self._fixed("valid", model.config.max_len), device)
        return {f"valid_{k}": s[k] for k in ("loss", "perplexity", "accuracy", f"top{TOP}_accuracy")}

    def score_test(self, model: Transformer, device) -> dict:
        return {f"test_{k}": v for k, v in score_batches(model, self._fixed("test", model.config.max_len), device).items()}

    def card_notes(self) -> list[str]:
        return ["Objective: BERT's masked language model. 15% of each sequence's tokens are chosen (never [CLS], "
                "[SEP] or padding); 80% of them become [MASK], 10% a random token, 10% stay; the cross-entropy "
                "counts only those, without label smoothing.",
                "Encoder only, no causal mask. Token + learned position + segment embeddings, then a LayerNorm (no "
                "sqrt(d_model) scale); GELU; BERT's masked-LM head (dense, GELU, LayerNorm) before the tied output "
                "layer, with an output bias. Post-LN and the paper's Adam with its warm-up schedule.",
                "Data: the en-ko teaching corpus as English sentences (20% of the steps), Korean sentences (20%) and "
                "[CLS] English [SEP] Korean [SEP] pairs (60%, segments 0 and 1), one kind per step. Tokens: the shared "
                "sentencepiece vocabulary; [CLS], [SEP], [PAD] are its <s>, </s>, <pad>, and [MASK] is one new id (2000).",
                "Scores: a fixed masking of the test split with every chosen token as [MASK]; *_with_* hide the same "
                "tokens as the sentence alone, with its translation beside it."]

    # -- files
    def save_extra(self, directory: Path) -> None:
        self.tokenizer.save(directory)

    def load_extra(self, directory: Path) -> MlmTokenizer:
        return MlmTokenizer.load(directory)


# ----------------------------------------------------------------------------- for the page

@dataclass
class Tokens:
    """A learner's text as the model reads it: [CLS] a [SEP] (b [SEP])."""
    ids: list[int]
    pieces: list[str]
    segments: list[int]
    cut: bool  # cut to the model's max_len

    def content_positions(self, tok) -> list[int]:
        """Positions a learner may mask (not [CLS]/[SEP], not already [MASK])."""
        return [p for p, i in enumerate(self.ids) if not tok.is_special(i) and i != tok.mask_id]

    def follow(self, before: tuple[list[str], list[int]], positions: list[int]) -> list[int]:
        """Where `positions` of the text `before` (its pieces and segments) are in this one after an edit: each
        segment's pieces are aligned with the same segment's before (difflib), so an edit of one segment leaves
        the other's positions on their tokens (moved when the first segment changed length), and a token that
        survives an edit of its own segment keeps its position; one the edit removed or changed is dropped."""
        import difflib
        old_pieces, old_segments = before
        moved: dict[int, int] = {}
        for seg in sorted(set(old_segments) & set(self.segments)):
            old_at = [p for p, s in enumerate(old_segments) if s == seg]
            new_at = [p for p, s in enumerate(self.segments) if s == seg]
            match = difflib.SequenceMatcher(None, [old_pieces[p] for p in old_at], [self.pieces[p] for p in new_at],
                                            autojunk=False)
            for a, b, n in match.get_matching_blocks():
                moved.update(zip(old_at[a:a + n], new_at[b:b + n]))
        return sorted(moved[p] for p in positions if p in moved)


def tokens(tok: MlmTokenizer, text_a: str, text_b: str | None = None, max_len: int = 64) -> Tokens:
    """UserError family_mlm.errors.empty when the first text is empty; a second text that is empty
    means a single sentence."""
    a = (text_a or "").strip()
    b = (text_b or "").strip()
    if not a:
        raise UserError("family_mlm.errors.empty")
    ids, segments, cut = join_segments(tok, tok.encode(a), tok.encode(b) if b else None, max_len)
    return Tokens(ids, [tok.id_to_piece(i) for i in ids], segments, cut)


@dataclass
class MaskPrediction:
    position: int  # in Tokens.ids / the attention maps (0 is [CLS])
    top: list[tuple[str, float]]  # (piece, probability), best first
    top_ids: list[int]
    hidden: str | None = None  # the piece the learner hid by picking it (None for a typed [MASK])
    hidden_prob: float | None = None
    hidden_rank: int | None = None  # 1 = the model's first choice

    @property
    def correct(self) -> bool | None:
        return None if self.hidden is None else self.hidden_rank == 1


@dataclass
class FillResult:
    ids: list[int]  # as the model read them (with [MASK])
    pieces: list[str]
    segments: list[int]
    predictions: list[MaskPrediction]
    attention: np.ndarray  # (layers, heads, T, T), rows are queries
    cut: bool

    def filled_ids(self) -> list[int]:
        """The ids with every [MASK] replaced by the model's first choice (what the decoder-only model
        reads for comparison: [CLS] and [SEP] are its <s> and </s>)."""
        out = list(self.ids)
        for p in self.predictions:
            out[p.position] = p.top_ids[0]
        return out


@torch.no_grad()
def fill_masks(model: Transformer, tok: MlmTokenizer, text_a: str, text_b: str | None = None,
               mask_positions=None, top: int = TOP) -> FillResult:
    """The model's `top` guesses at every masked position, and its attention. Masked are the typed
    [MASK]s and `mask_positions` (positions in tokens(...).ids; [CLS]/[SEP] and positions past the end
    are ignored). UserError: family_mlm.errors.empty, .nothing_masked, .all_masked."""
    seq = tokens(tok, text_a, text_b, model.config.max_len)
    ids = list(seq.ids)
    picked = sorted({int(p) for p in (mask_positions or ()) if 0 <= int(p) < len(ids) and not tok.is_special(ids[int(p)])})
    hidden = {p: ids[p] for p in picked if ids[p] != tok.mask_id}
    for p in picked:
        ids[p] = tok.mask_id
    masked = [p for p, i in enumerate(ids) if i == tok.mask_id]
    if not masked:
        raise UserError("family_mlm.errors.nothing_masked")
    content = [p for p, i in enumerate(ids) if not tok.is_special(i)]
    if len(masked) == len(content):
        raise UserError("family_mlm.errors.all_masked", n=len(content))
    was = model.training
    model.eval()
    try:
        device = next(model.parameters()).device
        x = torch.tensor([ids], device=device)
        record = Intermediates()
        h = encode_with_segments(model, x, torch.tensor([seq.segments], device=device), x != tok.pad_id, record)
        probs = torch.softmax(model.project(h[0, masked]).float(), dim=-1).cpu()  # (M, vocab)
    finally:
        model.train(was)
    k = max(1, min(int(top), probs.size(-1)))
    predictions = []
    for row, pos in zip(probs, masked):
        p, j = row.topk(k)
        pred = MaskPrediction(pos, [(tok.id_to_piece(int(b)), float(a)) for a, b in zip(p, j)], [int(b) for b in j])
        if pos in hidden:
            truth = hidden[pos]
            pred.hidden = tok.id_to_piece(truth)
            pred.hidden_prob = float(row[truth])
            pred.hidden_rank = int((row > row[truth]).sum()) + 1
        predictions.append(pred)
    attention = torch.stack(record.encoder_self)[:, 0].float().cpu().numpy()  # (layers, H, T, T)
    return FillResult(ids, [tok.id_to_piece(i) for i in ids], seq.segments, predictions, attention, seq.cut)


def later_share(weights: np.ndarray) -> np.ndarray:
    """(layers, heads) from (layers, heads, T, T): the mean over queries of the attention put on LATER
    keys (the upper triangle). A decoder's causal mask makes it exactly 0; an encoder's is free."""
    w = np.asarray(weights, dtype=float)
    upper = np.triu(np.ones(w.shape[-2:], dtype=bool), k=1)
    return (w * upper).sum(-1).mean(-1)
