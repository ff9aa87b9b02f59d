"""The English -> Korean teaching corpus, the synthetic tasks, and user TSV corpora.

The corpus is generated, not downloaded, from the grammar in docs/corpus-grammar.md and the
vocabulary in assets/en_ko_lexicon.json. Every English sentence the grammar allows has exactly
one Korean translation. Clauses:

    transitive:  SUBJECT VERB [ADJ] OBJECT [LOCATION] [TIME]     I drank hot coffee in the park today.
    motion:      SUBJECT MOTION_VERB PLACE [TIME]                She went to school yesterday.
    adjective:   SUBJECT be [not] ADJECTIVE [TIME]               The sky is blue.

A sentence is one clause (a statement "." or a yes/no question "?"), or two statements joined
by "and" / ", but". Objects may carry a number with its counter (three apples -> 사과 세 개).
Korean is subject-object-verb: 나는 오늘 공원에서 뜨거운 커피를 마셨다.

The corpus is every sentence of the original small grammar (the "core" words, generated in
full) plus a fixed-seed sample of the whole grammar; grammar_translation() gives the Korean for
any sentence the grammar allows, sampled or not.
"""
from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from model.messages import UserError

ASSETS = Path(__file__).resolve().parents[2] / "assets"
LEXICON_PATH = ASSETS / "en_ko_lexicon.json"

TENSES = ("present", "past")
TASKS = ("copy", "reverse", "sort", "en-ko", "lm")
SYNTHETIC_TASKS = ("copy", "reverse", "sort")
ALPHABET = "abcdefghijklmnopqrstuvwxyz"[:10]  # default symbols of the synthetic tasks
SYNTHETIC_SIZES = {"train": 20000, "valid": 500, "test": 500}
SPLIT_FRACTIONS = {"valid": 0.05, "test": 0.10}  # a user's corpus; the rest (85%) is train
GRAMMAR_SPLIT_FRACTIONS = {"valid": 0.02, "test": 0.03}  # the en-ko corpus is large: a test split beam search scores in minutes
N_HELD_OUT = 8  # (subject, verb) combinations seen only in the test split
SAMPLE_SIZE = 60000  # sentences drawn from the whole grammar, on top of the core sentences
SAMPLE_SEED = 20240611  # the corpus is fixed: the same sentences on every machine


# -----------------------------------------------------------------------------
# the lexicon

def load_lexicon(path: str | os.PathLike = LEXICON_PATH) -> dict:
    """Read the lexicon JSON: subjects, objects, adjectives, verbs, motion_verbs, places, locations,
    time_adverbs, numbers, counters, conjunctions (see docs/corpus-grammar.md)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=None)
def _default_lexicon() -> dict:
    return load_lexicon()


def _lex(lexicon: dict | None) -> dict:
    return _default_lexicon() if lexicon is None else lexicon


def verb_id(verb: dict) -> str:
    """A verb's key: its English base form, or "play (sport)" where one English verb has two Korean verbs."""
    return verb.get("id", verb["en"])


def _check_lexicon(lex: dict) -> None:
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


# -----------------------------------------------------------------------------
# Korean: particles by final consonant, verb and adjective endings

def has_final_consonant(word: str) -> bool:
    """True if the last Hangul syllable of `word` ends in a consonant (받침): 책 yes, 사과 no."""
    ch = word[-1]
    return "가" <= ch <= "힣" and (ord(ch) - 0xAC00) % 28 != 0


def with_particle(word: str, particle: str) -> str:
    """Attach a particle chosen by the final consonant: "은/는", "이/가", "을/를" (은, 이, 을 after a
    consonant), or a fixed one ("에", "에서"): with_particle("책", "을/를") == "책을"."""
    if "/" not in particle:
        return word + particle
    after_consonant, after_vowel = particle.split("/")
    return word + (after_consonant if has_final_consonant(word) else after_vowel)


def _drop_final_l(stem: str) -> str:
    """ㄹ drops before 니: 만들 -> 만드, 팔 -> 파, 길 -> 기 (other stems unchanged)."""
    ch = stem[-1]
    if "가" <= ch <= "힣" and (ord(ch) - 0xAC00) % 28 == 8:  # final ㄹ
        return stem[:-1] + chr(ord(ch) - 8)
    return stem


def _ko_predicate(entry: dict, tense: str, negated: bool, ending: str, adjective: bool) -> str:
    """The Korean verb or adjective at the end of a clause.

    ending "." (statement), "?" (yes/no question, never negated), or a connective "고" / "지만"."""
    stem = entry["ko_stem"]
    past_stem = entry["ko_past"][:-1]  # 먹었다 -> 먹었
    if ending == ".":
        if negated:
            return stem + ("지 않다" if adjective else "지 않는다") if tense == "present" else stem + "지 않았다"
        if adjective:
            return stem + "다" if tense == "present" else entry["ko_past"]
        return entry["ko_present"] if tense == "present" else entry["ko_past"]
    if ending == "?":
        return _drop_final_l(stem) + "니" if tense == "present" else past_stem + "니"
    if negated:
        return stem + ("지 않" if tense == "present" else "지 않았") + ending
    return (stem if tense == "present" else past_stem) + ending


# -----------------------------------------------------------------------------
# English

def _en_verb(verb: dict, tense: str, negated: bool, third_singular: bool) -> str:
    if tense == "present" and not negated:
        return verb["en_3sg"] if third_singular else verb["en"]
    if tense == "past" and not negated:
        return verb["en_past"]
    aux = "did" if tense == "past" else ("does" if third_singular else "do")
    return f"{aux} not {verb['en']}"  # "listen to" keeps its "to": "does not listen to"


def _en_be(subject_en: str, third_singular: bool, tense: str) -> str:
    if tense == "past":
        return "was" if third_singular or subject_en == "I" else "were"
    return "am" if subject_en == "I" else ("is" if third_singular else "are")


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


# -----------------------------------------------------------------------------
# clauses and sentences

@dataclass(frozen=True)
class Clause:
    """One clause's choices. kind: "transitive" (verb + obj), "motion" (verb + place) or "adjective"
    (subject + be + predicate adjective). The dicts are lexicon entries."""
    kind: str
    subject: dict                       # a subject, or for "adjective" also an object used as topic
    verb: dict | None = None            # a verb or motion verb (None for "adjective")
    negated: bool = False
    obj: dict | None = None
    adjective: dict | None = None       # on the object, or the predicate adjective
    number: dict | None = None          # counts the object: "three apples" -> 사과 세 개
    place: dict | None = None           # where a motion verb goes: "to school" -> 학교에
    location: dict | None = None        # where the action happens: "in the park" -> 공원에서
    time: dict | None = None
    subject_adjective: dict | None = None  # "the small cat" -> 작은 고양이

    @property
    def verb_key(self) -> str:
        return "be" if self.verb is None else verb_id(self.verb)


@dataclass(frozen=True)
class Sentence:
    """One generated sentence pair, with the choices that built it (the first clause's, for a
    sentence of two clauses)."""
    clauses: tuple[Clause, ...]
    tense: str
    mood: str                 # "statement" or "question"
    conjunction: str | None   # None, "and" or "but"
    en: str
    ko: str
    core: bool = field(default=False, compare=False)  # from the original grammar's full enumeration

    @property
    def subject(self) -> str:   # English subject as in the lexicon, e.g. "the teacher"
        return self.clauses[0].subject["en"]

    @property
    def verb(self) -> str:      # verb key, e.g. "listen to", "play (sport)"; "be" for an adjective clause
        return self.clauses[0].verb_key

    @property
    def negated(self) -> bool:
        return self.clauses[0].negated

    def _first_en(self, name: str) -> str | None:
        entry = getattr(self.clauses[0], name)
        return entry["en"] if entry else None

    # the first clause's choices in English, e.g. "red", "an apple", "to school", "yesterday" (or None)
    adjective = property(lambda self: self._first_en("adjective"))
    obj = property(lambda self: self._first_en("obj"))
    place = property(lambda self: self._first_en("place"))
    time = property(lambda self: self._first_en("time"))

    @property
    def pattern(self) -> str:
        return self.clauses[0].kind

    @property
    def combinations(self) -> set[tuple[str, str]]:
        """Every (subject, verb) pair of the sentence; a second clause without its own subject
        shares the first clause's."""
        return {(c.subject["en"], c.verb_key) for c in self.clauses}


def _topic(obj: dict) -> dict:
    """An object as the subject of an adjective clause: "an apple" -> "the apple" (사과는);
    "the sky", and abstract nouns ("music", "Korean") stay as they are."""
    en = obj["en"]
    first, _, rest = en.partition(" ")
    if first in ("a", "an"):
        en = "the " + rest
    elif first != "the" and not obj.get("abstract") and en not in ("my friend", "my mother", "my grandmother"):
        en = "the " + en
    return {"en": en, "ko": obj["ko"], "third_singular": not obj.get("plural", False), "class": obj["class"],
            "topic_of": obj["en"]}


def _counter(lex: dict, ko: str) -> dict:
    return next(c for c in lex["counters"] if c["ko"] == ko)


def _describes(adj: dict, noun: dict) -> bool:
    """May this adjective describe this noun (a subject or object entry, or a topic made from one)?"""
    return noun["class"] in adj["classes"] or noun.get("topic_of", noun["en"]) in adj["nouns"] \
        or noun["en"] in adj["nouns"]


def _en_object(lex: dict, c: Clause) -> str:
    obj, adj = c.obj, c.adjective["en"] if c.adjective else None
    if c.number is None:
        return _en_with_adjective(obj["en"], adj)
    many = c.number["value"] > 1
    counter = _counter(lex, obj["counter"])
    noun = obj["many"] if many else obj["one"]
    noun = f"{adj} {noun}" if adj else noun
    unit = counter.get("en_many" if many else "en_one")
    return f"{c.number['en']} {unit} {noun}" if unit else f"{c.number['en']} {noun}"


def _ko_object(c: Clause) -> str:
    words = ([c.adjective["ko"]] if c.adjective else []) + [c.obj["ko"]]
    if c.number is not None:
        words += [c.number["ko"], c.obj["counter"]]
    return with_particle(" ".join(words), "을/를")


def _en_subject(c: Clause) -> str:
    return _en_with_adjective(c.subject["en"], c.subject_adjective["en"] if c.subject_adjective else None)


def _en_clause(lex: dict, c: Clause, tense: str, question: bool, with_subject: bool = True) -> str:
    """The English clause, without the final punctuation."""
    subj = _en_subject(c)
    ts = c.subject["third_singular"]
    tail = []
    if c.kind == "adjective":
        be = _en_be(c.subject["en"], ts, tense)
        head = [be, subj] if question else ([subj] if with_subject else []) + [be] + (["not"] if c.negated else [])
        tail.append(c.adjective["en"])
    else:
        if question:
            aux = "did" if tense == "past" else ("does" if ts else "do")
            head = [aux, subj, c.verb["en"]]
        else:
            head = ([subj] if with_subject else []) + [_en_verb(c.verb, tense, c.negated, ts)]
        tail.append(_en_object(lex, c) if c.kind == "transitive" else c.place["en"])
        if c.location:
            tail.append(c.location["en"])
    if c.time:
        tail.append(c.time["en"])
    return " ".join(head + tail)


def _ko_clause(c: Clause, tense: str, ending: str, with_subject: bool = True) -> str:
    """The Korean clause, ending in its verb or adjective (ending: ".", "?", "고", "지만")."""
    words = []
    if with_subject:
        subj = ([c.subject_adjective["ko"]] if c.subject_adjective else []) + [c.subject["ko"]]
        words.append(with_particle(" ".join(subj), "은/는"))
    if c.time:
        words.append(c.time["ko"])
    if c.location:
        words.append(with_particle(c.location["ko"], "에서"))
    if c.kind == "transitive":
        words.append(_ko_object(c))
    elif c.kind == "motion":
        words.append(with_particle(c.place["ko"], "에"))
    pred = c.adjective if c.kind == "adjective" else c.verb
    words.append(_ko_predicate(pred, tense, c.negated, ending, adjective=c.kind == "adjective"))
    return " ".join(words)


def make_sentence(lex: dict, clauses: tuple[Clause, ...], tense: str, mood: str = "statement",
                  conjunction: str | None = None, core: bool = False) -> Sentence:
    """Render the choices as an English and a Korean sentence."""
    if conjunction is None:
        (c,) = clauses
        question = mood == "question"
        en = _en_clause(lex, c, tense, question)
        ko = _ko_clause(c, tense, "?" if question else ".")
        end = "?" if question else "."
    else:
        first, second = clauses
        conj = next(k for k in lex["conjunctions"] if k["en"] == conjunction)
        shared = first.subject["en"] == second.subject["en"]  # the second clause drops its subject
        join = (", " if conj["comma"] else " ") + conj["en"] + " "
        en = _en_clause(lex, first, tense, False) + join + _en_clause(lex, second, tense, False, not shared)
        ko = _ko_clause(first, tense, conj["ko"]) + " " + _ko_clause(second, tense, ".", not shared)
        end = "."
    return Sentence(clauses=clauses, tense=tense, mood=mood, conjunction=conjunction,
                    en=_capitalise(en) + end, ko=ko + end, core=core)


# -----------------------------------------------------------------------------
# which choices the grammar allows

def clause_problem(lex: dict, c: Clause, tense: str, question: bool = False) -> str | None:
    """Why the grammar does not allow this clause, or None."""
    if c.time is not None and tense not in c.time["tenses"]:
        return "time does not fit the tense"
    if question and (c.negated or c.subject["en"] == "I"):
        return "questions are affirmative and not about 'I'"
    if c.subject_adjective is not None:
        if not c.subject["en"].startswith("the ") or not _describes(c.subject_adjective, c.subject):
            return "adjective does not fit the subject"
        if c.kind == "adjective" and c.subject_adjective is c.adjective:
            return "same adjective twice"
    if c.kind == "adjective":
        if c.adjective is None or "ko_stem" not in c.adjective or not _describes(c.adjective, c.subject):
            return "adjective cannot be said of the subject"
        return None if c.verb is None and c.obj is None and c.place is None and c.location is None \
            and c.number is None else "an adjective clause has no verb, object or place"
    if c.verb is None:
        return "no verb"
    if "topic_of" in c.subject:
        return "only a subject of the lexicon does things"
    if c.kind == "motion":
        return None if c.place and c.obj is None and c.adjective is None and c.number is None \
            and c.location is None else "a motion clause has a place and nothing else"
    if c.obj is None or c.place is not None or verb_id(c.verb) not in c.obj["verbs"]:
        return "verb does not take this object"
    if c.obj["ko"] == c.subject["ko"]:
        return "subject and object are the same"
    if c.adjective is not None and (c.obj["en"].startswith("my ") or not _describes(c.adjective, c.obj)):
        return "adjective does not fit the object"
    if c.number is not None and ("counter" not in c.obj or c.verb.get("no_number")):
        return "object cannot be counted here"
    if c.location is not None and c.verb.get("no_place"):
        return "verb takes no place phrase"
    return None


def sentence_problem(lex: dict, s: Sentence) -> str | None:
    """Why the grammar does not allow this sentence, or None."""
    question = s.mood == "question"
    if s.conjunction is None and len(s.clauses) != 1:
        return "one clause without a conjunction"
    if s.conjunction is not None:
        if question or len(s.clauses) != 2:
            return "a conjunction joins two statements"
        first, second = s.clauses
        if first.subject["en"] == second.subject["en"] and "adjective" in (first.kind, second.kind):
            return "a shared subject needs two verb clauses"
    for c in s.clauses:
        problem = clause_problem(lex, c, s.tense, question)
        if problem:
            return problem
    return None


# -----------------------------------------------------------------------------
# the corpus: the core grammar in full, plus a fixed sample of the whole grammar

def _core(entries: list[dict]) -> list[dict]:
    return [e for e in entries if e.get("core")]


def core_sentences(lexicon: dict | None = None) -> Iterator[Sentence]:
    """Every sentence of the original grammar over the core words, in the original order:
    subject, verb (transitive, then motion), object or place, adjective (none first),
    tense (present, past), polarity (affirmative first), time (none first).

        transitive:  SUBJECT VERB [ADJECTIVE] OBJECT [TIME] .     I drank hot coffee today.
        motion:      SUBJECT MOTION_VERB PLACE [TIME] .           She went to school yesterday.
    """
    lex = _lex(lexicon)
    _check_lexicon(lex)
    forms = [(tense, neg) for tense in TENSES for neg in (False, True)]
    times = _core(lex["time_adverbs"])

    def times_for(tense):
        return [None] + [t for t in times if tense in t["tenses"]]

    for subj in _core(lex["subjects"]):
        for verb in _core(lex["verbs"]):
            for obj in _core(lex["objects"]):
                if verb_id(verb) not in obj["verbs"]:
                    continue
                for adj in [None] + [a for a in _core(lex["adjectives"]) if _describes(a, obj)]:
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


class _Sampler:
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
        self.topics = [t for t in (_topic(o) for o in lex["objects"]) if any(_describes(a, t) for a in self.predicative)]
        self.times = {tense: [t for t in lex["time_adverbs"] if tense in t["tenses"]] for tense in TENSES}
        self._adjectives = {}

    def adjectives(self, noun: dict, predicative: bool = False) -> list[dict]:
        """The adjectives that may describe this noun (only those with a predicate form if asked)."""
        key = (noun["en"], noun["class"], noun.get("topic_of"), predicative)
        if key not in self._adjectives:
            pool = self.predicative if predicative else self.lex["adjectives"]
            self._adjectives[key] = [a for a in pool if _describes(a, noun)]
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
    lex = _lex(lexicon)
    sampler = _Sampler(lex, random.Random(seed))
    seen, out = set(exclude), []
    while len(out) < n:
        s = sampler.sentence()
        if s.en not in seen:
            seen.add(s.en)
            out.append(s)
    return out


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
    result is also kept as a JSON file named by a hash of this generator's source and the lexicon
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


def corpus_cache_path(sample_size: int = SAMPLE_SIZE) -> Path:
    """<cache>/en-ko-<hash>.json (cache_dir)."""
    import hashlib
    digest = hashlib.sha256(Path(__file__).read_bytes() + LEXICON_PATH.read_bytes()
                            + str(sample_size).encode()).hexdigest()[:16]
    return cache_dir() / f"en-ko-{digest}.json"


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
# reading an English sentence back: the grammar's own translation of any sentence it allows

def _words(text: str) -> tuple[str, ...]:
    return tuple(text.lower().replace(",", " , ").split())


class _Reader:
    """Tables from English phrases (as word tuples) to the choices that may have produced them.
    A reading is accepted only if rendering it gives back exactly the words read."""

    def __init__(self, lex: dict):
        self.lex = lex
        add = lambda table, key, value: table.setdefault(_words(key), []).append(value)
        self.subjects, self.objects, self.verbs, self.bases, self.be = {}, {}, {}, {}, {}
        self.places, self.locations, self.times = {}, {}, {}
        sampler = _Sampler(lex, random.Random(0))
        nouns = list(lex["subjects"]) + sampler.topics
        for n in nouns:
            add(self.subjects, n["en"], (n, None))
            if n["en"].startswith("the "):
                for a in sampler.adjectives(n):
                    add(self.subjects, _en_with_adjective(n["en"], a["en"]), (n, a))
        for o in lex["objects"]:
            adjs = [None] + ([] if o["en"].startswith("my ") else sampler.adjectives(o))
            for a in adjs:
                for num in [None] + (lex["numbers"] if "counter" in o else []):
                    c = Clause("transitive", lex["subjects"][0], obj=o, adjective=a, number=num)
                    add(self.objects, _en_object(lex, c), (o, a, num))
        for v in lex["verbs"] + lex["motion_verbs"]:
            add(self.bases, v["en"], v)
            for tense in TENSES:
                for neg in (False, True):
                    for ts in (False, True):
                        add(self.verbs, _en_verb(v, tense, neg, ts), (v, tense, neg))
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
def _default_reader() -> _Reader:
    return _Reader(_default_lexicon())


def parse_sentence(text: str, lexicon: dict | None = None) -> Sentence | None:
    """The grammar's reading of an English sentence, or None if the grammar does not allow it.
    Case and spacing are free ("i  go to school." reads as "I go to school."); the sentence must
    end in "." (a statement, or two joined by "and" / ", but") or "?" (a yes/no question)."""
    return next(readings(text, lexicon), None)


def readings(text: str, lexicon: dict | None = None) -> Iterator[Sentence]:
    """Every way the grammar can build this English sentence (see parse_sentence). The grammar
    is exact: all of them have the same Korean."""
    lex = _lex(lexicon)
    reader = _default_reader() if lexicon is None else _Reader(lex)
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


# -----------------------------------------------------------------------------
# the vocabulary, for a page that names unknown words or offers a word palette

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
    lex = _lex(lexicon)
    vocab = {pos: list(dict.fromkeys(e["en"] for e in lex[section]))
             for section, pos in PARTS_OF_SPEECH.items() if section in lex}
    vocab["function"] = list(FUNCTION_WORDS)
    return vocab


def known_words(lexicon: dict | None = None) -> frozenset[str]:
    """Every English word form (lowercase) and punctuation mark the grammar can produce: all
    inflections of the verbs, plurals of countable nouns, "cups of", the articles the adjectives
    need, "the" before a noun used as a subject, do/does/did/not, am/is/are/was/were, ". ? ,"."""
    lex = _lex(lexicon)
    phrases = [e["en"] for section in PARTS_OF_SPEECH if section in lex for e in lex[section]]
    for verb in lex["verbs"] + lex["motion_verbs"]:
        phrases += [verb["en_3sg"], verb["en_past"]]
    for obj in lex["objects"]:
        phrases += [obj.get("one", ""), obj.get("many", "")]
    for counter in lex["counters"]:
        phrases += [counter.get("en_one", ""), counter.get("en_many", "")]
    words = {w for p in phrases for w in split_english(p)}
    return frozenset(words | set(FUNCTION_WORDS) | set(PUNCTUATION))


# -----------------------------------------------------------------------------
# train / valid / test split

def held_out_combinations(seed: int = 0, lexicon: dict | None = None) -> list[tuple[str, str]]:
    """The (subject_en, verb key) combinations that appear only in the test split.

    N_HELD_OUT combinations with all-different subjects and all-different verbs, so every
    subject and every verb is still seen in training, just never together.
    """
    lex = _lex(lexicon)
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
