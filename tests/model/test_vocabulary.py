"""model/data/vocabulary.py and model/training/card.py: what a trained model read in training (its input side, in
pieces and whole words), the words of a new sentence it never saw, its word palette, and its card's
key facts from its files; model/nn/device.py's parts of a device description."""
import json
import shutil
from types import SimpleNamespace

import pytest
from app.i18n import LANGS

from model.data import vocabulary as voc
from model.training.card import PAPER_BLEU_EN_DE, card_facts
from model.training.checkpoint import load_model_dir
from model.nn.device import DeviceParts, describe_device, device_parts, format_parts, parse_description

SHIPPED = voc.Path(__file__).resolve().parents[2] / "assets" / "models"
needs = {name: pytest.mark.skipif(not (SHIPPED / name / "model.safetensors").is_file(),
                                  reason=f"the shipped {name} model is not built") for name in ("en-ko", "lm")}


@pytest.fixture(scope="module")
def en_ko():
    return load_model_dir(SHIPPED / "en-ko")


def test_words_are_whole_words_and_single_marks():
    assert voc.words("I don't go to 학교에!") == ["I", "don't", "go", "to", "학교에", "!"]
    assert voc.words("a  🐈<b>") == ["a", "🐈", "<", "b", ">"]
    assert voc.words("") == [] and voc.words(None) == []
    known = frozenset({"I", "go", "to", "school", ".", "You"})
    assert voc.unknown_words("I go to school. you go to 학교에 to 학교에", known) == ["you", "학교에"]
    assert voc.case_variant("you", known) == "You" and voc.case_variant("i", known) == "I"
    assert voc.case_variant("SCHOOL", known) == "school" and voc.case_variant("cat", known) is None


@needs["en-ko"]
def test_en_ko_vocabulary_is_the_encoder_side(en_ko):
    """Korean is only the target side of en-ko: its encoder never read a Korean piece or word."""
    from model.data.corpus import known_words
    v = voc.model_vocabulary(en_ko)
    assert v.found and v.examples == []
    korean = en_ko.tokenizer.encode("나는 학교에 간다.")
    assert not set(korean[:-1]) & v.pieces  # every Korean piece unseen ("." is seen)
    assert voc.unknown_words("나는 학교에 간다.", v.words) == ["나는", "학교에", "간다"]
    assert {w.lower() for w in v.words} == known_words()  # the corpus's own list of English word forms
    assert set(v.palette) >= {"subject", "verb", "object"} and "." in v.palette["punctuation"]
    lower = frozenset(w.lower() for w in v.words)
    assert [e for entries in v.palette.values() for e in entries if voc.unknown_words(e.lower(), lower)] == []


@needs["lm"]
def test_language_model_vocabulary_is_its_own_text():
    lm = load_model_dir(SHIPPED / "lm")
    v = voc.model_vocabulary(lm)
    assert voc.unknown_words("나는 학교에 간다.", v.words) == []  # a decoder-only model reads both languages
    assert voc.input_side("decoder-only") == 1 and voc.input_side("encoder-decoder") == 0


def test_every_palette_group_has_a_label_in_both_languages():
    from app.i18n import catalogue
    from model.data.corpus import vocabulary_by_part_of_speech
    groups = set(vocabulary_by_part_of_speech()) | {"punctuation", "symbols", "words"}
    for lang in LANGS:
        assert sorted(g for g in groups if f"inspector.pos.{g}" not in catalogue(lang)) == []


def _loaded(meta, path=None, architecture="encoder-decoder", tokenizer=None):
    return SimpleNamespace(meta=meta, path=path, config=SimpleNamespace(architecture=architecture),
                           tokenizer=tokenizer or SimpleNamespace(encode=lambda s: [ord(c) for c in s]))


def test_synthetic_task_palette_and_unknown_tasks():
    v = voc.model_vocabulary(_loaded({"task": "copy"}))
    assert v.palette == {"symbols": list("abcdefghij")} and ord("a") in v.pieces and ord("z") not in v.pieces
    assert voc.model_vocabulary(_loaded({"task": "mystery"})) == voc.Vocabulary()
    assert voc.model_vocabulary(_loaded(None)) == voc.Vocabulary()
    assert not voc.model_vocabulary(SimpleNamespace(meta={"task": "copy"}, path=None, tokenizer=None,
                                                    config=SimpleNamespace(architecture="encoder-decoder"))).found


def _tsv_run(root, corpus=None, args=None):
    run = root / "r1"
    (run / "model").mkdir(parents=True)
    if corpus is not None:
        (run / "corpus.tsv").write_text(corpus, encoding="utf-8")
    if args is not None:
        (run / "args.json").write_text(json.dumps(args))
    return _loaded({"task": "tsv", "run": "r1"}, path=run / "model")


def test_uploaded_corpus_is_read_from_the_run_folder(tmp_path):
    lines = "".join(f"src {i} word\ttgt {i}\n" for i in range(40))
    v = voc.model_vocabulary(_tsv_run(tmp_path, lines, {"seed": 0}))
    assert v.found and "word" in v.words and "tgt" not in v.words  # the source side only
    assert v.palette["words"][:2] == ["src", "word"] and len(v.examples) == voc.EXAMPLES_FROM_CORPUS
    assert not voc.model_vocabulary(_tsv_run(tmp_path / "b")).found  # the corpus is gone
    assert not voc.model_vocabulary(_tsv_run(tmp_path / "c", "no tabs here\n")).found  # damaged
    other = tmp_path / "elsewhere.tsv"
    other.write_text(lines, encoding="utf-8")
    assert voc.model_vocabulary(_tsv_run(tmp_path / "d", None, {"tsv": str(other)})).found  # args.json names it


def test_a_corpus_that_cannot_be_generated_means_unknown_training_data(monkeypatch):
    import model.data.vocabulary as module

    def broken(*a, **k):
        raise ValueError("object 'x' names unknown verb ''")
    monkeypatch.setattr(module, "task_pairs", broken)
    assert voc.model_vocabulary(_loaded({"task": "en-ko"})) == voc.Vocabulary()


# ----------------------------------------------------------------------------- the card

@needs["en-ko"]
def test_card_facts_of_the_shipped_model(en_ko):
    f = card_facts(en_ko)
    assert (f.task, f.architecture, f.n_encoder_layers, f.n_decoder_layers, f.parameters) == \
        ("en-ko", "encoder-decoder", 2, 2, en_ko.model.num_parameters())
    assert (f.recipe.warmup, f.recipe.batch_size, f.recipe.seed) == (400, 64, 0)  # the trainer's defaults
    assert f.steps == en_ko.meta["steps"] and f.device == en_ko.meta["device"]
    assert f.scores["bleu_beam4"] == en_ko.meta["scores"]["bleu_beam4"] and "examples" not in f.scores
    assert f.character_bleu  # its references are Korean: model.inference.evaluate scored BLEU by character
    assert PAPER_BLEU_EN_DE == 28.4


@needs["en-ko"]
def test_card_facts_of_a_training_page_run(tmp_path):
    run = tmp_path / "run-1"
    shutil.copytree(SHIPPED / "en-ko", run / "model")
    (run / "model" / "meta.json").write_text(json.dumps({"task": "copy", "step": 30, "run": "run-1",
                                                         "has_tokenizer": True}))
    (run / "args.json").write_text(json.dumps({"warmup": 50, "lr_factor": 0.5, "batch_size": 8, "seed": 3}))
    (run / "status.json").write_text(json.dumps({"elapsed_seconds": 12.5, "device": "CPU · 1 threads (arm64)"}))
    f = card_facts(load_model_dir(run / "model"))
    assert (f.task, f.steps, f.train_seconds, f.device, f.scores) == ("copy", 30, 12.5, "CPU · 1 threads (arm64)", {})
    assert not f.character_bleu
    assert (f.recipe.warmup, f.recipe.lr_factor, f.recipe.batch_size, f.recipe.seed) == (50, 0.5, 8, 3)
    (run / "args.json").write_text("{broken")
    (run / "status.json").unlink()
    f = card_facts(load_model_dir(run / "model"))
    assert f.recipe is None and f.train_seconds is None and f.device is None


# ----------------------------------------------------------------------------- the device

def test_device_parts_and_their_english_description():
    import torch
    parts = device_parts(torch.device("cpu"))
    assert parts.kind == "cpu" and parts.threads == torch.get_num_threads()
    assert describe_device(torch.device("cpu")) == format_parts(parts)
    for p in (parts, DeviceParts("cuda", name="NVIDIA H200", memory_gib=140.0), DeviceParts("mps", machine="arm64")):
        assert parse_description(format_parts(p)) == p
    assert parse_description("a TPU") is None and parse_description("") is None


def test_saved_vocabulary_round_trip_and_damage(tmp_path):
    """vocabulary.json (written at export) gives back the same Vocabulary; a damaged one is ignored."""
    from model.data.vocabulary import VOCABULARY_FILE, Vocabulary, saved_vocabulary, vocabulary_json
    v = Vocabulary(found=True, pieces=frozenset({3, 5}), words=frozenset({"I", "go"}),
                   palette={"verbs": ["go"]}, examples=["I go."])
    meta = {"task": "en-ko", "seed": 0}
    (tmp_path / VOCABULARY_FILE).write_text(json.dumps(vocabulary_json(v, meta)), encoding="utf-8")
    assert saved_vocabulary(tmp_path, meta) == v
    assert saved_vocabulary(tmp_path, {"task": "tsv", "seed": 0}) is None  # a copy in another run
    (tmp_path / VOCABULARY_FILE).write_text("{not json", encoding="utf-8")
    assert saved_vocabulary(tmp_path) is None
    assert saved_vocabulary(tmp_path / "missing") is None and saved_vocabulary(None) is None


def test_shipped_vocabulary_files_match_the_training_data():
    """The shipped models' vocabulary.json is what their training data gives (regenerate with
    `python -m model.data.vocabulary assets/models/<name>` after retraining)."""
    from model.training.checkpoint import load_model_dir
    from model.data.vocabulary import model_vocabulary, saved_vocabulary
    root = SHIPPED
    for name in ("en-ko", "lm"):
        loaded = load_model_dir(root / name)
        saved = saved_vocabulary(root / name, loaded.meta)
        assert saved is not None, name
        assert saved == model_vocabulary(loaded, use_saved=False), name
