"""The sentences of the corpus: every sentence of the original small grammar over the "core" words, generated in
full (core_sentences), and sentences drawn at random from the whole grammar with a fixed seed (sample_sentences)."""
from __future__ import annotations

import random
from typing import Iterator

from model.data.corpus.grammar import (
    Clause, Sentence, as_topic, clause_problem, describes, make_sentence, sentence_problem,
)
from model.data.corpus.lexicon import TENSES, check_lexicon, lexicon_or_default, verb_id

SAMPLE_SEED = 20240611  # the corpus is fixed: the same sentences on every machine


def _core(entries: list[dict]) -> list[dict]:
    return [e for e in entries if e.get("core")]


def core_sentences(lexicon: dict | None = None) -> Iterator[Sentence]:
    """Every sentence of the original grammar over the core words, in the original order:
    subject, verb (transitive, then motion), object or place, adjective (none first),
    tense (present, past), polarity (affirmative first), time (none first).

        transitive:  SUBJECT VERB [ADJECTIVE] OBJECT [TIME] .     I drank hot coffee today.
        motion:      SUBJECT MOTION_VERB PLACE [TIME] .           She went to school yesterday.
    """
    lex = lexicon_or_default(lexicon)
    check_lexicon(lex)
    forms = [(tense, neg) for tense in TENSES for neg in (False, True)]
    times = _core(lex["time_adverbs"])

    def times_for(tense):
        return [None] + [t for t in times if tense in t["tenses"]]

    for subj in _core(lex["subjects"]):
        for verb in _core(lex["verbs"]):
            for obj in _core(lex["objects"]):
                if verb_id(verb) not in obj["verbs"]:
                    continue
                for adj in [None] + [a for a in _core(lex["adjectives"]) if describes(a, obj)]:
                    for tense, neg in forms:
                        for time in times_for(tense):
                            c = Clause("transitive", subj, verb, neg, obj=obj, adjective=adj, time=time)
                            yield make_sentence(lex, (c,), tense, core=True)
        for verb in _core(lex["motion_verbs"]):
            for place in _core(lex["places"]):
                for tense, neg in forms:
                    for time in times_for(tense):
                        c = Clause("motion", subj, verb, neg, place=place, time=time)
                        yield make_sentence(lex, (c,), tense, core=True)


class Sampler:
    """Draws random clauses and sentences of the whole grammar (every draw is allowed by
    clause_problem / sentence_problem)."""
    P_QUESTION, P_CONJUNCTION = 0.2, 0.12
    JOINED = 0.5  # a clause of a two-clause sentence takes each optional part half as often
    KINDS = (("transitive", 0.55), ("motion", 0.15), ("adjective", 0.30))

    def __init__(self, lex: dict, rng: random.Random):
        self.lex, self.rng = lex, rng
        self.objects_of = {verb_id(v): [o for o in lex["objects"] if verb_id(v) in o["verbs"]] for v in lex["verbs"]}
        self.transitive = [v for v in lex["verbs"] if self.objects_of[verb_id(v)]]
        self.predicative = [a for a in lex["adjectives"] if "ko_stem" in a]
        self.topics = [t for t in (as_topic(o) for o in lex["objects"]) if any(describes(a, t) for a in self.predicative)]
        self.times = {tense: [t for t in lex["time_adverbs"] if tense in t["tenses"]] for tense in TENSES}
        self._adjectives = {}

    def adjectives(self, noun: dict, predicative: bool = False) -> list[dict]:
        """The adjectives that may describe this noun (only those with a predicate form if asked)."""
        key = (noun["en"], noun["class"], noun.get("topic_of"), predicative)
        if key not in self._adjectives:
            pool = self.predicative if predicative else self.lex["adjectives"]
            self._adjectives[key] = [a for a in pool if describes(a, noun)]
        return self._adjectives[key]

    def maybe(self, p: float, options: list):
        return self.rng.choice(options) if options and self.rng.random() < p else None

    def subject_adjective(self, subject: dict, not_this: dict | None = None, scale: float = 1.0):
        if not subject["en"].startswith("the "):
            return None
        return self.maybe(0.12 * scale, [a for a in self.adjectives(subject) if a is not not_this])

    def time(self, tense: str, p: float):
        return self.maybe(p, self.times[tense])

    def clause(self, tense: str, question: bool, subject: dict | None = None, kind: str | None = None,
               scale: float = 1.0) -> Clause:
        """A random clause; `scale` multiplies the chance of each optional part (time, adjectives,
        number, location)."""
        rng, lex = self.rng, self.lex
        kind = kind or rng.choices([k for k, _ in self.KINDS], [w for _, w in self.KINDS])[0]
        negated = not question and rng.random() < 0.35
        p_time = 0.5 * scale
        while True:
            if kind == "adjective":
                subj = subject or (rng.choice(lex["subjects"]) if rng.random() < 0.5 else rng.choice(self.topics))
                adjs = self.adjectives(subj, predicative=True)
                if not adjs:
                    kind = kind if subject is None else "transitive"  # no adjective fits the given subject
                    continue
                adj = rng.choice(adjs)
                c = Clause("adjective", subj, adjective=adj, negated=negated, time=self.time(tense, p_time),
                           subject_adjective=self.subject_adjective(subj, adj, scale))
            elif kind == "motion":
                subj = subject or rng.choice(lex["subjects"])
                c = Clause("motion", subj, rng.choice(lex["motion_verbs"]), negated,
                           place=rng.choice(lex["places"]), time=self.time(tense, p_time),
                           subject_adjective=self.subject_adjective(subj, scale=scale))
            else:
                subj = subject or rng.choice(lex["subjects"])
                verb = rng.choice(self.transitive)
                obj = rng.choice(self.objects_of[verb_id(verb)])
                adj = None if obj["en"].startswith("my ") else self.maybe(0.3 * scale, self.adjectives(obj))
                number = None
                if "counter" in obj and not verb.get("no_number"):
                    number = self.maybe(0.2 * scale, lex["numbers"])
                location = None if verb.get("no_place") else self.maybe(0.2 * scale, lex["locations"])
                c = Clause("transitive", subj, verb, negated, obj=obj, adjective=adj, number=number, location=location,
                           time=self.time(tense, p_time), subject_adjective=self.subject_adjective(subj, scale=scale))
            if clause_problem(lex, c, tense, question) is None:
                return c

    def sentence(self) -> Sentence:
        rng, lex = self.rng, self.lex
        tense = rng.choice(TENSES)
        r = rng.random()
        if r < self.P_CONJUNCTION:
            conj = rng.choice(lex["conjunctions"])["en"]
            while True:
                first = self.clause(tense, False, scale=self.JOINED)
                if first.kind != "adjective" and rng.random() < 0.4:  # the same subject does two things
                    second = self.clause(tense, False, subject=first.subject, kind=rng.choice(("transitive", "motion")),
                                         scale=self.JOINED)
                    second = Clause(**{**second.__dict__, "subject_adjective": first.subject_adjective})
                else:
                    second = self.clause(tense, False, scale=self.JOINED)
                s = make_sentence(lex, (first, second), tense, conjunction=conj)
                if sentence_problem(lex, s) is None:
                    return s
        question = r < self.P_CONJUNCTION + self.P_QUESTION
        return make_sentence(lex, (self.clause(tense, question),), tense, "question" if question else "statement")


def sample_sentences(n: int, seed: int = SAMPLE_SEED, lexicon: dict | None = None,
                     exclude: set[str] = frozenset()) -> list[Sentence]:
    """n different sentences drawn at random from the whole grammar (fixed seed), none in `exclude`."""
    lex = lexicon_or_default(lexicon)
    sampler = Sampler(lex, random.Random(seed))
    seen, out = set(exclude), []
    while len(out) < n:
        s = sampler.sentence()
        if s.en not in seen:
            seen.add(s.en)
            out.append(s)
    return out
