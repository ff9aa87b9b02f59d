"""BERT (Devlin et al., 2018) as our Transformer: the encoder stack alone, with the masked-LM head.

A `BertForMaskedLM` (or `BertForPreTraining`) checkpoint such as bert-base-uncased is the paper's
encoder with these differences, each a `TransformerConfig` option:
- architecture "encoder-only": no decoder; every token attends to every other (bidirectional);
- positional "learned": a learned table of `max_position_embeddings` rows instead of sinusoids;
- segment_vocab: segment ("token type") embeddings added to every token (all segment 0 here);
- embed_norm: a LayerNorm right after token + position + segment embeddings; embed_scale off (no sqrt(d));
- activation "gelu" (exact, erf-based) in the FFN and the MLM head; norm_eps 1e-12;
- mlm_transform: the masked-LM head Linear -> GELU -> LayerNorm before the tied output layer,
  and output_bias: a bias on the logits.
Post-LN residual blocks and tied embeddings are the paper's own.

The tokenizer is WordPiece from vocab.txt, re-implemented here to give exactly the ids of
transformers' `BertTokenizer` (the tokenizers-backed one): clean the text, put spaces around CJK
ideographs, strip accents and lower-case (when do_lower_case), split on whitespace and
punctuation, then greedy longest-match-first WordPiece with "##" continuations."""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import torch

from model.nn.config import TransformerConfig
from model.data.tokenizer import _Base
from model.nn.transformer import Intermediates, Transformer
from model.hub import HubError

MODEL_TYPES = ("bert",)

# hidden_act -> our activation, only where the function is exactly the same
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
               "relu": "relu", "silu": "swish", "swish": "swish"}

# BertConfig's defaults (an old config.json may leave any of them out)
DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 3072, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "pad_token_id": 0,
            "tie_word_embeddings": True}

# checkpoint tensors we knowingly leave out: the pooler and next-sentence head (not used for
# masked-LM), buffers some versions saved, and the output layer's copies of tied tensors
IGNORED = (re.compile(r"^(bert\.)?pooler\."), re.compile(r"^cls\.seq_relationship\."),
           re.compile(r"^(bert\.)?embeddings\.(position_ids|token_type_ids)$"))


def _get(hf: dict, key: str):
    value = hf.get(key)
    return DEFAULTS[key] if value is None and key in DEFAULTS else value


def _check(hf: dict) -> None:
    """Refuse every option our code cannot reproduce exactly."""
    pos = hf.get("position_embedding_type", "absolute")
    if pos not in (None, "absolute"):
        raise HubError(f"config.json: position_embedding_type {pos!r} is not supported "
                       "(only 'absolute' learned positions)")
    if hf.get("is_decoder"):
        raise HubError("config.json: is_decoder is true (a causal BERT decoder); only the bidirectional "
                       "masked-LM encoder is supported")
    if hf.get("add_cross_attention"):
        raise HubError("config.json: add_cross_attention is true; only the masked-LM encoder is supported")
    act = _get(hf, "hidden_act")
    if act not in ACTIVATIONS:
        raise HubError(f"config.json: hidden_act {act!r} is not supported (supported: {sorted(ACTIVATIONS)})")
    d, h = _get(hf, "hidden_size"), _get(hf, "num_attention_heads")
    if not isinstance(d, int) or not isinstance(h, int) or h <= 0 or d % h:
        raise HubError(f"config.json: hidden_size {d} is not divisible by num_attention_heads {h}")
    head = hf.get("attention_head_size")
    if head is not None and head * h != d:
        raise HubError(f"config.json: attention_head_size {head} x {h} heads != hidden_size {d}")


def config_from_hf(hf: dict) -> TransformerConfig:
    _check(hf)
    pad = _get(hf, "pad_token_id")
    try:
        return TransformerConfig(
            vocab_size=int(_get(hf, "vocab_size")), d_model=int(_get(hf, "hidden_size")),
            n_heads=int(_get(hf, "num_attention_heads")), d_ff=int(_get(hf, "intermediate_size")),
            n_encoder_layers=int(_get(hf, "num_hidden_layers")), n_decoder_layers=0,
            dropout=float(_get(hf, "hidden_dropout_prob")), max_len=int(_get(hf, "max_position_embeddings")),
            architecture="encoder-only", norm_first=False, positional="learned",
            tie_embeddings=bool(_get(hf, "tie_word_embeddings")), label_smoothing=0.0,
            pad_id=int(pad) if pad is not None else 0,
            activation=ACTIVATIONS[_get(hf, "hidden_act")], embed_scale=False,
            norm_eps=float(_get(hf, "layer_norm_eps")), output_bias=True,
            segment_vocab=int(_get(hf, "type_vocab_size")), embed_norm=True, mlm_transform=True)
    except ValueError as e:
        raise HubError(f"config.json: {e}") from None


class _Weights:
    """The checkpoint's tensors, taken one by one; what is never taken is reported."""

    def __init__(self, weights: dict[str, torch.Tensor]):
        self.w, self.used = weights, set()

    def take(self, *names: str) -> torch.Tensor:
        for name in names:
            if name in self.w:
                self.used.add(name)
                return self.w[name]
        raise HubError(f"weights: {names[0]} not found (is this a BERT masked-LM checkpoint?)")

    def norm(self, prefix: str) -> tuple[torch.Tensor, torch.Tensor]:
        """A LayerNorm's weight and bias (older TensorFlow-era checkpoints call them gamma and beta)."""
        return self.take(f"{prefix}.weight", f"{prefix}.gamma"), self.take(f"{prefix}.bias", f"{prefix}.beta")

    def drop(self, name: str) -> None:
        self.used.add(name)

    def left(self) -> list[str]:
        return sorted(k for k in self.w if k not in self.used and not any(p.match(k) for p in IGNORED))


def convert(hf_config: dict, weights: dict[str, torch.Tensor]) -> tuple[TransformerConfig, dict[str, torch.Tensor]]:
    cfg = config_from_hf(hf_config)
    if "cls.predictions.transform.dense.weight" not in weights:
        heads = sorted({k.split(".")[0] for k in weights if not k.startswith("bert.")})
        raise HubError("weights: no masked-LM head (cls.predictions.*); this checkpoint is not a "
                       f"BertForMaskedLM / BertForPreTraining (other parts: {heads or 'none'})")
    p = "bert." if any(k.startswith("bert.") for k in weights) else ""
    w = _Weights(weights)
    out: dict[str, torch.Tensor] = {}
    e = f"{p}embeddings"
    out["src_embed.token.weight"] = w.take(f"{e}.word_embeddings.weight")
    out["src_embed.position.weight"] = w.take(f"{e}.position_embeddings.weight")
    out["src_embed.segment.weight"] = w.take(f"{e}.token_type_embeddings.weight")
    out["src_embed.norm.weight"], out["src_embed.norm.bias"] = w.norm(f"{e}.LayerNorm")
    for n in range(cfg.n_encoder_layers):
        src, dst = f"{p}encoder.layer.{n}", f"encoder.{n}"
        att = f"{src}.attention"
        # our fused projection holds [W_Q; W_K; W_V] (attention.py splits q, k, v in this order)
        for kind in ("weight", "bias"):
            out[f"{dst}.self_attn.qkv.{kind}"] = torch.cat(
                [w.take(f"{att}.self.{name}.{kind}") for name in ("query", "key", "value")], dim=0)
            out[f"{dst}.self_attn.out.{kind}"] = w.take(f"{att}.output.dense.{kind}")
            out[f"{dst}.ffn.w1.{kind}"] = w.take(f"{src}.intermediate.dense.{kind}")
            out[f"{dst}.ffn.w2.{kind}"] = w.take(f"{src}.output.dense.{kind}")
        out[f"{dst}.res1.norm.weight"], out[f"{dst}.res1.norm.bias"] = w.norm(f"{att}.output.LayerNorm")
        out[f"{dst}.res2.norm.weight"], out[f"{dst}.res2.norm.bias"] = w.norm(f"{src}.output.LayerNorm")
    t = "cls.predictions.transform"
    out["mlm.0.weight"], out["mlm.0.bias"] = w.take(f"{t}.dense.weight"), w.take(f"{t}.dense.bias")
    out["mlm.2.weight"], out["mlm.2.bias"] = w.norm(f"{t}.LayerNorm")
    # The output layer. Tied (the usual case): the word embedding matrix, and the bias is
    # cls.predictions.bias, which transformers ties decoder.bias to (saved copies are ignored).
    # Untied: decoder.weight and decoder.bias are the output layer's own, cls.predictions.bias unused.
    bias, copy = "cls.predictions.bias", "cls.predictions.decoder.bias"
    if cfg.tie_embeddings:
        out["logits_bias"] = w.take(bias, copy)
        w.drop("cls.predictions.decoder.weight")
    else:
        bias, copy = copy, bias
        out["logits_bias"] = w.take(bias, copy)
        out["generator.weight"] = w.take("cls.predictions.decoder.weight")
    w.drop(copy)
    left = w.left()
    if left:
        raise HubError(f"weights: tensors this BERT importer does not know how to use: {left[:5]}"
                       f"{' …' if len(left) > 5 else ''} (a variant we cannot run exactly)")
    _check_shapes(cfg, out)
    return cfg, out


def _check_shapes(cfg: TransformerConfig, state: dict[str, torch.Tensor]) -> None:
    """Every tensor's shape against our model's (built on the meta device: no memory used)."""
    with torch.device("meta"):
        want = {k: tuple(v.shape) for k, v in Transformer(cfg).state_dict().items()}
    for key, tensor in state.items():
        if key in want and tuple(tensor.shape) != want[key]:
            raise HubError(f"weights: {key} has shape {tuple(tensor.shape)}, but config.json implies {want[key]}")


def meta(hf_config: dict) -> dict:
    return {"task": "mlm"}


# ---------------------------------------------------------------------------------------------
# WordPiece, as transformers' BertTokenizer (BertNormalizer + BertPreTokenizer + WordPiece)

VOCAB_FILE, TOKENIZER_CONFIG, TOKENIZER_JSON = "vocab.txt", "tokenizer_config.json", "tokenizer.json"
SPECIAL_ROLES = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                 "mask_token": "[MASK]"}
MAX_CHARS_PER_WORD = 100
TOKENIZER_CLASSES = ("BertTokenizer", "BertTokenizerFast")
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


def read_vocab_txt(path: Path) -> list[str]:
    """One token a line, as the tokenizers library reads it: lines split at \\n, trailing whitespace
    trimmed; the line number is the id."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise HubError(f"{path}: cannot be read ({e.strerror or e})") from None
    except UnicodeDecodeError as e:
        raise HubError(f"{path}: not UTF-8 text ({e})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("".join(WHITE_SPACE)) for line in lines]


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
            try:
                conf = json.loads(conf_path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
                raise HubError(f"{conf_path}: not readable JSON ({e})") from None
            if not isinstance(conf, dict):
                raise HubError(f"{conf_path}: not a JSON object")
        for where, d in ((conf_path.name, conf), ("config.json", hf_config or {})):
            name = d.get("tokenizer_class")
            if name is not None and name not in TOKENIZER_CLASSES:
                raise HubError(f"{where}: tokenizer_class {name!r} is not supported "
                               f"(only BERT's own WordPiece tokenizer, {TOKENIZER_CLASSES[0]})")
        specials = {role: _token_name(conf.get(role), default) for role, default in SPECIAL_ROLES.items()}
        extra = [_token_name(v, "") for v in (conf.get("added_tokens_decoder") or {}).values()
                 if isinstance(v, dict) and v.get("special")]
        max_chars, prefix = MAX_CHARS_PER_WORD, "##"
        if (folder / VOCAB_FILE).is_file():
            tokens = read_vocab_txt(folder / VOCAB_FILE)
        else:
            tokens, model = cls._tokenizer_json_vocab(folder)
            if model is None:
                raise HubError(f"{folder / VOCAB_FILE}: file not found (a BERT model folder has the "
                               f"WordPiece vocabulary {VOCAB_FILE})")
            max_chars = int(model.get("max_input_chars_per_word") or MAX_CHARS_PER_WORD)
            prefix = model.get("continuing_subword_prefix") or "##"
        if not tokens:
            raise HubError(f"{folder / VOCAB_FILE}: empty vocabulary")
        return cls(tokens, lowercase=conf.get("do_lower_case", True) is not False,
                   strip_accents=conf.get("strip_accents"),
                   chinese_chars=conf.get("tokenize_chinese_chars", True) is not False,
                   specials=specials, extra_specials=extra, max_chars=max_chars, prefix=prefix)

    @staticmethod
    def _tokenizer_json_vocab(folder: Path):
        """(tokens by id, the model section) from a tokenizer.json with a WordPiece model, else ([], None)."""
        path = folder / TOKENIZER_JSON
        if not path.is_file():
            return [], None
        try:
            model = json.loads(path.read_text(encoding="utf-8")).get("model") or {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            return [], None
        vocab = model.get("vocab")
        if model.get("type") != "WordPiece" or not isinstance(vocab, dict) or not vocab:
            return [], None
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


def tokenizer(folder: Path, hf_config: dict) -> WordPieceTokenizer:
    return WordPieceTokenizer.load(folder, hf_config)


# ---------------------------------------------------------------------------------------------
# Fill in [MASK]

@dataclass
class FillMask:
    """predictions: one (position, [(piece, probability), ...] best first) per [MASK], where position
    indexes `ids` / `pieces` / the attention maps (position 0 is [CLS]); attention: every layer's
    bidirectional self-attention (Intermediates.encoder_self, each (1, H, L, L)); segments: 0 for
    [CLS] + sentence A + [SEP], 1 for sentence B + [SEP] (a pair)."""
    predictions: list[tuple[int, list[tuple[str, float]]]]
    attention: Intermediates
    ids: list[int]
    pieces: list[str]
    segments: list[int] | None = None


@torch.no_grad()
def fill_mask(loaded, text: str, top: int = 5, text_b: str | None = None) -> FillMask:
    """Run [CLS] + text + [SEP] (+ text_b + [SEP], as segment 1) through our model; the `top` most probable
    pieces at each [MASK]."""
    tok, model = loaded.tokenizer, loaded.model
    ids = [tok.bos_id, *tok.encode(text), tok.eos_id]
    segments = [0] * len(ids)
    if text_b is not None and text_b.strip():
        second = [*tok.encode(text_b), tok.eos_id]
        ids, segments = ids + second, segments + [1] * len(second)
    max_len = loaded.config.max_len
    if len(ids) > max_len:
        raise ValueError(f"the text is {len(ids)} tokens with [CLS] and [SEP]; this model reads at most {max_len}")
    seg = torch.tensor([segments], device=model.device) if model.config.segment_vocab else None
    out = model(torch.tensor([ids], device=model.device), return_attention=True, segments=seg)
    probs = torch.softmax(out.logits[0].float(), dim=-1)  # (L, vocab)
    k = max(1, min(int(top), probs.size(-1)))
    predictions = []
    for pos, i in enumerate(ids):
        if i == tok.mask_id:
            p, j = probs[pos].topk(k)
            predictions.append((pos, [(tok.id_to_piece(int(b)) if int(b) < tok.vocab_size else f"[{int(b)}]", float(a))
                                      for a, b in zip(p.tolist(), j.tolist())]))
    return FillMask(predictions, out.attention, ids, [tok.id_to_piece(i) for i in ids], segments)
