"""model/nn/differences.py: every difference from the paper said in words, in every language, the same through
the app's `say` and through what `python -m model.hub check` fills them with (model.hub.__main__.said)."""
import dataclasses
import tomllib

import pytest

from model.hub.__main__ import said as hub_said

from app import i18n
from model import PRESETS, TransformerConfig
from model.nn.differences import differences_in_words

TINY = PRESETS["tiny"]
# Sizes and training settings: not ways a model's computation differs from the paper's.
NOT_DIFFERENCES = {"vocab_size", "d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers", "dropout",
                   "max_len", "architecture", "label_smoothing", "pad_id", "rope_theta", "rotary_dim", "attn_block",
                   "linformer_k"}
# One changed value per option (rope_theta and rotary_dim only count with rotary positions, attn_block and linformer_k
# with their attention_impl).
SAMPLES = {
    "norm_first": dict(norm_first=True), "positional": dict(positional="rotary", rope_theta=500000.0, rotary_dim=8),
    "tie_embeddings": dict(tie_embeddings=False), "activation": dict(activation="gelu"),
    "pe_layout": dict(pe_layout="halves"), "embed_scale": dict(embed_scale=False), "norm_eps": dict(norm_eps=1e-6),
    "output_bias": dict(output_bias=True), "segment_vocab": dict(segment_vocab=2), "embed_norm": dict(embed_norm=True),
    "mlm_transform": dict(mlm_transform=True), "tie_output": dict(tie_embeddings=False, tie_output=True),
    "norm": dict(norm="rmsnorm"), "ffn_gated": dict(ffn_gated=True, activation="swish"),
    "ffn_bias": dict(ffn_bias=False), "qkv_bias": dict(qkv_bias=False), "attn_out_bias": dict(attn_out_bias=False),
    "n_kv_heads": dict(n_kv_heads=2), "window": dict(window=4), "d_k": dict(d_k=8, d_v=16), "d_v": dict(d_k=16, d_v=8),
    "global_tokens": dict(window=4, global_tokens=1), "attention_impl": dict(attention_impl="blockwise", attn_block=16),
}
# Further values of an option that take other words.
OTHER_VALUES = [dict(positional="learned"), dict(positional="alibi"), dict(n_kv_heads=1),
                dict(attention_impl="linformer", linformer_k=8)]
LLAMA3 = TINY.replace(architecture="decoder-only", d_model=64, n_heads=8, n_kv_heads=2, norm="rmsnorm", norm_eps=1e-5,
                      norm_first=True, positional="rotary", rope_theta=500000.0, ffn_gated=True, activation="swish",
                      ffn_bias=False, qkv_bias=False, attn_out_bias=False, embed_scale=False, tie_embeddings=False)


def _catalogue(lang):
    with open(i18n.LOCALES / lang / "differences.toml", "rb") as f:
        return {f"differences.{k}": v for k, v in tomllib.load(f).items()}


def test_every_option_is_classified_and_said_in_words():
    """A new TransformerConfig field fails here until it is either a size or has words (a sample here and a
    sentence in model/nn/differences.py)."""
    fields = {f.name for f in dataclasses.fields(TransformerConfig)}
    assert fields - NOT_DIFFERENCES == set(SAMPLES)
    assert differences_in_words(TINY) == [] and differences_in_words(TransformerConfig()) == []
    for name, change in SAMPLES.items():
        for arch in ("encoder-decoder", "decoder-only"):
            cfg = TINY.replace(architecture=arch, **change)
            assert cfg.differences_from_paper(), name
            assert differences_in_words(cfg), f"{name} ({arch}) is a difference from the paper without words"


@pytest.mark.parametrize("lang", list(i18n.LANGS))
def test_every_sentence_exists_and_reads_the_same_in_the_app_and_on_the_command_line(lang, monkeypatch):
    table = _catalogue(lang)
    monkeypatch.setattr(i18n, "lang", lambda: lang)
    seen = set()
    for change in [*SAMPLES.values(), *OTHER_VALUES]:
        for arch in ("encoder-decoder", "decoder-only", "encoder-only"):
            try:
                cfg = TINY.replace(architecture=arch, **change)
            except ValueError:  # an option this architecture cannot have (Linformer without an encoder)
                continue
            for message in differences_in_words(cfg):
                assert message.code in table, message.code
                said = i18n.say(message)
                assert said == hub_said(table[message.code], message.args) and "{" not in said
                seen.add(message.code)
    assert seen == set(table)  # and no sentence is left that nothing says


def test_llama3_in_words():
    monkeypatch = pytest.MonkeyPatch()
    try:
        monkeypatch.setattr(i18n, "lang", lambda: "en")
        en = [i18n.say(m) for m in differences_in_words(LLAMA3)]
        monkeypatch.setattr(i18n, "lang", lambda: "ko")
        ko = [i18n.say(m) for m in differences_in_words(LLAMA3)]
    finally:
        monkeypatch.undo()
    assert "RMSNorm instead of LayerNorm" in en
    assert "rotary positions, theta 500,000, instead of sinusoids" in en
    assert "8 query heads share 2 key/value heads (4 per key/value head)" in en
    assert "gated feed-forward SwiGLU (gate, up and down matrices) instead of ReLU between two matrices" in en
    assert "an output layer of its own instead of the token embedding matrix (untied)" in en
    assert "LayerNorm 대신 RMSNorm" in ko and "사인파 대신 회전 위치(RoPE), theta 500,000" in ko
    assert "쿼리 헤드 8개가 키/값 헤드 2개를 나눠 씀 (키/값 헤드 하나에 4개)" in ko
    assert len(en) == len(ko) == len(LLAMA3.differences_from_paper()) - 2  # activation with ffn_gated, norm_eps: none
