"""The grammar of the en-ko teaching corpus: the choices of a clause (Clause), how they read in English and in
Korean (make_sentence), and which choices the grammar allows (clause_problem, sentence_problem).
Every English sentence the grammar allows has exactly one Korean translation. Clauses:

    transitive:  SUBJECT VERB [ADJ] OBJECT [LOCATION] [TIME]     I drank hot coffee in the park today.
    motion:      SUBJECT MOTION_VERB PLACE [TIME]                She went to school yesterday.
    adjective:   SUBJECT be [not] ADJECTIVE [TIME]               The sky is blue.

A sentence is one clause (a statement "." or a yes/no question "?"), or two statements joined
by "and" / ", but". Objects may carry a number with its counter (three apples -> 사과 세 개).
Korean is subject-object-verb: 나는 오늘 공원에서 뜨거운 커피를 마셨다.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from model.data.corpus.lexicon import verb_id


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

def en_verb(verb: dict, tense: str, negated: bool, third_singular: bool) -> str:
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


def en_with_adjective(noun: str, adjective: str | None) -> str:
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


def as_topic(obj: dict) -> dict:
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


def describes(adj: dict, noun: dict) -> bool:
    """May this adjective describe this noun (a subject or object entry, or a topic made from one)?"""
    return noun["class"] in adj["classes"] or noun.get("topic_of", noun["en"]) in adj["nouns"] \
        or noun["en"] in adj["nouns"]


def en_object(lex: dict, c: Clause) -> str:
    obj, adj = c.obj, c.adjective["en"] if c.adjective else None
    if c.number is None:
        return en_with_adjective(obj["en"], adj)
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
    return en_with_adjective(c.subject["en"], c.subject_adjective["en"] if c.subject_adjective else None)


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
            head = ([subj] if with_subject else []) + [en_verb(c.verb, tense, c.negated, ts)]
        tail.append(en_object(lex, c) if c.kind == "transitive" else c.place["en"])
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
        if not c.subject["en"].startswith("the ") or not describes(c.subject_adjective, c.subject):
            return "adjective does not fit the subject"
        if c.kind == "adjective" and c.subject_adjective is c.adjective:
            return "same adjective twice"
    if c.kind == "adjective":
        if c.adjective is None or "ko_stem" not in c.adjective or not describes(c.adjective, c.subject):
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
    if c.adjective is not None and (c.obj["en"].startswith("my ") or not describes(c.adjective, c.obj)):
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
