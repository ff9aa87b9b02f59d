"""Marian / opus-mt through our own model code: tiny random MarianMTModel checkpoints made with
transformers (a test-only dependency) must give the same logits (1e-4), every attention map (1e-5),
the same greedy translation and the same token ids as transformers itself; bad folders give a
HubError that says what is wrong, and a pickle that would run code never runs."""
import json
import os
import shutil
import warnings

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from tests.hub_fixtures_marian import build_marian_folder  # noqa: E402

from model.inference.decode import greedy_decode, translate  # noqa: E402
from model.hub import HubError, load_pretrained  # noqa: E402
from model.hub import marian  # noqa: E402

LOGITS_TOL, ATTENTION_TOL = 1e-4, 1e-5

SENTENCES = [
    "I love you.",
    "The cat sat on the mat.",
    ">>kor<< Where is the station?",
    ">>deu<<My friend did not buy a red apple.",
    ">>xyz<< an unknown language code",
    "Let's meet at 7 o'clock — 10:45, 555-0199!",
    "Café, naïve, façade: déjà vu.",
    "I 😀 emoji 🎉 and ✨ sparkles",
    "나는 너를 사랑해. 안녕하세요",
    "   extra    spaces   everywhere  ",
    "tabs\tand\nnew lines",
    "Hello </s> world <unk> literal specials",
    "a>>kor<< b (code not at the start)",
    "",
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The opus-mt layout: shared, tied embeddings, swish, scaled embeddings, bad_words_ids = [[pad]];
    pad gets a logit bias, so without the ban greedy decoding would produce it."""
    return build_marian_folder(tmp_path_factory.mktemp("marian") / "opus-mt-en-ko", seed=0, pad_bias=2.0)


@pytest.fixture(scope="module")
def untied_folder(tmp_path_factory):
    """Separate encoder / decoder embeddings and output layer, unscaled embeddings, sentences that end."""
    return build_marian_folder(tmp_path_factory.mktemp("marian-untied") / "untied", seed=1, eos_bias=1.5,
                               share_encoder_decoder_embeddings=False, tie_word_embeddings=False,
                               scale_embedding=False)


@pytest.fixture(scope="module")
def ours(folder):
    return load_pretrained(folder)


@pytest.fixture(scope="module")
def theirs(folder):
    return transformers.MarianMTModel.from_pretrained(str(folder), attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def hf_tok(folder):
    with warnings.catch_warnings():  # "Recommended: pip install sacremoses." (the tokenizer never uses it)
        warnings.simplefilter("ignore")
        return transformers.MarianTokenizer.from_pretrained(str(folder))


def copy_folder(src, dst, drop=()):
    shutil.copytree(src, dst)
    for name in drop:
        (dst / name).unlink()
    return dst


def compare_forward(ours_model, hf_model, src, tgt, src_mask=None):
    """max |difference| of logits and of each attention kind, ours against transformers' eager forward."""
    with torch.no_grad():
        o = hf_model(input_ids=src, attention_mask=None if src_mask is None else src_mask.long(),
                     decoder_input_ids=tgt, output_attentions=True)
        m = ours_model(src, tgt, src_pad_mask=src_mask, return_attention=True)
    diffs = {"logits": float((o.logits - m.logits).abs().max())}
    for kind, hf_maps in (("encoder_self", o.encoder_attentions), ("decoder_self", o.decoder_attentions),
                          ("cross", o.cross_attentions)):
        maps = getattr(m.attention, kind)
        assert len(maps) == len(hf_maps) == 2
        for a, b in zip(maps, hf_maps):
            assert a.shape == b.shape
        if src_mask is None:
            diffs[kind] = max(float((a - b).abs().max()) for a, b in zip(maps, hf_maps))
    return diffs


# -----------------------------------------------------------------------------
# config and weights

def test_config_maps_marian_to_our_options(ours, folder):
    hf = json.loads((folder / "config.json").read_text())
    cfg = ours.config
    assert (cfg.architecture, cfg.d_model, cfg.n_heads, cfg.d_ff) == ("encoder-decoder", 32, 4, 64)
    assert (cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.max_len) == (2, 2, 64)
    assert cfg.vocab_size == hf["vocab_size"] and cfg.pad_id == hf["pad_token_id"]
    assert cfg.differences_from_paper() == {"activation": "swish", "pe_layout": "halves", "output_bias": True}
    assert cfg.tie_embeddings and not cfg.norm_first and cfg.embed_scale
    assert ours.model.generator is None and ours.model.tgt_embed.token is ours.model.src_embed.token
    assert ours.meta["task"] == "translation" and ours.meta["family"] == "marian"


def test_logits_and_every_attention_map_match_transformers(ours, theirs, hf_tok):
    tok = ours.tokenizer
    for i, text in enumerate(SENTENCES[:6]):
        src = torch.tensor([tok.encode(text) + [tok.eos_id]])
        g = torch.Generator().manual_seed(i)
        tgt = torch.cat([torch.tensor([[tok.bos_id]]), torch.randint(2, tok.pad_id, (1, 7), generator=g)], 1)
        d = compare_forward(ours.model, theirs, src, tgt)
        assert d["logits"] < LOGITS_TOL, (text, d)
        for kind in ("encoder_self", "decoder_self", "cross"):
            assert d[kind] < ATTENTION_TOL, (text, kind, d)


def test_padded_batch_matches_transformers(ours, theirs):
    tok = ours.tokenizer
    rows = [tok.encode(t) + [tok.eos_id] for t in SENTENCES[:3]]
    L = max(map(len, rows))
    src = torch.tensor([r + [tok.pad_id] * (L - len(r)) for r in rows])
    mask = src != tok.pad_id
    tgt = torch.tensor([[tok.bos_id, 5, 9, 30, 60]] * 3)
    assert compare_forward(ours.model, theirs, src, tgt, src_mask=mask)["logits"] < LOGITS_TOL


def test_untied_embeddings(untied_folder):
    lm = load_pretrained(untied_folder)
    hf = transformers.MarianMTModel.from_pretrained(str(untied_folder), attn_implementation="eager").eval()
    assert not lm.config.tie_embeddings and not lm.config.embed_scale and lm.model.generator is not None
    sd = hf.state_dict()
    assert torch.equal(lm.model.src_embed.token.weight, sd["model.encoder.embed_tokens.weight"])
    assert torch.equal(lm.model.tgt_embed.token.weight, sd["model.decoder.embed_tokens.weight"])
    assert torch.equal(lm.model.generator.weight, sd["lm_head.weight"])
    tok = lm.tokenizer
    src = torch.tensor([tok.encode(SENTENCES[1]) + [tok.eos_id]])
    d = compare_forward(lm.model, hf, src, torch.tensor([[tok.bos_id, 7, 8, 9]]))
    assert d["logits"] < LOGITS_TOL and max(d[k] for k in ("encoder_self", "decoder_self", "cross")) < ATTENTION_TOL


def test_old_style_bin_with_every_tied_copy_and_the_sinusoids(folder, theirs, ours, tmp_path):
    """Real opus-mt pytorch_model.bin files hold model.shared, both embed_tokens, lm_head and the
    position tables: the same model comes out."""
    d = copy_folder(folder, tmp_path / "bin", drop=["model.safetensors"])
    state = {k: v.clone() for k, v in theirs.state_dict().items()}
    assert "model.encoder.embed_positions.weight" in state and "lm_head.weight" in state
    torch.save(state, d / "pytorch_model.bin")
    lm = load_pretrained(d)
    assert lm.config.tie_embeddings
    src = torch.tensor([[5, 6, 7, 0]])
    tgt = torch.tensor([[ours.tokenizer.bos_id, 8, 9]])
    with torch.no_grad():
        assert torch.allclose(lm.model(src, tgt).logits, ours.model(src, tgt).logits, atol=1e-6)
    # positions that are not Marian's sinusoids are refused, not silently replaced
    state["model.encoder.embed_positions.weight"] = torch.randn_like(state["model.encoder.embed_positions.weight"])
    torch.save(state, d / "pytorch_model.bin")
    with pytest.raises(HubError, match="embed_positions"):
        load_pretrained(d)


# -----------------------------------------------------------------------------
# decoding

def hf_greedy(hf_model, src_ids, steps):
    """transformers' greedy generation (its generation_config: bad_words_ids = [[pad]]), without the
    forced </s> at the length limit; returns (tokens without start/eos, finished)."""
    with torch.no_grad():
        out = hf_model.generate(torch.tensor([src_ids]), num_beams=1, do_sample=False, max_new_tokens=steps,
                                forced_eos_token_id=None)[0].tolist()
    out = out[1:]
    eos = hf_model.config.eos_token_id
    return (out[: out.index(eos)], True) if eos in out else (out, False)


@pytest.mark.parametrize("which", ["tied", "untied"])
def test_greedy_translation_matches_transformers(which, ours, theirs, untied_folder):
    if which == "tied":
        lm, hf = ours, theirs
    else:
        lm = load_pretrained(untied_folder)
        hf = transformers.MarianMTModel.from_pretrained(str(untied_folder), attn_implementation="eager").eval()
    finished = 0
    for text in SENTENCES[:8]:
        r = translate(lm, text, greedy=True)
        steps = min(len(r.src_ids) + 50, lm.config.max_len - 1)  # translate()'s default: input length + 50 (paper 6.1)
        want, done = hf_greedy(hf, r.src_ids, steps)
        assert r.out_ids == want and r.finished == done, text
        assert lm.tokenizer.pad_id not in r.out_ids
        finished += done
    if which == "untied":
        assert finished >= 2  # the comparison covers sentences that end, not only the length limit


def test_pad_is_never_produced(ours):
    """The folder's model prefers pad; without the ban greedy decoding would produce it."""
    tok = ours.tokenizer
    assert tok.banned_ids == (tok.pad_id,) and tok.bos_id == tok.pad_id
    src = tok.encode(SENTENCES[0]) + [tok.eos_id]
    free = greedy_decode(ours.model, src, bos_id=tok.bos_id, eos_id=tok.eos_id, max_len=12, record=False)
    assert tok.pad_id in free.tokens  # the ban matters for this model
    banned = translate(ours, SENTENCES[0], greedy=True)
    assert tok.pad_id not in banned.out_ids
    beam = translate(ours, SENTENCES[0], beam_size=3)
    assert tok.pad_id not in beam.out_ids and all(s.token != tok.pad_id for s in beam.steps)
    assert all(dict(s.top).get(tok.pad_id, 0.0) == 0.0 for s in beam.steps)


# -----------------------------------------------------------------------------
# tokenizer

def test_tokenizer_ids_match_transformers(ours, hf_tok):
    tok = ours.tokenizer
    for text in SENTENCES:
        want = hf_tok(text).input_ids
        assert want[-1] == tok.eos_id
        assert tok.encode(text) == want[:-1], text  # no </s>: translate() appends it
        assert len(tok.pieces(text)) == len(want) - 1
    assert tok.encode(">>kor<< I love you.")[0] == hf_tok.convert_tokens_to_ids(">>kor<<") != tok.unk_id
    assert tok.encode(">>xyz<< hi")[0] == tok.unk_id
    assert tok.pieces(">>kor<< I love you.")[0] == ">>kor<<"
    assert ">>kor<<" in tok.language_codes and tok.vocab_size == len(hf_tok)


def test_tokenizer_decode_matches_transformers(ours, hf_tok):
    tok = ours.tokenizer
    g = torch.Generator().manual_seed(0)
    samples = [tok.encode(t) for t in SENTENCES] + [torch.randint(0, tok.vocab_size, (15,), generator=g).tolist()
                                                   for _ in range(10)]
    for ids in samples:
        ids = ids + [tok.eos_id, tok.pad_id]
        assert tok.decode(ids) == hf_tok.decode(ids, skip_special_tokens=True), ids
    for i in range(tok.vocab_size):
        assert tok.id_to_piece(i) == hf_tok.convert_ids_to_tokens(i)
    assert (tok.bos_id, tok.pad_id, tok.eos_id, tok.unk_id) == (
        ours.config.pad_id, hf_tok.pad_token_id, hf_tok.eos_token_id, hf_tok.unk_token_id)
    assert not any(tok.is_byte(i) for i in range(tok.vocab_size))


def test_separate_vocabularies(folder, tmp_path):
    """separate_vocabs (tokenizer_config.json): vocab.json for the source, target_vocab.json and
    target.spm for the target, as transformers' MarianTokenizer."""
    import sentencepiece as spm
    d = copy_folder(folder, tmp_path / "sep")
    vocab = json.loads((d / "vocab.json").read_text(encoding="utf-8"))
    sp = spm.SentencePieceProcessor(model_file=str(d / "target.spm"))
    target = {"</s>": 0, "<unk>": 1}
    for i in reversed(range(sp.get_piece_size())):  # another order than vocab.json
        if not (sp.is_control(i) or sp.is_unknown(i)):
            target.setdefault(sp.id_to_piece(i), len(target))
    while len(target) < len(vocab) - 1:
        target[f"<fill{len(target)}>"] = len(target)
    target["<pad>"] = len(vocab) - 1
    (d / "target_vocab.json").write_text(json.dumps(target, ensure_ascii=False), encoding="utf-8")
    tcfg = json.loads((d / "tokenizer_config.json").read_text())
    (d / "tokenizer_config.json").write_text(json.dumps({**tcfg, "separate_vocabs": True}))
    tok = load_pretrained(d).tokenizer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf = transformers.MarianTokenizer.from_pretrained(str(d))
    assert tok.separate_vocabs and hf.separate_vocabs
    for text in SENTENCES:
        assert tok.encode(text) == hf(text).input_ids[:-1], text
    g = torch.Generator().manual_seed(1)
    for _ in range(10):
        ids = torch.randint(0, len(vocab), (12,), generator=g).tolist()
        assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=True), ids
        assert [tok.id_to_piece(i) for i in ids] == hf.convert_ids_to_tokens(ids)
    (d / "target_vocab.json").unlink()
    with pytest.raises(HubError, match=r"target_vocab\.json"):
        load_pretrained(d)


# -----------------------------------------------------------------------------
# bad folders

@pytest.mark.parametrize("name", ["source.spm", "target.spm", "vocab.json"])
def test_missing_tokenizer_file(folder, tmp_path, name):
    d = copy_folder(folder, tmp_path / "m", drop=[name])
    with pytest.raises(HubError, match=name.replace(".", r"\.")):
        load_pretrained(d)


def test_corrupt_tokenizer_file(folder, tmp_path):
    d = copy_folder(folder, tmp_path / "m")
    (d / "source.spm").write_bytes(b"this is not a sentencepiece model")
    with pytest.raises(HubError, match=r"source\.spm"):
        load_pretrained(d)


def test_corrupt_safetensors(folder, tmp_path):
    d = copy_folder(folder, tmp_path / "m")
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])  # truncated download
    with pytest.raises(HubError, match=r"model\.safetensors"):
        load_pretrained(d)
    (d / "model.safetensors").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(HubError, match=r"model\.safetensors"):
        load_pretrained(d)


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_pickle_that_would_run_code_is_refused(folder, tmp_path):
    d = copy_folder(folder, tmp_path / "m", drop=["model.safetensors"])
    marker = tmp_path / "pwned"
    torch.save({"model.shared.weight": torch.zeros(2, 2), "payload": _Exploit(marker)}, d / "pytorch_model.bin")
    with pytest.raises(HubError, match=r"pytorch_model\.bin"):
        load_pretrained(d)
    assert not marker.exists()


def edit_config(folder, tmp_path, **changes):
    d = copy_folder(folder, tmp_path / "m")
    hf = json.loads((d / "config.json").read_text())
    hf.update(changes)
    (d / "config.json").write_text(json.dumps(hf))
    return d


@pytest.mark.parametrize("changes,match", [
    ({"normalize_before": True}, "pre-LN"),
    ({"add_final_layer_norm": True}, "final LayerNorm"),
    ({"normalize_embedding": True}, "after the embeddings"),
    ({"static_position_embeddings": False}, "learned position"),
    ({"activation_function": "tanh"}, "activation_function"),
    ({"decoder_attention_heads": 2}, "attention heads"),
    ({"decoder_ffn_dim": 128}, "feed-forward|decoder_ffn_dim 128 but the weights have 64"),
    ({"decoder_vocab_size": 7}, "decoder_vocab_size"),
    ({"eos_token_id": [0, 1]}, "eos_token_id"),
])
def test_unsupported_config_is_refused(folder, tmp_path, changes, match):
    with pytest.raises(HubError, match=match):
        load_pretrained(edit_config(folder, tmp_path, **changes))


def test_paper_like_options_are_accepted(folder, tmp_path):
    """Options at their Marian values load; a relu model is a relu model."""
    lm = load_pretrained(edit_config(folder, tmp_path, normalize_before=False, static_position_embeddings=True,
                                     activation_function="relu"))
    assert lm.config.activation == "relu"


def test_unknown_tensor_is_refused(folder, tmp_path):
    from safetensors.torch import load_file, save_file
    d = copy_folder(folder, tmp_path / "m")
    state = load_file(str(d / "model.safetensors"))
    state["model.encoder.layer_norm.weight"] = torch.ones(32)
    save_file(state, str(d / "model.safetensors"))
    with pytest.raises(HubError, match="encoder.layer_norm"):
        load_pretrained(d)


def test_missing_tensor_is_refused(folder, tmp_path):
    from safetensors.torch import load_file, save_file
    d = copy_folder(folder, tmp_path / "m")
    state = load_file(str(d / "model.safetensors"))
    del state["model.decoder.layers.1.encoder_attn.k_proj.weight"]
    save_file(state, str(d / "model.safetensors"))
    with pytest.raises(HubError, match=r"decoder\.layers\.1\.encoder_attn\.k_proj\.weight"):
        load_pretrained(d)


# -----------------------------------------------------------------------------
# facts

@pytest.mark.parametrize("name,src,tgt", [
    ("Helsinki-NLP/opus-mt-en-de", "en", "de"),
    ("Helsinki-NLP/opus-mt-tc-big-en-ko", "en", "ko"),
    ("/some/where/opus-mt-ko-en/", "ko", "en"),
])
def test_meta_languages_from_the_name(name, src, tgt):
    m = marian.meta({"_name_or_path": name, "pad_token_id": 5})
    assert (m["task"], m["source_lang"], m["target_lang"]) == ("translation", src, tgt)


def test_meta_without_a_name():
    assert marian.meta({})["task"] == "translation"


def test_separate_vocabularies_with_the_output_tied_to_the_target_side(tmp_path):
    """opus-mt-tc-big layout: source and target embeddings differ, lm_head is the decoder's embedding. Our model
    reuses the target embedding for the output layer (tie_output) instead of a third copy, so it holds exactly
    the checkpoint's parameters, and its logits equal transformers'."""
    from model.hub import size_summary
    folder = build_marian_folder(tmp_path / "tc-big", seed=2, eos_bias=1.5, share_encoder_decoder_embeddings=False,
                                 tie_word_embeddings=True)
    lm = load_pretrained(folder)
    hf = transformers.MarianMTModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    assert not lm.config.tie_embeddings and lm.config.tie_output and lm.model.generator is None
    assert lm.config.differences_from_paper()["tie_output"] is True
    assert torch.equal(lm.model.tgt_embed.token.weight, hf.state_dict()["lm_head.weight"])
    assert lm.model.num_parameters() == size_summary(folder)["parameters"]
    tok = lm.tokenizer
    src = torch.tensor([tok.encode(SENTENCES[1]) + [tok.eos_id]])
    d = compare_forward(lm.model, hf, src, torch.tensor([[tok.bos_id, 7, 8, 9]]))
    assert d["logits"] < LOGITS_TOL


def test_size_summary_of_a_bin_counts_tied_copies_once(folder, theirs, ours, tmp_path):
    """torch.save keeps tied tensors (model.shared, both embed_tokens, lm_head) as one storage: counted once."""
    from model.hub import size_summary
    d = copy_folder(folder, tmp_path / "bin", drop=["model.safetensors"])
    torch.save(theirs.state_dict(), d / "pytorch_model.bin")
    assert size_summary(d)["parameters"] == ours.model.num_parameters() == size_summary(folder)["parameters"]
