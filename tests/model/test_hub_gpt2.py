"""GPT-2 through our own model code (model/hub/gpt2.py), checked against transformers on tiny random
models: logits, every attention map, greedy continuation, and the byte-level BPE tokenizer's ids."""
from __future__ import annotations

import json
from collections import Counter

import pytest
import torch

transformers = pytest.importorskip("transformers")
regex = pytest.importorskip("regex")

from model.inference.decode import lm_next_token  # noqa: E402
from model.hub import HubError, load_pretrained  # noqa: E402
from model.hub.gpt2 import PRETOKENIZE, bytes_to_unicode, convert  # noqa: E402
from model.hub.gpt2 import tokenizer as gpt2_tokenizer  # noqa: E402

EOT = "<|endoftext|>"
CORPUS = [
    "The cat sat on the mat. The dog's bed is by the door, and the cat's toy is there.",
    "I love you. We're going home at 10:30, aren't we? They'll see it; she'd know.",
    "In 2017, the Transformer replaced recurrence with attention: 6 layers, 8 heads, 512 dimensions.",
    "나는 고양이를 사랑한다. 고양이는 도서관에 있다. 우리는 학교에 간다.",
    "Café naïve résumé — déjà vu! 😀 🚀 emoji and   extra   spaces\nnew lines\n\n",
    "the the the then there these those this that with without within",
]
SENTENCES = [
    "Hello, world!",
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
    "",
]


def learn_merges(texts: list[str], n: int) -> list[tuple[str, str]]:
    """A tiny byte-level BPE trainer: the most frequent adjacent pair, n times (ties: first seen)."""
    b2u = bytes_to_unicode()
    words = Counter(tuple(b2u[b] for b in w.encode("utf-8")) for t in texts for w in PRETOKENIZE.findall(t))
    merges = []
    for _ in range(n):
        pairs: Counter = Counter()
        for w, c in words.items():
            for p in zip(w, w[1:]):
                pairs[p] += c
        if not pairs:
            break
        best = max(pairs, key=pairs.get)
        merges.append(best)
        merged = Counter()
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i < len(w) - 1 and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += c
        words = merged
    return merges


def write_tokenizer(folder, n_merges: int = 60) -> dict[str, int]:
    b2u = bytes_to_unicode()
    vocab = {c: i for i, c in enumerate(b2u[b] for b in range(256))}
    merges = learn_merges(CORPUS, n_merges)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab[EOT] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges),
                                       encoding="utf-8")
    return vocab


def make_gpt2(folder, seed: int = 0, cls_name: str = "GPT2LMHeadModel", **overrides):
    """A tiny random GPT-2 (`cls_name`: GPT2LMHeadModel, or GPT2Model without a head) saved with our tiny BPE in
    `folder`; returns transformers' model reloaded from the folder with eager attention."""
    vocab = write_tokenizer(folder)
    eot = vocab[EOT]
    kw = dict(vocab_size=len(vocab), n_embd=32, n_layer=2, n_head=4, n_positions=64,
              bos_token_id=eot, eos_token_id=eot)
    kw.update(overrides)
    cls = getattr(transformers, cls_name)
    torch.manual_seed(seed)
    model = cls(transformers.GPT2Config(**kw))
    with torch.no_grad():  # larger than the default 0.02 init, so that the maps are not all uniform
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.3)
            else:  # biases around 0, LayerNorm gains around 1
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(folder)
    return cls.from_pretrained(folder, attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2")
    hf = make_gpt2(folder)
    return folder, hf, load_pretrained(folder)


def _ids(loaded, text="The cat's mat, 나는 😀 10:30"):
    return [loaded.tokenizer.bos_id] + loaded.tokenizer.encode(text)


def test_config_is_gpt2(pair):
    folder, hf, loaded = pair
    cfg = loaded.config
    assert (cfg.architecture, cfg.norm_first, cfg.positional) == ("decoder-only", True, "learned")
    assert cfg.activation == "gelu_tanh"
    assert (cfg.d_model, cfg.n_heads, cfg.n_decoder_layers, cfg.d_ff, cfg.max_len) == (32, 4, 2, 128, 64)
    assert cfg.embed_scale is False and cfg.tie_embeddings is True and cfg.norm_eps == 1e-5
    assert cfg.pad_id == loaded.tokenizer.eos_id == loaded.tokenizer.bos_id == hf.config.eos_token_id
    assert loaded.meta["task"] == "lm" and loaded.meta["family"] == "gpt2"
    ours = sum(p.numel() for p in loaded.model.parameters())
    assert ours == sum(p.numel() for p in hf.parameters())


def test_logits_and_attention_match(pair):
    folder, hf, loaded = pair
    ids = _ids(loaded)
    x = torch.tensor([ids])
    with torch.no_grad():
        ref = hf(x, output_attentions=True)
        out = loaded.model(x, return_attention=True)
    assert (out.logits - ref.logits).abs().max().item() < 1e-4
    maps = out.attention.decoder_self
    assert len(maps) == len(ref.attentions) == 2
    for ours, theirs in zip(maps, ref.attentions):
        assert ours.shape == theirs.shape == (1, 4, len(ids), len(ids))
        assert (ours - theirs).abs().max().item() < 1e-5
    # the maps are not trivially uniform (the test would prove little otherwise)
    assert maps[0][0, :, -1].std().item() > 1e-3


def test_greedy_continuation_matches_generate(pair):
    folder, hf, loaded = pair
    ids = _ids(loaded, "The cat sat on")
    eos = loaded.tokenizer.eos_id
    with torch.no_grad():
        gen = hf.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                          max_new_tokens=8, do_sample=False, pad_token_id=eos)[0, len(ids):].tolist()
    ours, ctx = [], list(ids)
    for _ in range(8):
        probs, _ = lm_next_token(loaded.model, ctx, temperature=0)
        tok = int(probs.argmax())
        ours.append(tok)
        ctx.append(tok)
        if tok == eos:
            break
    assert ours == gen and len(gen) >= 1


def test_tokenizer_matches_transformers(pair):
    folder, hf, loaded = pair
    ref = transformers.GPT2Tokenizer.from_pretrained(folder)
    tok = loaded.tokenizer
    assert tok.vocab_size == len(ref)
    for text in SENTENCES:
        ids = tok.encode(text)
        assert ids == ref(text, add_special_tokens=False)["input_ids"], text
        assert tok.decode(ids) == text
        assert tok.pieces(text) == ref.convert_ids_to_tokens(ids)
    # the literal special token is the special token, as in transformers
    text = f"one{EOT} two"
    assert tok.encode(text) == ref(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(tok.encode(text)) == "one two"  # decode skips pad/bos/eos


def test_tokenizer_pieces_and_bytes(pair, tmp_path):
    tok = pair[2].tokenizer
    assert tok.id_to_piece(tok.encode(" the")[0]) == "Ġthe"
    assert tok.id_to_piece(tok.eos_id) == EOT and tok.kind == "byte_bpe"
    assert not any(tok.is_byte(i) for i in range(tok.vocab_size))
    assert bytes_to_unicode()[ord(" ")] == "Ġ" and bytes_to_unicode()[ord("\n")] == "Ċ"
    assert len(set(bytes_to_unicode().values())) == 256
    # one byte of a multi-byte character on its own decodes as U+FFFD, never raises
    assert "\ufffd" in tok.decode(tok.encode("😀")[:1])
    assert tok.decode([tok.bos_id] + tok.encode("a b") + [tok.eos_id]) == "a b"
    tok.save(tmp_path)  # vocab.json + merges.txt, read back the same
    again = gpt2_tokenizer(tmp_path, {})
    assert all(again.encode(s) == tok.encode(s) for s in SENTENCES) and again.eos_id == tok.eos_id


@pytest.mark.parametrize("overrides", [
    dict(n_inner=48, activation_function="gelu", layer_norm_epsilon=1e-6, n_positions=40),
    dict(tie_word_embeddings=False, n_layer=3, activation_function="gelu_pytorch_tanh"),
])
def test_variants_match(tmp_path, overrides):
    hf = make_gpt2(tmp_path, seed=1, **overrides)
    loaded = load_pretrained(tmp_path)
    ids = _ids(loaded)
    x = torch.tensor([ids])
    with torch.no_grad():
        ref = hf(x, output_attentions=True)
        out = loaded.model(x, return_attention=True)
    assert (out.logits - ref.logits).abs().max().item() < 1e-4
    for ours, theirs in zip(out.attention.decoder_self, ref.attentions, strict=True):
        assert (ours - theirs).abs().max().item() < 1e-5
    assert loaded.config.tie_embeddings == overrides.get("tie_word_embeddings", True)


def test_old_checkpoint_layout(pair):
    """OpenAI-converted checkpoints have no "transformer." prefix and keep the causal-mask buffers."""
    folder, hf, loaded = pair
    hf_cfg = json.loads((folder / "config.json").read_text())
    weights = {k.removeprefix("transformer."): v for k, v in hf.state_dict().items() if k != "lm_head.weight"}
    weights["h.0.attn.bias"] = torch.ones(1, 1, 64, 64).tril()
    weights["h.0.attn.masked_bias"] = torch.tensor(-1e4)
    cfg, state = convert(hf_cfg, weights)
    assert cfg == loaded.config
    ours = loaded.model.state_dict()
    assert all(torch.equal(state[k], ours[k]) for k in state)


def test_missing_merges_names_the_file(pair, tmp_path):
    folder = pair[0]
    for f in folder.iterdir():
        if f.name != "merges.txt":
            (tmp_path / f.name).write_bytes(f.read_bytes())
    with pytest.raises(HubError, match="merges.txt"):
        load_pretrained(tmp_path)
    (tmp_path / "merges.txt").write_text("#version: 0.2\nĠ t h\n", encoding="utf-8")
    with pytest.raises(HubError, match="merges.txt:2"):
        load_pretrained(tmp_path)
    (tmp_path / "merges.txt").write_bytes((folder / "merges.txt").read_bytes())
    (tmp_path / "vocab.json").unlink()
    with pytest.raises(HubError, match="vocab.json"):
        load_pretrained(tmp_path)


@pytest.mark.parametrize("option, value", [
    ("scale_attn_weights", False),
    ("scale_attn_by_inverse_layer_idx", True),
    ("add_cross_attention", True),
    ("activation_function", "quick_gelu"),
])
def test_unsupported_option_refused(pair, tmp_path, option, value):
    folder = pair[0]
    for f in folder.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    cfg = json.loads((folder / "config.json").read_text())
    cfg[option] = value
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(HubError, match=option):
        load_pretrained(tmp_path)


def test_unknown_weights_refused(pair):
    folder, hf, _ = pair
    hf_cfg = json.loads((folder / "config.json").read_text())
    weights = dict(hf.state_dict())
    weights["multiple_choice_head.summary.weight"] = torch.zeros(1, 32)
    with pytest.raises(HubError, match="multiple_choice_head"):
        convert(hf_cfg, weights)
    bad = dict(hf_cfg, n_embd=64)
    with pytest.raises(HubError, match="n_embd"):
        convert(bad, dict(hf.state_dict()))


def test_size_summary_counts_what_we_load(pair):
    """The overview's row for an imported model: sizes from config.json and parameters from the weights
    file's header, equal to our loaded model's own count (tied embeddings once)."""
    from model.hub import size_summary
    folder, hf, loaded = pair
    s = size_summary(folder)
    assert (s["family"], s["layers"], s["d_model"], s["heads"]) == ("gpt2", hf.config.n_layer, hf.config.n_embd,
                                                                    hf.config.n_head)
    assert s["parameters"] == loaded.model.num_parameters()


# ----------------------------------------------------------------------------- GPT2Model: no head

def make_gpt2_model(folder, seed: int = 2, **overrides):
    """A tiny random GPT2Model (no language-model head), as a fine-tuned feature extractor is saved."""
    return make_gpt2(folder, seed, "GPT2Model", **{"n_layer": 3, "n_positions": 48, **overrides})


@pytest.fixture(scope="module")
def headless(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2model")
    hf = make_gpt2_model(folder)
    return folder, hf, load_pretrained(folder)


def test_gpt2model_without_a_head_loads_with_attention_and_hidden_states(headless):
    folder, hf, loaded = headless
    assert json.loads((folder / "config.json").read_text())["architectures"] == ["GPT2Model"]
    assert not any(k.startswith("lm_head") for k in hf.state_dict())
    assert loaded.meta["task"] == "features" and loaded.config.architecture == "decoder-only"
    ids = loaded.tokenizer.encode("The cat's mat, 나는 😀 10:30 and the dog")
    x = torch.tensor([ids])
    with torch.no_grad():
        ref = hf(x, output_attentions=True, output_hidden_states=True)
        out = loaded.model(x, return_attention=True)
        hidden = loaded.model.decode(x)
    maps = out.attention.decoder_self
    assert len(maps) == len(ref.attentions) == 3
    for ours, theirs in zip(maps, ref.attentions, strict=True):
        assert ours.shape == theirs.shape == (1, 4, len(ids), len(ids))
        assert (ours - theirs).abs().max().item() < 1e-5
    assert (hidden - ref.last_hidden_state).abs().max().item() < 1e-4
    assert maps[-1][0, :, -1].std().item() > 1e-3  # far from uniform: the comparison means something
    # the parameters are GPT2Model's own (our output layer is the tied embedding: nothing added)
    assert loaded.model.num_parameters() == sum(p.numel() for p in hf.parameters())


def test_the_head_decides_the_task(headless, pair):
    from model.hub.gpt2 import meta
    assert meta({"architectures": ["GPT2Model"]}) == {"task": "features"}
    for archs in (["GPT2LMHeadModel"], None, [], ["GPT2Model", "GPT2LMHeadModel"]):  # OpenAI's layout is an LM
        assert meta({"architectures": archs}) == {"task": "lm"}
    assert pair[2].meta["task"] == "lm"


def test_gpt2model_check_on_the_command_line(headless, capsys):
    from model.hub.__main__ import main
    assert main(["check", str(headless[0])]) == 0
    out = capsys.readouterr().out
    assert "decoder-only" in out and "no head: attention and hidden states only" in out


def test_a_sequence_classifier_is_refused_by_its_architecture(headless, tmp_path):
    """GPT2ForSequenceClassification (a `score` layer our GPT-2 has no place for) is refused by the class
    config.json names, not by a tensor name and not with a traceback."""
    folder = headless[0]
    vocab = json.loads((folder / "vocab.json").read_text())
    cfg = transformers.GPT2Config(vocab_size=len(vocab), n_embd=32, n_layer=1, n_head=4, n_positions=48,
                                  num_labels=3, pad_token_id=vocab[EOT])
    transformers.GPT2ForSequenceClassification(cfg).save_pretrained(tmp_path)
    for name in ("vocab.json", "merges.txt"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    with pytest.raises(HubError, match="architecture GPT2ForSequenceClassification is not supported"):
        load_pretrained(tmp_path)


def test_tokenizer_json_alone_is_read(pair, tmp_path):
    """transformers 5 saves a GPT-2 tokenizer as tokenizer.json only (no vocab.json or merges.txt): the same ids."""
    folder, hf, loaded = pair
    ref = transformers.AutoTokenizer.from_pretrained(folder)
    ref.save_pretrained(tmp_path)
    assert (tmp_path / "tokenizer.json").is_file() and not (tmp_path / "merges.txt").exists()
    again = gpt2_tokenizer(tmp_path, json.loads((folder / "config.json").read_text()))
    for text in SENTENCES + [f"one{EOT} two"]:
        assert again.encode(text) == loaded.tokenizer.encode(text) == ref(text, add_special_tokens=False)["input_ids"]
    assert again.eos_id == loaded.tokenizer.eos_id
