"""Reading an English sentence back: the grammar's own reading of any sentence it allows (parse_sentence,
readings), and so its Korean translation (grammar_translation), sampled into the corpus or not."""
from __future__ import annotations

import random
from functools import lru_cache
from typing import Iterator

from model.data.corpus.grammar import (
    Clause, Sentence, en_object, en_verb, en_with_adjective, make_sentence, sentence_problem,
)
from model.data.corpus.lexicon import TENSES, default_lexicon, lexicon_or_default
from model.data.corpus.sampling import Sampler


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.lower().replace(",", " , ").split())


class Reader:
    """Tables from English phrases (as word tuples) to the choices that may have produced them.
    A reading is accepted only if rendering it gives back exactly the words read."""

    def __init__(self, lex: dict):
        self.lex = lex
        add = lambda table, key, value: table.setdefault(_words(key), []).append(value)
        self.subjects, self.objects, self.verbs, self.bases, self.be = {}, {}, {}, {}, {}
        self.places, self.locations, self.times = {}, {}, {}
        sampler = Sampler(lex, random.Random(0))
        nouns = list(lex["subjects"]) + sampler.topics
        for n in nouns:
            add(self.subjects, n["en"], (n, None))
            if n["en"].startswith("the "):
                for a in sampler.adjectives(n):
                    add(self.subjects, en_with_adjective(n["en"], a["en"]), (n, a))
        for o in lex["objects"]:
            adjs = [None] + ([] if o["en"].startswith("my ") else sampler.adjectives(o))
            for a in adjs:
                for num in [None] + (lex["numbers"] if "counter" in o else []):
                    c = Clause("transitive", lex["subjects"][0], obj=o, adjective=a, number=num)
                    add(self.objects, en_object(lex, c), (o, a, num))
        for v in lex["verbs"] + lex["motion_verbs"]:
            add(self.bases, v["en"], v)
            for tense in TENSES:
                for neg in (False, True):
                    for ts in (False, True):
                        add(self.verbs, en_verb(v, tense, neg, ts), (v, tense, neg))
        for tense in TENSES:
            for word in ("am", "is", "are", "was", "were"):
                if (word in ("was", "were")) == (tense == "past"):
                    for neg in (False, True):
                        add(self.be, word + (" not" if neg else ""), (tense, neg))
        for section, table in (("places", self.places), ("locations", self.locations), ("time_adverbs", self.times)):
            for e in lex[section]:
                add(table, e["en"], e)
        # a form several persons share ("ate", "did not eat") is one reading
        self.verbs = {k: list({(id(v), t, n): (v, t, n) for v, t, n in vals}.values()) for k, vals in self.verbs.items()}
        self.be = {k: list(dict.fromkeys(vals)) for k, vals in self.be.items()}

    @staticmethod
    def _splits(words, table, optional=True, suffix=True):
        """(rest, entry) for each way the words end (or begin) with a phrase of the table."""
        if optional:
            yield words, None
        for k in range(1, len(words) + 1):
            part = words[len(words) - k:] if suffix else words[:k]
            rest = words[:len(words) - k] if suffix else words[k:]
            for entry in table.get(part, ()):
                yield rest, entry

    def _rests(self, words, kind):
        """(obj-or-place, location, time) readings of what follows the verb."""
        for rest, time in self._splits(words, self.times):
            locs = self._splits(rest, self.locations) if kind == "transitive" else [(rest, None)]
            for core, loc in locs:
                table = self.objects if kind == "transitive" else self.places
                for entry in table.get(core, ()):
                    yield entry, loc, time

    def _verb_clauses(self, subj, sadj, verb, tense, neg, tail):
        kind = "motion" if verb in self.lex["motion_verbs"] else "transitive"
        for entry, loc, time in self._rests(tail, kind):
            if kind == "transitive":
                o, a, num = entry
                yield Clause(kind, subj, verb, neg, obj=o, adjective=a, number=num, location=loc, time=time,
                             subject_adjective=sadj), tense
            else:
                yield Clause(kind, subj, verb, neg, place=entry, time=time, subject_adjective=sadj), tense

    def _adjective_clauses(self, subj, sadj, tense, neg, tail):
        for rest, time in self._splits(tail, self.times):
            for a in self.lex["adjectives"]:
                if _words(a["en"]) == rest and "ko_stem" in a:  # "new" has no predicate form
                    yield Clause("adjective", subj, adjective=a, negated=neg, time=time, subject_adjective=sadj), tense

    def statements(self, words, subject=None):
        """Clause readings of a statement; with `subject` (a clause whose subject is shared) the
        words start at the verb."""
        heads = [((), (subject.subject, subject.subject_adjective))] if subject else \
            [(words[:i], s) for i in range(1, len(words)) for s in self.subjects.get(words[:i], ())]
        for head, (subj, sadj) in heads:
            after = words[len(head):]
            for j in range(1, len(after)):
                for verb, tense, neg in self.verbs.get(after[:j], ()):
                    yield from self._verb_clauses(subj, sadj, verb, tense, neg, after[j:])
                if subject is None:
                    for tense, neg in self.be.get(after[:j], ()):
                        yield from self._adjective_clauses(subj, sadj, tense, neg, after[j:])

    def questions(self, words):
        first, rest = words[0], words[1:]
        for i in range(1, len(rest)):
            for subj, sadj in self.subjects.get(rest[:i], ()):
                after = rest[i:]
                if first in ("do", "does", "did"):
                    tense = "past" if first == "did" else "present"
                    for j in range(1, len(after) + 1):
                        for verb in self.bases.get(after[:j], ()):
                            yield from self._verb_clauses(subj, sadj, verb, tense, False, after[j:])
                for tense, neg in self.be.get((first,), ()):
                    yield from self._adjective_clauses(subj, sadj, tense, False, after)


@lru_cache(maxsize=1)
def default_reader() -> Reader:
    return Reader(default_lexicon())


def parse_sentence(text: str, lexicon: dict | None = None) -> Sentence | None:
    """The grammar's reading of an English sentence, or None if the grammar does not allow it.
    Case and spacing are free ("i  go to school." reads as "I go to school."); the sentence must
    end in "." (a statement, or two joined by "and" / ", but") or "?" (a yes/no question)."""
    return next(readings(text, lexicon), None)


def readings(text: str, lexicon: dict | None = None) -> Iterator[Sentence]:
    """Every way the grammar can build this English sentence (see parse_sentence). The grammar
    is exact: all of them have the same Korean."""
    lex = lexicon_or_default(lexicon)
    reader = default_reader() if lexicon is None else Reader(lex)
    text = " ".join(text.split())
    if not text or text[-1] not in ".?" or not _words(text[:-1]):
        return
    words, question = _words(text[:-1]), text.endswith("?")
    candidates = []
    if question:
        candidates = [((c,), t, "question", None) for c, t in reader.questions(words)]
    else:
        candidates = [((c,), t, "statement", None) for c, t in reader.statements(words)]
        for i, w in enumerate(words):
            if w not in ("and", "but"):
                continue
            left, right = words[:i], words[i + 1:]
            if w == "but":
                if not left or left[-1] != ",":
                    continue
                left = left[:-1]
            for first, tense in reader.statements(left):
                seconds = list(reader.statements(right)) + list(reader.statements(right, subject=first))
                candidates += [((first, second), tense, "statement", w) for second, t2 in seconds if t2 == tense]
    target = _words(text)
    for clauses, tense, mood, conj in candidates:
        s = make_sentence(lex, clauses, tense, mood, conj)
        if _words(s.en) == target and sentence_problem(lex, s) is None:
            yield s


def grammar_translation(text: str, lexicon: dict | None = None) -> str | None:
    """The Korean the grammar gives an English sentence, or None if the grammar does not allow it:
    grammar_translation("The sky is blue.") == "하늘은 파랗다." """
    s = parse_sentence(text, lexicon)
    return None if s is None else s.ko
