"""The English -> Korean teaching corpus, the synthetic tasks, and user TSV corpora.

The corpus is generated, not downloaded: every sentence that the small grammar in
assets/en_ko_lexicon.json allows (see the grammar notes below), each with exactly one
Korean translation.

    transitive:  SUBJECT VERB [ADJECTIVE] OBJECT [TIME] .     I drank hot coffee today.
    motion:      SUBJECT MOTION_VERB PLACE [TIME] .           She went to school yesterday.

Korean is subject-object-verb: topic-marked subject, [time], [adjective] object-with-particle
or place-with-에, verb, full stop: 나는 오늘 뜨거운 커피를 마셨다.
"""
from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .messages import UserError

ASSETS = Path(__file__).resolve().parent.parent / "assets"
LEXICON_PATH = ASSETS / "en_ko_lexicon.json"

TENSES = ("present", "past")
TASKS = ("copy", "reverse", "sort", "en-ko", "lm")
SYNTHETIC_TASKS = ("copy", "reverse", "sort")
ALPHABET = "abcdefghijklmnopqrstuvwxyz"[:10]  # default symbols of the synthetic tasks
SYNTHETIC_SIZES = {"train": 20000, "valid": 500, "test": 500}
SPLIT_FRACTIONS = {"valid": 0.05, "test": 0.10}  # the rest (85%) is train
N_HELD_OUT = 5  # (subject, verb) combinations seen only in the test split


# -----------------------------------------------------------------------------
# the grammar

def load_lexicon(path: str | os.PathLike = LEXICON_PATH) -> dict:
    """Read the lexicon JSON (subjects, objects, adjectives, verbs, motion_verbs, places, time_adverbs)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@dataclass(frozen=True)
class Sentence:
    """One generated sentence pair, with the choices that built it."""
    subject: str            # English subject as in the lexicon, e.g. "the teacher"
    verb: str               # English base form, e.g. "listen to"
    tense: str              # "present" or "past"
    negated: bool
    adjective: str | None   # English adjective, e.g. "red"
    obj: str | None         # English object as in the lexicon (transitive pattern), e.g. "an apple"
    place: str | None       # English place (motion pattern), e.g. "to school"
    time: str | None        # English time adverb, e.g. "every day"
    en: str
    ko: str

    @property
    def pattern(self) -> str:
        return "transitive" if self.obj is not None else "motion"


def _en_verb(verb: dict, tense: str, negated: bool, third_singular: bool) -> str:
    if tense == "present" and not negated:
        return verb["en_3sg"] if third_singular else verb["en"]
    if tense == "past" and not negated:
        return verb["en_past"]
    aux = "did" if tense == "past" else ("does" if third_singular else "do")
    return f"{aux} not {verb['en']}"  # "listen to" keeps its "to": "does not listen to"


def _ko_verb(verb: dict, tense: str, negated: bool) -> str:
    if not negated:
        return verb["ko_present"] if tense == "present" else verb["ko_past"]
    return verb["ko_stem"] + ("지 않는다" if tense == "present" else "지 않았다")


def _en_with_adjective(noun: str, adjective: str | None) -> str:
    """Put the adjective between article and noun: "an apple" + red -> "a red apple"."""
    if adjective is None:
        return noun
    first, _, rest = noun.partition(" ")
    if rest and first in ("a", "an"):
        article = "an" if adjective[0].lower() in "aeiou" else "a"
        return f"{article} {adjective} {rest}"
    if rest and first == "the":
        return f"the {adjective} {rest}"
    return f"{adjective} {noun}"  # bare noun: "hot coffee"


def _capitalise(s: str) -> str:
    return s[:1].upper() + s[1:]


def _check_lexicon(lex: dict) -> None:
    verbs = {v["en"] for v in lex["verbs"]}
    objects = {o["en"] for o in lex["objects"]}
    for o in lex["objects"]:
        for v in o["verbs"]:
            if v not in verbs:
                raise ValueError(f"object {o['en']!r} names unknown verb {v!r}")
    for a in lex["adjectives"]:
        for o in a["objects"]:
            if o not in objects:
                raise ValueError(f"adjective {a['en']!r} names unknown object {o!r}")
    for t in lex["time_adverbs"]:
        for tense in t["tenses"]:
            if tense not in TENSES:
                raise ValueError(f"time adverb {t['en']!r} names unknown tense {tense!r}")


def generate_sentences(lexicon: dict | None = None) -> Iterator[Sentence]:
    """Yield every sentence the grammar allows, in a fixed order.

    Order: subject, verb (transitive verbs, then motion verbs), object or place, adjective
    (none first), tense (present, past), polarity (affirmative first), time (none first).
    """
    lex = load_lexicon() if lexicon is None else lexicon
    _check_lexicon(lex)
    forms = [(tense, neg) for tense in TENSES for neg in (False, True)]

    def times_for(tense):
        return [None] + [t for t in lex["time_adverbs"] if tense in t["tenses"]]

    def build(subj, verb, tense, neg, time, en_rest, ko_rest, **fields):
        en = [subj["en"], _en_verb(verb, tense, neg, subj["third_singular"]), en_rest]
        ko = [subj["ko"]] + ([time["ko"]] if time else []) + [ko_rest, _ko_verb(verb, tense, neg)]
        if time:
            en.append(time["en"])
        return Sentence(subject=subj["en"], verb=verb["en"], tense=tense, negated=neg,
                        time=time["en"] if time else None,
                        en=_capitalise(" ".join(en)) + ".", ko=" ".join(ko) + ".", **fields)

    for subj in lex["subjects"]:
        for verb in lex["verbs"]:
            for obj in lex["objects"]:
                if verb["en"] not in obj["verbs"]:
                    continue
                adjectives = [None] + [a for a in lex["adjectives"] if obj["en"] in a["objects"]]
                for adj in adjectives:
                    en_np = _en_with_adjective(obj["en"], adj["en"] if adj else None)
                    ko_np = f"{adj['ko']} {obj['ko']}" if adj else obj["ko"]
                    for tense, neg in forms:
                        for time in times_for(tense):
                            yield build(subj, verb, tense, neg, time, en_np, ko_np,
                                        adjective=adj["en"] if adj else None, obj=obj["en"], place=None)
        for verb in lex["motion_verbs"]:
            for place in lex["places"]:
                for tense, neg in forms:
                    for time in times_for(tense):
                        yield build(subj, verb, tense, neg, time, place["en"], place["ko"],
                                    adjective=None, obj=None, place=place["en"])


def generate_pairs(lexicon: dict | None = None) -> list[tuple[str, str]]:
    """Every (English, Korean) sentence pair of the grammar, in a fixed order."""
    return [(s.en, s.ko) for s in generate_sentences(lexicon)]


# -----------------------------------------------------------------------------
# train / valid / test split

def held_out_combinations(seed: int = 0, lexicon: dict | None = None) -> list[tuple[str, str]]:
    """The (subject_en, verb_en) combinations that appear only in the test split.

    N_HELD_OUT combinations with all-different subjects and all-different verbs, so every
    subject and every verb is still seen in training, just never together.
    """
    lex = load_lexicon() if lexicon is None else lexicon
    rng = random.Random(seed)
    subjects = [s["en"] for s in lex["subjects"]]
    verbs = [v["en"] for v in lex["verbs"] + lex["motion_verbs"]]
    rng.shuffle(subjects)
    rng.shuffle(verbs)
    return list(zip(subjects, verbs))[:N_HELD_OUT]


def split_pairs(pairs: list[tuple[str, str]], seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """Fixed-seed ~85/5/10 split into "train", "valid", "test" (each kept in corpus order).

    Pairs whose English sentence the grammar generates from a held-out (subject, verb)
    combination go to test only; the rest of test and valid are drawn at random. Pairs the
    grammar does not know (e.g. a user's corpus) are simply split at random.
    """
    held = set(held_out_combinations(seed))
    combo = {s.en: (s.subject, s.verb) for s in generate_sentences()}
    held_idx = [i for i, (en, _) in enumerate(pairs) if combo.get(en) in held]
    held_set = set(held_idx)
    rest = [i for i in range(len(pairs)) if i not in held_set]
    random.Random(seed).shuffle(rest)

    n_valid = round(SPLIT_FRACTIONS["valid"] * len(pairs))
    n_test = max(0, round(SPLIT_FRACTIONS["test"] * len(pairs)) - len(held_idx))
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


def task_pairs(task: str, seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """Train/valid/test (source, target) pairs for a task in TASKS.

    copy / reverse / sort: 20000 / 500 / 500 random letter sequences (synthetic_pairs).
    en-ko: the grammar corpus, split by split_pairs (held-out combinations only in test).
    lm:    both sides of the en-ko split as single sentences, each as (sentence, sentence):
           a language model reads the target side; the source is the same text, so a
           consumer that only reads sources sees the same corpus.
    """
    if task in SYNTHETIC_TASKS:
        return _synthetic_splits(task, seed)
    if task not in ("en-ko", "lm"):
        raise ValueError(f"unknown task {task!r}; expected one of {TASKS}")
    splits = split_pairs(generate_pairs(), seed=seed)
    if task == "lm":
        splits = {k: [(s, s) for pair in v for s in pair] for k, v in splits.items()}
    return splits


# -----------------------------------------------------------------------------
# user corpora: a UTF-8 TSV file, one "source<TAB>target" pair a line

def read_tsv_corpus(path_or_text, max_bytes: int = 5_000_000,
                    max_lines: int = 200_000) -> list[tuple[str, str]]:
    """Read and validate a parallel corpus in TSV form; raise a UserError (code "train.corpus.<problem>")
    naming the first bad line.

    path_or_text: bytes (e.g. an uploaded file's contents), a path (os.PathLike, or a str
    without tab or newline that names a file), or the TSV text itself (a str).
    Rules: UTF-8 (a BOM is allowed), exactly 2 tab-separated columns, neither empty after
    stripping spaces, no empty lines (one final newline is fine), at most max_bytes bytes and
    max_lines lines. Columns are returned stripped of surrounding whitespace.
    """
    if isinstance(path_or_text, (bytes, bytearray)):
        data = bytes(path_or_text)
    elif isinstance(path_or_text, os.PathLike) or (
            isinstance(path_or_text, str) and "\t" not in path_or_text and "\n" not in path_or_text
            and os.path.isfile(path_or_text)):
        size = os.path.getsize(path_or_text)
        if size > max_bytes:
            raise UserError("train.corpus.too_big", size=size, limit=max_bytes)
        with open(path_or_text, "rb") as f:
            data = f.read()
    elif isinstance(path_or_text, str):
        data = path_or_text.encode("utf-8")
    else:
        raise TypeError(f"expected bytes, str or a path, got {type(path_or_text).__name__}")

    if len(data) > max_bytes:
        raise UserError("train.corpus.too_big", size=len(data), limit=max_bytes)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        raise UserError("train.corpus.empty")

    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # one final newline
    pairs = []
    for lineno, raw in enumerate(lines, start=1):
        if lineno > max_lines:
            raise UserError("train.corpus.too_many_lines", line=lineno, limit=max_lines)
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError("train.corpus.not_utf8", line=lineno, byte=e.start + 1) from None
        if not line.strip():
            raise UserError("train.corpus.empty_line", line=lineno)
        cols = line.split("\t")
        if len(cols) != 2:
            raise UserError("train.corpus.columns", line=lineno, found=len(cols))
        src, tgt = cols[0].strip(), cols[1].strip()
        if not src:
            raise UserError("train.corpus.first_empty", line=lineno)
        if not tgt:
            raise UserError("train.corpus.second_empty", line=lineno)
        pairs.append((src, tgt))
    return pairs
