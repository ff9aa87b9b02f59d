"""XLM-RoBERTa through our own code, against transformers on tiny random models saved with save_pretrained:
RoBERTa's weights (masked-LM, headless and classifier variants) with a SentencePiece Unigram tokenizer, in both
layouts a checkpoint carries (fairseq's sentencepiece.bpe.model, or transformers' Unigram tokenizer.json).
Logits within 1e-4, every attention map within 1e-5, and the ids equal on 30 varied sentences, Korean among them
(transformers for the SentencePiece layout, the tokenizers library for tokenizer.json). Offline, CPU only."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
spm = pytest.importorskip("sentencepiece")
tokenizers = pytest.importorskip("tokenizers")

from model.hub import HubError, load_pretrained, size_summary  # noqa: E402
from model.hub.__main__ import main  # noqa: E402

CORPUS = ["The cat sat on the mat.", "나는 꽃을 사랑한다.", "고양이가 하늘을 본다.", "Hello world, this is a test!",
          "Paris is the capital of France.", "The quick brown fox jumps over the lazy dog near the river bank.",
          "우리는 학교에서 한국어와 영어를 공부합니다.", "Attention is all you need, said the paper in 2017.",
          "Je pense, donc je suis.", "Der Hund läuft schnell über die Straße."]
SENTENCES = [
    "The cat sat on the mat.", "나는 고양이를 좋아한다.", "Paris is the <mask> of France.", "고양이가 <mask> 본다.",
    "  leading and   inner   spaces  ", "Attention is all you need!", "2017년에 논문이 나왔다.", "café naïve résumé",
    "ＦＵＬＬ ｗｉｄｔｈ and ﬁ ligature", "emoji 😀 and ☃ snow", "Der Hund läuft über die Straße.",
    "Je pense, donc je suis.", "question? answer! (brackets) [square] {curly}", "numbers 3.14159 and 1,000,000",
    "우리는 학교에서 한국어와 영어를 공부합니다.", "mixed 한국어 and English 문장", "UPPER lower MiXeD",
    "tabs\tand\nnewlines", "a", "", "<s> typed specials </s>", "the <unk> token", "한", "...", "don't can't won't",
    "The quick brown fox jumps over the lazy dog.", "hyphen-ated and under_scored", "email@example.com",
    "https://example.com/path?q=1", "고양이와 개가 하늘 아래에서 함께 논다."]
assert len(SENTENCES) == 30


def _perturb(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():  # larger than the default 0.02 init, so that the maps are not all uniform
        for p in model.parameters():
            p.normal_(0.0, 0.3) if p.dim() > 1 else p.add_(torch.randn_like(p) * 0.1)


@pytest.fixture(scope="module")
def spm_file(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("xlmr-spm")
    spm.SentencePieceTrainer.train(sentence_iterator=iter(CORPUS * 20), model_prefix=str(where / "sentencepiece.bpe"),
                                   vocab_size=120, model_type="unigram", character_coverage=1.0,
                                   hard_vocab_limit=False, minloglevel=2)
    return where / "sentencepiece.bpe.model"


def make(folder: Path, spm_file: Path, cls=None, layout: str = "spm", seed: int = 0, **overrides):
    """A tiny random XLM-RoBERTa saved in `folder` with its tokenizer in `layout` ("spm": sentencepiece.bpe.model;
    "json": transformers' tokenizer.json); returns (transformers' model, transformers' tokenizer)."""
    cls = cls or transformers.XLMRobertaForMaskedLM
    (folder / "spm").mkdir(parents=True)
    shutil.copy(spm_file, folder / "spm" / "sentencepiece.bpe.model")
    tok = transformers.XLMRobertaTokenizer.from_pretrained(folder / "spm")
    kw = dict(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
              max_position_embeddings=40, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
              eos_token_id=2)
    kw.update(overrides)
    torch.manual_seed(seed)
    model = cls(transformers.XLMRobertaConfig(**kw))
    _perturb(model, seed)
    model.save_pretrained(folder)
    if layout == "spm":
        shutil.copy(spm_file, folder / "sentencepiece.bpe.model")
    else:
        tok.save_pretrained(folder)
    shutil.rmtree(folder / "spm")
    return cls.from_pretrained(folder, attn_implementation="eager").eval(), tok


@pytest.fixture(scope="module", params=["spm", "json"])
def mlm(request, tmp_path_factory, spm_file):
    folder = tmp_path_factory.mktemp(f"xlmr-{request.param}")
    hf, tok = make(folder, spm_file, layout=request.param)
    return folder, hf, tok, load_pretrained(folder)


def _compare(hf, loaded, ids, logits=True):
    x = torch.tensor([ids])
    with torch.no_grad():
        ref = hf(x, output_attentions=True, output_hidden_states=True)
        out = loaded.model(x, return_attention=True)
    maps = out.attention.encoder_self
    assert len(maps) == len(ref.attentions) == hf.config.num_hidden_layers
    for ours, theirs in zip(maps, ref.attentions, strict=True):
        assert ours.shape == theirs.shape
        assert (ours - theirs).abs().max().item() < 1e-5
    assert maps[0][0, :, 0].std().item() > 1e-3  # far from uniform: the comparison means something
    if logits:
        assert (out.logits - ref.logits).abs().max().item() < 1e-4
    return out


def test_the_tokenizer_gives_transformers_ids_on_30_sentences(mlm):
    folder, _, tok, loaded = mlm
    ours = loaded.tokenizer
    reference = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")) if (folder / "tokenizer.json").is_file() \
        else None
    for s in SENTENCES:
        want = tok(s).input_ids
        got = [ours.bos_id, *ours.encode(s), ours.eos_id]
        assert got == want, (s, got, want, [ours.id_to_piece(i) for i in got], tok.convert_ids_to_tokens(want))
        if reference is not None:  # the tokenizers library on the very file we read
            assert got == reference.encode(s).ids, s
    assert ours.mask_id == tok.mask_token_id and ours.vocab_size == len(tok) == loaded.config.vocab_size


def test_logits_and_every_attention_map_match(mlm):
    folder, hf, tok, loaded = mlm
    for s in ("Paris is the <mask> of France.", "나는 <mask> 사랑한다.", SENTENCES[-1]):
        ids = [loaded.tokenizer.bos_id, *loaded.tokenizer.encode(s), loaded.tokenizer.eos_id]
        _compare(hf, loaded, ids)
    ids_a, _ = loaded.tokenizer.pair(loaded.tokenizer.encode("the cat"), loaded.tokenizer.encode("고양이"))
    assert ids_a == tok("the cat", "고양이").input_ids  # <s> A </s></s> B </s>
    _compare(hf, loaded, ids_a)


def test_fill_mask_and_the_cli(mlm, capsys):
    from model.hub.bert import fill_mask
    folder, hf, _, loaded = mlm
    out = fill_mask(loaded, "Paris is the <mask> of France.")
    assert len(out.predictions) == 1 and len(out.predictions[0][1]) == 5
    assert loaded.meta["task"] == "mlm" and loaded.meta["family"] == "xlm_roberta"
    assert size_summary(folder)["parameters"] == loaded.model.num_parameters()
    assert main(["check", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("xlm") and "encoder-only" in out, out


@pytest.mark.parametrize("cls, task", [("XLMRobertaModel", "features"),
                                       ("XLMRobertaForSequenceClassification", "classify")])
def test_headless_and_classifier_variants_match(tmp_path, spm_file, cls, task):
    hf, _ = make(tmp_path / "m", spm_file, cls=getattr(transformers, cls), num_labels=3)
    loaded = load_pretrained(tmp_path / "m")
    assert loaded.meta["task"] == task
    ids = [loaded.tokenizer.bos_id, *loaded.tokenizer.encode("고양이가 하늘을 본다."), loaded.tokenizer.eos_id]
    out = _compare(hf, loaded, ids, logits=False)
    if task == "classify":
        with torch.no_grad():
            want = hf(torch.tensor([ids])).logits[0]
        assert (loaded.model.task_head(out.memory)[0] - want).abs().max().item() < 1e-4


def test_a_vocabulary_that_disagrees_with_the_embedding_is_refused(tmp_path, spm_file):
    make(tmp_path / "m", spm_file, layout="json")
    d = json.loads((tmp_path / "m" / "tokenizer.json").read_text())
    d["model"]["vocab"] += [[f"extra{i}", -20.0] for i in range(50)]
    (tmp_path / "m" / "tokenizer.json").write_text(json.dumps(d))
    with pytest.raises(HubError, match="tokenizer.json"):
        load_pretrained(tmp_path / "m")


def _json_edit(edit):
    def damage(folder: Path):
        d = json.loads((folder / "tokenizer.json").read_text())
        edit(d)
        (folder / "tokenizer.json").write_text(json.dumps(d))
    return damage


def _config_edit(**changes):
    def damage(folder: Path):
        hf = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**hf, **changes}))
    return damage


DAMAGED = [  # (id, layout, damage, the words of the one sentence)
    ("sentencepiece.bpe.model not a model", "spm",
     lambda f: (f / "sentencepiece.bpe.model").write_bytes(b"\x00garbage" * 10), "not a SentencePiece model"),
    ("sentencepiece.bpe.model empty", "spm", lambda f: (f / "sentencepiece.bpe.model").write_bytes(b""), "empty"),
    ("tokenizer.json a BPE model", "json", _json_edit(lambda d: d["model"].update(type="BPE")), "not a Unigram"),
    ("tokenizer.json another normaliser", "json", _json_edit(lambda d: d.update(normalizer={"type": "Lowercase"})),
     "normaliser"),
    ("tokenizer.json another pre-tokenizer", "json", _json_edit(lambda d: d.update(pre_tokenizer={"type": "ByteLevel"})),
     "pre-tokenizer"),
    ("tokenizer.json ids in another order", "json",
     _json_edit(lambda d: d["model"]["vocab"].insert(0, d["model"]["vocab"].pop(2))), "id 0 is not <s>"),
    ("tokenizer.json no <mask>", "json",
     _json_edit(lambda d: d["model"].update(vocab=[v for v in d["model"]["vocab"] if v[0] != "<mask>"])), "<mask>"),
    ("no tokenizer", "spm", lambda f: (f / "sentencepiece.bpe.model").unlink(), "file not found"),
    ("layer_norm_eps NaN", "spm", _config_edit(layer_norm_eps=float("nan")), "layer_norm_eps"),
    ("heads that do not divide", "spm", _config_edit(num_attention_heads=5), "num_attention_heads 5"),
]


@pytest.mark.parametrize("layout, damage, words", [pytest.param(*d[1:], id=d[0]) for d in DAMAGED])
def test_damaged_folders_are_refused_with_one_plain_sentence(tmp_path, spm_file, layout, damage, words):
    from tests.model.test_hub_trust import assert_plain
    make(tmp_path / "m", spm_file, layout=layout)
    damage(tmp_path / "m")
    with pytest.raises(HubError, match=words) as caught:
        load_pretrained(tmp_path / "m")
    assert_plain(str(caught.value), tmp_path / "m")


def test_a_head_no_task_here_runs_is_refused_by_its_class(tmp_path, spm_file):
    from tests.model.test_hub_trust import assert_plain
    make(tmp_path / "m", spm_file, cls=transformers.XLMRobertaForQuestionAnswering)
    with pytest.raises(HubError, match="unsupported architecture XLMRobertaForQuestionAnswering") as caught:
        load_pretrained(tmp_path / "m")
    assert_plain(str(caught.value), tmp_path / "m")
