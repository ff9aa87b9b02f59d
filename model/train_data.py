"""A task's data for the trainer: tokenizer, encoded train / validation examples, padded batches."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from .corpus import ALPHABET, SYNTHETIC_TASKS, read_tsv_corpus, split_pairs, task_pairs
from .messages import UserError


@dataclass
class TaskData:
    tokenizer: object
    train: list[tuple[list[int], list[int]]]  # (source ids + [eos], target ids) per example
    valid: list[tuple[list[int], list[int]]]
    valid_text: list[tuple[str, str]]
    decoder_only: bool
    test_text: list[tuple[str, str]]


def build_tokenizer(task: str):
    """One id per letter for the synthetic tasks, else the shipped shared EN/KO sentencepiece model."""
    from .tokenizer import SymbolTokenizer, load_tokenizer
    if task in SYNTHETIC_TASKS:
        return SymbolTokenizer(tuple(ALPHABET))
    return load_tokenizer()  # byte fallback: any text of an uploaded corpus encodes


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
        splits = task_pairs(task, seed=seed)
    if not splits["train"] or not splits["valid"]:
        raise UserError("train.corpus.no_split", train=len(splits["train"]), valid=len(splits["valid"]))
    tok = build_tokenizer(task)
    return TaskData(tok, encode_pairs(tok, splits["train"], max_len), encode_pairs(tok, splits["valid"], max_len),
                    list(splits["valid"]), task == "lm", list(splits["test"]))


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
