"""DistilBERT through our own model code (model/hub/distilbert.py, renamed to BERT and run by model/hub/bert.py):
a tiny random DistilBertForMaskedLM built with transformers, saved in the Hugging Face layout, loaded by
model.hub, compared with transformers' own forward."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

transformers = pytest.importorskip("transformers")

from model.hub import HubError, known_family, load_pretrained, size_summary  # noqa: E402
from model.hub import bert  # noqa: E402
from tests.model.test_hub_bert import _edit_config, _ours, reference, save_tiny  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "a", "is", "of", "and", "cat", "sat", "on", "mat", "paris", "capital", "france", "hello", "world",
         "love", "you", "i", ".", ",", "!", "?", "'", "##s", "##ing", "##ed"] + list("abcdefghijklmnopqrstuvwxyz")
VOCAB = list(dict.fromkeys(SPECIALS + WORDS))
SENTENCES = ["The cat sat on the mat.", "Paris is the [MASK] of France.", "Hello, world!", "I love you",
             "unknown words: xyzzy!"]


def _randomise(model: torch.nn.Module, seed: int = 0) -> None:
    """Large random weights, so attention is far from uniform and any mistake shows (not the fixed sinusoids)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("position_embeddings.weight") and model.config.sinusoidal_pos_embds:
                continue  # the sinusoids, as transformers made them
            if "layer_norm" in name.lower() and name.endswith("weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.6 * torch.randn(p.shape, generator=g))


def _make(folder, *, seed=0, cls_name="DistilBertForMaskedLM", tokenizer_config=None, **overrides):
    kw = dict(vocab_size=len(VOCAB), dim=32, n_layers=2, n_heads=4, hidden_dim=37, max_position_embeddings=64,
              pad_token_id=0)
    kw.update(overrides)
    return save_tiny(folder, cls_name, transformers.DistilBertConfig(**kw), vocab=VOCAB, randomise=_randomise,
                     seed=seed, tokenizer_config=tokenizer_config)


def _reference(folder, cls_name="DistilBertForMaskedLM"):
    return reference(folder, cls_name)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return _make(tmp_path_factory.mktemp("distilbert") / "tiny")


@pytest.fixture(scope="module")
def loaded(tiny):
    return load_pretrained(tiny)


def _same(loaded, ref, ids, key="logits"):
    out = _ours(loaded, ids)
    with torch.no_grad():
        r = ref(torch.tensor(ids), output_attentions=True)
    assert (out.logits - getattr(r, key)).abs().max().item() < 1e-4
    assert len(out.attention.encoder_self) == len(r.attentions) == loaded.config.n_encoder_layers
    for ours, theirs in zip(out.attention.encoder_self, r.attentions):
        assert ours.shape == theirs.shape
        assert (ours - theirs).abs().max().item() < 1e-5
    assert max(a.max().item() for a in r.attentions) > 0.5  # far from uniform: the comparison means something


def test_registered():
    assert known_family("distilbert") == "distilbert"


def test_config_is_bert_without_segments(loaded):
    c = loaded.config
    assert c.architecture == "encoder-only" and not c.norm_first and c.positional == "learned"
    assert (c.max_len, c.segment_vocab, c.d_ff, c.n_encoder_layers, c.n_heads, c.d_model) == (64, 0, 37, 2, 4, 32)
    assert c.embed_norm and not c.embed_scale and c.mlm_transform and c.output_bias and c.tie_embeddings
    assert c.activation == "gelu" and c.norm_eps == 1e-12 and c.pad_id == 0
    assert loaded.meta["task"] == "mlm" and loaded.meta["family"] == "distilbert"
    assert loaded.model.src_embed.segment is None


def test_logits_and_attention_match_transformers(tiny, loaded):
    ref = _reference(tiny)
    tok = loaded.tokenizer
    for text in SENTENCES:
        _same(loaded, ref, [[tok.bos_id, *tok.encode(text), tok.eos_id]])


def test_padded_batch_matches_transformers(tiny, loaded):
    ref = _reference(tiny)
    tok = loaded.tokenizer
    rows = [[tok.bos_id, *tok.encode(t), tok.eos_id] for t in ("The cat sat on the mat.", "Hello [MASK]!")]
    L = max(map(len, rows))
    ids = torch.tensor([r + [tok.pad_id] * (L - len(r)) for r in rows])
    mask = ids != tok.pad_id
    out = _ours(loaded, ids, mask)
    with torch.no_grad():
        r = ref(ids, attention_mask=mask.long(), output_attentions=True)
    assert ((out.logits - r.logits).abs() * mask[:, :, None]).max().item() < 1e-4
    for ours, theirs in zip(out.attention.encoder_self, r.attentions):
        assert ((ours - theirs).abs() * mask[:, None, :, None]).max().item() < 1e-5


def test_tokenizer_ids_match_transformers(tiny, loaded):
    theirs = transformers.DistilBertTokenizer.from_pretrained(tiny)
    tok = loaded.tokenizer
    for text in SENTENCES:
        assert [tok.bos_id, *tok.encode(text), tok.eos_id] == theirs(text)["input_ids"]


def test_tokenizer_saved_by_transformers_is_taken(tmp_path, tiny):
    """save_pretrained of DistilBertTokenizer writes tokenizer_class "DistilBertTokenizer" (BertTokenizer's ids)."""
    folder = tmp_path / "saved"
    shutil.copytree(tiny, folder)
    (folder / "vocab.txt").unlink()
    transformers.DistilBertTokenizer.from_pretrained(tiny).save_pretrained(folder)
    loaded = load_pretrained(folder)
    assert loaded.tokenizer.encode("Paris is the [MASK] of France.") == load_pretrained(tiny).tokenizer.encode(
        "Paris is the [MASK] of France.")


def test_fill_mask_top_is_transformers_argmax(tiny, loaded):
    ref = _reference(tiny)
    for text, pair in (("Paris is the [MASK] of France.", None), ("the [MASK] sat", "on the mat")):
        res = bert.fill_mask(loaded, text, top=3, text_b=pair)
        with torch.no_grad():
            logits = ref(torch.tensor([res.ids])).logits[0]  # no token types: a pair is one sequence
        assert res.predictions
        for pos, preds in res.predictions:
            assert preds[0][0] == VOCAB[int(logits[pos].argmax())]


def test_gelu_relu_and_untied(tmp_path):
    for i, overrides in enumerate(({"activation": "relu"}, {"tie_word_embeddings": False})):
        folder = _make(tmp_path / f"v{i}", seed=i + 1, **overrides)
        loaded = load_pretrained(folder)
        assert loaded.config.tie_embeddings == overrides.get("tie_word_embeddings", True)
        _same(loaded, _reference(folder), [[2, *loaded.tokenizer.encode("The cat sat on the mat."), 3]])


def test_sinusoidal_positions_are_the_papers(tmp_path):
    folder = _make(tmp_path / "sin", seed=3, sinusoidal_pos_embds=True)
    loaded = load_pretrained(folder)
    assert loaded.config.positional == "sinusoidal" and loaded.config.pe_layout == "interleaved"
    _same(loaded, _reference(folder), [[2, *loaded.tokenizer.encode("Paris is the [MASK] of France."), 3]])
    assert size_summary(folder)["parameters"] == loaded.model.num_parameters()


def test_a_trained_sinusoid_table_runs_as_stored(tmp_path):
    """transformers 5 leaves the sinusoidal table trainable and runs the stored one: so do we (learned)."""
    from safetensors.torch import load_file, save_file
    folder = _make(tmp_path / "sin", seed=3, sinusoidal_pos_embds=True)
    state = load_file(str(folder / "model.safetensors"))
    state["distilbert.embeddings.position_embeddings.weight"] += 0.5 * torch.randn(64, 32)
    save_file(state, str(folder / "model.safetensors"))
    loaded = load_pretrained(folder)
    assert loaded.config.positional == "learned"
    _same(loaded, _reference(folder), [[2, *loaded.tokenizer.encode("Paris is the [MASK] of France."), 3]])


def test_size_summary_counts_what_we_load(tiny, loaded):
    s = size_summary(tiny)
    assert s["family"] == "distilbert" and (s["d_model"], s["layers"], s["d_ff"], s["heads"]) == (32, 2, 37, 4)
    assert s["parameters"] == loaded.model.num_parameters()


# ------------------------------------------------------------------ refusals

@pytest.mark.parametrize("changes, message", [
    ({"activation": "quick_gelu"}, "activation 'quick_gelu'"),
    ({"dim": 30}, "dim 30 is not divisible by n_heads 4|config.json says dim 30 but the weights are 32 wide"),
    ({"vocab_size": 999}, "shape"),
])
def test_unsupported_config_refused(tmp_path, tiny, changes, message):
    folder = tmp_path / "bad"
    shutil.copytree(tiny, folder)
    _edit_config(folder, **changes)
    with pytest.raises(HubError, match=message):
        load_pretrained(folder)


LABELS = {0: "negative", 1: "positive"}


def _ours_and_theirs(folder, cls_name, text="The cat sat on the mat."):
    """Our load and transformers' `cls_name` on one sentence: every attention map within 1e-5 (and far from
    uniform, so the comparison means something)."""
    loaded, ref = load_pretrained(folder), _reference(folder, cls_name)
    res = bert.fill_mask(loaded, text)
    ids = torch.tensor([res.ids])
    out = _ours(loaded, ids)
    with torch.no_grad():
        theirs = ref(ids, output_attentions=True)
    assert len(out.attention.encoder_self) == len(theirs.attentions) == 2
    for a, b in zip(out.attention.encoder_self, theirs.attentions):
        assert (a - b).abs().max().item() < 1e-5
    assert max(a.max().item() for a in theirs.attentions) > 0.5
    return loaded, res, out, theirs


def test_headless_model_loads_attention_and_hidden_states(tmp_path):
    """A DistilBertModel: the encoder alone, attention and hidden states like transformers', no prediction."""
    loaded, res, out, theirs = _ours_and_theirs(_make(tmp_path / "bare", cls_name="DistilBertModel"), "DistilBertModel")
    assert loaded.meta["task"] == "features" and res.predictions == [] and res.classes is None
    assert (out.memory - theirs.last_hidden_state).abs().max().item() < 1e-4


def test_sequence_classifier_matches_transformers(tmp_path):
    folder = _make(tmp_path / "cls", cls_name="DistilBertForSequenceClassification", num_labels=2, id2label=LABELS,
                   label2id={v: k for k, v in LABELS.items()})
    loaded, res, out, theirs = _ours_and_theirs(folder, "DistilBertForSequenceClassification")
    assert (loaded.model.task_head(out.memory) - theirs.logits).abs().max().item() < 1e-4
    assert loaded.meta["task"] == "classify" and loaded.meta["labels"] == ["negative", "positive"]
    assert res.classes[0][0] == LABELS[int(theirs.logits[0].argmax())]
    assert abs(res.classes[0][1] - torch.softmax(theirs.logits[0], -1).max().item()) < 1e-5


def test_token_classifier_matches_transformers(tmp_path):
    folder = _make(tmp_path / "tag", cls_name="DistilBertForTokenClassification", num_labels=2, id2label=LABELS,
                   label2id={v: k for k, v in LABELS.items()})
    loaded, res, out, theirs = _ours_and_theirs(folder, "DistilBertForTokenClassification")
    assert (loaded.model.task_head(out.memory) - theirs.logits).abs().max().item() < 1e-4
    assert [tag for _, tag, _ in res.tags] == [LABELS[int(i)] for i in theirs.logits[0].argmax(-1)]


def test_unsupported_head_is_refused_by_its_architecture(tmp_path):
    folder = _make(tmp_path / "qa", cls_name="DistilBertForQuestionAnswering")
    with pytest.raises(HubError, match="^unsupported architecture DistilBertForQuestionAnswering"):
        load_pretrained(folder)


def test_unknown_tensors_refused(tmp_path, tiny):
    from safetensors.torch import load_file, save_file
    folder = tmp_path / "extra"
    shutil.copytree(tiny, folder)
    state = load_file(str(folder / "model.safetensors"))
    state["distilbert.embeddings.token_type_embeddings.weight"] = torch.zeros(2, 32)
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(HubError, match="token_type_embeddings"):
        load_pretrained(folder)


def test_other_tokenizer_class_refused(tmp_path, tiny):
    folder = tmp_path / "ja"
    shutil.copytree(tiny, folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertJapaneseTokenizer"}))
    with pytest.raises(HubError, match="tokenizer_class 'BertJapaneseTokenizer'"):
        load_pretrained(folder)
