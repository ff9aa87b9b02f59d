"""The grammar's vocabulary, for a page that names unknown words or offers a word palette: the lexicon's
entries by part of speech, and every English word form the grammar can produce."""
from __future__ import annotations

import re

from model.data.corpus.lexicon import lexicon_or_default

# lexicon section -> part of speech, in the order the palette shows them
PARTS_OF_SPEECH = {"subjects": "subject", "objects": "object", "adjectives": "adjective", "verbs": "verb",
                   "motion_verbs": "motion_verb", "places": "place", "locations": "location",
                   "time_adverbs": "time", "numbers": "number", "conjunctions": "conjunction"}
# what the rules add around the lexicon's words
FUNCTION_WORDS = ("a", "an", "the", "do", "does", "did", "not", "am", "is", "are", "was", "were")
PUNCTUATION = (".", "?", ",")
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|[0-9]+|[^\sA-Za-z0-9]")


def split_english(text: str) -> list[str]:
    """The word forms of an English text as known_words() spells them: lowercase words and single
    punctuation marks. "She drank water." -> ["she", "drank", "water", "."]"""
    return [w.lower() for w in _WORD.findall(text)]


def vocabulary_by_part_of_speech(lexicon: dict | None = None) -> dict[str, list[str]]:
    """{part of speech: the lexicon's English entries}, in lexicon order without repeats, parts in
    PARTS_OF_SPEECH order, plus "function" (FUNCTION_WORDS). Entries are base forms and may be
    phrases ("the teacher", "listen to", "in the park"); every word of them is in known_words()."""
    lex = lexicon_or_default(lexicon)
    vocab = {pos: list(dict.fromkeys(e["en"] for e in lex[section]))
             for section, pos in PARTS_OF_SPEECH.items() if section in lex}
    vocab["function"] = list(FUNCTION_WORDS)
    return vocab


def known_words(lexicon: dict | None = None) -> frozenset[str]:
    """Every English word form (lowercase) and punctuation mark the grammar can produce: all
    inflections of the verbs, plurals of countable nouns, "cups of", the articles the adjectives
    need, "the" before a noun used as a subject, do/does/did/not, am/is/are/was/were, ". ? ,"."""
    lex = lexicon_or_default(lexicon)
    phrases = [e["en"] for section in PARTS_OF_SPEECH if section in lex for e in lex[section]]
    for verb in lex["verbs"] + lex["motion_verbs"]:
        phrases += [verb["en_3sg"], verb["en_past"]]
    for obj in lex["objects"]:
        phrases += [obj.get("one", ""), obj.get("many", "")]
    for counter in lex["counters"]:
        phrases += [counter.get("en_one", ""), counter.get("en_many", "")]
    words = {w for p in phrases for w in split_english(p)}
    return frozenset(words | set(FUNCTION_WORDS) | set(PUNCTUATION))
