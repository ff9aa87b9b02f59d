"""Tokenizers: SentencePiece (BPE with byte fallback) for sentences, one id per symbol for the toy tasks.

Both share one interface and the same special ids:

    pad_id=0  unk_id=1  bos_id=2  eos_id=3
    encode(text) -> ids (no BOS/EOS)     decode(ids) -> text (pad/bos/eos skipped)
    pieces(text) -> list[str]            id_to_piece(i), is_byte(i), vocab_size, kind, save(dir)

Build the shipped English/Korean tokenizer with:  python -m model.data.tokenizer --build
"""
from __future__ import annotations

import argparse
import io
import json
import os
from pathlib import Path
from typing import Iterable

import sentencepiece as spm

from model.atomic import atomic_write_bytes, atomic_write_text
from model.data.corpus import ALPHABET, ASSETS, SYNTHETIC_TASKS, generate_pairs

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
DEFAULT_DIR = ASSETS / "tokenizer"
DEFAULT_VOCAB_SIZE = 2000  # base words are one piece each; many inflected forms split into stem + ending


class TokenizerError(ValueError):
    """A tokenizer directory or file that cannot be loaded."""


class _Base:
    pad_id, unk_id, bos_id, eos_id = PAD_ID, UNK_ID, BOS_ID, EOS_ID
    kind = "base"

    def _content_ids(self, ids: Iterable[int]) -> list[int]:
        skip = (self.pad_id, self.bos_id, self.eos_id)
        return [int(i) for i in ids if int(i) not in skip]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"


# -----------------------------------------------------------------------------

class SentencePieceTokenizer(_Base):
    """A SentencePiece model. Byte fallback means no text ever maps to unk: unseen characters
    (emoji, other scripts, tabs) become their UTF-8 bytes, so decode(encode(text)) == text.

    The one exception is U+2581 "▁" itself, SentencePiece's marker for a space: it decodes as " ".
    """
    kind = "sentencepiece"
    FILENAME = "tokenizer.model"

    def __init__(self, model_proto: bytes):
        self.model_proto = bytes(model_proto)
        if not self.model_proto:
            raise TokenizerError("empty SentencePiece model file")
        try:
            self.sp = spm.SentencePieceProcessor(model_proto=self.model_proto)
        except Exception as e:  # sentencepiece raises RuntimeError / OSError on bad protos
            raise TokenizerError(f"not a valid SentencePiece model: {e}") from None
        got = (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id())
        if got != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise TokenizerError(f"SentencePiece model has special ids (pad, unk, bos, eos) = {got}; "
                                 f"expected {(PAD_ID, UNK_ID, BOS_ID, EOS_ID)}")

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int = DEFAULT_VOCAB_SIZE,
              path: str | os.PathLike | None = None, model_type: str = "bpe") -> "SentencePieceTokenizer":
        """Train from an in-memory list of sentences (deterministic); save into directory `path` if given."""
        texts = [t for t in texts if t]
        if not texts:
            raise ValueError("need at least one non-empty text to train a tokenizer")
        proto = io.BytesIO()
        with open(os.devnull, "w") as quiet:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(texts), model_writer=proto, logstream=quiet,
                vocab_size=vocab_size, model_type=model_type, character_coverage=1.0,
                byte_fallback=True, normalization_rule_name="identity", remove_extra_whitespaces=False,
                pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
                pad_piece=SPECIALS[0], unk_piece=SPECIALS[1], bos_piece=SPECIALS[2], eos_piece=SPECIALS[3],
                num_threads=1, shuffle_input_sentence=False, input_sentence_size=0,
            )
        tok = cls(proto.getvalue())
        if path is not None:
            tok.save(path)
        return tok

    @classmethod
    def load(cls, path: str | os.PathLike) -> "SentencePieceTokenizer":
        """Load from a directory holding tokenizer.model (or from the .model file itself)."""
        path = Path(path)
        file = path / cls.FILENAME if path.is_dir() else path
        try:
            data = file.read_bytes()
        except OSError as e:
            raise TokenizerError(f"cannot read {file}: {e.strerror or e}") from None
        return cls(data)

    def save(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path / self.FILENAME, self.model_proto)  # never a half-written model file
        return path / self.FILENAME

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(text)

    def decode(self, ids: Iterable[int]) -> str:
        return self.sp.decode(self._content_ids(ids))

    def pieces(self, text: str) -> list[str]:
        return self.sp.encode(text, out_type=str)

    def id_to_piece(self, i: int) -> str:
        return self.sp.id_to_piece(int(i))

    def is_byte(self, i: int) -> bool:
        return bool(self.sp.is_byte(int(i)))


# -----------------------------------------------------------------------------

class SymbolTokenizer(_Base):
    """One id per whitespace-separated symbol (the synthetic tasks): ids 0-3 are specials, then symbols."""
    kind = "symbol"
    FILENAME = "tokenizer.json"

    def __init__(self, symbols: Iterable[str] = tuple(ALPHABET)):
        symbols = list(symbols)
        for s in symbols:
            if not isinstance(s, str) or not s or s.split() != [s]:
                raise TokenizerError(f"symbol {s!r} must be a non-empty string without whitespace")
            if s in SPECIALS:
                raise TokenizerError(f"symbol {s!r} clashes with a special token")
        if len(set(symbols)) != len(symbols):
            raise TokenizerError("symbols must be unique")
        self.symbols = symbols
        self.itos = list(SPECIALS) + symbols
        self.stoi = {s: i for i, s in enumerate(self.itos)}

    @classmethod
    def load(cls, path: str | os.PathLike) -> "SymbolTokenizer":
        """Load from a directory holding tokenizer.json (or from the .json file itself)."""
        path = Path(path)
        file = path / cls.FILENAME if path.is_dir() else path
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except OSError as e:
            raise TokenizerError(f"cannot read {file}: {e.strerror or e}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise TokenizerError(f"{file} is not valid JSON: {e}") from None
        if not isinstance(data, dict) or data.get("kind") != cls.kind or not isinstance(data.get("symbols"), list):
            raise TokenizerError(f"{file} is not a symbol tokenizer (expected {{'kind': 'symbol', 'symbols': [...]}})")
        return cls(data["symbols"])

    def save(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        file = path / self.FILENAME
        atomic_write_text(file, json.dumps({"kind": self.kind, "symbols": self.symbols}, ensure_ascii=False, indent=1))
        return file

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        return [self.stoi.get(s, UNK_ID) if s not in SPECIALS else UNK_ID for s in text.split()]

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join(self.itos[i] for i in self._content_ids(ids))

    def pieces(self, text: str) -> list[str]:
        return [self.itos[i] for i in self.encode(text)]

    def id_to_piece(self, i: int) -> str:
        return self.itos[int(i)]

    def is_byte(self, i: int) -> bool:
        return False


Tokenizer = SentencePieceTokenizer | SymbolTokenizer


def load_tokenizer(path: str | os.PathLike = DEFAULT_DIR) -> Tokenizer:
    """Load whichever tokenizer the directory holds (tokenizer.model or tokenizer.json)."""
    path = Path(path)
    if not path.is_dir():
        raise TokenizerError(f"tokenizer directory {path} does not exist")
    if (path / SentencePieceTokenizer.FILENAME).is_file():
        return SentencePieceTokenizer.load(path)
    if (path / SymbolTokenizer.FILENAME).is_file():
        return SymbolTokenizer.load(path)
    raise TokenizerError(f"no tokenizer in {path}: expected {SentencePieceTokenizer.FILENAME} "
                         f"or {SymbolTokenizer.FILENAME}")


def corpus_texts() -> list[str]:
    """Both sides of the whole en-ko corpus (all splits: the tokenizer only decides the pieces,
    and every word of valid/test also occurs in train)."""
    return [s for pair in generate_pairs() for s in pair]


def build_default(path: str | os.PathLike = DEFAULT_DIR, vocab_size: int = DEFAULT_VOCAB_SIZE) -> SentencePieceTokenizer:
    """Train the shared English/Korean tokenizer and write path/tokenizer.model."""
    return SentencePieceTokenizer.train(corpus_texts(), vocab_size=vocab_size, path=path)


def build_tokenizer(task: str):
    """A task's tokenizer: one id per letter for the synthetic tasks, else the shipped shared EN/KO
    sentencepiece model (byte fallback: any text of an uploaded corpus encodes). Without torch: the training
    page's estimates read it."""
    if task in SYNTHETIC_TASKS:
        return SymbolTokenizer(tuple(ALPHABET))
    return load_tokenizer()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="store_true", help="train the en-ko tokenizer into --out")
    parser.add_argument("--out", default=str(DEFAULT_DIR))
    parser.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE)
    args = parser.parse_args()
    if not args.build:
        parser.print_help()
        raise SystemExit(0)
    tok = build_default(args.out, args.vocab_size)
    example = "My friend did not buy a red apple."
    print(f"wrote {Path(args.out) / tok.FILENAME}: {tok.kind}, vocab_size={tok.vocab_size}")
    print(example, "->", tok.pieces(example))
