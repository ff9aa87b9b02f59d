"""The data of the BERT-style member (model/family/mlm.py): the tokenizer with BERT's special pieces, the
sequences a step trains on, BERT's masking, and the fixed batches the scores read.

Tokens: the shipped shared EN/KO sentencepiece model (vocab 2000). BERT's specials reuse its ids:
[CLS] = <s> (2), [SEP] = </s> (3), [PAD] = <pad> (0), and one new id, 2000, is [MASK] (vocab 2001).
A learner types "[MASK]" in the text; the mask stands for one whole piece, including its "▁".

Examples (from model.data.corpus.task_pairs("en-ko", seed)): one English sentence "[CLS] en [SEP]", one
Korean sentence "[CLS] ko [SEP]" (segment 0 throughout), or a translation pair "[CLS] en [SEP] ko [SEP]"
with segment 0 up to the first [SEP] and 1 after it: with the translation beside it the model can
read the hidden word in the other language. Training steps draw one kind each (English 20%, Korean 20%,
pairs 60%: reading the other language is the hard part), so short sentences are not padded to the
length of pairs.

Masking as BERT: 15% of the real tokens of each sequence (at least one; never [CLS], [SEP] or
padding) are chosen; of those 80% become [MASK], 10% a random token, 10% stay unchanged; the loss is
the cross-entropy on the chosen positions only. Training draws depend only on (seed, step, rank).
Scores (valid curves, test card) use a fixed masking of the split where every chosen token is [MASK]
("the model fills a [MASK]", as the page does), and compare each sentence alone with the same masks
beside its translation (fixed_batches)."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

KINDS = ("en", "ko", "pair")  # a single English sentence, a single Korean one, a translation pair
KIND_SHARES = (0.2, 0.2, 0.6)  # how often training draws each kind: pairs teach reading the other language
MASK_RATE = 0.15  # share of a sequence's real tokens chosen for prediction
MASK_SHARE, RANDOM_SHARE = 0.8, 0.1  # of the chosen: [MASK], a random token; the rest stay unchanged
IGNORE = -100  # label of a position the loss skips
ACTION_NONE, ACTION_MASK, ACTION_RANDOM, ACTION_KEEP = 0, 1, 2, 3  # what masking did to each position
MASK_TEXT = "[MASK]"
TYPED_MASK = re.compile(r"\[mask\]", re.IGNORECASE)
SENTINEL = "\x00"  # stands for a typed [MASK] while sentencepiece reads the text (a byte piece)


# ----------------------------------------------------------------------------- tokenizer

class MlmTokenizer:
    """The shared sentencepiece tokenizer with BERT's extra pieces: [CLS] / [SEP] / [PAD] are its
    <s> / </s> / <pad>, [MASK] is one new id (base vocab size). Same interface as model.data.tokenizer:
    encode(text) (no [CLS]/[SEP]; a typed "[MASK]" becomes mask_id), decode, pieces, id_to_piece,
    is_byte, vocab_size, save(dir)."""
    kind = "mlm-sentencepiece"

    def __init__(self, base):
        self.base = base
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = base.pad_id, base.unk_id, base.bos_id, base.eos_id
        self.cls_id, self.sep_id = self.bos_id, self.eos_id
        self.mask_id = base.vocab_size
        self.specials = {self.pad_id: "[PAD]", self.cls_id: "[CLS]", self.sep_id: "[SEP]", self.mask_id: MASK_TEXT}
        self._space = base.sp.piece_to_id("\u2581") if hasattr(base, "sp") else -1
        self._sentinel = base.sp.piece_to_id("<0x00>") if hasattr(base, "sp") else -1

    @classmethod
    def load(cls, directory: str | Path | None = None) -> "MlmTokenizer":
        """From a folder holding tokenizer.model (default: the shipped shared tokenizer)."""
        from model.data.tokenizer import DEFAULT_DIR, load_tokenizer
        return cls(load_tokenizer(directory if directory is not None else DEFAULT_DIR))

    def save(self, directory: str | Path) -> Path:
        return self.base.save(directory)

    @property
    def vocab_size(self) -> int:
        return self.base.vocab_size + 1

    def is_special(self, i: int) -> bool:
        """[PAD], [CLS], [SEP] (never masked, never predicted)."""
        return int(i) in (self.pad_id, self.cls_id, self.sep_id)

    def encode(self, text: str) -> list[int]:
        """Ids without [CLS]/[SEP]. A typed [MASK] (any case) replaces one whole piece: the space
        before it belongs to the masked piece ("hot [MASK] in" -> ▁hot [MASK] ▁in)."""
        clean = text.replace(SENTINEL, "")
        if not TYPED_MASK.search(clean):
            return self.base.encode(clean)
        ids = self.base.encode(TYPED_MASK.sub(SENTINEL, clean))
        out: list[int] = []
        for i in ids:
            if i == self._sentinel:
                if out and out[-1] == self._space:
                    out.pop()  # the lone "▁" before a mask is the mask's own space
                out.append(self.mask_id)
            else:
                out.append(i)
        return out

    def pieces(self, text: str) -> list[str]:
        return [self.id_to_piece(i) for i in self.encode(text)]

    def id_to_piece(self, i: int) -> str:
        i = int(i)
        return self.specials.get(i) or self.base.id_to_piece(i)

    def is_byte(self, i: int) -> bool:
        return int(i) != self.mask_id and self.base.is_byte(i)

    def decode(self, ids) -> str:
        """Text of the ids; [PAD]/[CLS]/[SEP] skipped, each mask written as [MASK]."""
        words: list[str] = []
        run: list[int] = []

        def flush():
            if run:
                text = self.base.decode(run)
                first = self.base.id_to_piece(run[0])
                glue = " " if words and first.startswith("\u2581") else ""
                words.append(glue + text)
                run.clear()

        for i in ids:
            i = int(i)
            if i == self.mask_id:
                flush()
                words.append((" " if words else "") + MASK_TEXT)
            elif not self.is_special(i):
                run.append(i)
        flush()
        return "".join(words)


@functools.cache
def shared_tokenizer() -> MlmTokenizer:
    return MlmTokenizer.load()


# ----------------------------------------------------------------------------- sequences and masking

def join_segments(tok, a: list[int], b: list[int] | None = None, max_len: int = 64) -> tuple[list[int], list[int], bool]:
    """[CLS] a [SEP] (segment 0) or [CLS] a [SEP] b [SEP] (segment 0 up to the first [SEP], then 1).
    Too long for max_len: the longer side loses its last piece until it fits (BERT's truncate_seq_pair);
    returns (ids, segments, cut)."""
    a, b = list(a), (list(b) if b else None)
    room = max_len - (3 if b is not None else 2)
    if room < 2:
        raise ValueError(f"max_len={max_len} is too short for [CLS] ... [SEP]")
    cut = False
    while len(a) + (len(b) if b is not None else 0) > room:
        cut = True
        if b is not None and len(b) > len(a):
            b.pop()
        else:
            a.pop()
    ids = [tok.cls_id, *a, tok.sep_id]
    segments = [0] * len(ids)
    if b is not None:
        ids += [*b, tok.sep_id]
        segments += [1] * (len(b) + 1)
    return ids, segments, cut


def mask_sequence(ids: list[int], tok, rng: np.random.Generator, random_share: float = RANDOM_SHARE,
                  mask_share: float = MASK_SHARE) -> tuple[list[int], list[int], list[int]]:
    """BERT's masking of one sequence: round(15%) of its real tokens (at least one) are chosen; each
    chosen one becomes [MASK] (mask_share), a random ordinary token (random_share) or stays as it is.
    Returns (input ids, labels (IGNORE where not chosen), actions)."""
    candidates = [p for p, i in enumerate(ids) if not tok.is_special(i)]
    out, labels, actions = list(ids), [IGNORE] * len(ids), [ACTION_NONE] * len(ids)
    if not candidates:
        return out, labels, actions
    n = min(len(candidates), max(1, int(round(MASK_RATE * len(candidates)))))
    chosen = rng.choice(len(candidates), size=n, replace=False)
    draws = rng.random(n)
    randoms = rng.integers(4, tok.mask_id, size=n)  # ordinary pieces only: no specials, no [MASK]
    for c, u, r in zip(chosen, draws, randoms):
        p = candidates[int(c)]
        labels[p] = ids[p]
        if u < mask_share:
            out[p], actions[p] = tok.mask_id, ACTION_MASK
        elif u < mask_share + random_share:
            out[p], actions[p] = int(r), ACTION_RANDOM
        else:
            actions[p] = ACTION_KEEP
    return out, labels, actions


@dataclass
class MlmBatch:
    """A padded batch (all (B, L)): ids as the model reads them (masked), segments, pad_mask (True =
    real token), labels (the original id where a prediction is scored, IGNORE elsewhere), actions
    (ACTION_*: what masking did), originals (the ids before masking); kinds: one of KINDS per row."""
    ids: torch.Tensor
    segments: torch.Tensor
    pad_mask: torch.Tensor
    labels: torch.Tensor
    actions: torch.Tensor
    originals: torch.Tensor
    kinds: list[str] = field(default_factory=list)

    def to(self, device) -> "MlmBatch":
        move = lambda x: x.to(device)
        return MlmBatch(move(self.ids), move(self.segments), move(self.pad_mask), move(self.labels),
                        move(self.actions), move(self.originals), list(self.kinds))

    @property
    def n_predicted(self) -> int:
        return int((self.labels != IGNORE).sum())


def pad_rows(tok, rows: list[tuple[list[int], list[int], list[int], list[int], list[int]]], kinds: list[str]) -> MlmBatch:
    """(input ids, segments, labels, actions, original ids) per sequence -> a padded MlmBatch."""
    B, L = len(rows), max(len(r[0]) for r in rows)

    def pad(i, value, dtype=torch.long):
        t = torch.full((B, L), value, dtype=dtype)
        for b, r in enumerate(rows):
            t[b, :len(r[i])] = torch.tensor(r[i], dtype=dtype)
        return t

    ids = pad(0, tok.pad_id)
    return MlmBatch(ids, pad(1, 0), ids != tok.pad_id, pad(2, IGNORE), pad(3, ACTION_NONE, torch.int8),
                    pad(4, tok.pad_id), list(kinds))


def make_batch(tok, rows: list[tuple[list[int], list[int]]], kinds: list[str], rng: np.random.Generator,
               max_len: int, mask_share: float = MASK_SHARE, random_share: float = RANDOM_SHARE) -> MlmBatch:
    """Sequences for (en ids, ko ids) rows, each as its kind (KINDS), masked with rng, padded."""
    out = []
    for (en, ko), kind in zip(rows, kinds):
        if kind == "pair":
            ids, seg, _ = join_segments(tok, en, ko, max_len)
        else:
            ids, seg, _ = join_segments(tok, en if kind == "en" else ko, None, max_len)
        masked, labels, actions = mask_sequence(ids, tok, rng, random_share, mask_share)
        out.append((masked, seg, labels, actions, ids))
    return pad_rows(tok, out, kinds)


# ----------------------------------------------------------------------------- data

@functools.lru_cache(maxsize=2)
def encoded_splits(seed: int = 0) -> dict[str, list[tuple[list[int], list[int]]]]:
    """The en-ko corpus's splits (model.data.corpus.task_pairs("en-ko", seed)) as (en ids, ko ids)."""
    from model.data.corpus import task_pairs
    tok = shared_tokenizer().base
    return {k: [(tok.encode(en), tok.encode(ko)) for en, ko in v] for k, v in task_pairs("en-ko", seed).items()}


SCORE_KINDS = ("en", "ko", "en_with_ko", "ko_with_en")  # what the scores compare


def fixed_batches(tok, pairs, seed: int, max_len: int, batch_size: int = 128) -> list[MlmBatch]:
    """The scoring sequences, masked once with a fixed seed (every chosen token [MASK]), sorted by length
    into batches. Per pair: the English sentence alone ("en"), the Korean alone ("ko"), and the pair
    [CLS] en [SEP] ko [SEP] twice: with the SAME English tokens masked and the Korean whole ("en_with_ko"),
    and with the same Korean tokens masked and the English whole ("ko_with_en"). The only difference
    between "en" and "en_with_ko" is the translation beside the sentence."""
    rng = np.random.default_rng([seed, 7919])
    rows, kinds = [], []
    for en, ko in pairs:
        pair, pair_seg, _ = join_segments(tok, en, ko, max_len)
        n_en = pair_seg.count(0) - 2  # English pieces kept in the pair ([CLS] and the first [SEP] are segment 0)
        for side, kind, offset in ((en, "en", 0), (ko, "ko", n_en + 1)):
            ids, seg, _ = join_segments(tok, side, None, max_len)
            masked, labels, actions = mask_sequence(ids, tok, rng, random_share=0.0, mask_share=1.0)
            rows.append((masked, seg, labels, actions, ids))
            kinds.append(kind)
            p_masked, p_labels, p_actions = list(pair), [IGNORE] * len(pair), [ACTION_NONE] * len(pair)
            for pos, label in enumerate(labels):
                q = pos + offset  # the same token in the pair
                if label != IGNORE and 0 < q < len(pair) and pair[q] == label and not tok.is_special(label):
                    p_masked[q], p_labels[q], p_actions[q] = tok.mask_id, label, ACTION_MASK
            if any(x != IGNORE for x in p_labels):
                rows.append((p_masked, pair_seg, p_labels, p_actions, pair))
                kinds.append(f"{kind}_with_{'ko' if kind == 'en' else 'en'}")
    order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
    return [pad_rows(tok, [rows[i] for i in order[j:j + batch_size]], [kinds[i] for i in order[j:j + batch_size]])
            for j in range(0, len(order), batch_size)]
