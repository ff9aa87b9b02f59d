"""A task's data for the trainer: tokenizer, encoded train / validation examples, padded batches, and
batches by tokens (`TokenBatches`: sentences of similar length together, at most N padded tokens).

The encoded splits of a built-in task are kept in a cache file (<cache>/task-<task>-...pt, <cache> =
$ATLAS_CACHE_DIR or ~/.cache/attention-atlas, like model.data.corpus's): generating and splitting the en-ko
grammar corpus costs seconds of CPU, reading the cache a small fraction of that, so a started run trains at once."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from itertools import accumulate
from dataclasses import dataclass
from pathlib import Path

import torch

from model.data import tokenizer
from model.data.corpus import ASSETS, cache_dir, corpus_sources, read_tsv_corpus, split_pairs, task_pairs
from model.messages import UserError
from model.data.tokenizer import build_tokenizer  # (in the tokenizer module, which has no torch: the page's estimates use it)


@dataclass
class TaskData:
    tokenizer: object
    train: Sequence[tuple[list[int], list[int]]]  # (source ids + [eos], target ids) per example
    valid: list[tuple[list[int], list[int]]]
    valid_text: list[tuple[str, str]]
    decoder_only: bool
    test_text: list[tuple[str, str]]


def encode_pairs(tok, pairs, max_len: int) -> list[tuple[list[int], list[int]]]:
    """(source ids + [eos], target ids), each side cut to max_len - 2 tokens."""
    limit = max_len - 2
    return [(tok.encode(s)[:limit] + [tok.eos_id], tok.encode(t)[:limit]) for s, t in pairs]


def load_task(task: str, seed: int, tsv: str | None = None, max_len: int = 128) -> TaskData:
    """The task's splits, encoded. A UserError (code "train.corpus.*") for a corpus that cannot be used."""
    if task == "tsv":
        if not tsv:
            raise UserError("train.corpus.no_file")
        splits = split_pairs(read_tsv_corpus(Path(tsv)), seed=seed)
    else:
        cached = read_cached_task(task, seed, max_len)
        if cached is not None:
            return cached
        splits = task_pairs(task, seed=seed)
    if not splits["train"] or not splits["valid"]:
        raise UserError("train.corpus.no_split", train=len(splits["train"]), valid=len(splits["valid"]))
    tok = build_tokenizer(task)
    data = TaskData(tok, encode_pairs(tok, splits["train"], max_len), encode_pairs(tok, splits["valid"], max_len),
                    list(splits["valid"]), task == "lm", list(splits["test"]))
    if task != "tsv":
        write_cached_task(data, task, seed, max_len)
    return data


# -----------------------------------------------------------------------------
# the cache of a built-in task's encoded splits

CACHE_VERSION = 1


def task_cache_path(task: str, seed: int, max_len: int) -> Path:
    """Where the encoded splits of a built-in task live; the name changes whenever the corpus code or the
    lexicon (corpus_sources), the tokenizer's code or files, or this file changes, so a stale file is never read."""
    h = hashlib.sha256(f"{CACHE_VERSION}|{task}|{seed}|{max_len}".encode())
    for path in (*corpus_sources(), Path(tokenizer.__file__), Path(__file__),
                 *sorted((ASSETS / "tokenizer").glob("*"))):
        if path.is_file():
            h.update(path.name.encode() + path.read_bytes())
    return cache_dir() / f"task-{task}-{h.hexdigest()[:16]}.pt"


def _flat(examples) -> dict:
    """(src, tgt) id lists as flat int32 tensors with lengths: small and quick to read."""
    return {"src": torch.tensor([i for s, _ in examples for i in s], dtype=torch.int32),
            "src_len": torch.tensor([len(s) for s, _ in examples], dtype=torch.int32),
            "tgt": torch.tensor([i for _, t in examples for i in t], dtype=torch.int32),
            "tgt_len": torch.tensor([len(t) for _, t in examples], dtype=torch.int32)}


class EncodedExamples(Sequence):
    """(source ids, target ids) pairs kept as two flat id lists: reading 70,000 pairs from the cache this
    way costs a few tens of ms, building 140,000 small lists ten times that. Indexing gives the pair."""

    def __init__(self, d: dict):
        self.src, self.tgt = d["src"].tolist(), d["tgt"].tolist()
        self.src_len, self.tgt_len = d["src_len"].tolist(), d["tgt_len"].tolist()
        self.src_at, self.tgt_at = [0, *accumulate(self.src_len)], [0, *accumulate(self.tgt_len)]

    def __len__(self) -> int:
        return len(self.src_len)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return (self.src[self.src_at[i]:self.src_at[i + 1]], self.tgt[self.tgt_at[i]:self.tgt_at[i + 1]])


def write_cached_task(data: TaskData, task: str, seed: int, max_len: int) -> None:
    """Best effort: a cache that cannot be written (read-only home, disk full) only costs time."""
    from model.atomic import atomic_path
    try:
        path = task_cache_path(task, seed, max_len)
        with atomic_path(path) as tmp:
            torch.save({"version": CACHE_VERSION, "train": _flat(data.train), "valid": _flat(data.valid),
                        "text": json.dumps({"valid": data.valid_text, "test": data.test_text})}, tmp)
    except (OSError, RuntimeError):
        pass


def read_cached_task(task: str, seed: int, max_len: int) -> TaskData | None:
    """The cached encoded splits, or None (no cache, unreadable or damaged: the caller builds them)."""
    try:
        path = task_cache_path(task, seed, max_len)
        if not path.is_file():
            return None
        d = torch.load(path, weights_only=True)
        if d.get("version") != CACHE_VERSION:
            return None
        train, valid = EncodedExamples(d["train"]), list(EncodedExamples(d["valid"]))
        text = json.loads(d["text"])
        valid_text = [(str(a), str(b)) for a, b in text["valid"]]
        test_text = [(str(a), str(b)) for a, b in text["test"]]
    except Exception:  # noqa: BLE001 - any damage means "build it again"
        return None
    if not train or len(valid) != len(valid_text):
        return None
    return TaskData(build_tokenizer(task), train, valid, valid_text, task == "lm", test_text)


def make_batch(examples, idx, pad, bos, eos, decoder_only, device):
    """Pad a batch. Encoder-decoder: src (B, Ls), tgt_in [bos]+y (B, Lt), tgt_out y+[eos].
    Decoder-only: the sequence [bos]+y+[eos] shifted by one."""
    rows = [examples[i] for i in idx]
    if decoder_only:
        seqs = [[bos] + t + [eos] for _, t in rows]
        L = max(len(s) for s in seqs) - 1
        x = torch.full((len(rows), L), pad, dtype=torch.long)
        y = torch.full((len(rows), L), pad, dtype=torch.long)
        for b, s in enumerate(seqs):
            x[b, : len(s) - 1] = torch.tensor(s[:-1])
            y[b, : len(s) - 1] = torch.tensor(s[1:])
        return None, x.to(device), y.to(device)
    Ls = max(len(s) for s, _ in rows)
    Lt = max(len(t) for _, t in rows) + 1
    src = torch.full((len(rows), Ls), pad, dtype=torch.long)
    tin = torch.full((len(rows), Lt), pad, dtype=torch.long)
    tout = torch.full((len(rows), Lt), pad, dtype=torch.long)
    for b, (s, t) in enumerate(rows):
        src[b, : len(s)] = torch.tensor(s)
        tin[b, : len(t) + 1] = torch.tensor([bos] + t)
        tout[b, : len(t) + 1] = torch.tensor(t + [eos])
    return src.to(device), tin.to(device), tout.to(device)


# -----------------------------------------------------------------------------
# batches by tokens, sentences of similar length together

def example_lengths(examples, decoder_only: bool) -> tuple[list[int], list[int]]:
    """Per example, the padded batch's source and target lengths it needs (make_batch's Ls and Lt)."""
    if isinstance(examples, EncodedExamples):
        ls, lt = examples.src_len, [n + 1 for n in examples.tgt_len]
    else:
        ls, lt = [len(s) for s, _ in examples], [len(t) + 1 for _, t in examples]
    return ([0] * len(examples) if decoder_only else list(ls)), lt


class TokenBatches:
    """Batches of at most `budget` tokens of padded source + target (make_batch's src and tgt_out), each
    from one bucket of sentences of similar length, so little of a batch is padding.

    Buckets: the examples sorted by (source length, target length), cut where the lengths change, and
    neighbouring groups merged until a bucket holds at least `spread` batches' worth of sentences (so that a
    batch is a random draw from its bucket, not always the same sentences). A bucket's batch has
    k = budget // (its longest source + its longest target) sentences (at least one).

    A step's batch is a pure function of (seed, step, rank), as with --batch-size: a bucket drawn with
    probability proportional to the batches it holds (size / k, so every sentence is drawn about equally
    often, as in an epoch), then k of its sentences without replacement."""

    def __init__(self, examples, budget: int, decoder_only: bool = False, spread: int = 4):
        if budget <= 0:
            raise ValueError(f"budget must be positive, got {budget}")
        self.budget = int(budget)
        ls, lt = example_lengths(examples, decoder_only)
        order = sorted(range(len(examples)), key=lambda i: (ls[i], lt[i], i))
        groups: list[list[int]] = []
        for i in order:
            if groups and (ls[groups[-1][-1]], lt[groups[-1][-1]]) == (ls[i], lt[i]):
                groups[-1].append(i)
            else:
                groups.append([i])
        self.buckets: list[list[int]] = []
        self.sizes: list[int] = []  # sentences per batch (k) of each bucket
        current: list[int] = []
        for g in groups:
            current = current + g
            k = self._per_batch(current, ls, lt)
            if len(current) >= spread * k:
                self.buckets.append(current)
                self.sizes.append(k)
                current = []
        if current:  # the longest sentences: merged into the last bucket, or a bucket of their own
            if self.buckets:
                current = self.buckets.pop() + current
                self.sizes.pop()
            self.buckets.append(current)
            self.sizes.append(self._per_batch(current, ls, lt))
        self.members = [torch.tensor(b, dtype=torch.long) for b in self.buckets]
        self.weights = torch.tensor([len(b) / k for b, k in zip(self.buckets, self.sizes)], dtype=torch.double)

    def _per_batch(self, bucket, ls, lt) -> int:
        return max(1, self.budget // (max(ls[i] for i in bucket) + max(lt[i] for i in bucket)))

    def indices(self, seed: int, step: int, rank: int = 0) -> list[int]:
        """The training examples of this step's batch."""
        g = torch.Generator().manual_seed(seed * 1_000_003 + step * 7919 + rank)
        b = int(torch.multinomial(self.weights, 1, generator=g))
        members, k = self.members[b], self.sizes[b]
        if k >= len(members):
            return members[torch.randperm(len(members), generator=g)].tolist()
        return members[torch.randperm(len(members), generator=g)[:k]].tolist()
