"""Marian / opus-mt (config.json model_type "marian", e.g. Helsinki-NLP/opus-mt-en-de), run by our own
model code.

A Marian model is the paper's encoder-decoder Transformer (opus-mt-en-de: 6+6 layers, d_model 512,
8 heads, d_ff 2048, post-LN, sinusoidal positions, one embedding matrix for source, target and the
softmax). Where it differs, each difference is a TransformerConfig option:
- the FFN's non-linearity is swish (SiLU), not ReLU: activation="swish" (from activation_function);
- the sinusoids are laid out as [all sines | all cosines], not interleaved: pe_layout="halves";
- token embeddings are scaled by sqrt(d_model) only when scale_embedding is set (it is, in opus-mt);
- a bias is added to the output logits (final_logits_bias): output_bias=True;
- max_len = max_position_embeddings; pad_id = pad_token_id.
The decoder starts from the pad token (decoder_start_token_id), not from a <s>, and never produces
it (the checkpoints' bad_words_ids): the tokenizer's bos_id is decoder_start_token_id and its
`banned_ids` holds the pad id, which model.inference.decode leaves out of every choice.

Weights: Hugging Face keeps q, k, v as three Linear layers; ours are fused — self-attention's `qkv`
is [q; k; v] stacked on the output axis, cross-attention's `kv` is [k; v]. Layer norms: encoder
self_attn_layer_norm / final_layer_norm are our res1 / res2, decoder self_attn_layer_norm /
encoder_attn_layer_norm / final_layer_norm are res1 / res2 / res3; fc1 / fc2 are ffn.w1 / w2.
Embeddings are read as Hugging Face reads them: each role (encoder input, decoder input, softmax)
takes its own tensor when the file has one, else the one it is tied to; when all three are equal
the model is built tied (tie_embeddings=True), otherwise with separate target embedding and
output layer holding those values. A checkpoint tensor we do not know is refused, not ignored.

Tokenizer: our own MarianTokenizer, on sentencepiece: source.spm cuts the source into pieces,
vocab.json maps pieces to ids (a piece it lacks is <unk>), target.spm joins generated pieces back
into text. A target-language code such as >>kor<< at the start of the text is kept as one token.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

import torch

from model.nn.config import TransformerConfig
from model.nn.layers import positional_encoding
from model.hub import HubError

# The family's declaration (model/hub/families.py reads it without importing this module: literals only)
MODEL_TYPES = ("marian",)
TITLE = "Marian/opus-mt"
SIZES = ("encoder_layers", "d_model", "encoder_ffn_dim", "encoder_attention_heads")
SIZE_KEYS = {"vocab_size": 1, "d_model": 1, "encoder_layers": 0, "decoder_layers": 0, "encoder_ffn_dim": 1,
             "decoder_ffn_dim": 1, "encoder_attention_heads": 1, "decoder_attention_heads": 1,
             "max_position_embeddings": 1, "decoder_vocab_size": 1}
AGREE = {"d_model": (r"(?:shared|encoder\.embed_tokens)\.weight", 1),
         "vocab_size": (r"(?:shared|encoder\.embed_tokens)\.weight", 0),
         "encoder_ffn_dim": (r"encoder\.layers\.0\.fc1\.weight", 0),
         "decoder_ffn_dim": (r"decoder\.layers\.0\.fc1\.weight", 0),
         "max_position_embeddings": (r"encoder\.embed_positions\.weight", 0)}
LAYERS = {"encoder_layers": r"encoder\.layers\.(\d+)\.", "decoder_layers": r"decoder\.layers\.(\d+)\."}
READS = ("vocab.json", "target_vocab.json", "source.spm", "target.spm")
UNCOUNTED = {r"embed_positions\.weight$": None}  # stored sinusoids: computed by our model, no parameter
SOURCE_SPM, TARGET_SPM, VOCAB_FILE, TARGET_VOCAB_FILE = "source.spm", "target.spm", "vocab.json", "target_vocab.json"
TOKENIZER_CONFIG, GENERATION_CONFIG = "tokenizer_config.json", "generation_config.json"
SPIECE_UNDERLINE = "\u2581"

# Hugging Face activation names -> ours, only where the function is the same one.
ACTIVATIONS = {"swish": "swish", "silu": "swish", "relu": "relu", "gelu": "gelu", "gelu_python": "gelu",
               "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh"}

# MarianConfig's defaults, for keys a config.json leaves out.
DEFAULTS = {"vocab_size": 58101, "max_position_embeddings": 1024, "encoder_layers": 12, "encoder_ffn_dim": 4096,
            "encoder_attention_heads": 16, "decoder_layers": 12, "decoder_ffn_dim": 4096,
            "decoder_attention_heads": 16, "activation_function": "gelu", "d_model": 1024, "dropout": 0.1,
            "decoder_start_token_id": 58100, "scale_embedding": False, "pad_token_id": 58100, "eos_token_id": 0,
            "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True}

# BART-family options some Marian configs carry. Hugging Face's MarianMTModel ignores them and always
# runs the post-LN, sinusoidal model; a checkpoint that sets them was trained as another network (its
# weights would expect pre-LN, final norms, a norm after the embeddings or learned positions), so
# neither Hugging Face nor we would run it faithfully: refused with the reason. (option, paper value, why)
UNSUPPORTED = (
    ("normalize_before", False, "pre-LN layers (normalize_before=true) with the final LayerNorms they need"),
    ("add_final_layer_norm", False, "a final LayerNorm after the encoder and decoder (add_final_layer_norm=true)"),
    ("normalize_embedding", False, "a LayerNorm after the embeddings (normalize_embedding=true)"),
    ("static_position_embeddings", True, "learned position embeddings (static_position_embeddings=false)"),
)

# Per layer: Hugging Face name -> ours (the q, k, v projections are fused separately).
ENCODER_LAYER = {"self_attn.out_proj": "self_attn.out", "self_attn_layer_norm": "res1.norm",
                 "fc1": "ffn.w1", "fc2": "ffn.w2", "final_layer_norm": "res2.norm"}
DECODER_LAYER = {"self_attn.out_proj": "self_attn.out", "self_attn_layer_norm": "res1.norm",
                 "encoder_attn.q_proj": "cross_attn.q", "encoder_attn.out_proj": "cross_attn.out",
                 "encoder_attn_layer_norm": "res2.norm", "fc1": "ffn.w1", "fc2": "ffn.w2",
                 "final_layer_norm": "res3.norm"}
EMBEDDING_KEYS = ("shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight")
POSITION_KEYS = ("encoder.embed_positions.weight", "decoder.embed_positions.weight")
POSITION_TOL = 1e-4  # stored sinusoids (older .bin checkpoints) must be Marian's own


# -----------------------------------------------------------------------------
# config

def _int(value, name: str) -> int:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, int) or isinstance(value, bool):
        raise HubError(f"config.json: {name} must be one integer, got {value!r}")
    return value


def _get(hf: dict, key: str):
    value = hf.get(key)
    return DEFAULTS[key] if value is None else value


def check_config(hf: dict) -> None:
    """Refuse, with the reason, a Marian config our Transformer cannot reproduce exactly."""
    for option, paper, what in UNSUPPORTED:
        if option in hf and bool(hf[option]) != paper:
            raise HubError(f"config.json: unsupported Marian variant: {what}; Hugging Face's MarianMTModel "
                           f"runs post-LN, sinusoidal Marian models only, and so do we")
    act = _get(hf, "activation_function")
    if act not in ACTIVATIONS:
        raise HubError(f"config.json: unsupported activation_function {act!r} "
                       f"(supported: {', '.join(sorted(ACTIVATIONS))})")
    pairs = (("encoder_attention_heads", "decoder_attention_heads", "attention heads"),
             ("encoder_ffn_dim", "decoder_ffn_dim", "feed-forward sizes"))
    for enc, dec, what in pairs:
        if _get(hf, enc) != _get(hf, dec):
            raise HubError(f"config.json: encoder and decoder {what} differ ({enc}={_get(hf, enc)}, "
                           f"{dec}={_get(hf, dec)}); our Transformer has one value for both")
    d, h = _get(hf, "d_model"), _get(hf, "encoder_attention_heads")
    if not (isinstance(d, int) and isinstance(h, int) and h > 0 and d % h == 0):
        raise HubError(f"config.json: d_model={d!r} is not divisible by {h!r} attention heads")
    V = _get(hf, "vocab_size")
    dv = hf.get("decoder_vocab_size") or V
    if dv != V:
        raise HubError(f"config.json: decoder_vocab_size={dv} differs from vocab_size={V}; "
                       f"our Transformer has one vocabulary for source and target")
    pad = _int(_get(hf, "pad_token_id"), "pad_token_id")
    eos = _int(_get(hf, "eos_token_id"), "eos_token_id")
    start = _int(_get(hf, "decoder_start_token_id"), "decoder_start_token_id")
    for name, i in (("pad_token_id", pad), ("eos_token_id", eos), ("decoder_start_token_id", start)):
        if not 0 <= i < V:
            raise HubError(f"config.json: {name}={i} outside the vocabulary (vocab_size={V})")


def transformer_config(hf: dict, tie_embeddings: bool = True) -> TransformerConfig:
    check_config(hf)
    dropout = float(hf.get("dropout") or 0.0)
    try:
        return TransformerConfig(
            vocab_size=_get(hf, "vocab_size"), d_model=_get(hf, "d_model"), n_heads=_get(hf, "encoder_attention_heads"),
            d_ff=_get(hf, "encoder_ffn_dim"), n_encoder_layers=_get(hf, "encoder_layers"),
            n_decoder_layers=_get(hf, "decoder_layers"), dropout=dropout if 0.0 <= dropout < 1.0 else 0.1,
            max_len=_get(hf, "max_position_embeddings"), architecture="encoder-decoder", norm_first=False,
            positional="sinusoidal", tie_embeddings=tie_embeddings,
            pad_id=_int(_get(hf, "pad_token_id"), "pad_token_id"),
            activation=ACTIVATIONS[_get(hf, "activation_function")], pe_layout="halves",
            embed_scale=bool(_get(hf, "scale_embedding")), norm_eps=1e-5, output_bias=True)
    except (TypeError, ValueError) as e:
        raise HubError(f"config.json: not a usable Marian config ({str(e)[:160]})") from None


# -----------------------------------------------------------------------------
# weights

def _normalise_names(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """MarianMTModel names its tensors model.encoder..., model.decoder..., model.shared, lm_head and
    final_logits_bias; a bare MarianModel leaves out the "model." prefix."""
    return {(k[len("model."):] if k.startswith("model.") else k): v for k, v in weights.items()}


def convert(hf_config: dict, weights: dict[str, torch.Tensor]) -> tuple[TransformerConfig, dict[str, torch.Tensor]]:
    """Marian's config.json and weights -> our TransformerConfig and state dict (see the module doc)."""
    check_config(hf_config)
    w = _normalise_names(weights)
    used: set[str] = set()

    def take(name: str) -> torch.Tensor:
        if name not in w:
            raise HubError(f"weights: {name} is missing (is this a complete MarianMTModel checkpoint?)")
        used.add(name)
        return w[name].float()

    # embeddings, resolved role by role as Hugging Face does (see the module doc)
    def first(*names: str) -> torch.Tensor | None:
        for n in names:
            if n in w:
                return w[n].float()
        return None

    share = bool(_get(hf_config, "share_encoder_decoder_embeddings"))
    enc = first("encoder.embed_tokens.weight", *(("shared.weight",) if share else ()))
    dec = first("decoder.embed_tokens.weight", *(("shared.weight",) if share else ()))
    if enc is None or dec is None:
        raise HubError("weights: the token embeddings (model.shared.weight or model.encoder/decoder.embed_tokens"
                       ".weight) are missing")
    out = first("lm_head.weight")
    if out is None:
        if not _get(hf_config, "tie_word_embeddings"):
            raise HubError("weights: lm_head.weight is missing and tie_word_embeddings is false")
        out = dec
    used.update(k for k in EMBEDDING_KEYS if k in w)
    V, D = _get(hf_config, "vocab_size"), _get(hf_config, "d_model")
    for name, t in (("encoder embeddings", enc), ("decoder embeddings", dec), ("lm_head", out)):
        if tuple(t.shape) != (V, D):
            raise HubError(f"weights: {name} have shape {tuple(t.shape)}, config.json says ({V}, {D})")
    tied = torch.equal(enc, dec) and torch.equal(dec, out)
    out_is_dec = not tied and torch.equal(dec, out)  # separate vocabularies, output tied to the target side
    config = transformer_config(hf_config, tie_embeddings=tied).replace(tie_output=out_is_dec)

    state: dict[str, torch.Tensor] = {"src_embed.token.weight": enc, "tgt_embed.token.weight": dec if not tied else enc}
    if not tied and not out_is_dec:
        state["generator.weight"] = out
    bias = first("final_logits_bias")
    used.add("final_logits_bias")
    state["logits_bias"] = torch.zeros(V) if bias is None else bias.reshape(-1)
    if state["logits_bias"].numel() != V:
        raise HubError(f"weights: final_logits_bias has {state['logits_bias'].numel()} entries, vocab_size is {V}")

    for key in POSITION_KEYS:  # not saved by recent transformers; older .bin files hold the sinusoids
        if key in w:
            used.add(key)
            stored = w[key].float()
            want = positional_encoding(stored.shape[0], stored.shape[1], device="cpu", layout="halves")
            tol = POSITION_TOL if w[key].dtype in (torch.float32, torch.float64) else 1e-2  # fp16 / bf16 files
            if stored.shape[1] != D or not torch.allclose(stored, want, atol=tol, rtol=0):
                raise HubError(f"weights: {key} are not Marian's sinusoidal positions (learned positions are not "
                               f"supported for Marian)")

    def attention(src: str, dst: str, names: str) -> None:
        for kind in ("weight", "bias"):
            state[f"{dst}.{kind}"] = torch.cat([take(f"{src}.{p}_proj.{kind}") for p in names])

    for prefix, n_layers, table in (("encoder", config.n_encoder_layers, ENCODER_LAYER),
                                    ("decoder", config.n_decoder_layers, DECODER_LAYER)):
        for i in range(n_layers):
            hf_l, our_l = f"{prefix}.layers.{i}", f"{prefix}.{i}"
            attention(f"{hf_l}.self_attn", f"{our_l}.self_attn.qkv", "qkv")
            if prefix == "decoder":
                attention(f"{hf_l}.encoder_attn", f"{our_l}.cross_attn.kv", "kv")
            for theirs, ours in table.items():
                for kind in ("weight", "bias"):
                    state[f"{our_l}.{ours}.{kind}"] = take(f"{hf_l}.{theirs}.{kind}")

    unknown = sorted(set(w) - used)
    if unknown:
        raise HubError(f"weights: tensors this Marian importer does not know ({', '.join(unknown[:5])}"
                       f"{', …' if len(unknown) > 5 else ''}): a variant our Transformer cannot run")
    return config, state


# -----------------------------------------------------------------------------
# tokenizer

def _read_json(path: Path, required: bool = True, entries: int | None = None):
    """A tokenizer's JSON file, bounded (model/hub/bytebpe.read_json): with `entries`, refused unread when it holds
    far more than that many."""
    from model.hub.bytebpe import read_json
    if not path.is_file():
        if required:
            raise HubError(f"{path.name}: file not found (a Marian model folder has {path.name})")
        return None
    return read_json(path, entries)


def _load_spm(path: Path):
    import sentencepiece as spm
    if not path.is_file():
        raise HubError(f"{path}: file not found (a Marian model folder has {SOURCE_SPM} and {TARGET_SPM})")
    try:
        data = path.read_bytes()
        if not data:
            raise ValueError("empty file")
        return spm.SentencePieceProcessor(model_proto=data)
    except Exception as e:  # sentencepiece raises RuntimeError / OSError on bad protos
        raise HubError(f"{path}: not a SentencePiece model ({str(e).strip()[:200] or type(e).__name__})") from None


def _token_text(value, default: str) -> str:
    """A special token as tokenizer_config.json writes it: a string, or an AddedToken dict."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else default


def _vocab(data, path: Path) -> dict[str, int]:
    if not isinstance(data, dict) or not data or not all(isinstance(v, int) for v in data.values()):
        raise HubError(f"{path}: not a vocabulary (expected {{piece: id}})")
    return data


class MarianTokenizer:
    """Hugging Face's MarianTokenizer, on sentencepiece, with our tokenizer interface (model/data/tokenizer.py).

    encode(text): the text is split around literal special tokens (</s>, <unk>, <pad>), each other
    chunk loses a leading language code (>>kor<<, kept as one token), source.spm cuts the rest into
    pieces, and vocab.json gives each piece its id (<unk> when it has none). No </s> is appended:
    model.inference.decode.translate appends eos_id itself.
    decode(ids): specials (pad = the decoder's start, eos, unk) are skipped, ids become pieces through
    the vocabulary, and sentencepiece joins them (as Hugging Face: the source model for a shared
    vocabulary, target.spm for separate ones)."""
    kind = "marian"

    def __init__(self, source_sp, target_sp, vocab: dict[str, int], *, target_vocab: dict[str, int] | None = None,
                 eos_id: int, pad_id: int, bos_id: int, unk_token: str = "<unk>", eos_token: str = "</s>",
                 pad_token: str = "<pad>", banned_ids: Iterable[int] = (), source_lang: str | None = None,
                 target_lang: str | None = None, vocab_size: int | None = None):
        self.sp_source, self.sp_target = source_sp, target_sp
        self.encoder = vocab
        self.separate_vocabs = target_vocab is not None
        tgt = target_vocab if target_vocab is not None else vocab
        self.target_encoder = tgt
        self.decoder = {i: p for p, i in tgt.items()}
        self.source_decoder = {i: p for p, i in vocab.items()}
        self.sp_decode = target_sp if self.separate_vocabs else source_sp
        if unk_token not in vocab:
            raise HubError(f"{VOCAB_FILE}: no {unk_token} token")
        self.unk_id = vocab[unk_token]
        self.eos_id, self.pad_id, self.bos_id = eos_id, pad_id, bos_id
        self.special_tokens = tuple(dict.fromkeys((eos_token, unk_token, pad_token)))
        self.special_ids = {table[t] for table in (vocab, tgt) for t in self.special_tokens if t in table}
        longest_first = sorted(self.special_tokens, key=len, reverse=True)
        self._split_re = re.compile("(" + "|".join(map(re.escape, longest_first)) + ")")
        self.banned_ids = tuple(sorted({int(i) for i in banned_ids} - {eos_id}))
        # target-language codes (>>kor<<) a multilingual model wants first; as transformers, shared vocabularies only
        self.language_codes = [] if self.separate_vocabs else [p for p in vocab
                                                               if p.startswith(">>") and p.endswith("<<")]
        self.source_lang, self.target_lang = source_lang, target_lang
        self._vocab_size = vocab_size if vocab_size is not None else max(len(vocab), len(tgt))

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, folder: str | Path, hf_config: dict) -> "MarianTokenizer":
        folder = Path(folder)
        tcfg = _read_json(folder / TOKENIZER_CONFIG, required=False) or {}
        if not isinstance(tcfg, dict):
            raise HubError(f"{folder / TOKENIZER_CONFIG}: not a JSON object")
        from model.hub.bytebpe import vocabulary_rows
        rows = vocabulary_rows(hf_config)  # the embedding's rows bound the vocabularies read
        vocab = _vocab(_read_json(folder / VOCAB_FILE, entries=rows), folder / VOCAB_FILE)
        target_vocab = None
        if tcfg.get("separate_vocabs"):
            target_vocab = _vocab(_read_json(folder / TARGET_VOCAB_FILE, entries=rows), folder / TARGET_VOCAB_FILE)
        source_sp, target_sp = _load_spm(folder / SOURCE_SPM), _load_spm(folder / TARGET_SPM)
        gen = _read_json(folder / GENERATION_CONFIG, required=False) or {}
        if not isinstance(gen, dict):
            gen = {}
        unk = _token_text(tcfg.get("unk_token"), "<unk>")
        eos_t = _token_text(tcfg.get("eos_token"), "</s>")
        pad_t = _token_text(tcfg.get("pad_token"), "<pad>")
        tgt = target_vocab if target_vocab is not None else vocab
        eos = _int(_get(hf_config, "eos_token_id"), "eos_token_id")
        pad = _int(_get(hf_config, "pad_token_id"), "pad_token_id")
        start = hf_config.get("decoder_start_token_id", gen.get("decoder_start_token_id"))
        start = pad if start is None else _int(start, "decoder_start_token_id")
        for token, cid, name in ((eos_t, eos, "eos_token_id"), (pad_t, pad, "pad_token_id")):
            if token in tgt and tgt[token] != cid:
                raise HubError(f"{folder / VOCAB_FILE}: {token} has id {tgt[token]}, but config.json's {name} is {cid}")
        banned = {pad}
        for source in (hf_config, gen):
            for words in source.get("bad_words_ids") or []:
                if isinstance(words, list) and len(words) == 1 and isinstance(words[0], int):
                    banned.add(words[0])
        return cls(source_sp, target_sp, vocab, target_vocab=target_vocab, eos_id=eos, pad_id=pad, bos_id=start,
                   unk_token=unk, eos_token=eos_t, pad_token=pad_t, banned_ids=banned,
                   source_lang=tcfg.get("source_lang"), target_lang=tcfg.get("target_lang"),
                   vocab_size=_get(hf_config, "vocab_size"))

    # ------------------------------------------------------------------ interface
    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def largest_id(self) -> int:
        """The largest id this tokenizer gives (the model's embedding must have a row for it)."""
        return max(max(self.encoder.values()), max(self.target_encoder.values()))

    source = VOCAB_FILE  # the file its vocabulary came from, for refusals

    def _source_pieces(self, text: str) -> list[tuple[str, int]]:
        """(piece, id) for every source token, exactly as Hugging Face's MarianTokenizer cuts it."""
        out: list[tuple[str, int]] = []
        for chunk in self._split_re.split(text):
            if not chunk:
                continue
            if chunk in self.special_tokens:
                out.append((chunk, self.encoder.get(chunk, self.unk_id)))
                continue
            code, rest = [], chunk
            if chunk.startswith(">>") and (end := chunk.find("<<")) != -1:  # a language code such as >>kor<<
                code, rest = [chunk[: end + 2]], chunk[end + 2:]
            for piece in code + self.sp_source.encode(rest, out_type=str):
                out.append((piece, self.encoder.get(piece, self.unk_id)))
        return out

    def encode(self, text: str) -> list[int]:
        return [i for _, i in self._source_pieces(text)]

    def pieces(self, text: str) -> list[str]:
        """One piece per encoded id: the vocabulary's piece (<unk> for a piece it lacks)."""
        return [self.source_piece(i) for i in self.encode(text)]

    def _piece(self, table: dict[int, str], sp, i: int) -> str:
        i = int(i)
        if i in table:
            return table[i]
        if 0 <= i < sp.get_piece_size():  # as Hugging Face: the sentencepiece model's own piece
            return sp.id_to_piece(i) or self.special_tokens[1]
        return self.special_tokens[1]

    def id_to_piece(self, i: int) -> str:
        """A target-side piece (the decoder's vocabulary; the same as the source's unless separate)."""
        return self._piece(self.decoder, self.sp_target if self.separate_vocabs else self.sp_source, i)

    def source_piece(self, i: int) -> str:
        return self._piece(self.source_decoder, self.sp_source, i)

    def is_byte(self, i: int) -> bool:
        return re.fullmatch(r"<0x[0-9A-Fa-f]{2}>", self.id_to_piece(i)) is not None

    def decode(self, ids: Iterable[int]) -> str:
        skip = self.special_ids | {self.pad_id, self.bos_id, self.eos_id, self.unk_id}
        pieces = [self.id_to_piece(i) for i in ids if int(i) not in skip]
        return self.sp_decode.decode_pieces(pieces).replace(SPIECE_UNDERLINE, " ").strip()

    def __repr__(self) -> str:
        return f"MarianTokenizer(vocab_size={self.vocab_size}, separate_vocabs={self.separate_vocabs})"


def tokenizer(folder: Path, hf_config: dict) -> MarianTokenizer:
    return MarianTokenizer.load(folder, hf_config)


# -----------------------------------------------------------------------------
# facts for the app

NAME_RE = re.compile(r"opus-mt-(?:tc-[a-z0-9]+-)?([A-Za-z_]+)-([A-Za-z_]+)$")


def meta(hf_config: dict) -> dict:
    """{"task": "translation"}, with source_lang / target_lang when the config or the model's name
    (opus-mt-<src>-<tgt>, opus-mt-tc-big-<src>-<tgt>) says them."""
    out: dict = {"task": "translation"}
    src, tgt = hf_config.get("source_lang"), hf_config.get("target_lang")
    name = str(hf_config.get("_name_or_path") or "").rstrip("/").rsplit("/", 1)[-1]
    m = NAME_RE.search(name)
    if m:
        src, tgt = src or m.group(1), tgt or m.group(2)
    if isinstance(src, str) and src:
        out["source_lang"] = src
    if isinstance(tgt, str) and tgt:
        out["target_lang"] = tgt
    return out
