"""GPT-2 (config.json model_type "gpt2"): a decoder-only Transformer, run by our own model code.

How GPT-2 differs from the paper's Transformer, each a TransformerConfig option:
- decoder only (no encoder, no cross-attention): architecture="decoder-only";
- pre-LN, x + f(LN(x)), with a final LayerNorm after the last block (GPT-2's ln_f, our decoder_norm):
  norm_first=True;
- learned positions (wpe) instead of sinusoids: positional="learned", max_len = n_positions;
- GELU instead of ReLU: gelu_new is the tanh approximation ("gelu_tanh");
- token embeddings are not multiplied by sqrt(d_model): embed_scale=False;
- LayerNorm epsilon layer_norm_epsilon; the output layer is the token embedding (tied, as in 3.4).

Weights: GPT-2's linear layers are `Conv1D`s, whose weight is stored (in, out) — the transpose of
torch's nn.Linear (out, in). c_attn holds q, k, v side by side in that order, exactly our fused `qkv`.

There is no padding token in GPT-2. We use <|endoftext|> (eos_token_id, 50256 in the released models)
for pad, unk, bos and eos alike: it is GPT-2's own document separator, and Hugging Face's generate()
uses it as the pad id too. As the first token of a context (our decoder-only code puts tok.bos_id
first) it is what GPT-2 saw at the start of every document.

Tokenizer: byte-level BPE (vocab.json + merges.txt), our own implementation of GPT-2's encoder.py:
text -> pre-tokenization regex -> each piece's UTF-8 bytes as printable characters (bytes_to_unicode)
-> merges applied in rank order. Every text encodes without an unknown token.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import regex
import torch

from model.atomic import atomic_write_text
from model.nn.config import TransformerConfig
from model.hub import HubError

MODEL_TYPES = ("gpt2",)
VOCAB_FILE, MERGES_FILE = "vocab.json", "merges.txt"
TOKENIZER_CONFIG, ADDED_TOKENS = "tokenizer_config.json", "added_tokens.json"
END_OF_TEXT = "<|endoftext|>"

# Hugging Face activation names -> ours, only where the function is the same one.
ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh",
               "gelu": "gelu", "gelu_python": "gelu", "relu": "relu", "silu": "swish", "swish": "swish"}

# Options whose non-default value our attention cannot reproduce exactly: (default, why).
UNSUPPORTED = {
    "scale_attn_weights": (True, "attention without the 1/sqrt(d_k) scale"),
    "scale_attn_by_inverse_layer_idx": (False, "attention scaled by 1/(layer index + 1)"),
    "reorder_and_upcast_attn": (False, "reordered, upcast attention"),
    "add_cross_attention": (False, "cross-attention layers in a GPT-2"),
}

# Checkpoint entries that are not weights: the causal-mask buffers of older checkpoints.
BUFFER_SUFFIXES = (".attn.bias", ".attn.masked_bias")


# -----------------------------------------------------------------------------
# config and weights

def _first_int(value) -> int | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _strip_prefix(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """GPT2LMHeadModel saves `transformer.h.0...` and `lm_head.weight`; the original OpenAI-converted
    checkpoints (GPT2Model) save `h.0...` without the prefix, plus the causal-mask buffers."""
    out = {}
    for name, t in weights.items():
        if name.endswith(BUFFER_SUFFIXES):
            continue
        out[name[len("transformer."):] if name.startswith("transformer.") else name] = t
    return out


def convert(hf_config: dict, weights: dict[str, torch.Tensor]) -> tuple[TransformerConfig, dict[str, torch.Tensor]]:
    """GPT-2's config.json and weights -> our TransformerConfig and state dict (see the module doc)."""
    for option, (default, what) in UNSUPPORTED.items():
        if bool(hf_config.get(option, default)) != default:
            raise HubError(f"config.json: {option}={hf_config[option]!r} ({what}) is not supported by our "
                           f"attention; only {option}={default} is")
    act = hf_config.get("activation_function", "gelu_new")
    if act not in ACTIVATIONS:
        raise HubError(f"config.json: activation_function={act!r} is not supported "
                       f"(supported: {', '.join(sorted(ACTIVATIONS))})")
    w = _strip_prefix(weights)
    for name in ("wte.weight", "wpe.weight", "ln_f.weight"):
        if name not in w:
            raise HubError(f"weights: no {name} (or transformer.{name}); is this a GPT-2 checkpoint?")
    vocab, d_model = w["wte.weight"].shape
    n_positions = w["wpe.weight"].shape[0]
    n_layer, n_head = int(hf_config.get("n_layer", 12)), int(hf_config.get("n_head", 12))
    d_ff = hf_config.get("n_inner") or 4 * d_model
    for key, expected in (("vocab_size", vocab), ("n_embd", d_model), ("n_positions", n_positions)):
        if key in hf_config and hf_config[key] != expected:
            raise HubError(f"config.json: {key}={hf_config[key]} but the weights have {expected}")
    tie = bool(hf_config.get("tie_word_embeddings", True))
    eos = _first_int(hf_config.get("eos_token_id", 50256))
    pad = eos if eos is not None and 0 <= eos < vocab else 0  # GPT-2 has no pad token (see the module doc)
    try:
        config = TransformerConfig(
            vocab_size=vocab, d_model=d_model, n_heads=n_head, d_ff=d_ff, n_encoder_layers=0,
            n_decoder_layers=n_layer, dropout=float(hf_config.get("resid_pdrop", 0.1)), max_len=n_positions,
            architecture="decoder-only", norm_first=True, positional="learned", tie_embeddings=tie,
            label_smoothing=0.0, pad_id=pad, activation=ACTIVATIONS[act], embed_scale=False,
            norm_eps=float(hf_config.get("layer_norm_epsilon", 1e-5)))
    except ValueError as e:
        raise HubError(f"config.json: {e}") from None

    state: dict[str, torch.Tensor] = {}
    used: set[str] = set()

    def take(name: str, transpose: bool = False) -> torch.Tensor:
        if name not in w:
            raise HubError(f"weights: {name} missing")
        used.add(name)
        t = w[name]
        return t.t().contiguous() if transpose else t

    state["tgt_embed.token.weight"] = take("wte.weight")
    state["tgt_embed.position.weight"] = take("wpe.weight")
    for i in range(n_layer):
        h, ours = f"h.{i}.", f"decoder.{i}."
        for theirs, mine in (("ln_1", "res1.norm"), ("ln_2", "res3.norm")):
            state[ours + mine + ".weight"] = take(h + theirs + ".weight")
            state[ours + mine + ".bias"] = take(h + theirs + ".bias")
        # Conv1D: weight (in, out) -> nn.Linear (out, in). c_attn's columns are [q | k | v], as our qkv rows.
        for theirs, mine in (("attn.c_attn", "self_attn.qkv"), ("attn.c_proj", "self_attn.out"),
                             ("mlp.c_fc", "ffn.w1"), ("mlp.c_proj", "ffn.w2")):
            state[ours + mine + ".weight"] = take(h + theirs + ".weight", transpose=True)
            state[ours + mine + ".bias"] = take(h + theirs + ".bias")
    state["decoder_norm.weight"] = take("ln_f.weight")
    state["decoder_norm.bias"] = take("ln_f.bias")
    if "lm_head.weight" in w:
        used.add("lm_head.weight")
        if not tie:
            state["generator.weight"] = w["lm_head.weight"]
        elif not torch.equal(w["lm_head.weight"], w["wte.weight"]):
            raise HubError("weights: lm_head.weight differs from wte.weight although tie_word_embeddings is true")
    elif not tie:
        raise HubError("weights: tie_word_embeddings is false but there is no lm_head.weight")
    left = sorted(set(w) - used)
    if left:
        raise HubError(f"weights: {len(left)} tensors our GPT-2 has no place for (e.g. {left[:4]}); "
                       f"only the language-model head (GPT2LMHeadModel / GPT2Model) is supported")
    return config, state


def meta(hf_config: dict) -> dict:
    return {"task": "lm"}


# -----------------------------------------------------------------------------
# tokenizer

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
    """GPT-2's byte-level BPE with our tokenizer interface. encode() adds no special tokens; the
    literal text "<|endoftext|>" (and any added token) is that token, as in Hugging Face's tokenizer."""
    kind = "byte_bpe"
    CACHE_SIZE = 50_000

    def __init__(self, vocab: dict[str, int], merges: Iterable[tuple[str, str]], special: str = END_OF_TEXT,
                 added: dict[str, int] | None = None, add_prefix_space: bool = False):
        self.encoder = dict(vocab)
        for content, i in (added or {}).items():
            self.encoder.setdefault(content, i)
        self.decoder = {i: s for s, i in self.encoder.items()}
        self.ranks = {tuple(pair): r for r, pair in enumerate(merges)}
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {c: b for b, c in self.byte_encoder.items()}
        self.add_prefix_space = add_prefix_space
        if special not in self.encoder:
            raise ValueError(f"the vocabulary has no {special}")
        self.pad_id = self.unk_id = self.bos_id = self.eos_id = self.encoder[special]
        specials = sorted({special, *(added or {})}, key=len, reverse=True)
        self.added = frozenset(specials)
        self._split = regex.compile("(" + "|".join(regex.escape(s) for s in specials) + ")")
        self.cache: dict[str, tuple[int, ...]] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"

    @property
    def vocab_size(self) -> int:
        return max(self.decoder) + 1

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

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for segment in self._split.split(text):
            if not segment:
                continue
            if segment in self.added:
                ids.append(self.encoder[segment])
                continue
            if self.add_prefix_space and not segment.startswith(" "):
                segment = " " + segment
            for word in PRETOKENIZE.findall(segment):
                ids.extend(self._word_ids("".join(self.byte_encoder[b] for b in word.encode("utf-8"))))
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
        """The byte-level piece as GPT-2's vocabulary spells it: " the" is "Ġthe"."""
        piece = self.decoder.get(int(i))
        return piece if piece is not None else f"<unused {int(i)}>"

    def is_byte(self, i: int) -> bool:
        return False

    def save(self, path) -> Path:
        """vocab.json and merges.txt in GPT-2's layout."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path / VOCAB_FILE, json.dumps(self.encoder, ensure_ascii=False))
        merges = sorted(self.ranks, key=self.ranks.get)
        atomic_write_text(path / MERGES_FILE, "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
        return path / VOCAB_FILE


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise HubError(f"{path}: not readable JSON ({e})") from None


def read_merges(path: Path) -> list[tuple[str, str]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise HubError(f"{path}: not readable ({e})") from None
    merges = []
    for n, line in enumerate(lines, 1):
        if (n == 1 and line.startswith("#version")) or not line.strip():
            continue
        pair = line.split(" ")
        if len(pair) != 2 or not all(pair):
            raise HubError(f"{path}:{n}: not a merge (two symbols separated by one space): {line[:80]!r}")
        merges.append((pair[0], pair[1]))
    return merges


def _added_tokens(folder: Path) -> tuple[dict[str, int], bool]:
    """Tokens added on top of the BPE vocabulary (added_tokens.json, tokenizer_config.json's
    added_tokens_decoder) and tokenizer_config.json's add_prefix_space."""
    added: dict[str, int] = {}
    prefix = False
    if (folder / ADDED_TOKENS).is_file():
        d = _read_json(folder / ADDED_TOKENS)
        if isinstance(d, dict):
            added.update({k: v for k, v in d.items() if isinstance(k, str) and isinstance(v, int)})
    if (folder / TOKENIZER_CONFIG).is_file():
        d = _read_json(folder / TOKENIZER_CONFIG)
        if isinstance(d, dict):
            prefix = bool(d.get("add_prefix_space", False))
            for i, tok in (d.get("added_tokens_decoder") or {}).items():
                if isinstance(tok, dict) and isinstance(tok.get("content"), str) and str(i).isdigit():
                    added.setdefault(tok["content"], int(i))
    return added, prefix


def tokenizer(folder: Path, hf_config: dict) -> ByteBPETokenizer:
    folder = Path(folder)
    for name in (VOCAB_FILE, MERGES_FILE):
        if not (folder / name).is_file():
            raise HubError(f"{folder / name}: file not found (GPT-2's byte-level BPE needs {VOCAB_FILE} "
                           f"and {MERGES_FILE})")
    vocab = _read_json(folder / VOCAB_FILE)
    if not isinstance(vocab, dict) or not all(isinstance(v, int) for v in vocab.values()):
        raise HubError(f"{folder / VOCAB_FILE}: not a {{piece: id}} dictionary")
    merges = read_merges(folder / MERGES_FILE)
    added, prefix = _added_tokens(folder)
    special = END_OF_TEXT
    if special not in vocab and special not in added:
        eos = _first_int(hf_config.get("eos_token_id"))
        names = {i: s for s, i in {**vocab, **added}.items()}
        if eos is None or eos not in names:
            raise HubError(f"{folder / VOCAB_FILE}: no {END_OF_TEXT} and no eos_token_id in config.json")
        special = names[eos]
    return ByteBPETokenizer(vocab, merges, special, added, prefix)
