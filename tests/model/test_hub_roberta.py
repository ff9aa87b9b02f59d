"""RoBERTa through our own model code (model/hub/roberta.py over bert.py), checked against transformers on tiny
random models saved with save_pretrained: logits, every attention map, hidden states, and the byte-level BPE
tokenizer's ids (a vocabulary trained here, offline, with the `tokenizers` package)."""
from __future__ import annotations

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from model.hub import HubError, load_pretrained, size_summary  # noqa: E402
from model.hub.roberta import convert  # noqa: E402
from model.hub.roberta import tokenizer as roberta_tokenizer  # noqa: E402

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
CORPUS = [
    "The cat sat on the mat. The dog's bed is by the door, and the cat's toy is there.",
    "Paris is the capital of France. Seoul is the capital of Korea. I drink coffee every morning.",
    "I love you. We're going home at 10:30, aren't we? They'll see it; she'd know.",
    "In 2017, the Transformer replaced recurrence with attention: 6 layers, 8 heads, 512 dimensions.",
    "나는 고양이를 사랑한다. 고양이는 도서관에 있다. 우리는 학교에 간다.",
    "Café naïve résumé — déjà vu! 😀 🚀 emoji and   extra   spaces\nnew lines\n\n",
]
SENTENCES = [
    "Hello, world!",
    "Paris is the <mask> of France.",
    "The cat sat on the <mask>.",
    "a<mask>b and <mask><mask> twice",
    "<mask> at the start, and at the end <mask>",
    "The cat's mat isn't the dog's; they're theirs.",
    "I'll pay 1234567 won on 2024-05-09 at 10:30.",
    "Café naïve résumé déjà vu",
    "Emoji 😀🚀👍🏽 and ❤️ hearts",
    "나는 고양이를 사랑한다.",
    "한국어와 English mixed 123",
    "multiple    spaces   here  ",
    "  leading and trailing spaces  ",
    "line one\nline two\n\nline four\n",
    "tabs\tand\r\nwindows newlines",
    "'s 's's 'S 'll 've 're 'd 'm 't",
    "symbols: <> [] {} @#$%^&* ~`|\\",
    "special tokens typed: <s> x </s> y <unk> z",
    "[MASK] is BERT's, not RoBERTa's",
    "",
]


def write_tokenizer(folder) -> dict[str, int]:
    """A tiny byte-level BPE (every byte in the alphabet, the five special tokens first, as roberta-base has them),
    trained here on CORPUS, saved as vocab.json + merges.txt."""
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS * 3, vocab_size=420, min_frequency=2, special_tokens=SPECIALS, show_progress=False)
    folder.mkdir(parents=True, exist_ok=True)
    bpe.save_model(str(folder))
    return json.loads((folder / "vocab.json").read_text(encoding="utf-8"))


def _perturb(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():  # larger than the default 0.02 init, so that the maps are not all uniform
        for p in model.parameters():
            p.normal_(0.0, 0.3) if p.dim() > 1 else p.add_(torch.randn_like(p) * 0.1)


def make_roberta(folder, cls=None, seed: int = 0, **overrides):
    """A tiny random RoBERTa (RobertaForMaskedLM unless `cls` says otherwise) saved with our tiny BPE in `folder`;
    returns transformers' model reloaded from the folder with eager attention."""
    cls = cls or transformers.RobertaForMaskedLM
    vocab = write_tokenizer(folder)
    kw = dict(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=64, max_position_embeddings=40, type_vocab_size=1, layer_norm_eps=1e-5,
              pad_token_id=1, bos_token_id=0, eos_token_id=2)
    kw.update(overrides)
    torch.manual_seed(seed)
    model = cls(transformers.RobertaConfig(**kw))
    _perturb(model, seed)
    model.save_pretrained(folder)
    return cls.from_pretrained(folder, attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def mlm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("roberta")
    hf = make_roberta(folder)
    return folder, hf, load_pretrained(folder)


def _compare(hf, loaded, ids, logits=True):
    x = torch.tensor([ids])
    with torch.no_grad():
        ref = hf(x, output_attentions=True, output_hidden_states=True)
        out = loaded.model(x, return_attention=True)
    maps = out.attention.encoder_self
    assert len(maps) == len(ref.attentions) == hf.config.num_hidden_layers
    for ours, theirs in zip(maps, ref.attentions, strict=True):
        assert ours.shape == theirs.shape == (1, hf.config.num_attention_heads, len(ids), len(ids))
        assert (ours - theirs).abs().max().item() < 1e-5
    assert maps[0][0, :, 0].std().item() > 1e-3  # far from uniform: the comparison means something
    assert (out.memory - ref.hidden_states[-1]).abs().max().item() < 1e-4
    if logits:
        assert (out.logits - ref.logits).abs().max().item() < 1e-4
    return out


def test_config_is_bert_with_roberta_positions(mlm):
    folder, hf, loaded = mlm
    cfg = loaded.config
    assert (cfg.architecture, cfg.norm_first, cfg.positional, cfg.segment_vocab) == ("encoder-only", False, "learned", 1)
    assert cfg.max_len == 40 - 2 and cfg.norm_eps == 1e-5 and cfg.pad_id == 1
    assert loaded.meta["task"] == "mlm" and loaded.meta["family"] == "roberta"
    ours = loaded.model.state_dict()["src_embed.position.weight"]
    assert torch.equal(ours, hf.roberta.embeddings.position_embeddings.weight[2:])  # rows 0, 1 are never read
    # every parameter transformers has, less the two position rows a sentence never reads
    assert loaded.model.num_parameters() == sum(p.numel() for p in hf.parameters()) - 2 * 32
    assert size_summary(folder)["parameters"] == loaded.model.num_parameters()


def test_logits_attention_and_hidden_states_match(mlm):
    folder, hf, loaded = mlm
    tok = loaded.tokenizer
    for text in ("Paris is the <mask> of France.", "The cat's mat, 나는 😀 10:30 and the dog", "x"):
        ids, _ = tok.pair(tok.encode(text))
        _compare(hf, loaded, ids)
    # the longest sentence the model reads: every position row is used
    ids, _ = tok.pair(tok.encode("the cat " * 40)[:loaded.config.max_len - 2])
    assert len(ids) == loaded.config.max_len
    _compare(hf, loaded, ids)


def test_a_pair_is_read_as_transformers_reads_it(mlm):
    folder, hf, loaded = mlm
    ref = transformers.AutoTokenizer.from_pretrained(folder)
    tok = loaded.tokenizer
    ids, segments = tok.pair(tok.encode("The cat sat on the <mask>."), tok.encode("It was tired."))
    theirs = ref("The cat sat on the <mask>.", "It was tired.")
    assert ids == theirs["input_ids"] and set(segments) == {0}
    _compare(hf, loaded, ids)
    with pytest.raises(ValueError, match="<pad>"):
        tok.pair(tok.encode("a <pad> b"))


def test_fill_mask_predicts_what_transformers_predicts(mlm):
    from model.hub.bert import fill_mask
    folder, hf, loaded = mlm
    filled = fill_mask(loaded, "Paris is the <mask> of France.", top=5)
    assert len(filled.predictions) == 1
    pos, top = filled.predictions[0]
    assert filled.pieces[pos] == "<mask>" and filled.pieces[0] == "<s>" and filled.pieces[-1] == "</s>"
    with torch.no_grad():
        probs = torch.softmax(hf(torch.tensor([filled.ids])).logits[0, pos], -1)
    p, j = probs.topk(5)
    assert [piece for piece, _ in top] == [loaded.tokenizer.id_to_piece(int(i)) for i in j]
    assert [q for _, q in top] == pytest.approx(p.tolist(), abs=1e-5)


def test_tokenizer_matches_transformers(mlm):
    folder, hf, loaded = mlm
    tok = loaded.tokenizer
    for ref in (transformers.RobertaTokenizer.from_pretrained(folder),
                transformers.RobertaTokenizerFast.from_pretrained(folder)):
        assert tok.vocab_size == len(ref)
        for text in SENTENCES:
            ids = tok.encode(text)
            assert ids == ref(text, add_special_tokens=False)["input_ids"], text
            assert tok.pair(ids)[0] == ref(text)["input_ids"], text
            assert tok.pieces(text) == ref.convert_ids_to_tokens(ids)
    assert (tok.bos_id, tok.pad_id, tok.eos_id, tok.unk_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert tok.decode(tok.pair(tok.encode("Café 😀 at 10:30"))[0]) == "Café 😀 at 10:30"


def test_mask_that_takes_the_space_before_it(mlm, tmp_path):
    """roberta-base's <mask> swallows the space on its left (lstrip), and its folder may hold tokenizer.json alone:
    both as transformers reads them."""
    folder = mlm[0]
    ref = transformers.RobertaTokenizer.from_pretrained(
        folder, mask_token=tokenizers.AddedToken("<mask>", lstrip=True, rstrip=False))
    ref.save_pretrained(tmp_path)
    assert not (tmp_path / "vocab.json").exists()
    saved = json.loads((tmp_path / "tokenizer.json").read_text())
    assert any(t["content"] == "<mask>" and t["lstrip"] for t in saved["added_tokens"])
    tok = roberta_tokenizer(tmp_path, {})
    assert tok.encode("the <mask> of") != mlm[2].tokenizer.encode("the <mask> of")  # the space went into <mask>
    for text in SENTENCES:
        assert tok.encode(text) == ref(text, add_special_tokens=False)["input_ids"], text


@pytest.fixture(scope="module")
def headless(tmp_path_factory):
    folder = tmp_path_factory.mktemp("roberta-model")
    hf = make_roberta(folder, transformers.RobertaModel, seed=3, num_hidden_layers=3, max_position_embeddings=30)
    return folder, hf, load_pretrained(folder)


def test_robertamodel_without_a_head_gives_attention_and_hidden_states(headless, capsys):
    folder, hf, loaded = headless
    assert loaded.meta["task"] == "features"
    assert any(k.startswith("pooler.") for k in hf.state_dict())  # RobertaModel keeps a pooler no task here reads:
    assert size_summary(folder)["parameters"] == loaded.model.num_parameters()  # the overview counts what we load
    from model.hub.__main__ import main
    assert main(["check", str(folder)]) == 0
    assert "roberta encoder-only" in capsys.readouterr().out
    tok = loaded.tokenizer
    ids, _ = tok.pair(tok.encode("The cat sat on the mat, 나는 😀"))
    _compare(hf, loaded, ids, logits=False)


@pytest.mark.parametrize("overrides", [
    dict(layer_norm_eps=1e-12, intermediate_size=48, num_attention_heads=2),
    dict(type_vocab_size=2, tie_word_embeddings=False, num_hidden_layers=3),
    dict(pad_token_id=3, max_position_embeddings=24),
])
def test_variants_match(tmp_path, overrides):
    hf = make_roberta(tmp_path, seed=1, **overrides)
    loaded = load_pretrained(tmp_path)
    tok = loaded.tokenizer
    ids, _ = tok.pair(tok.encode("The <mask> sat on the mat."))
    if overrides.get("pad_token_id") == 3:  # a pad id other than <pad>'s: positions follow the config's
        assert loaded.config.max_len == 24 - 4
        ids = [i for i in ids if i != 3]
    _compare(hf, loaded, ids)


def _copy(folder, to, **config_changes):
    for f in folder.iterdir():
        (to / f.name).write_bytes(f.read_bytes())
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(config_changes)
    (to / "config.json").write_text(json.dumps(cfg))


@pytest.mark.parametrize("option, value, words", [
    ("position_embedding_type", "relative_key", "position_embedding_type"),
    ("is_decoder", True, "is_decoder"),
    ("hidden_act", "relu", "hidden_act"),
    ("max_position_embeddings", 2, "max_position_embeddings"),
    ("max_position_embeddings", 41, "max_position_embeddings"),
    ("pad_token_id", -1, "pad_token_id"),
])
def test_unsupported_options_are_refused_by_name(mlm, tmp_path, option, value, words):
    _copy(mlm[0], tmp_path, **{option: value})
    with pytest.raises(HubError, match=words):
        load_pretrained(tmp_path)


def test_other_heads_are_refused_by_their_names(mlm, tmp_path):
    """A head we cannot run (a classifier here) is named; a MaskedLM config without its head is told so."""
    folder, hf, _ = mlm
    cfg = json.loads((folder / "config.json").read_text())
    weights = dict(hf.state_dict())
    weights["qa_outputs.weight"] = torch.zeros(2, 32)  # RobertaForQuestionAnswering's
    with pytest.raises(HubError, match="qa_outputs.weight"):
        convert(dict(cfg), weights)
    with pytest.raises(HubError, match="unsupported architecture RobertaForQuestionAnswering.*qa_outputs"):
        convert(dict(cfg, architectures=["RobertaForQuestionAnswering"]), weights)
    body = {k: v for k, v in hf.state_dict().items() if not k.startswith("lm_head.")}
    with pytest.raises(HubError, match="RobertaForMaskedLM.*lm_head"):
        convert(dict(cfg, architectures=["RobertaForMaskedLM"]), body)
    broken = {k: v for k, v in hf.state_dict().items() if "layer.1.attention.self.key.weight" not in k}
    with pytest.raises(HubError, match="roberta.encoder.layer.1.attention.self.key.weight"):
        convert(cfg, broken)


def test_missing_tokenizer_files_are_named(mlm, tmp_path):
    _copy(mlm[0], tmp_path)
    (tmp_path / "merges.txt").unlink()
    with pytest.raises(HubError, match="merges.txt"):
        load_pretrained(tmp_path)
    _copy(mlm[0], tmp_path)
    vocab = json.loads((tmp_path / "vocab.json").read_text())
    del vocab["<mask>"]
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(HubError, match="<mask>"):
        load_pretrained(tmp_path)


def test_fill_mask_reads_a_pair_as_roberta_does(mlm):
    """bert.fill_mask with sentence B: RoBERTa's <s> A </s></s> B </s> in segment 0 (its one segment row), the
    probabilities transformers gives that input; a typed <pad> is refused in one sentence, not a traceback."""
    from model.hub.bert import fill_mask
    folder, hf, loaded = mlm
    filled = fill_mask(loaded, "The cat sat on the <mask>.", text_b="It was tired.")
    ref = transformers.AutoTokenizer.from_pretrained(folder)("The cat sat on the <mask>.", "It was tired.")
    assert filled.ids == ref["input_ids"] and set(filled.segments) == {0}
    assert filled.one_segment and not fill_mask(loaded, "The cat sat on the <mask>.").one_segment  # said so
    pos, top = filled.predictions[0]
    with torch.no_grad():
        probs = torch.softmax(hf(torch.tensor([filled.ids])).logits[0, pos], -1)
    assert top[0][1] == pytest.approx(probs.max().item(), abs=1e-5)
    with pytest.raises(ValueError, match="padding"):
        fill_mask(loaded, "a <pad> <mask>")


@pytest.mark.parametrize("damage, words", [
    (lambda d: d.update(normalizer={"type": "Lowercase"}), "normalizer"),
    (lambda d: d.update(normalizer="odd"), "normalizer"),
    (lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "pre-tokenizer"),
    (lambda d: d.update(pre_tokenizer=["ByteLevel"]), "pre-tokenizer"),
    (lambda d: d["model"].update(type="WordPiece"), "not a BPE"),
    (lambda d: d.update(model=[]), "not a BPE"),
    (lambda d: d["model"].update(merges=[["a"]]), "merge 0"),
    (lambda d: d["model"].update(vocab=["a"]), "vocab"),
    (lambda d: d.update(added_tokens={"x": 1}), "<mask>"),  # then <mask> is in no list: named
])
def test_a_damaged_tokenizer_json_is_refused_in_one_sentence(mlm, tmp_path, damage, words):
    ref = transformers.RobertaTokenizer.from_pretrained(mlm[0])
    ref.save_pretrained(tmp_path)
    d = json.loads((tmp_path / "tokenizer.json").read_text())
    if words == "<mask>":
        d["model"]["vocab"].pop("<mask>")
        (tmp_path / "tokenizer_config.json").unlink()
    damage(d)
    (tmp_path / "tokenizer.json").write_text(json.dumps(d))
    with pytest.raises(HubError, match=words):
        roberta_tokenizer(tmp_path, {})


@pytest.mark.parametrize("cls_name, task", [("RobertaForSequenceClassification", "classify"),
                                            ("RobertaForTokenClassification", "tag")])
def test_classifiers_predict_what_transformers_predicts(tmp_path, cls_name, task):
    """A sequence classifier (classifier.dense + tanh on <s>, then out_proj) and a token classifier: the labels'
    logits within 1e-4 of transformers', every attention map within 1e-5, the labels named from id2label."""
    from model.hub.bert import fill_mask
    labels = {0: "negative", 1: "neutral", 2: "positive"}
    hf = make_roberta(tmp_path, getattr(transformers, cls_name), seed=4, num_labels=3, id2label=labels,
                      label2id={v: k for k, v in labels.items()})
    loaded = load_pretrained(tmp_path)
    assert loaded.meta["task"] == task and loaded.meta["labels"] == ["negative", "neutral", "positive"]
    tok = loaded.tokenizer
    ids, _ = tok.pair(tok.encode("The cat sat on the mat, and it was happy."))
    x = torch.tensor([ids])
    with torch.no_grad():
        ref = hf(x, output_attentions=True)
        out = loaded.model(x, return_attention=True)
        ours = loaded.model.task_head(out.memory)
    assert ours.shape == ref.logits.shape and (ours - ref.logits).abs().max().item() < 1e-4
    assert ref.logits.std().item() > 1e-2  # the labels differ: the comparison means something
    for a, b in zip(out.attention.encoder_self, ref.attentions, strict=True):
        assert (a - b).abs().max().item() < 1e-5
    filled = fill_mask(loaded, "The cat sat on the mat, and it was happy.")
    if task == "classify":
        probs = torch.softmax(ref.logits[0], -1)
        assert filled.classes[0] == (labels[int(probs.argmax())], pytest.approx(probs.max().item(), abs=1e-5))
    else:
        assert [tag for _, tag, _ in filled.tags] == [labels[int(i)] for i in ref.logits[0].argmax(-1)]
