"""The lexicon of the en-ko grammar (assets/en_ko_lexicon.json): its words and what each may combine with
(see docs/corpus-grammar.md). Every function of the corpus that takes `lexicon=None` reads this default one."""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[3] / "assets"
LEXICON_PATH = ASSETS / "en_ko_lexicon.json"

TENSES = ("present", "past")


def load_lexicon(path: str | os.PathLike = LEXICON_PATH) -> dict:
    """Read the lexicon JSON: subjects, objects, adjectives, verbs, motion_verbs, places, locations,
    time_adverbs, numbers, counters, conjunctions (see docs/corpus-grammar.md)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=None)
def default_lexicon() -> dict:
    return load_lexicon()


def lexicon_or_default(lexicon: dict | None) -> dict:
    """The lexicon given, or the default one (read once)."""
    return default_lexicon() if lexicon is None else lexicon


def verb_id(verb: dict) -> str:
    """A verb's key: its English base form, or "play (sport)" where one English verb has two Korean verbs."""
    return verb.get("id", verb["en"])


def check_lexicon(lex: dict) -> None:
    """ValueError when an entry names a verb, noun, counter or tense the lexicon does not have."""
    verbs = {verb_id(v) for v in lex["verbs"]}
    nouns = {o["en"] for o in lex["objects"]} | {s["en"] for s in lex["subjects"]}
    counters = {c["ko"] for c in lex["counters"]}
    for o in lex["objects"]:
        for v in o["verbs"]:
            if v not in verbs:
                raise ValueError(f"object {o['en']!r} names unknown verb {v!r}")
        if "counter" in o and (o["counter"] not in counters or "one" not in o):
            raise ValueError(f"object {o['en']!r}: counter {o['counter']!r} unknown or no singular/plural forms")
    for a in lex["adjectives"]:
        for n in a["nouns"]:
            if n not in nouns:
                raise ValueError(f"adjective {a['en']!r} names unknown noun {n!r}")
    for t in lex["time_adverbs"]:
        for tense in t["tenses"]:
            if tense not in TENSES:
                raise ValueError(f"time adverb {t['en']!r} names unknown tense {tense!r}")
