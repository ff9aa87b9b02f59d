"""The en-ko grammar corpus, its split, the synthetic tasks and TSV validation."""
import re
from collections import Counter
from functools import lru_cache

import pytest

from app.i18n import say
from model.corpus import (ASSETS, N_HELD_OUT, generate_pairs, generate_sentences, held_out_combinations,
                          load_lexicon, read_tsv_corpus, split_pairs, synthetic_pairs, task_pairs)
from model.messages import Message, UserError

GRAMMAR_EXAMPLES = [
    ("I go to school.", "나는 학교에 간다."),
    ("We see the sky.", "우리는 하늘을 본다."),
    ("She drank cold water yesterday.", "그녀는 어제 차가운 물을 마셨다."),
    ("The teacher does not like the new movie.", "선생님은 새 영화를 좋아하지 않는다."),
    ("The children walk home every day.", "아이들은 매일 집에 걸어간다."),
    ("My friend did not buy a red apple.", "내 친구는 빨간 사과를 사지 않았다."),
]


@lru_cache(maxsize=None)
def pairs():
    return tuple(generate_pairs())


@lru_cache(maxsize=None)
def sentences():
    return tuple(generate_sentences())


@lru_cache(maxsize=None)
def en_to_ko():
    return dict(pairs())


def test_lexicon_asset_loads():
    lex = load_lexicon()
    assert (ASSETS / "en_ko_lexicon.json").is_file()
    assert {"subjects", "objects", "adjectives", "verbs", "motion_verbs", "places", "time_adverbs"} <= set(lex)


def test_count_and_deterministic_order():
    assert len(pairs()) == 11232
    assert generate_pairs() == list(pairs())


@pytest.mark.parametrize("en,ko", GRAMMAR_EXAMPLES)
def test_grammar_examples_generated_exactly(en, ko):
    assert en_to_ko()[en] == ko


def test_each_english_sentence_has_one_korean():
    counts = Counter(en for en, _ in pairs())
    assert max(counts.values()) == 1
    assert len(set(ko for _, ko in pairs())) == len(pairs())  # and the translation is one-to-one


def test_surface_form():
    for en, ko in pairs():
        assert en[0].isupper() and en.endswith(".") and not en.endswith(" .")
        assert ko.endswith(".") and "  " not in en and "  " not in ko
    assert "I see the sky." in en_to_ko()
    assert "You see the sky." in en_to_ko()


def test_third_singular_agreement():
    d = en_to_ko()
    assert "She drinks water." in d and "She drink water." not in d
    assert "I drink water." in d and "I drinks water." not in d
    assert "The children drink milk." in d and "The children drinks milk." not in d
    assert "The cat goes home." in d and "My mother comes to Seoul today." in d


def test_negation_forms():
    d = en_to_ko()
    assert d["She does not drink water."] == "그녀는 물을 마시지 않는다."
    assert d["We do not go to the park."] == "우리는 공원에 가지 않는다."
    assert d["He did not eat bread yesterday."] == "그는 어제 빵을 먹지 않았다."
    assert "She does not drinks water." not in d and "He did not ate bread." not in d
    for s in sentences():
        if s.negated:
            assert s.ko.endswith("지 않는다." if s.tense == "present" else "지 않았다.")
            assert (" did not " if s.tense == "past" else " not ") in s.en
        else:
            assert " not " not in s.en and "않" not in s.ko


def test_listen_to_keeps_to():
    listen = [s for s in sentences() if s.verb == "listen to"]
    assert listen and all(re.search(r"\b(listen|listens|listened) to music\b", s.en) for s in listen)
    d = en_to_ko()
    assert d["She does not listen to music."] == "그녀는 음악을 듣지 않는다."
    assert d["She listens to music."] == "그녀는 음악을 듣는다."
    assert d["I listened to music yesterday."] == "나는 어제 음악을 들었다."
    assert d["They did not listen to music today."] == "그들은 오늘 음악을 듣지 않았다."


def test_time_adverbs_follow_tense():
    for s in sentences():
        if s.tense == "present":
            assert "yesterday" not in s.en and "어제" not in s.ko
        else:
            assert "every day" not in s.en and "매일" not in s.ko
    assert "I ate bread today." in en_to_ko() and "I eat bread today." in en_to_ko()


def test_objects_and_adjectives_only_where_allowed():
    lex = load_lexicon()
    obj_verbs = {o["en"]: set(o["verbs"]) for o in lex["objects"]}
    adj_objs = {a["en"]: set(a["objects"]) for a in lex["adjectives"]}
    for s in sentences():
        if s.obj is not None:
            assert s.verb in obj_verbs[s.obj]
            assert s.place is None
        else:
            assert s.place is not None and s.adjective is None
        if s.adjective is not None:
            assert s.obj in adj_objs[s.adjective]
    d = en_to_ko()
    assert d["I eat a red apple."] == "나는 빨간 사과를 먹는다."
    assert "I eat an red apple." not in d and "I eat red an apple." not in d
    assert "I see the new movie." in d and "I drink hot coffee." in d
    assert "I eat a new apple." not in d and "I drink red water." not in d
    assert "I eat water." not in d and "I drink an apple." not in d


def test_korean_word_order():
    d = en_to_ko()
    assert d["I go to school every day."] == "나는 매일 학교에 간다."
    assert d["My mother made hot coffee today."] == "어머니는 오늘 뜨거운 커피를 만들었다."


# -----------------------------------------------------------------------------

def test_split_deterministic_disjoint_and_sized():
    a, b = split_pairs(list(pairs()), seed=0), split_pairs(list(pairs()), seed=0)
    assert a == b
    assert set(a) == {"train", "valid", "test"}
    sets = {k: set(v) for k, v in a.items()}
    assert not (sets["train"] & sets["valid"]) and not (sets["train"] & sets["test"])
    assert not (sets["valid"] & sets["test"])
    assert sets["train"] | sets["valid"] | sets["test"] == set(pairs())
    n = len(pairs())
    assert abs(len(a["test"]) / n - 0.10) < 0.01 and abs(len(a["valid"]) / n - 0.05) < 0.01
    assert split_pairs(list(pairs()), seed=1) != a


def test_held_out_combinations_only_in_test():
    held = held_out_combinations(0)
    assert len(held) == N_HELD_OUT == len(set(held))
    assert held == held_out_combinations(0)
    assert len({s for s, _ in held}) == len(held) and len({v for _, v in held}) == len(held)
    split = split_pairs(list(pairs()), seed=0)
    where = {en: k for k, v in split.items() for en, _ in v}
    for s in sentences():
        if (s.subject, s.verb) in set(held):
            assert where[s.en] == "test"
    # every held-out combination really is in test, and each word of test is seen in training
    test_combos = {(s.subject, s.verb) for s in sentences() if where[s.en] == "test"}
    assert set(held) <= test_combos
    train_words = {w for en, ko in split["train"] for w in (en + " " + ko).split()}
    test_words = {w for en, ko in split["test"] for w in (en + " " + ko).split()}
    assert test_words <= train_words


def test_split_of_unknown_pairs_is_random():
    user = [(f"s{i}", f"t{i}") for i in range(1000)]
    split = split_pairs(user, seed=3)
    assert sum(len(v) for v in split.values()) == 1000 and len(split["test"]) == 100


def test_task_pairs():
    enko = task_pairs("en-ko")
    assert enko == split_pairs(generate_pairs())
    lm = task_pairs("lm")
    assert len(lm["train"]) == 2 * len(enko["train"])
    assert all(src == tgt for src, tgt in lm["test"])
    with pytest.raises(ValueError):
        task_pairs("nope")


# -----------------------------------------------------------------------------

@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_synthetic_pairs(task):
    ps = synthetic_pairs(task, 300, seed=1, min_len=2, max_len=6, alphabet="abcde")
    assert ps == synthetic_pairs(task, 300, seed=1, min_len=2, max_len=6, alphabet="abcde")
    assert ps != synthetic_pairs(task, 300, seed=2, min_len=2, max_len=6, alphabet="abcde")
    for src, tgt in ps:
        s, t = src.split(" "), tgt.split(" ")
        assert 2 <= len(s) <= 6 and set(s) <= set("abcde")
        assert t == {"copy": s, "reverse": s[::-1], "sort": sorted(s)}[task]


def test_synthetic_task_splits():
    split = task_pairs("reverse", seed=0)
    assert [len(split[k]) for k in ("train", "valid", "test")] == [20000, 500, 500]
    train_src = {s for s, _ in split["train"]}
    held = [s for s, _ in split["valid"] + split["test"]]
    assert not train_src & set(held) and len(set(held)) == len(held)
    assert all(t == " ".join(s.split()[::-1]) for s, t in split["test"])
    with pytest.raises(ValueError):
        synthetic_pairs("shuffle", 5)


# -----------------------------------------------------------------------------

def test_tsv_good(tmp_path):
    text = "Hello.\t안녕하세요.\r\nI go.\t나는 간다.\n"
    assert read_tsv_corpus(text) == [("Hello.", "안녕하세요."), ("I go.", "나는 간다.")]
    f = tmp_path / "c.tsv"
    f.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert read_tsv_corpus(f) == read_tsv_corpus(str(f)) == read_tsv_corpus(f.read_bytes())


@pytest.mark.parametrize("data, code, args, english", [
    ("a\tb\nc\td\ne\tf\ng\th\ni\tj\nk\tl\nonly one column\n", "columns", {"line": 7, "found": 1},
     "line 7: expected 2 tab-separated columns, found 1"),
    ("a\tb\nc\td\te\n", "columns", {"line": 2, "found": 3}, "line 2: expected 2 tab-separated columns, found 3"),
    ("a\tb\n\nc\td\n", "empty_line", {"line": 2}, "line 2: empty line"),
    ("a\tb\n   \n", "empty_line", {"line": 2}, "line 2: empty line"),
    ("a\t \n", "second_empty", {"line": 1}, "line 1: the second column is empty"),
    ("\tb\n", "first_empty", {"line": 1}, "line 1: the first column is empty"),
    (b"a\tb\nc\td\n\xff\xfe\tx\n", "not_utf8", {"line": 3, "byte": 1}, "line 3: not valid UTF-8 (byte 1 of the line)"),
    ("", "empty", {}, "the corpus is empty"),
])
def test_tsv_errors(data, code, args, english):
    """Each problem is a UserError naming the line; its message is a catalogue key plus arguments."""
    with pytest.raises(UserError) as e:
        read_tsv_corpus(data)
    assert e.value.message == Message(f"train.corpus.{code}", args)
    assert say(e.value.message) == english


def test_tsv_limits(tmp_path):
    with pytest.raises(UserError) as e:
        read_tsv_corpus("a\tb\n" * 100, max_bytes=50)
    assert e.value.message == Message("train.corpus.too_big", {"size": 400, "limit": 50})
    assert say(e.value.message) == "file is 400 bytes; the limit is 50 bytes"
    f = tmp_path / "big.tsv"
    f.write_text("a\tb\n" * 100, encoding="utf-8")
    with pytest.raises(UserError) as e:
        read_tsv_corpus(f, max_bytes=50)
    assert e.value.message.code == "train.corpus.too_big"
    with pytest.raises(UserError) as e:
        read_tsv_corpus("a\tb\n" * 20, max_lines=10)
    assert say(e.value.message) == "line 11: too many lines; the limit is 10"
    assert issubclass(UserError, ValueError)
