"""The pairs a task trains on: the en-ko corpus (the core grammar in full plus a fixed sample, kept in a cache
file between processes), its train / valid / test split with held-out (subject, verb) combinations, the
synthetic tasks (copy, reverse, sort a sequence of letters), and task_pairs, which gives any task's splits."""
from __future__ import annotations

import hashlib
import json
import os
import random
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from model.data.corpus.grammar import Sentence
from model.data.corpus.lexicon import LEXICON_PATH, lexicon_or_default, verb_id
from model.data.corpus.sampling import core_sentences, sample_sentences

TASKS = ("copy", "reverse", "sort", "en-ko", "lm")
SYNTHETIC_TASKS = ("copy", "reverse", "sort")
ALPHABET = "abcdefghijklmnopqrstuvwxyz"[:10]  # default symbols of the synthetic tasks
SYNTHETIC_SIZES = {"train": 20000, "valid": 500, "test": 500}
SPLIT_FRACTIONS = {"valid": 0.05, "test": 0.10}  # a user's corpus; the rest (85%) is train
GRAMMAR_SPLIT_FRACTIONS = {"valid": 0.02, "test": 0.03}  # the en-ko corpus is large: a test split beam search scores in minutes
N_HELD_OUT = 8  # (subject, verb) combinations seen only in the test split
SAMPLE_SIZE = 60000  # sentences drawn from the whole grammar, on top of the core sentences


# -----------------------------------------------------------------------------
# the en-ko corpus, and its cache file

@lru_cache(maxsize=2)
def _corpus(sample_size: int) -> tuple[Sentence, ...]:
    core = list(core_sentences())
    return tuple(core + sample_sentences(sample_size, exclude={s.en for s in core}))


def generate_sentences(lexicon: dict | None = None, sample_size: int = SAMPLE_SIZE) -> Iterator[Sentence]:
    """The corpus, in a fixed order: every core sentence (core_sentences), then sample_size
    sentences sampled from the whole grammar (sample_sentences)."""
    if lexicon is not None:
        core = list(core_sentences(lexicon))
        yield from core
        yield from sample_sentences(sample_size, lexicon=lexicon, exclude={s.en for s in core})
        return
    yield from _corpus(sample_size)


def generate_pairs(lexicon: dict | None = None, sample_size: int = SAMPLE_SIZE) -> list[tuple[str, str]]:
    """Every (English, Korean) sentence pair of the corpus, in a fixed order.

    Generating the default corpus takes seconds, and every trainer process starts with it, so the
    result is also kept as a JSON file named by a hash of the corpus's sources and the lexicon
    (`corpus_cache_path`): it can never be stale, and a missing, damaged or unwritable cache only
    means generating again."""
    if lexicon is not None:
        return [(s.en, s.ko) for s in generate_sentences(lexicon, sample_size)]
    return list(_cached_pairs(sample_size))


CACHE_ENV = "ATLAS_CACHE_DIR"


def cache_dir() -> Path:
    """Where generated data is kept between processes: $ATLAS_CACHE_DIR, else ~/.cache/attention-atlas."""
    env = os.environ.get(CACHE_ENV, "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "attention-atlas"


def corpus_sources() -> list[Path]:
    """Every file the corpus is made from: the modules of this package and the lexicon. A cache named by
    their hash (corpus_cache_path, model.data.train_data.task_cache_path, the training cost estimate's
    kept numbers) is never stale: a change to any of them gives the cache another name."""
    return sorted(Path(__file__).resolve().parent.glob("*.py")) + [LEXICON_PATH]


def corpus_cache_path(sample_size: int = SAMPLE_SIZE) -> Path:
    """<cache>/en-ko-<hash>.json (cache_dir), the hash of corpus_sources() and the sample size."""
    digest = hashlib.sha256(str(sample_size).encode())
    for path in corpus_sources():
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return cache_dir() / f"en-ko-{digest.hexdigest()[:16]}.json"


@lru_cache(maxsize=2)
def _cached_pairs(sample_size: int) -> tuple[tuple[str, str], ...]:
    try:
        path = corpus_cache_path(sample_size)
    except OSError:
        path = None
    if path is not None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, list) and all(isinstance(p, list) and len(p) == 2 for p in data):
                return tuple((str(a), str(b)) for a, b in data)
        except (OSError, ValueError):
            pass
    pairs = tuple((s.en, s.ko) for s in _corpus(sample_size))
    if path is not None:
        try:
            from model.atomic import atomic_write_text
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps(pairs, ensure_ascii=False))
        except OSError:
            pass
    return pairs


# -----------------------------------------------------------------------------
# train / valid / test split

def held_out_combinations(seed: int = 0, lexicon: dict | None = None) -> list[tuple[str, str]]:
    """The (subject_en, verb key) combinations that appear only in the test split.

    N_HELD_OUT combinations with all-different subjects and all-different verbs, so every
    subject and every verb is still seen in training, just never together.
    """
    lex = lexicon_or_default(lexicon)
    rng = random.Random(seed)
    subjects = [s["en"] for s in lex["subjects"]]
    verbs = [verb_id(v) for v in lex["verbs"] + lex["motion_verbs"]]
    rng.shuffle(subjects)
    rng.shuffle(verbs)
    return list(zip(subjects, verbs))[:N_HELD_OUT]


@lru_cache(maxsize=1)
def _combinations_by_english() -> dict[str, frozenset[tuple[str, str]]]:
    return {s.en: frozenset(s.combinations) for s in generate_sentences()}


def split_pairs(pairs: list[tuple[str, str]], seed: int = 0,
                fractions: dict[str, float] = SPLIT_FRACTIONS) -> dict[str, list[tuple[str, str]]]:
    """Fixed-seed split into "train", "valid", "test" (each kept in corpus order); `fractions`
    gives valid's and test's share (default ~85/5/10).

    Pairs whose English sentence the grammar generates with a held-out (subject, verb)
    combination in any clause go to test only; the rest of test and valid are drawn at random.
    Pairs the grammar does not know (e.g. a user's corpus) are simply split at random.
    """
    held = set(held_out_combinations(seed))
    combos = _combinations_by_english()
    held_idx = [i for i, (en, _) in enumerate(pairs) if combos.get(en, frozenset()) & held]
    held_set = set(held_idx)
    rest = [i for i in range(len(pairs)) if i not in held_set]
    random.Random(seed).shuffle(rest)

    n_valid = round(fractions["valid"] * len(pairs))
    n_test = max(0, round(fractions["test"] * len(pairs)) - len(held_idx))
    idx = {
        "valid": rest[:n_valid],
        "test": held_idx + rest[n_valid:n_valid + n_test],
        "train": rest[n_valid + n_test:],
    }
    return {k: [pairs[i] for i in sorted(idx[k])] for k in ("train", "valid", "test")}


# -----------------------------------------------------------------------------
# synthetic tasks: copy, reverse, sort a sequence of letters

def _target(task: str, symbols: list[str]) -> list[str]:
    if task == "copy":
        return list(symbols)
    if task == "reverse":
        return symbols[::-1]
    if task == "sort":
        return sorted(symbols)
    raise ValueError(f"unknown synthetic task {task!r}; expected one of {SYNTHETIC_TASKS}")


def synthetic_pairs(task: str, n: int, seed: int = 0, min_len: int = 3, max_len: int = 10,
                    alphabet: str = ALPHABET) -> list[tuple[str, str]]:
    """n random (source, target) pairs, e.g. sort: ("c a b", "a b c"). Letters are space-separated."""
    _target(task, [])  # validates the task name
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got {min_len}, {max_len}")
    if not alphabet:
        raise ValueError("alphabet must not be empty")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        symbols = [rng.choice(alphabet) for _ in range(rng.randint(min_len, max_len))]
        pairs.append((" ".join(symbols), " ".join(_target(task, symbols))))
    return pairs


def _synthetic_splits(task: str, seed: int) -> dict[str, list[tuple[str, str]]]:
    """Train/valid/test for a synthetic task; valid and test sources never occur in train."""
    train = synthetic_pairs(task, SYNTHETIC_SIZES["train"], seed=seed)
    seen = {src for src, _ in train}
    fresh = []
    for src, tgt in synthetic_pairs(task, 20 * (SYNTHETIC_SIZES["valid"] + SYNTHETIC_SIZES["test"]),
                                    seed=seed + 1_000_003):
        if src not in seen:
            seen.add(src)
            fresh.append((src, tgt))
    n_valid = SYNTHETIC_SIZES["valid"]
    return {"train": train, "valid": fresh[:n_valid],
            "test": fresh[n_valid:n_valid + SYNTHETIC_SIZES["test"]]}


def train_head(task: str, n: int, seed: int = 0) -> list[tuple[str, str]]:
    """The first n pairs of task_pairs(task, seed)["train"]. A synthetic task's training split is drawn first
    and in order, so its head is drawn alone (400 pairs instead of the 40,000 the three splits draw)."""
    if task in SYNTHETIC_TASKS:
        return synthetic_pairs(task, max(0, min(n, SYNTHETIC_SIZES["train"])), seed=seed)
    return task_pairs(task, seed)["train"][:n]


def task_pairs(task: str, seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """Train/valid/test (source, target) pairs for a task in TASKS.

    copy / reverse / sort: 20000 / 500 / 500 random letter sequences (synthetic_pairs).
    en-ko: the grammar corpus, split by split_pairs with GRAMMAR_SPLIT_FRACTIONS (held-out
           combinations only in test).
    lm:    both sides of the en-ko split as single sentences, each as (sentence, sentence):
           a language model reads the target side; the source is the same text, so a
           consumer that only reads sources sees the same corpus.
    """
    if task in SYNTHETIC_TASKS:
        return _synthetic_splits(task, seed)
    if task not in ("en-ko", "lm"):
        raise ValueError(f"unknown task {task!r}; expected one of {TASKS}")
    splits = split_pairs(generate_pairs(), seed=seed, fractions=GRAMMAR_SPLIT_FRACTIONS)
    if task == "lm":
        splits = {k: [(s, s) for pair in v for s in pair] for k, v in splits.items()}
    return splits
