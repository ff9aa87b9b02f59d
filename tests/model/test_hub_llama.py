"""Llama, Mistral and Qwen2 through our own model code (model/hub/llama.py), against transformers on tiny random
checkpoints saved with save_pretrained (offline): logits within 1e-4, every attention map within 1e-5, the
headless *Model classes' hidden states; tokenizers (a SentencePiece tokenizer.model; byte-level BPE tokenizer.json
with Llama 3's and Qwen2's split regexes, trained here with the `tokenizers` package) equal to sentencepiece /
tokenizers on 30 varied sentences, Korean among them."""
from __future__ import annotations

import io
import json
import os
import unicodedata

import pytest
import torch

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
spm = pytest.importorskip("sentencepiece")

from model.hub import HubError, load_pretrained, size_summary  # noqa: E402
from model.hub import llama  # noqa: E402

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
CORPUS = [
    "The cat sat on the mat. The dog's bed is by the door, and the cat's toy is there.",
    "I love you. We're going home at 10:30, aren't we? They'll see it; she'd know.",
    "In 2017, the Transformer replaced recurrence with attention: 6 layers, 8 heads, 512 dimensions.",
    "나는 고양이를 사랑한다. 고양이는 도서관에 있다. 우리는 학교에 간다. 어텐션은 쿼리와 키를 비교한다.",
    "Café naïve résumé — déjà vu! 😀 🚀 emoji and   extra   spaces\nnew lines\n\n",
    "the the the then there these those this that with without within attention heads",
]
SENTENCES = [
    "Hello, world!", "The cat's mat isn't the dog's; they're theirs.", "I'll pay 1234567 won on 2024-05-09 at 10:30.",
    "Café naïve résumé déjà vu", "Emoji 😀🚀👍🏽 and ❤️ hearts", "나는 고양이를 사랑한다.", "한국어와 English mixed 123",
    "어텐션은 쿼리와 키를 비교해서 값을 섞는다!", unicodedata.normalize("NFD", "한글 자모로 풀어 쓴 문장"),
    "multiple    spaces   here  ", "  leading and trailing spaces  ", "line one\nline two\n\nline four\n",
    "tabs\tand\r\nwindows newlines", "'s 's's 'S 'LL 've 're 'd 'm 't", "symbols: <> [] {} @#$%^&* ~`|\\",
    "3.14159 and 2,718,281 and 00042", "ALL CAPS SHOUTING", "camelCaseWordsAndSnake_case_words",
    "https://example.com/path?q=1&r=2", "email@example.org", "Ελληνικά και русский текст", "中文句子。日本語の文。",
    "a", " ", "", "     ", "\n", "x\u00a0y\u200bz", "The Transformer (Vaswani et al., 2017) — attention is all you need.",
    "끝.",
]
D, HEADS, KV, FF, LAYERS = 64, 8, 2, 96, 2
SP_VOCAB = 400


def _train_sentencepiece() -> bytes:
    proto = io.BytesIO()
    with open(os.devnull, "w") as quiet:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(CORPUS * 3), model_writer=proto, logstream=quiet, vocab_size=SP_VOCAB, model_type="bpe",
            character_coverage=1.0, byte_fallback=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=1,
            shuffle_input_sentence=False, input_sentence_size=0)
    return proto.getvalue()


def _train_byte_bpe(pattern: str | None, nfc: bool, specials: list[str], ignore_merges: bool):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if nfc:
        tok.normalizer = normalizers.NFC()
    if pattern is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=420, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 3, trainer)
    return tok


def _hf_config(family: str, vocab: int, **extra):
    common = dict(vocab_size=vocab, hidden_size=D, intermediate_size=FF, num_hidden_layers=LAYERS,
                  num_attention_heads=HEADS, num_key_value_heads=KV, max_position_embeddings=128, rms_norm_eps=1e-6)
    cls = {"llama": transformers.LlamaConfig, "mistral": transformers.MistralConfig, "qwen2": transformers.Qwen2Config}
    return cls[family](**{**common, **extra})


def _save(folder, family: str, vocab: int, head: bool = True, **extra):
    """A tiny random checkpoint, weights large enough that attention is far from uniform."""
    cfg = _hf_config(family, vocab, **extra)
    names = {"llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2"}[family]
    cls = getattr(transformers, f"{names}ForCausalLM" if head else f"{names}Model")
    torch.manual_seed(0)
    model = cls(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.5 * torch.randn_like(p))
            elif "q_proj" in name or "k_proj" in name:
                p.copy_(0.4 * torch.randn_like(p))
    model.save_pretrained(folder)
    return model


KINDS = {  # name: (family, split regex or None (GPT-2's ByteLevel) or "spm", NFC first, special tokens, ignore_merges, config)
    "llama-spm": ("llama", "spm", False, [], False, dict(rope_theta=500000.0)),
    "mistral-spm": ("mistral", "spm", False, [], False, dict(sliding_window=5)),
    "llama3-bpe": ("llama", LLAMA3_SPLIT, False, ["<|begin_of_text|>", "<|end_of_text|>"], True,
                   dict(rope_theta=500000.0)),
    "qwen2-bpe": ("qwen2", QWEN2_SPLIT, True, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], False,
                  dict(rope_theta=1000000.0, tie_word_embeddings=True)),
    "smollm-bpe": ("llama", None, False, ["<|endoftext|>", "<|im_start|>"], False, {}),
}


def make_checkpoint(folder, name: str):
    """A tiny random checkpoint of KINDS[name] with its tokenizer files in `folder`, as save_pretrained writes it:
    (the transformers model, the reference tokenizer's encode without special tokens)."""
    family, pattern, nfc, specials, ignore, extra = KINDS[name]
    if pattern == "spm":
        proto = _train_sentencepiece()
        sp = spm.SentencePieceProcessor(model_proto=proto)
        model = _save(folder, family, sp.get_piece_size(), bos_token_id=1, eos_token_id=2, **extra)
        (folder / "tokenizer.model").write_bytes(proto)
        return model, sp.encode
    tok = _train_byte_bpe(pattern, nfc, specials, ignore)
    bos = tok.token_to_id(specials[0])
    eos = tok.token_to_id(specials[1] if family == "llama" and pattern else specials[0])
    model = _save(folder, family, tok.get_vocab_size(), bos_token_id=bos, eos_token_id=eos, **extra)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=specials[0],
                                                eos_token=tok.id_to_token(eos))
    fast.save_pretrained(folder)
    return model, lambda text: fast.encode(text, add_special_tokens=False)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """{name: (folder, transformers model, oracle encode)} for each family and tokenizer layout."""
    out = {}
    for name in KINDS:
        folder = tmp_path_factory.mktemp(name)
        out[name] = (folder, *make_checkpoint(folder, name))
    return out


@pytest.mark.parametrize("name", ["llama-spm", "mistral-spm", "llama3-bpe", "qwen2-bpe", "smollm-bpe"])
def test_tokenizer_equals_the_reference_on_30_sentences(checkpoints, name):
    folder, _, reference = checkpoints[name]
    tok = load_pretrained(folder).tokenizer
    assert len(SENTENCES) == 30
    for text in SENTENCES:
        assert tok.encode(text) == reference(text), text
    assert any(tok.encode(s) != reference(unicodedata.normalize("NFC", s)) for s in SENTENCES) == (
        name not in ("qwen2-bpe",) and name.endswith("bpe"))  # NFD Korean: only Qwen2 composes it first
    if name.endswith("bpe"):
        assert tok.decode(tok.encode("나는 고양이를 사랑한다. 😀")) == "나는 고양이를 사랑한다. 😀"


@pytest.mark.parametrize("name", ["llama-spm", "mistral-spm", "llama3-bpe", "qwen2-bpe"])
def test_logits_and_every_attention_map_equal_transformers(checkpoints, name):
    folder, hf_model, _ = checkpoints[name]
    hf_model.config._attn_implementation = "eager"
    loaded = load_pretrained(folder)
    cfg = loaded.config
    assert loaded.meta["task"] == "lm" and loaded.meta["model_type"] == name.split("-")[0].replace("llama3", "llama")
    assert cfg.n_heads == HEADS and cfg.kv_heads == KV and cfg.norm == "rmsnorm" and cfg.positional == "rotary"
    assert loaded.model.num_parameters() == hf_model.num_parameters() == size_summary(folder)["parameters"]
    ids = torch.randint(3, cfg.vocab_size, (2, 13), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = hf_model(ids, output_attentions=True)
        ours = loaded.model(ids, return_attention=True)
        fused = loaded.model(ids).logits
    torch.testing.assert_close(ours.logits, ref.logits, atol=1e-4, rtol=0)
    torch.testing.assert_close(fused, ref.logits, atol=1e-4, rtol=0)
    for theirs, mine in zip(ref.attentions, ours.attention.decoder_self, strict=True):
        torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=0)
        assert mine.max() > 0.5  # far from uniform
    if name == "mistral-spm":  # a window shorter than the sentence: the last query sees only its last 5 keys
        assert cfg.window == 5 and torch.all(ours.attention.decoder_self[0][:, :, -1, :-5] == 0)
    if name == "qwen2-bpe":
        assert cfg.qkv_bias and not cfg.attn_out_bias and cfg.tie_embeddings
    if name == "llama3-bpe":
        assert cfg.rope_theta == 500000.0 and not cfg.tie_embeddings


@pytest.mark.parametrize("family", ["llama", "mistral", "qwen2"])
def test_headless_model_loads_as_features_with_equal_hidden_states(tmp_path, family):
    hf_model = _save(tmp_path, family, 50, head=False, **({"sliding_window": 4} if family == "mistral" else {}))
    (tmp_path / "tokenizer.model").write_bytes(_train_sentencepiece())
    hf_model.config._attn_implementation = "eager"
    with pytest.raises(HubError, match="tokenizer"):  # the tokenizer's pieces do not fit the 50 rows
        load_pretrained(tmp_path)
    hf_model = _save(tmp_path, family, SP_VOCAB, head=False, **({"sliding_window": 4} if family == "mistral" else {}))
    hf_model.config._attn_implementation = "eager"
    loaded = load_pretrained(tmp_path)
    assert loaded.meta["task"] == "features"
    ids = torch.randint(3, SP_VOCAB, (1, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        ref = hf_model(ids, output_attentions=True)
        record = __import__("model.nn.transformer", fromlist=["Intermediates"]).Intermediates()
        hidden = loaded.model.decode(ids, record=record)
    torch.testing.assert_close(hidden, ref.last_hidden_state, atol=1e-4, rtol=0)
    for theirs, mine in zip(ref.attentions, record.decoder_self, strict=True):
        torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=0)


@pytest.mark.parametrize("change,words", [
    ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0}}, "rope_type 'llama3'"),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 0.5}}, "rope_theta"),
    ({"num_key_value_heads": 3}, "num_key_value_heads (3) must divide num_attention_heads (8)"),
    ({"hidden_act": "tanh"}, "hidden_act='tanh' is not supported"),
    ({"architectures": ["LlamaForSequenceClassification"]}, "LlamaForSequenceClassification is not supported"),
    ({"vocab_size": 999}, "vocab_size 999"),
    ({"sliding_window": 0}, "sliding_window"),
    ({"num_key_value_heads": 0}, "num_key_value_heads"),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": float("inf")}}, "rope_theta"),
    ({"rope_parameters": "big"}, "rope_parameters"),
    ({"intermediate_size": 95}, "intermediate_size 95"),
    ({"num_hidden_layers": 3}, "num_hidden_layers 3"),
    ({"hidden_size": 48}, "hidden_size 48"),
    ({"head_dim": 7}, "head_dim"),
    ({"partial_rotary_factor": 2.0}, "partial_rotary_factor"),
    ({"layer_types": ["full_attention", "sliding_attention"]}, "layer_types mixes"),
    ({"model_type": "qwen2", "use_sliding_window": True, "max_window_layers": 1, "sliding_window": 4},
     "window in some layers only"),
    ({"tie_word_embeddings": True}, "lm_head.weight differs from embed_tokens.weight"),
    ({"rms_norm_eps": 5.0}, "rms_norm_eps"),
    ({"max_position_embeddings": -1}, "max_position_embeddings"),
])
def test_what_cannot_be_run_is_refused_by_name(checkpoints, tmp_path, change, words):
    folder = checkpoints["llama-spm"][0]
    for f in folder.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    cfg = json.loads((folder / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, **change}))
    with pytest.raises(HubError, match=words.replace("(", r"\(").replace(")", r"\)")) as refused:
        load_pretrained(tmp_path)
    said = str(refused.value)
    assert "\n" not in said and len(said) < 300 and "Traceback" not in said, said  # one sentence


def test_a_sentencepiece_style_tokenizer_json_alone_asks_for_tokenizer_model(tmp_path):
    d = {"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "byte_fallback": True},
         "normalizer": None, "pre_tokenizer": {"type": "Metaspace", "replacement": "▁"}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(d))
    with pytest.raises(HubError, match="put the model's tokenizer.model beside it"):
        llama.tokenizer(tmp_path, {"model_type": "llama", "vocab_size": 10})


@pytest.mark.parametrize("lang,said", [
    ("en", ["RMSNorm instead of LayerNorm", "rotary positions, theta 500,000, instead of sinusoids",
            "8 query heads share 2 key/value heads (4 per key/value head)"]),
    ("ko", ["LayerNorm 대신 RMSNorm", "사인파 대신 회전 위치(RoPE), theta 500,000",
            "쿼리 헤드 8개가 키/값 헤드 2개를 나눠 씀 (키/값 헤드 하나에 4개)"]),
])
def test_check_says_each_difference_from_the_paper_in_words(checkpoints, capsys, lang, said):
    from model.hub.__main__ import main
    assert main(["check", str(checkpoints["llama-spm"][0]), "--lang", lang]) == 0
    lines = capsys.readouterr().out.splitlines()
    for sentence in said:
        assert f"  - {sentence}" in lines
    assert main(["check", str(checkpoints["mistral-spm"][0]), "--lang", lang]) == 0
    out = capsys.readouterr().out
    assert ("the last 5 tokens" if lang == "en" else "마지막 5개 토큰") in out and out.startswith("mistral decoder-only")
