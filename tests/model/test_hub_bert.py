"""BERT through our own model code (model/hub/bert.py, its WordPiece tokenizer model/hub/wordpiece.py): a tiny
random BertForMaskedLM built with transformers, saved in the Hugging Face layout, loaded by model.hub, compared
with transformers' own forward and tokenizer."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

transformers = pytest.importorskip("transformers")

from model.hub import HubError, load_pretrained  # noqa: E402
from model.hub import bert  # noqa: E402
from model.hub.wordpiece import WordPieceTokenizer  # noqa: E402



@pytest.fixture(autouse=True)
def bert_family_only(monkeypatch):
    """Dispatch straight to the BERT module (these tests do not depend on the other families' modules)."""
    import model.hub
    monkeypatch.setattr(model.hub, "FAMILIES", ("bert",))


SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "a", "is", "of", "and", "to", "in", "it", "i", "you", "love", "cat", "sat", "on", "mat",
         "paris", "capital", "france", "london", "city", "hello", "world", "cafe", "naive", "resume", "don",
         "t", "s", "run", "play", "walk", "token", "model", "attention", "need", "all", "x", "y", "1", "2",
         "3", "10", "100", "2017", "un", "aff", "Cafe", "Paris", "The", "é", "café", "Zoë"]
CONTINUATIONS = ["##s", "##ing", "##ed", "##er", "##ly", "##able", "##aff", "##ffa", "##ble", "##n", "##t",
                 "##0", "##7", "##1", "##é", "##ë", "##e"]
PUNCT = list(".,!?;:'\"()[]-/$%&*+<=>@#^_`{|}~") + ["…", "«", "»", "¿", "—"]
CJK = ["中", "国", "人", "巴", "黎", "是", "的"]
# bert-base-multilingual-uncased style: lower-casing strips accents by decomposing (NFD), which also
# splits Hangul syllables into conjoining jamo
JAMO = ["ᄋ", "ᄀ", "ᄉ", "ᄒ", "##ᅡ", "##ᆫ", "##ᅧ", "##ᆼ", "##ᄒ", "##ᅵ", "##ᄉ", "##ᄋ", "##ᄀ", "##ᅦ", "##ᅭ", "##ᄂ", "##😀"]
OTHER = ["😀", "안녕", "##하세요"]
LETTERS = list("abcdefghijklmnopqrstuvwxyz")
VOCAB = list(dict.fromkeys(SPECIALS + WORDS + CONTINUATIONS + PUNCT + CJK + JAMO + OTHER + LETTERS
                           + [f"##{c}" for c in "abcdefghij"]))

SENTENCES = [
    "The cat sat on the mat.",
    "Paris is the [MASK] of France.",
    "Hello,   world!!  (x+y=10)",
    "Café naïve résumé — Zoë's «café»",
    "I don't love 2017's 100 tokens…",
    "巴黎是中国的人 and London",
    "안녕하세요 고양이가 매트에 앉았다",
    "emoji 😀 and 😀😀 ok?",
    "unaffable playing walked runner quickly",
    "tabs\tand\nnewlines\r\nand\u00a0nbsp\u2028line sep\u3000ideo space",
    "control\x00chars\x07here\ufffd and zero\u200bwidth",
    "[CLS] [SEP] [PAD] [UNK] typed, [mask] lower, x[MASK]y, [ MASK ]",
    "a" * 101 + " " + "b" * 100,
    "¿Qué?  ÉCOLE İstanbul ΣΑΣ Straße",
    "",
    "   ",
    "Cafe\u0301 Zoe\u0308 e\u0301",  # accents as combining marks (decomposed, NFD)
]
DECOMPOSED = SENTENCES[-1]


def _randomise(model: torch.nn.Module, seed: int = 0) -> None:
    """Large random weights, so attention is far from uniform and any mistake shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))


def save_tiny(folder, model_cls: str, config, *, vocab: list[str], randomise, seed=0, tokenizer_config=None):
    """A tiny random transformers model of a WordPiece family saved in the Hugging Face layout, with its vocab.txt
    (and tokenizer_config.json when given); `randomise(model, seed)` sets weights far from uniform attention."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    if tokenizer_config is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config), encoding="utf-8")
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(config).eval()
    randomise(model, seed)
    model.save_pretrained(folder)
    return folder


def _make(folder, *, seed=0, cls_name="BertForMaskedLM", tokenizer_config=None, **overrides):
    kw = dict(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=37, max_position_embeddings=64, type_vocab_size=2, pad_token_id=0)
    kw.update(overrides)
    return save_tiny(folder, cls_name, transformers.BertConfig(**kw), vocab=VOCAB, randomise=_randomise, seed=seed,
                     tokenizer_config=tokenizer_config)


def reference(folder, cls_name="BertForMaskedLM"):
    """transformers' model `cls_name` read from `folder`, with eager attention (its weights are returned)."""
    return getattr(transformers, cls_name).from_pretrained(folder, attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return _make(tmp_path_factory.mktemp("bert") / "tiny")


@pytest.fixture(scope="module")
def loaded(tiny):
    import model.hub
    with pytest.MonkeyPatch.context() as m:
        m.setattr(model.hub, "FAMILIES", ("bert",))
        return load_pretrained(tiny)


def test_vocab_is_big_enough():
    assert 140 <= len(VOCAB) <= 200 and len(set(VOCAB)) == len(VOCAB)


def test_config_is_bert_options(loaded):
    c = loaded.config
    assert c.architecture == "encoder-only" and not c.norm_first and c.positional == "learned"
    assert (c.max_len, c.segment_vocab, c.d_ff, c.n_encoder_layers, c.n_heads, c.d_model) == (64, 2, 37, 2, 4, 32)
    assert c.embed_norm and not c.embed_scale and c.mlm_transform and c.output_bias and c.tie_embeddings
    assert c.activation == "gelu" and c.norm_eps == 1e-12 and c.pad_id == 0
    assert loaded.meta["task"] == "mlm" and loaded.meta["family"] == "bert"


def _ours(loaded, ids, mask=None):
    with torch.no_grad():
        return loaded.model(torch.as_tensor(ids), src_pad_mask=mask, return_attention=True)


def test_logits_and_attention_match_transformers(tiny, loaded):
    ref = reference(tiny)
    tok = loaded.tokenizer
    for text in SENTENCES[:6]:
        ids = [[tok.bos_id, *tok.encode(text), tok.eos_id]]
        out = _ours(loaded, ids)
        with torch.no_grad():
            r = ref(torch.tensor(ids), output_attentions=True)
        assert (out.logits - r.logits).abs().max().item() < 1e-4
        assert len(out.attention.encoder_self) == len(r.attentions) == 2
        for ours, theirs in zip(out.attention.encoder_self, r.attentions):
            assert ours.shape == theirs.shape
            assert (ours - theirs).abs().max().item() < 1e-5
        # the weights are far from uniform, so this comparison means something
        assert max(a.max().item() for a in r.attentions) > 0.5


def test_padded_batch_matches_transformers(tiny, loaded):
    ref = reference(tiny)
    tok = loaded.tokenizer
    rows = [[tok.bos_id, *tok.encode(t), tok.eos_id] for t in ("The cat sat on the mat.", "Hello [MASK]!")]
    L = max(map(len, rows))
    ids = torch.tensor([r + [tok.pad_id] * (L - len(r)) for r in rows])
    mask = ids != tok.pad_id
    out = _ours(loaded, ids, mask)
    with torch.no_grad():
        r = ref(ids, attention_mask=mask.long(), output_attentions=True)
    keep = mask[:, :, None]
    assert ((out.logits - r.logits).abs() * keep).max().item() < 1e-4
    for ours, theirs in zip(out.attention.encoder_self, r.attentions):
        assert ((ours - theirs).abs() * mask[:, None, :, None]).max().item() < 1e-5


def test_fill_mask_top_is_transformers_argmax(tiny, loaded):
    ref = reference(tiny)
    for text in ("Paris is the [MASK] of France.", "[MASK] cat sat on the [MASK] .", "I love you"):
        res = bert.fill_mask(loaded, text, top=5)
        tok = loaded.tokenizer
        assert res.ids[0] == tok.bos_id and res.ids[-1] == tok.eos_id
        assert res.pieces[0] == "[CLS]" and res.pieces[-1] == "[SEP]"
        masks = [i for i, t in enumerate(res.ids) if t == tok.mask_id]
        assert [p for p, _ in res.predictions] == masks
        assert len(res.attention.encoder_self) == 2 and res.attention.encoder_self[0].shape[-1] == len(res.ids)
        with torch.no_grad():
            logits = ref(torch.tensor([res.ids])).logits[0]
        probs = torch.softmax(logits, -1)
        for pos, preds in res.predictions:
            assert len(preds) == 5
            assert preds[0][0] == VOCAB[int(logits[pos].argmax())]
            ps = [p for _, p in preds]
            assert ps == sorted(ps, reverse=True)
            assert abs(ps[0] - probs[pos].max().item()) < 1e-5


def _hf_tokenizers(folder):
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy
    return transformers.BertTokenizer.from_pretrained(folder), BertTokenizerLegacy.from_pretrained(folder)


@pytest.mark.parametrize("options", [None, {"do_lower_case": False}, {"do_lower_case": True, "strip_accents": False},
                                     {"do_lower_case": False, "strip_accents": True, "tokenize_chinese_chars": False}])
def test_tokenizer_ids_match_transformers(tmp_path, options):
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "vocab.txt").write_text("".join(t + "\n" for t in VOCAB), encoding="utf-8")
    if options is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(options), encoding="utf-8")
    ours = WordPieceTokenizer.load(folder)
    fast, legacy = _hf_tokenizers(folder)
    assert (ours.bos_id, ours.eos_id, ours.pad_id, ours.unk_id, ours.mask_id) == (
        fast.cls_token_id, fast.sep_token_id, fast.pad_token_id, fast.unk_token_id, fast.mask_token_id)
    for text in SENTENCES:
        want = fast(text)["input_ids"]
        assert [ours.bos_id, *ours.encode(text), ours.eos_id] == want, text
        assert ours.pieces(text) == fast.convert_ids_to_tokens(want)[1:-1]
    # the Python ("legacy") BertTokenizer agrees too, except that it NFC-composes the text first: a
    # model that keeps accents then sees "é" where the fast tokenizer (and we) see "e" + U+0301 (it differs on
    # a few rare whitespace and CJK-extension code points, none of them here)
    for text in SENTENCES:
        strips = ours.lowercase if ours.strip_accents is None else ours.strip_accents
        if text != DECOMPOSED or strips:
            assert ours.encode(text) == legacy(text)["input_ids"][1:-1], text


def test_typed_mask_survives(loaded):
    tok = loaded.tokenizer
    ids = tok.encode("Paris is the [MASK] of France.")
    assert ids.count(tok.mask_id) == 1 and tok.mask_id == VOCAB.index("[MASK]")
    assert tok.pieces("Paris is the [MASK] of France.") == ["paris", "is", "the", "[MASK]", "of", "france", "."]
    assert tok.decode([tok.bos_id, *ids, tok.eos_id, tok.pad_id]) == "paris is the [MASK] of france."
    assert tok.decode(tok.encode("unaffable walked")) == "unaffable walked"
    assert tok.kind == "wordpiece" and tok.vocab_size == len(VOCAB) and not tok.is_byte(5)


def test_tokenizer_save_roundtrip(tmp_path, loaded):
    loaded.tokenizer.save(tmp_path)
    again = WordPieceTokenizer.load(tmp_path)
    for text in SENTENCES:
        assert again.encode(text) == loaded.tokenizer.encode(text)


def test_vocab_from_tokenizer_json_when_no_vocab_txt(tmp_path):
    """transformers 5 saves a BERT tokenizer as tokenizer.json without vocab.txt."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "vocab.txt").write_text("".join(t + "\n" for t in VOCAB), encoding="utf-8")
    fast = transformers.BertTokenizer.from_pretrained(src)
    fast.save_pretrained(tmp_path / "saved")
    ours = WordPieceTokenizer.load(tmp_path / "saved")
    for text in SENTENCES:
        assert [ours.bos_id, *ours.encode(text), ours.eos_id] == fast(text)["input_ids"]


def test_gelu_new_pretraining_gamma_beta_bin(tmp_path):
    """hidden_act gelu_new (tanh GELU); a BertForPreTraining checkpoint (pooler and next-sentence head
    dropped); LayerNorm tensors named gamma/beta in a pytorch_model.bin, with the tied decoder saved."""
    folder = _make(tmp_path / "pt", seed=1, cls_name="BertForPreTraining", hidden_act="gelu_new")
    ref = reference(folder, "BertForPreTraining")
    from safetensors.torch import load_file
    state = load_file(str(folder / "model.safetensors"))
    assert any(k.startswith("bert.pooler.") for k in state) and any(k.startswith("cls.seq_relationship") for k in state)
    old = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
           for k, v in state.items()}
    old["cls.predictions.decoder.weight"] = state["bert.embeddings.word_embeddings.weight"].clone()
    old["bert.embeddings.position_ids"] = torch.arange(64)[None]
    (folder / "model.safetensors").unlink()
    torch.save(old, folder / "pytorch_model.bin")
    loaded = load_pretrained(folder)
    assert loaded.config.activation == "gelu_tanh"
    ids = [[loaded.tokenizer.bos_id, *loaded.tokenizer.encode("Paris is the [MASK] of France."), 3]]
    out = _ours(loaded, ids)
    with torch.no_grad():
        r = ref(torch.tensor(ids), output_attentions=True)
    assert (out.logits - r.prediction_logits).abs().max().item() < 1e-4
    for ours, theirs in zip(out.attention.encoder_self, r.attentions):
        assert (ours - theirs).abs().max().item() < 1e-5


def test_untied_output_layer(tmp_path):
    folder = _make(tmp_path / "untied", seed=2, tie_word_embeddings=False)
    ref = reference(folder)
    loaded = load_pretrained(folder)
    assert not loaded.config.tie_embeddings
    ids = [[2, *loaded.tokenizer.encode("The cat sat on the mat."), 3]]
    with torch.no_grad():
        assert (_ours(loaded, ids).logits - ref(torch.tensor(ids)).logits).abs().max().item() < 1e-4


# ------------------------------------------------------------------ refusals

def _edit_config(folder, **changes):
    path = folder / "config.json"
    d = json.loads(path.read_text())
    d.update(changes)
    path.write_text(json.dumps(d))


def test_missing_vocab_names_the_file(tmp_path, tiny):
    folder = tmp_path / "novocab"
    shutil.copytree(tiny, folder)
    (folder / "vocab.txt").unlink()
    with pytest.raises(HubError, match="vocab.txt"):
        load_pretrained(folder)


@pytest.mark.parametrize("changes, message", [
    ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
    ({"position_embedding_type": "relative_key_query"}, "position_embedding_type"),
    ({"is_decoder": True}, "is_decoder"),
    ({"hidden_act": "quick_gelu"}, "hidden_act"),
    ({"hidden_size": 30}, "hidden_size"),
    ({"vocab_size": 999}, "shape"),
])
def test_unsupported_config_refused(tmp_path, tiny, changes, message):
    folder = tmp_path / "bad"
    shutil.copytree(tiny, folder)
    _edit_config(folder, **changes)
    with pytest.raises(HubError, match=message):
        load_pretrained(folder)


def test_other_tokenizer_class_refused(tmp_path, tiny):
    folder = tmp_path / "ja"
    shutil.copytree(tiny, folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertJapaneseTokenizer"}))
    with pytest.raises(HubError, match="tokenizer_config.json: tokenizer_class 'BertJapaneseTokenizer'"):
        load_pretrained(folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizerFast"}))
    _edit_config(folder, tokenizer_class="BertJapaneseTokenizer")
    with pytest.raises(HubError, match="config.json: tokenizer_class"):
        load_pretrained(folder)


# ------------------------------------------------------------------ other heads, no head

LABELS = {0: "negative", 1: "neutral", 2: "positive"}


def _labelled(folder, cls_name, **overrides):
    return _make(folder, cls_name=cls_name, num_labels=3, id2label=LABELS,
                 label2id={v: k for k, v in LABELS.items()}, **overrides)


def _same_as_transformers(folder, cls_name, pair=("The cat sat on the mat.", "Hello world!")):
    """Our load of `folder` against transformers' `cls_name` on a sentence and a pair: every attention map within
    1e-5, and the head's logits (or, without a head, the last hidden states) within 1e-4. Returns ours."""
    loaded, ref = load_pretrained(folder), reference(folder, cls_name)
    res = bert.fill_mask(loaded, pair[0], text_b=pair[1])
    ids, seg = torch.tensor([res.ids]), torch.tensor([res.segments])
    with torch.no_grad():
        theirs = ref(ids, token_type_ids=seg, output_attentions=True)
        ours = loaded.model(ids, segments=seg, return_attention=True)
    assert len(ours.attention.encoder_self) == len(theirs.attentions) == 2
    for a, b in zip(ours.attention.encoder_self, theirs.attentions):
        assert (a - b).abs().max().item() < 1e-5
    assert max(a.max().item() for a in theirs.attentions) > 0.5  # far from uniform: the comparison means something
    if hasattr(theirs, "logits"):
        assert (loaded.model.task_head(ours.memory) - theirs.logits).abs().max().item() < 1e-4
    else:
        assert (ours.memory - theirs.last_hidden_state).abs().max().item() < 1e-4
    return loaded, res, theirs


def test_sequence_classifier_matches_transformers_and_names_its_labels(tmp_path):
    loaded, res, theirs = _same_as_transformers(_labelled(tmp_path / "cls", "BertForSequenceClassification"),
                                                "BertForSequenceClassification")
    assert loaded.meta["task"] == "classify" and loaded.meta["labels"] == ["negative", "neutral", "positive"]
    probs = torch.softmax(theirs.logits[0], -1)
    assert res.predictions == [] and [c for c, _ in res.classes][0] == LABELS[int(probs.argmax())]
    assert abs(sum(p for _, p in res.classes) - 1) < 1e-5 and abs(res.classes[0][1] - probs.max().item()) < 1e-5


def test_token_classifier_tags_every_token_like_transformers(tmp_path):
    loaded, res, theirs = _same_as_transformers(_labelled(tmp_path / "tag", "BertForTokenClassification"),
                                                "BertForTokenClassification")
    assert loaded.meta["task"] == "tag"
    want = [LABELS[int(i)] for i in theirs.logits[0].argmax(-1)]
    assert [tag for _, tag, _ in res.tags] == want and [pos for pos, _, _ in res.tags] == list(range(len(res.ids)))


def test_labels_without_id2label_are_transformers_defaults(tmp_path):
    loaded = load_pretrained(_make(tmp_path / "cls", cls_name="BertForSequenceClassification", num_labels=2))
    assert loaded.meta["labels"] == ["LABEL_0", "LABEL_1"]


@pytest.mark.parametrize("pooler", [True, False])
def test_bert_model_without_a_head_loads_attention_and_hidden_states(tmp_path, pooler):
    folder = _make(tmp_path / "model", cls_name="BertModel")
    if not pooler:  # BertModel(add_pooling_layer=False) saves no pooler.*
        from safetensors.torch import load_file, save_file
        state = load_file(str(folder / "model.safetensors"))
        save_file({k: v for k, v in state.items() if not k.startswith("pooler.")}, str(folder / "model.safetensors"),
                  metadata={"format": "pt"})
    loaded, res, theirs = _same_as_transformers(folder, "BertModel")
    assert loaded.meta["task"] == "features" and res.predictions == [] and res.classes is None and res.tags is None
    h = torch.nn.functional.normalize(theirs.last_hidden_state[0], dim=-1)  # the hidden states the page compares
    assert (res.similarity - h @ h.T).abs().max().item() < 1e-4 and res.similarity.shape == (len(res.ids),) * 2
    # what a BertModel does not have is not invented: no output bias, no MLM transform, no parameter of its own
    assert not loaded.config.mlm_transform and not loaded.config.output_bias and loaded.config.tie_embeddings


def _sentence_transformers(folder, sub: str = ""):
    """The sentence-transformers layout around a BertModel saved in folder/sub."""
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": sub, "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    if sub:  # the older layout: the root's config.json is sentence-transformers' own
        (folder / "config.json").write_text(json.dumps({"__version__": "2.0.0"}))
    return folder


@pytest.mark.parametrize("sub", ["", "0_BERT"])
def test_sentence_transformers_layout_is_recognised(tmp_path, sub):
    from model.hub import is_hf_folder, size_summary, supported
    root = tmp_path / "st"
    _make(root / sub if sub else root, cls_name="BertModel")
    _sentence_transformers(root, sub)
    assert is_hf_folder(root) and supported(root) and size_summary(root)["d_model"] == 32
    loaded, _, _ = _same_as_transformers(root / sub if sub else root, "BertModel")
    loaded = load_pretrained(root)
    assert loaded.meta["task"] == "features" and loaded.meta["pooling"] == "mean"


def test_modules_json_cannot_point_outside_the_folder(tmp_path):
    from model.hub.layout import model_folder
    outside = _make(tmp_path / "elsewhere", cls_name="BertModel")
    root = tmp_path / "st"
    root.mkdir()
    (root / "modules.json").write_text(json.dumps([{"path": "../elsewhere", "type": "sentence_transformers.models.Transformer"}]))
    assert model_folder(root) == root and outside.is_dir()
    with pytest.raises(HubError, match="config.json"):
        load_pretrained(root)


def test_unsupported_head_is_refused_by_its_architecture(tmp_path):
    folder = _make(tmp_path / "qa", cls_name="BertForQuestionAnswering")
    with pytest.raises(HubError, match="^unsupported architecture BertForQuestionAnswering.*qa_outputs"):
        load_pretrained(folder)


def test_a_pair_given_to_a_model_with_one_segment_is_read_as_segment_0(tmp_path):
    """type_vocab_size 1: there is no embedding for segment 1, so sentence B is read as segment 0 (said by
    one_segment), as transformers reads it with token_type_ids all 0 — never an IndexError."""
    folder = _make(tmp_path / "one", type_vocab_size=1)
    loaded, ref = load_pretrained(folder), reference(folder)
    res = bert.fill_mask(loaded, "the [MASK] sat", text_b="on the mat")
    assert res.one_segment and set(res.segments) == {0}
    with torch.no_grad():
        theirs = ref(torch.tensor([res.ids]), token_type_ids=torch.zeros(1, len(res.ids), dtype=torch.long)).logits[0]
    pos, preds = res.predictions[0]
    assert preds[0][0] == VOCAB[int(theirs[pos].argmax())]
    assert not bert.fill_mask(loaded, "the [MASK] sat").one_segment


def test_unknown_tensors_refused(tmp_path, tiny):
    from safetensors.torch import load_file, save_file
    folder = tmp_path / "extra"
    shutil.copytree(tiny, folder)
    state = load_file(str(folder / "model.safetensors"))
    state["bert.encoder.layer.0.attention.self.distance_embedding.weight"] = torch.zeros(127, 8)
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(HubError, match="distance_embedding"):
        load_pretrained(folder)


def test_fill_mask_too_long(loaded):
    with pytest.raises(ValueError, match="at most 64"):
        bert.fill_mask(loaded, "the " * 70 + "[MASK]")


def test_size_summary_counts_what_we_load(tiny, loaded):
    from model.hub import size_summary
    s = size_summary(tiny)
    assert s["family"] == "bert" and s["d_model"] == loaded.config.d_model and s["layers"] == loaded.config.n_encoder_layers
    assert s["parameters"] == loaded.model.num_parameters()


def test_fill_mask_of_a_sentence_pair_uses_segment_ids_like_transformers(tiny, loaded):
    """A pair [CLS] A [SEP] B [SEP]: B's tokens get segment 1, and our logits equal transformers' with the
    same token_type_ids (and differ from reading B as segment 0, so the segment embedding really counts)."""
    ref = reference(tiny)
    res = bert.fill_mask(loaded, "the [MASK] sat", text_b="on the mat", top=3)
    n_a = res.ids.index(loaded.tokenizer.eos_id) + 1
    assert res.segments == [0] * n_a + [1] * (len(res.ids) - n_a) and res.ids[-1] == loaded.tokenizer.eos_id
    ids = torch.tensor([res.ids])
    with torch.no_grad():
        theirs = ref(ids, token_type_ids=torch.tensor([res.segments])).logits[0]
        ours = loaded.model(ids, segments=torch.tensor([res.segments])).logits[0]
        as_one = loaded.model(ids).logits[0]
    assert (ours - theirs).abs().max().item() < 1e-4
    assert (ours - as_one).abs().max().item() > 1e-3
    pos, preds = res.predictions[0]
    assert preds[0][0] == VOCAB[int(theirs[pos].argmax())]


def test_segments_refused_by_a_model_without_segment_embeddings():
    from model.nn.config import PRESETS
    from model.nn.transformer import Transformer
    m = Transformer(PRESETS["tiny"].replace(architecture="encoder-only"))
    with pytest.raises(ValueError, match="no segment embeddings"):
        m(torch.zeros(1, 3, dtype=torch.long), segments=torch.zeros(1, 3, dtype=torch.long))


@pytest.mark.parametrize("cls_name", ["BertForMaskedLM", "BertForSequenceClassification", "BertForTokenClassification",
                                      "BertModel"])
@pytest.mark.parametrize("segments", [1, 2, 3])
def test_every_head_and_segment_count_reads_any_text_and_pair(tmp_path, cls_name, segments):
    """The class of the type_vocab_size 1 IndexError: whatever the head and the number of segment embeddings, a
    sentence alone, with an empty second sentence or with a real one, is read without an error, every segment id
    has an embedding, and the result holds what the head predicts."""
    loaded = load_pretrained(_make(tmp_path / "m", cls_name=cls_name, type_vocab_size=segments, num_labels=2))
    for text_b in (None, "", "   ", "on the mat [MASK]"):
        res = bert.fill_mask(loaded, "the [MASK] sat", text_b=text_b)
        assert max(res.segments) < segments and len(res.segments) == len(res.ids)
        assert res.one_segment == (segments == 1 and bool(text_b and text_b.strip()))
        assert (len(res.predictions) > 0) == (cls_name == "BertForMaskedLM")
        assert (res.classes is not None) == (cls_name == "BertForSequenceClassification")
        assert (res.tags is not None and len(res.tags) == len(res.ids)) == (cls_name == "BertForTokenClassification")


def test_a_single_output_head_gives_its_raw_score_like_transformers(tmp_path):
    """num_labels 1 (a regression head): the score is transformers' logit as it is, not a softmax (which would be 1)."""
    loaded, res, theirs = _same_as_transformers(_make(tmp_path / "score", cls_name="BertForSequenceClassification",
                                                      num_labels=1), "BertForSequenceClassification")
    assert len(res.classes) == 1 and abs(res.classes[0][1] - theirs.logits[0, 0].item()) < 1e-4
