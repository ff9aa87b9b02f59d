"""What a trained model read in training, in words: the text its input side saw (the encoder's
sources, or a decoder-only model's own text), the token ids and word forms in it, the words of a new
sentence it never saw, and a palette of its vocabulary for building sentences. Plain Python, no
streamlit.

A "word" is what a learner calls one: a run of letters or digits (apostrophes inside allowed, so
"don't" is one word; so is a Korean eojeol, a word with its particles), or a single mark that is neither a
letter, a digit nor a space (".", "!", "🐈"). Words are compared as written: to the model "you" and
the "You" that starts a sentence are different tokens (case_variant names the spelling it knows)."""
from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from model.atomic import atomic_write_json
from model.training.card import run_folder, trainer_options
from model.data.corpus import (
    SYNTHETIC_TASKS, TASKS, read_tsv_corpus, split_pairs, task_pairs, vocabulary_by_part_of_speech,
)
from model.messages import UserError

_WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")
PALETTE_TASKS = ("en-ko", "lm")  # the grammar corpus: its lexicon gives parts of speech
MOST_FREQUENT = 60  # palette size for a corpus without parts of speech (an uploaded TSV)
EXAMPLES_FROM_CORPUS = 5  # training sentences shown as examples for an uploaded corpus


def words(text: str) -> list[str]:
    """The words of a text, as written, in order: "I don't go to school!" ->
    ["I", "don't", "go", "to", "school", "!"] (tests/model/test_vocabulary.py shows Korean)."""
    return _WORD.findall(text or "")


def unknown_words(text: str, known: frozenset[str]) -> list[str]:
    """The words of `text` that are not in `known` as written, each once, in the order they first appear."""
    return list(dict.fromkeys(w for w in words(text) if w not in known))


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The sentences of a text, in order: split after ".", "!" or "?" followed by a space, and at line breaks
    (a mark inside "3.5" ends nothing). The teaching models were trained on one sentence at a time."""
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s.strip()]


def script_of(ch: str) -> str | None:
    """The script of a letter as the first word of its Unicode name ("HANGUL", "LATIN", "CJK"), None for what is
    not a letter (digits, marks, emoji)."""
    if not ch.isalpha():
        return None
    return unicodedata.name(ch, "").split(" ", 1)[0] or None


def unseen_scripts(words_: list[str], known: frozenset[str]) -> dict[str, list[str]]:
    """The words written in letters of a script that no known word uses, by script: Korean typed into a model
    that read only English gives {"HANGUL": [...]}."""
    read = {script_of(c) for word in known for c in word} - {None}
    out: dict[str, list[str]] = {}
    for word in words_:
        scripts = {script_of(c) for c in word} - {None} - read
        if scripts:
            out.setdefault(sorted(scripts)[0], []).append(word)
    return out


def case_variant(word: str, known: frozenset[str]) -> str | None:
    """A known spelling of `word` that differs only in case ("you" -> "You"), or None."""
    for variant in (word.lower(), word[:1].upper() + word[1:].lower(), word.upper()):
        if variant != word and variant in known:
            return variant
    return None


# ----------------------------------------------------------------------------- training data

def _seed(meta: dict, options: dict) -> int:
    for value in (meta.get("seed"), options.get("seed")):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def training_pairs(loaded) -> list[tuple[str, str]] | None:
    """The (source, target) pairs of a LoadedModel's train split, or None when they cannot be found:
    a built-in task is generated again with the run's seed; an uploaded corpus (task "tsv") is read
    from its run folder (corpus.tsv, or the file args.json names) and split as the trainer split it."""
    meta = loaded.meta or {}
    task = meta.get("task")
    options = trainer_options(loaded)
    seed = _seed(meta, options)
    if task in TASKS:
        try:
            return task_pairs(task, seed=seed)["train"]
        except (OSError, ValueError, KeyError):  # the corpus cannot be generated (a damaged lexicon)
            return None
    run = run_folder(loaded)
    if task != "tsv" or run is None:
        return None
    candidates = [run / "corpus.tsv"]
    if isinstance(options.get("tsv"), str):
        candidates.append(Path(options["tsv"]))
    for path in candidates:
        if path.is_file():
            try:
                return split_pairs(read_tsv_corpus(path), seed=seed)["train"]
            except (OSError, UserError):
                return None
    return None


def input_side(architecture: str) -> int:
    """Which side of a (source, target) pair a model reads as input: the encoder reads the source
    (0); a decoder-only model reads (and predicts) the target (1)."""
    return 1 if architecture == "decoder-only" else 0


# ----------------------------------------------------------------------------- the vocabulary

@dataclass(frozen=True)
class Vocabulary:
    """What a model's input side met in training. Empty (found=False) when the training data is unknown."""
    found: bool = False
    pieces: frozenset[int] = frozenset()  # token ids of the training inputs
    words: frozenset[str] = frozenset()  # their word forms (see words())
    palette: dict[str, list[str]] = field(default_factory=dict)  # group -> entries a learner can click
    examples: list[str] = field(default_factory=list)  # training inputs shown as examples (uploaded corpora)


def palette_for(task: str | None, texts: list[str]) -> dict[str, list[str]]:
    """Entries to build sentences from, grouped: the grammar corpus by part of speech
    (model.data.corpus.vocabulary_by_part_of_speech) and the punctuation marks of its texts; the letters of a synthetic task; otherwise the most
    frequent words of the training texts, most frequent first."""
    counts = Counter(w for text in texts for w in words(text))
    if task in PALETTE_TASKS:
        marks = sorted(w for w in counts if not w[0].isalnum())
        return vocabulary_by_part_of_speech() | ({"punctuation": marks} if marks else {})
    if task in SYNTHETIC_TASKS:
        return {"symbols": sorted(counts)}
    return {"words": [w for w, _ in counts.most_common(MOST_FREQUENT)]} if counts else {}


VOCABULARY_FILE = "vocabulary.json"  # written beside the weights at export: regenerating the corpus is slow


def _stamp(meta: dict | None) -> dict:
    """What the stored vocabulary belongs to: the model's task and training seed (a folder copied into
    another run, or retrained on other data, must not reuse it)."""
    meta = meta or {}
    return {"task": meta.get("task"), "seed": meta.get("seed")}


def vocabulary_json(v: Vocabulary, meta: dict | None = None) -> dict:
    return {"for": _stamp(meta), "pieces": sorted(v.pieces), "words": sorted(v.words), "palette": v.palette,
            "examples": v.examples}


def saved_vocabulary(directory, meta: dict | None = None) -> Vocabulary | None:
    """The Vocabulary stored in a model folder for a model with this meta, or None when there is none,
    it is damaged, or it was written for another task or seed."""
    path = Path(directory) / VOCABULARY_FILE if directory is not None else None
    if path is None or not path.is_file():
        return None
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        if d.get("for") != _stamp(meta):
            return None
        palette = {str(k): [str(w) for w in v] for k, v in d["palette"].items()}
        return Vocabulary(found=True, pieces=frozenset(int(i) for i in d["pieces"]),
                          words=frozenset(str(w) for w in d["words"]), palette=palette,
                          examples=[str(e) for e in d["examples"]])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write_vocabulary(loaded, directory) -> Vocabulary:
    """Compute a model's Vocabulary from its training data and store it in `directory` (atomically)."""
    v = model_vocabulary(loaded, use_saved=False)
    if v.found:
        atomic_write_json(Path(directory) / VOCABULARY_FILE, vocabulary_json(v, loaded.meta))
    return v


def model_vocabulary(loaded, use_saved: bool = True) -> Vocabulary:
    """The Vocabulary of a LoadedModel: token ids and words its input side met in its train split,
    a palette, and (for an uploaded corpus) a few training inputs as examples. Read from the model
    folder's vocabulary.json when it has one (written at export), else computed from the training data."""
    saved = saved_vocabulary(loaded.path, loaded.meta) if use_saved else None
    if saved is not None:
        return saved
    pairs = training_pairs(loaded)
    tok = loaded.tokenizer
    if pairs is None or tok is None:
        return Vocabulary()
    side = input_side(loaded.config.architecture)
    texts = [pair[side] for pair in pairs]
    pieces: set[int] = set()
    for text in dict.fromkeys(texts):
        pieces.update(tok.encode(text))
    task = (loaded.meta or {}).get("task")
    return Vocabulary(found=True, pieces=frozenset(pieces), words=frozenset(w for s in texts for w in words(s)),
                      palette=palette_for(task, texts),
                      examples=list(dict.fromkeys(texts))[:EXAMPLES_FROM_CORPUS] if task not in TASKS else [])


if __name__ == "__main__":  # python -m model.data.vocabulary assets/models/en-ko: (re)write its vocabulary.json
    import sys

    from model.training.checkpoint import load_model_dir
    for folder in sys.argv[1:]:
        v = write_vocabulary(load_model_dir(folder), folder)
        print(folder, "pieces", len(v.pieces), "words", len(v.words), "found", v.found)
