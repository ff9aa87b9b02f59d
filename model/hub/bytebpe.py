"""Byte-level BPE (GPT-2's encoder.py; RoBERTa uses the same), our own implementation.

text -> split on added tokens ("<|endoftext|>", "<mask>", ...) -> pre-tokenization regex -> each piece's UTF-8
bytes as printable characters (bytes_to_unicode) -> merges applied in rank order. Every text encodes without an
unknown token when the vocabulary holds the 256 byte characters.

The vocabulary and merges come from vocab.json + merges.txt, or from tokenizer.json alone (what transformers 5's
save_pretrained writes). An added token may swallow the whitespace on its left or right (lstrip / rstrip in
tokenizer.json or tokenizer_config.json: RoBERTa's <mask> does, so "the <mask>" is two tokens, not three)."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import regex

from model.atomic import atomic_write_text
from model.hub import HubError

VOCAB_FILE, MERGES_FILE, TOKENIZER_JSON = "vocab.json", "merges.txt", "tokenizer.json"
TOKENIZER_CONFIG, ADDED_TOKENS = "tokenizer_config.json", "added_tokens.json"
ROLES = ("bos", "eos", "pad", "unk", "mask")

# GPT-2's pre-tokenization: contractions, letters, digits, other symbols (each with one optional
# leading space), and whitespace runs — a space before a word stays with the word.
PRETOKENIZE = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """Each of the 256 byte values -> a printable character: printable Latin-1 bytes stand for
    themselves, the others (control characters, space, ...) are moved to 256 + n, so the space byte
    0x20 becomes "Ġ" (U+0120) and newline 0x0A becomes "Ċ" (U+010A)."""
    keep = set(range(ord("!"), ord("~") + 1)) | set(range(ord("¡"), ord("¬") + 1)) | set(range(ord("®"), ord("ÿ") + 1))
    table, n = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return table


class ByteBPETokenizer:
    """Byte-level BPE with our tokenizer interface. encode() adds no special tokens; the literal text of an
    added token ("<|endoftext|>", "<mask>") is that token, as in Hugging Face's tokenizer. `roles` names the
    token of each of bos/eos/pad/unk/mask (GPT-2 has one token, `special`, for the first four, and no mask);
    `strip` gives an added token's (lstrip, rstrip)."""
    kind = "byte_bpe"
    CACHE_SIZE = 50_000

    def __init__(self, vocab: dict[str, int], merges: Iterable[tuple[str, str]], special: str | None = None,
                 added: dict[str, int] | None = None, add_prefix_space: bool = False,
                 roles: dict[str, str] | None = None, strip: dict[str, tuple[bool, bool]] | None = None):
        self.encoder = dict(vocab)
        for content, i in (added or {}).items():
            self.encoder.setdefault(content, i)
        self.decoder = {i: s for s, i in self.encoder.items()}
        self.ranks = {tuple(pair): r for r, pair in enumerate(merges)}
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {c: b for b, c in self.byte_encoder.items()}
        self.add_prefix_space = add_prefix_space
        roles = {**({r: special for r in ("bos", "eos", "pad", "unk")} if special else {}), **(roles or {})}
        for role in ("bos", "eos", "pad", "unk"):
            if role not in roles:
                raise ValueError(f"no {role} token given")
        for role, token in roles.items():
            if token not in self.encoder:
                raise ValueError(f"the vocabulary has no {token} (the {role} token)")
            setattr(self, f"{role}_id", self.encoder[token])
        self.roles = dict(roles)
        specials = sorted({*roles.values(), *(added or {})}, key=len, reverse=True)
        self.added = frozenset(specials)
        self.strip = {s: tuple(v) for s, v in (strip or {}).items() if s in self.added}
        # one group per added token, longest first (the longest wins where two start at the same place), with the
        # whitespace it swallows
        self._specials = specials
        space = lambda on: r"\s*" if on else ""  # noqa: E731
        self._split = regex.compile("|".join(
            f"(?P<t{n}>{space(self.strip.get(s, (0, 0))[0])}{regex.escape(s)}{space(self.strip.get(s, (0, 0))[1])})"
            for n, s in enumerate(specials)))
        self.cache: dict[str, tuple[int, ...]] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"

    @property
    def vocab_size(self) -> int:
        return max(self.decoder) + 1

    @property
    def largest_id(self) -> int:
        """The largest id this tokenizer gives (the model's embedding must have a row for it)."""
        return max(self.decoder)

    source = VOCAB_FILE  # the file its vocabulary came from, for refusals (tokenizer.json where that was read)

    def bpe(self, word: str) -> list[str]:
        """Merge the pair with the lowest rank, everywhere in the word, until no listed pair is left."""
        parts = list(word)
        while len(parts) > 1:
            pairs = {(a, b) for a, b in zip(parts, parts[1:])}
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            first, second = best
            merged, i = [], 0
            while i < len(parts):
                if i < len(parts) - 1 and parts[i] == first and parts[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return parts

    def _word_ids(self, word: str) -> tuple[int, ...]:
        ids = self.cache.get(word)
        if ids is None:
            ids = tuple(self.encoder.get(p, self.unk_id) for p in self.bpe(word))
            if len(self.cache) >= self.CACHE_SIZE:
                self.cache.clear()
            self.cache[word] = ids
        return ids

    def _encode_text(self, segment: str, ids: list[int]) -> None:
        if not segment:
            return
        if self.add_prefix_space and not segment.startswith(" "):
            segment = " " + segment
        for word in PRETOKENIZE.findall(segment):
            ids.extend(self._word_ids("".join(self.byte_encoder[b] for b in word.encode("utf-8"))))

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        start = 0
        for m in self._split.finditer(text):
            self._encode_text(text[start:m.start()], ids)
            ids.append(self.encoder[self._specials[int(m.lastgroup[1:])]])
            start = m.end()
        self._encode_text(text[start:], ids)
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        skip = (self.pad_id, self.bos_id, self.eos_id)
        out, buf = [], bytearray()
        for i in ids:
            i = int(i)
            piece = self.decoder.get(i)
            if i in skip or piece is None:
                continue
            if piece in self.added:  # an added token is text, not bytes
                out.append(buf.decode("utf-8", errors="replace"))
                buf = bytearray()
                out.append(piece)
                continue
            for c in piece:
                b = self.byte_decoder.get(c)
                buf.extend(c.encode("utf-8") if b is None else bytes([b]))
        out.append(buf.decode("utf-8", errors="replace"))
        return "".join(out)

    def pieces(self, text: str) -> list[str]:
        return [self.id_to_piece(i) for i in self.encode(text)]

    def id_to_piece(self, i: int) -> str:
        """The byte-level piece as the vocabulary spells it: " the" is "Ġthe"."""
        piece = self.decoder.get(int(i))
        return piece if piece is not None else f"<unused {int(i)}>"

    def is_byte(self, i: int) -> bool:
        return False

    def is_special(self, i: int) -> bool:
        return int(i) in {getattr(self, f"{r}_id") for r in self.roles}

    def save(self, path) -> Path:
        """vocab.json and merges.txt in GPT-2's layout."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path / VOCAB_FILE, json.dumps(self.encoder, ensure_ascii=False))
        merges = sorted(self.ranks, key=self.ranks.get)
        atomic_write_text(path / MERGES_FILE, "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
        return path / VOCAB_FILE


# -----------------------------------------------------------------------------
# reading a folder

def read_json(path: Path, entries: int | None = None):
    """A tokenizer's JSON file, its size bounded (model/hub/guard.py); with `entries`, refused unread when it holds
    far more than that many entries (counted by their commas before anything is parsed)."""
    from model.hub.guard import TEXT_LIMIT
    from model.hub.guard import read_json as bounded
    if entries is not None:
        with open(path, "rb") as f:
            commas = f.read(TEXT_LIMIT + 1).count(b",")
        if commas > 4 * entries + 1000:
            raise HubError(f"{path.name}: about {commas:,} entries, far more than the {entries:,} tokens of the "
                           f"model's embedding")
    return bounded(path, TEXT_LIMIT, name=path.name)


def read_merges(path: Path, most: int) -> list[tuple[str, str]]:
    """merges.txt's pairs; more lines than `most` are refused before any is split (model/hub/guard.py)."""
    from model.hub.guard import lines as bounded_lines
    merges = []
    for n, line in enumerate(bounded_lines(path, most, "merges a vocabulary of this size can have"), 1):
        line = line.rstrip("\r")
        if (n == 1 and line.startswith("#version")) or not line.strip():
            continue
        pair = line.split(" ")
        if len(pair) != 2 or not all(pair):
            raise HubError(f"{path.name}:{n}: not a merge (two symbols separated by one space): {line[:40]!r}")
        merges.append((pair[0], pair[1]))
    return merges


def source(folder: Path) -> str:
    """The file a folder's BPE vocabulary is read from (load's choice)."""
    return VOCAB_FILE if (Path(folder) / VOCAB_FILE).is_file() or not (Path(folder) / TOKENIZER_JSON).is_file() \
        else TOKENIZER_JSON


def vocabulary_rows(hf_config: dict | None) -> int:
    """The rows of the model's token embedding as config.json states them (checked against the weights first),
    which bound every tokenizer file read; a generous bound when it does not say."""
    rows = (hf_config or {}).get("vocab_size")
    return rows if isinstance(rows, int) and not isinstance(rows, bool) and rows > 0 else 1 << 22


def _from_tokenizer_json(path: Path, rows: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The BPE vocabulary and merges of a tokenizer.json; refused by name when it is not byte-level BPE."""
    d = read_json(path, entries=2 * rows)
    model = d.get("model") if isinstance(d, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise HubError(f"{path}: not a BPE tokenizer (model type {model.get('type') if isinstance(model, dict) else None!r})")
    if d.get("normalizer") is not None:
        kind = d["normalizer"].get("type") if isinstance(d["normalizer"], dict) else d["normalizer"]
        raise HubError(f"{path}: a normalizer ({str(kind)[:80]!r}) that byte-level BPE does not have")
    pre = d.get("pre_tokenizer") if isinstance(d.get("pre_tokenizer"), dict) else {}
    if pre.get("type") != "ByteLevel" or not pre.get("use_regex", True):
        raise HubError(f"{path}: pre-tokenizer {pre.get('type')!r}; only GPT-2's ByteLevel is supported")
    vocab, merges = model.get("vocab"), []
    if not isinstance(vocab, dict) or not all(isinstance(v, int) for v in vocab.values()):
        raise HubError(f"{path}: model.vocab is not a {{piece: id}} dictionary")
    for n, m in enumerate(model.get("merges") or []):
        pair = m.split(" ") if isinstance(m, str) else m
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(p, str) and p for p in pair):
            raise HubError(f"{path}: merge {n} is not two symbols: {str(m)[:80]!r}")
        merges.append((pair[0], pair[1]))
    return vocab, merges


def added_tokens(folder: Path, rows: int = 1 << 22) -> tuple[dict[str, int], dict[str, tuple[bool, bool]], bool, dict]:
    """Tokens added on top of the BPE vocabulary, with their (lstrip, rstrip), from added_tokens.json,
    tokenizer.json's added_tokens and tokenizer_config.json's added_tokens_decoder; add_prefix_space; and
    tokenizer_config.json itself ({} when absent)."""
    added: dict[str, int] = {}
    strip: dict[str, tuple[bool, bool]] = {}
    prefix = False
    conf: dict = {}

    def note(entries):
        for i, tok in entries:
            if isinstance(tok, dict) and isinstance(tok.get("content"), str) and str(i).isdigit():
                added.setdefault(tok["content"], int(i))
                strip.setdefault(tok["content"], (bool(tok.get("lstrip")), bool(tok.get("rstrip"))))

    if (folder / ADDED_TOKENS).is_file():
        d = read_json(folder / ADDED_TOKENS)
        if isinstance(d, dict):
            added.update({k: v for k, v in d.items() if isinstance(k, str) and isinstance(v, int)})
    if (folder / TOKENIZER_JSON).is_file():
        d = read_json(folder / TOKENIZER_JSON, entries=2 * rows)
        if isinstance(d, dict):
            listed = d.get("added_tokens") if isinstance(d.get("added_tokens"), list) else []
            note((t.get("id"), t) for t in listed if isinstance(t, dict))
            pre = d.get("pre_tokenizer")
            prefix = bool(pre.get("add_prefix_space")) if isinstance(pre, dict) else prefix
    if (folder / TOKENIZER_CONFIG).is_file():
        d = read_json(folder / TOKENIZER_CONFIG)
        if isinstance(d, dict):
            conf = d
            prefix = bool(d.get("add_prefix_space", prefix))
            decoder = d.get("added_tokens_decoder")
            note(decoder.items() if isinstance(decoder, dict) else ())
    return added, strip, prefix, conf


def load(folder: Path, family: str, hf_config: dict | None = None) -> tuple[
        dict[str, int], list[tuple[str, str]], dict[str, int], dict[str, tuple[bool, bool]], bool, dict]:
    """(vocab, merges, added tokens, their strip flags, add_prefix_space, tokenizer_config) of a folder:
    vocab.json + merges.txt, else tokenizer.json; every file bounded by the embedding's rows (config.json)."""
    folder = Path(folder)
    rows = vocabulary_rows(hf_config)
    if (folder / VOCAB_FILE).is_file() or (folder / MERGES_FILE).is_file() or not (folder / TOKENIZER_JSON).is_file():
        for name in (VOCAB_FILE, MERGES_FILE):
            if not (folder / name).is_file():
                raise HubError(f"{folder / name}: file not found ({family}'s byte-level BPE needs {VOCAB_FILE} "
                               f"and {MERGES_FILE}, or {TOKENIZER_JSON})")
        vocab = read_json(folder / VOCAB_FILE, entries=rows)
        if not isinstance(vocab, dict) or not all(isinstance(v, int) for v in vocab.values()):
            raise HubError(f"{folder / VOCAB_FILE}: not a {{piece: id}} dictionary")
        merges = read_merges(folder / MERGES_FILE, 2 * rows + 1000)
    else:
        vocab, merges = _from_tokenizer_json(folder / TOKENIZER_JSON, rows)
    added, strip, prefix, conf = added_tokens(folder, rows)
    return vocab, merges, added, strip, prefix, conf
