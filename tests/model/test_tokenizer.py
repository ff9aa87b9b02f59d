"""SentencePiece and symbol tokenizers: round trips, byte fallback, save/load, errors."""
import random
from functools import lru_cache
from pathlib import Path

import pytest

from model.data.corpus import ASSETS, generate_pairs
from model.data.tokenizer import (
    DEFAULT_VOCAB_SIZE, SentencePieceTokenizer, SymbolTokenizer, TokenizerError, load_tokenizer,
)

MIXED = [
    "Hello 세계 😀  two  spaces\tand tab",
    " leading space",
    "  two leading, trailing  ",
    "line\nbreak",
    "Ünïcödé ñ 日本語 العربية Ελληνικά 👩‍👩‍👧",
    "",
    " ",
]


@lru_cache(maxsize=None)
def shipped():
    return load_tokenizer(ASSETS / "tokenizer")


def corpus_sample(k=500):
    texts = [s for pair in generate_pairs() for s in pair]
    return random.Random(0).sample(texts, k)


def test_shipped_tokenizer_loads():
    tok = shipped()
    assert isinstance(tok, SentencePieceTokenizer) and tok.kind == "sentencepiece"
    assert tok.vocab_size == DEFAULT_VOCAB_SIZE
    assert (tok.pad_id, tok.unk_id, tok.bos_id, tok.eos_id) == (0, 1, 2, 3)
    assert [tok.id_to_piece(i) for i in range(4)] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert tok.pieces("My friend did not buy a red apple.") == \
        ["▁My", "▁friend", "▁did", "▁not", "▁buy", "▁a", "▁red", "▁apple", "."]


def test_corpus_round_trip_without_bytes_or_unk():
    tok = shipped()
    for text in corpus_sample():
        ids = tok.encode(text)
        assert tok.decode(ids) == text
        assert tok.unk_id not in ids and not any(tok.is_byte(i) for i in ids)
        assert tok.bos_id not in ids and tok.eos_id not in ids


@pytest.mark.parametrize("text", MIXED)
def test_arbitrary_text_round_trip(text):
    tok = shipped()
    ids = tok.encode(text)
    assert tok.unk_id not in ids
    assert tok.decode(ids) == text
    assert tok.decode([tok.bos_id] + ids + [tok.eos_id, tok.pad_id, tok.pad_id]) == text


def test_byte_fallback_for_emoji():
    tok = shipped()
    ids = tok.encode("😀")
    assert ids and tok.unk_id not in ids
    byte_ids = [i for i in ids if tok.is_byte(i)]
    assert [tok.id_to_piece(i) for i in byte_ids] == ["<0xF0>", "<0x9F>", "<0x98>", "<0x80>"]
    assert not tok.is_byte(tok.encode("apple")[0])


def test_train_save_load_deterministic(tmp_path):
    texts = corpus_sample(2000)
    a = SentencePieceTokenizer.train(texts, vocab_size=800, path=tmp_path / "a")
    b = SentencePieceTokenizer.train(texts, vocab_size=800)
    assert a.model_proto == b.model_proto and a.vocab_size == 800
    c = load_tokenizer(tmp_path / "a")
    assert isinstance(c, SentencePieceTokenizer)
    for text in texts[:50] + MIXED:
        assert c.encode(text) == a.encode(text) and c.decode(c.encode(text)) == text


def test_symbol_tokenizer(tmp_path):
    tok = SymbolTokenizer("abcde")
    assert tok.kind == "symbol" and tok.vocab_size == 4 + 5
    ids = tok.encode("a c  e b")
    assert ids == [4, 6, 8, 5] and tok.decode(ids) == "a c e b"
    assert tok.decode([tok.bos_id] + ids + [tok.eos_id, tok.pad_id]) == "a c e b"
    assert tok.encode("a z") == [4, tok.unk_id] and tok.pieces("a z") == ["a", "<unk>"]
    assert tok.id_to_piece(4) == "a" and not tok.is_byte(4)
    tok.save(tmp_path)
    again = load_tokenizer(tmp_path)
    assert isinstance(again, SymbolTokenizer) and again.symbols == tok.symbols
    with pytest.raises(TokenizerError):
        SymbolTokenizer(["a", "a"])


def test_load_errors(tmp_path):
    with pytest.raises(TokenizerError, match="no tokenizer"):
        load_tokenizer(tmp_path)
    with pytest.raises(TokenizerError, match="does not exist"):
        load_tokenizer(tmp_path / "missing")
    bad = tmp_path / "sp"
    bad.mkdir()
    (bad / "tokenizer.model").write_bytes(b"this is not a sentencepiece model")
    with pytest.raises(TokenizerError):
        load_tokenizer(bad)
    (bad / "tokenizer.model").write_bytes(b"")
    with pytest.raises(TokenizerError):
        load_tokenizer(bad)
    good = (ASSETS / "tokenizer" / "tokenizer.model").read_bytes()
    (bad / "tokenizer.model").write_bytes(good[: len(good) // 2])
    with pytest.raises(TokenizerError):
        load_tokenizer(bad)
    sym = tmp_path / "sym"
    sym.mkdir()
    (sym / "tokenizer.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(TokenizerError):
        load_tokenizer(sym)
    (sym / "tokenizer.json").write_text('{"kind": "other"}', encoding="utf-8")
    with pytest.raises(TokenizerError):
        load_tokenizer(sym)
    assert issubclass(TokenizerError, ValueError)


def test_tokenizer_does_not_import_checkpoint():
    """The atomic writes both need live in model/atomic.py: model.data.tokenizer never imports model.checkpoint
    (which imports the tokenizer lazily), so the two no longer import each other."""
    import ast
    tree = ast.parse((Path(__file__).resolve().parents[2] / "model" / "data" / "tokenizer.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "model.atomic" in imported and "model.training.checkpoint" not in imported
