"""WordPiece, the tokenizer of the BERT checkpoints model/hub/bert.py loads, re-implemented to give exactly the
ids of transformers' `BertTokenizer` (the tokenizers-backed one: BertNormalizer + BertPreTokenizer + WordPiece):
from vocab.txt, clean the text, put spaces around CJK ideographs, strip accents and lower-case (when
do_lower_case), split on whitespace and punctuation, then greedy longest-match-first WordPiece with "##"
continuations."""
from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Iterable

from model.data.tokenizer import _Base
from model.hub import HubError

VOCAB_FILE, TOKENIZER_CONFIG, TOKENIZER_JSON = "vocab.txt", "tokenizer_config.json", "tokenizer.json"
SPECIAL_ROLES = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                 "mask_token": "[MASK]"}
MAX_CHARS_PER_WORD = 100
# DistilBertTokenizer is BertTokenizer under another name (transformers subclasses it unchanged)
TOKENIZER_CLASSES = ("BertTokenizer", "BertTokenizerFast", "DistilBertTokenizer", "DistilBertTokenizerFast")
# Unicode's White_Space property (Rust's char::is_whitespace, which the tokenizers library uses)
WHITE_SPACE = frozenset(map(chr, [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                                  0x2028, 0x2029, 0x202F, 0x205F, 0x3000]))
# CJK ideograph blocks that get spaces around them (the tokenizers library's list)
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
              (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def is_control(c: str) -> bool:
    """Unicode "Other" (Cc, Cf, Cs, Co, Cn) except tab, newline and carriage return (whitespace)."""
    return c not in "\t\n\r" and unicodedata.category(c).startswith("C")


def is_cjk(c: str) -> bool:
    """A CJK ideograph. Korean Hangul, Japanese kana are not: they stay inside their words."""
    cp = ord(c)
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def is_punctuation(c: str) -> bool:
    """ASCII punctuation (including $ + < = > ^ ` | ~) or any Unicode punctuation category P*."""
    return c in ASCII_PUNCTUATION or unicodedata.category(c).startswith("P")


def normalize(text: str, lowercase: bool = True, strip_accents: bool | None = None,
              chinese_chars: bool = True) -> str:
    """BERT's text normalisation: drop NUL, U+FFFD and control characters, make every whitespace a
    space, put spaces around CJK ideographs, strip accents (decompose, drop non-spacing marks: by
    default exactly when lower-casing), lower-case character by character."""
    out = []
    for c in text:
        if c == "\0" or c == "\ufffd" or is_control(c):
            continue
        if c in WHITE_SPACE:
            out.append(" ")
        elif chinese_chars and is_cjk(c):
            out.append(f" {c} ")
        else:
            out.append(c)
    text = "".join(out)
    if (lowercase if strip_accents is None else strip_accents):
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    if lowercase:
        text = "".join(c.lower() for c in text)
    return text


def pre_tokenize(text: str) -> list[str]:
    """Split on whitespace; every punctuation character is a word of its own."""
    words: list[str] = []
    current: list[str] = []
    for c in text:
        if c in WHITE_SPACE or is_punctuation(c):
            if current:
                words.append("".join(current))
                current = []
            if c not in WHITE_SPACE:
                words.append(c)
        else:
            current.append(c)
    if current:
        words.append("".join(current))
    return words


def wordpiece(word: str, vocab: dict[str, int], unk: str, prefix: str = "##",
              max_chars: int = MAX_CHARS_PER_WORD) -> list[str]:
    """Greedy longest-match-first: the longest vocabulary entry that starts the word, then the longest
    "##" entry that continues it, and so on; a word that cannot be covered (or is longer than
    max_chars characters) is one unknown token."""
    if len(word) > max_chars:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else prefix + word[start:end]
            if piece in vocab:
                break
            end -= 1
        else:
            return [unk]
        pieces.append(piece)
        start = end
    return pieces


def _token_name(value, default: str) -> str:
    """A special token as tokenizer_config.json writes it: a string or {"content": ...}."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else default


def read_vocab_txt(path: Path, most: int = 1 << 22) -> list[str]:
    """One token a line, as the tokenizers library reads it: lines split at \\n, trailing whitespace
    trimmed; the line number is the id. More than `most` lines (the model's embedding rows) are refused before
    any line is made: each would be an id the model has no row for."""
    from model.hub.guard import lines
    path = Path(path)
    if not path.is_file():
        raise HubError(f"{path.name}: file not found")
    return [line.rstrip("".join(WHITE_SPACE))
            for line in lines(path, most, "tokens the model's embedding has rows for")]


class WordPieceTokenizer(_Base):
    """BERT's WordPiece with our tokenizer interface. encode() gives ids without [CLS]/[SEP];
    bos_id is [CLS], eos_id is [SEP]; mask_id is [MASK]. Special tokens typed in the text
    ("Paris is the [MASK] of France.") are kept whole, matched exactly as written."""
    kind = "wordpiece"

    def __init__(self, tokens: list[str], lowercase: bool = True, strip_accents: bool | None = None,
                 chinese_chars: bool = True, specials: dict[str, str] | None = None, extra_specials=(),
                 max_chars: int = MAX_CHARS_PER_WORD, prefix: str = "##"):
        self.itos = list(tokens)
        self.vocab = {t: i for i, t in enumerate(self.itos)}  # a repeated line: the later id wins
        self.lowercase, self.strip_accents, self.chinese_chars = bool(lowercase), strip_accents, bool(chinese_chars)
        self.max_chars, self.prefix = int(max_chars), prefix
        self.special_tokens = {**SPECIAL_ROLES, **(specials or {})}
        missing = [t for t in self.special_tokens.values() if t not in self.vocab]
        if missing:
            raise HubError(f"{VOCAB_FILE}: special tokens {missing} are not in the vocabulary")
        ids = {role: self.vocab[t] for role, t in self.special_tokens.items()}
        self.unk_id, self.pad_id, self.mask_id = ids["unk_token"], ids["pad_token"], ids["mask_token"]
        self.bos_id, self.eos_id = ids["cls_token"], ids["sep_token"]
        self.unk = self.special_tokens["unk_token"]
        typed = set(self.special_tokens.values()) | {t for t in extra_specials if t in self.vocab}
        # leftmost, then longest special token first, as the tokenizers library matches added tokens
        self._special_re = re.compile("|".join(re.escape(t) for t in sorted(typed, key=len, reverse=True)))
        self.typed_specials = frozenset(typed)

    @classmethod
    def load(cls, folder: str | Path, hf_config: dict | None = None) -> "WordPieceTokenizer":
        """vocab.txt (or, failing that, the WordPiece vocabulary inside tokenizer.json) and the
        options of tokenizer_config.json. A model whose files name another tokenizer class (such as
        BertJapaneseTokenizer, which splits words with MeCab first) is refused."""
        folder = Path(folder)
        conf: dict = {}
        conf_path = folder / TOKENIZER_CONFIG
        if conf_path.is_file():
            from model.hub.guard import TEXT_LIMIT, read_json
            conf = read_json(conf_path, TEXT_LIMIT, name=conf_path.name)  # size and nesting bounded
            if not isinstance(conf, dict):
                raise HubError(f"{conf_path.name}: not a JSON object")
        for where, d in ((conf_path.name, conf), ("config.json", hf_config or {})):
            name = d.get("tokenizer_class")
            if name is not None and name not in TOKENIZER_CLASSES:
                raise HubError(f"{where}: tokenizer_class {name!r} is not supported "
                               f"(only BERT's own WordPiece tokenizer, {TOKENIZER_CLASSES[0]})")
        specials = {role: _token_name(conf.get(role), default) for role, default in SPECIAL_ROLES.items()}
        extra = [_token_name(v, "") for v in (conf.get("added_tokens_decoder") or {}).values()
                 if isinstance(v, dict) and v.get("special")]
        max_chars, prefix = MAX_CHARS_PER_WORD, "##"
        from model.hub.bytebpe import vocabulary_rows
        rows = vocabulary_rows(hf_config)  # the embedding's rows bound every file read
        if (folder / VOCAB_FILE).is_file():
            tokens = read_vocab_txt(folder / VOCAB_FILE, rows)
        else:
            tokens, model = cls._tokenizer_json_vocab(folder, rows)
            if model is None:
                raise HubError(f"{folder / VOCAB_FILE}: file not found (a BERT model folder has the "
                               f"WordPiece vocabulary {VOCAB_FILE})")
            max_chars = int(model.get("max_input_chars_per_word") or MAX_CHARS_PER_WORD)
            prefix = model.get("continuing_subword_prefix") or "##"
        if not tokens:
            raise HubError(f"{folder / VOCAB_FILE}: empty vocabulary")
        tok = cls(tokens, lowercase=conf.get("do_lower_case", True) is not False,
                  strip_accents=conf.get("strip_accents"),
                  chinese_chars=conf.get("tokenize_chinese_chars", True) is not False,
                  specials=specials, extra_specials=extra, max_chars=max_chars, prefix=prefix)
        tok.source = VOCAB_FILE if (folder / VOCAB_FILE).is_file() else TOKENIZER_JSON
        return tok

    @staticmethod
    def _tokenizer_json_vocab(folder: Path, rows: int = 1 << 22):
        """(tokens by id, the model section) from a tokenizer.json with a WordPiece model, else ([], None); an id
        past the embedding's `rows` is refused before the table of tokens is made."""
        from model.hub.bytebpe import read_json
        from model.hub.guard import check_vocabulary
        path = folder / TOKENIZER_JSON
        if not path.is_file():
            return [], None
        d = read_json(path, entries=2 * rows)
        model = (d.get("model") if isinstance(d, dict) else None) or {}
        vocab = model.get("vocab") if isinstance(model, dict) else None
        if model.get("type") != "WordPiece" or not isinstance(vocab, dict) or not vocab:
            return [], None
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in vocab.values()):
            raise HubError(f"{TOKENIZER_JSON}: model.vocab is not a {{piece: id}} dictionary")
        check_vocabulary(max(vocab.values()), rows, TOKENIZER_JSON)
        tokens = [""] * (max(vocab.values()) + 1)
        for token, i in vocab.items():
            tokens[i] = token
        return tokens, model

    def save(self, path: str | Path) -> Path:
        from model.atomic import atomic_write_text
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path / VOCAB_FILE, "".join(t + "\n" for t in self.itos))
        atomic_write_text(path / TOKENIZER_CONFIG, json.dumps(
            {"tokenizer_class": "BertTokenizer", "do_lower_case": self.lowercase,
             "strip_accents": self.strip_accents, "tokenize_chinese_chars": self.chinese_chars,
             **self.special_tokens}, ensure_ascii=False, indent=1))
        return path / VOCAB_FILE

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    @property
    def largest_id(self) -> int:
        """The largest id this tokenizer gives (the model's embedding must have a row for it)."""
        return len(self.itos) - 1

    source = VOCAB_FILE  # the file its vocabulary came from, for refusals

    def pieces(self, text: str) -> list[str]:
        out: list[str] = []
        pos = 0
        for m in [*self._special_re.finditer(text), None]:
            chunk = text[pos: m.start() if m else len(text)]
            for word in pre_tokenize(normalize(chunk, self.lowercase, self.strip_accents, self.chinese_chars)):
                out.extend(wordpiece(word, self.vocab, self.unk, self.prefix, self.max_chars))
            if m:
                out.append(m.group())
                pos = m.end()
        return out

    def encode(self, text: str) -> list[int]:
        return [self.vocab[p] for p in self.pieces(text)]

    def decode(self, ids: Iterable[int]) -> str:
        """Pieces joined, "##" continuations glued on; [PAD], [CLS], [SEP] skipped."""
        words: list[str] = []
        for i in self._content_ids(ids):
            piece = self.id_to_piece(i)
            if words and piece.startswith(self.prefix):
                words[-1] += piece[len(self.prefix):]
            else:
                words.append(piece)
        text = " ".join(words)
        for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                     (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
            text = text.replace(a, b)
        return text

    def id_to_piece(self, i: int) -> str:
        return self.itos[int(i)]

    def is_byte(self, i: int) -> bool:
        return False
