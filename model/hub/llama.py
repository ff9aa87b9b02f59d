"""Llama, Mistral and Qwen2 (config.json model_type "llama", "mistral", "qwen2"): today's decoder-only
Transformers, run by our own model code. The three share one layout and differ only in options.

How they differ from the paper's Transformer, each a TransformerConfig option (model/nn/differences.py says
each in words):
- decoder only, pre-norm with a final norm: architecture="decoder-only", norm_first=True;
- RMSNorm instead of LayerNorm (eps rms_norm_eps): norm="rmsnorm";
- gated feed-forward, SwiGLU (hidden_act silu): ffn_gated=True, activation="swish", no biases (Llama's mlp_bias);
- rotary positions inside attention, base rope_theta, instead of added sinusoids: positional="rotary";
- grouped-query attention: num_key_value_heads key/value heads shared by the query heads: n_kv_heads;
- no biases on W^Q, W^K, W^V, W^O (Llama; attention_bias turns them on), q/k/v biases without W^O's (Qwen2);
- Mistral: a sliding window of sliding_window keys: window;
- token embeddings not multiplied by sqrt(d_model); the output layer untied (Llama, Mistral) or tied (Qwen2's
  small models, tie_word_embeddings).
Refused by name: RoPE scaling (rope_type other than "default"), windows in some layers only (Qwen2's
use_sliding_window with max_window_layers), classifier heads.

Weights: model.embed_tokens, model.layers.N.{self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj,
input_layernorm, post_attention_layernorm}, model.norm, lm_head (the *Model classes without "model." and
without lm_head). q, k, v are stacked into our fused qkv; Hugging Face stores rotary pairs as (i, i + d/2)
("rotate_half"), which is our pairing, so no weight is permuted.

Tokenizers: a SentencePiece `tokenizer.model` (Llama 2, TinyLlama, Mistral) run by sentencepiece itself, or a
byte-level BPE `tokenizer.json` (Llama 3, SmolLM, Qwen2) whose pre-tokenizer splits with its own regex
(model/hub/bytebpe.py's BPE with that regex, NFC first where the file says so, whole words looked up first
where ignore_merges says so)."""
from __future__ import annotations

import unicodedata
from pathlib import Path

import regex
import torch

from model.hub import HubError, bytebpe
from model.hub.bytebpe import TOKENIZER_JSON, ByteBPETokenizer
from model.hub.guard import transformer_config
from model.nn.config import TransformerConfig

MODEL_TYPES = ("llama", "mistral", "qwen2")
TITLE = "Llama/Mistral/Qwen2"
# The guard's rules (model/hub/guard.py): sizes read from config.json (least value), the stored tensor each must
# equal (config key -> (name pattern, axis)), the layer index in stored names; the tokenizer's files, read whole.
SIZE_KEYS = {"vocab_size": 1, "hidden_size": 1, "num_hidden_layers": 0, "num_attention_heads": 1,
             "num_key_value_heads": 1, "intermediate_size": 1, "max_position_embeddings": 1, "head_dim": 1,
             "sliding_window": 1, "max_window_layers": 0}
AGREE = {"hidden_size": (r"embed_tokens\.weight", 1), "vocab_size": (r"embed_tokens\.weight", 0),
         "intermediate_size": (r"layers\.0\.mlp\.up_proj\.weight", 0)}
LAYERS = {"num_hidden_layers": r"layers\.(\d+)\."}
READS = ("tokenizer.model", "tokenizer.json")
UNCOUNTED = {r"rotary_emb\.inv_freq$": None}  # stored by older checkpoints; computed by our attention
SPM_FILE = "tokenizer.model"
# config.json's architectures -> the task: a language model, or the network without a head
ARCHITECTURES = {f"{name}{suffix}": task for name in ("Llama", "Mistral", "Qwen2")
                 for suffix, task in (("ForCausalLM", "lm"), ("Model", "features"))}
# Hugging Face activation names -> ours (the gate's non-linearity: silu makes SwiGLU, gelu GeGLU)
ACTIVATIONS = {"silu": "swish", "swish": "swish", "gelu": "gelu", "gelu_pytorch_tanh": "gelu_tanh",
               "gelu_new": "gelu_tanh", "relu": "relu"}
# our TransformerConfig's fields -> config.json's keys, for refusals in the checkpoint's own words
FIELD_NAMES = {"d_model": "hidden_size", "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
               "d_ff": "intermediate_size", "n_decoder_layers": "num_hidden_layers", "vocab_size": "vocab_size",
               "max_len": "max_position_embeddings", "norm_eps": "rms_norm_eps", "rope_theta": "rope_theta",
               "window": "sliding_window", "d_k": "head_dim", "d_v": "head_dim", "rotary_dim": "partial_rotary_factor"}
BUFFER_SUFFIXES = ("rotary_emb.inv_freq",)  # stored by older checkpoints; computed by our attention


# -----------------------------------------------------------------------------
# config and weights

def _first_int(value) -> int | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def task_of(hf_config: dict) -> str:
    """"lm" for *ForCausalLM (or no architectures named), "features" for the headless *Model; HubError for a
    class this loader has no head for."""
    archs = hf_config.get("architectures")
    archs = [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
    other = [a for a in archs if a not in ARCHITECTURES]
    if other:
        raise HubError(f"config.json: architecture {other[0][:60]} is not supported (this family loads as "
                       f"{', '.join(ARCHITECTURES)})")
    return ARCHITECTURES[archs[0]] if archs else "lm"


def rope_theta(hf_config: dict) -> float:
    """The rotary base: rope_parameters.rope_theta (transformers 5) or rope_theta; RoPE scaling refused by name."""
    params = hf_config.get("rope_parameters") or hf_config.get("rope_scaling") or {}
    if not isinstance(params, dict):
        raise HubError(f"config.json: rope_parameters is {str(params)[:60]!r}, not a dictionary")
    kind = params.get("rope_type", params.get("type", "default"))
    if kind != "default":
        raise HubError(f"config.json: rope_type {str(kind)[:40]!r} (rotary positions rescaled for long contexts) "
                       "is not supported; only the plain rotary positions (rope_type \"default\") are")
    theta = params.get("rope_theta", hf_config.get("rope_theta", 10000.0))
    return float(theta) if isinstance(theta, (int, float)) and not isinstance(theta, bool) else theta


def window(hf_config: dict) -> int | None:
    """The sliding window every layer uses, or None; a window in some layers only is refused by name."""
    kinds = hf_config.get("layer_types")
    if isinstance(kinds, list) and len(set(map(str, kinds))) > 1:
        raise HubError("config.json: layer_types mixes full and sliding-window attention; this loader runs one "
                       "kind of attention in every layer")
    if hf_config["model_type"] == "qwen2":
        if not hf_config.get("use_sliding_window"):
            return None
        if hf_config.get("max_window_layers", 0) < hf_config.get("num_hidden_layers", 0):
            raise HubError("config.json: use_sliding_window with max_window_layers below num_hidden_layers (a "
                           "window in some layers only) is not supported")
    return hf_config.get("sliding_window")


def _head_sizes(hf_config: dict) -> tuple[int | None, int | None]:
    """(d_k = d_v, rotary_dim): head_dim where it is not hidden_size / heads; the turned part of each head."""
    d, h = hf_config.get("hidden_size"), hf_config.get("num_attention_heads")
    head = hf_config.get("head_dim")
    default = d // h if isinstance(d, int) and isinstance(h, int) and h > 0 else None
    d_k = head if isinstance(head, int) and head != default else None
    factor = hf_config.get("partial_rotary_factor", 1.0)
    rotary = None
    if factor != 1.0:
        if not isinstance(factor, (int, float)) or isinstance(factor, bool) or not 0 < factor < 1:
            raise HubError(f"config.json: partial_rotary_factor is {repr(factor)[:40]}; it must be above 0 and "
                           "at most 1")
        rotary = int((head or default or 0) * factor)
    return d_k, rotary


def convert(hf_config: dict, weights: dict[str, torch.Tensor]) -> tuple[TransformerConfig, dict[str, torch.Tensor]]:
    """A Llama, Mistral or Qwen2 config.json and weights -> our TransformerConfig and state dict."""
    family = hf_config["model_type"]
    task = task_of(hf_config)
    act = hf_config.get("hidden_act", "silu")
    if act not in ACTIVATIONS:
        raise HubError(f"config.json: hidden_act={str(act)[:40]!r} is not supported "
                       f"(supported: {', '.join(sorted(ACTIVATIONS))})")
    w = {k.removeprefix("model."): t for k, t in weights.items() if not k.endswith(BUFFER_SUFFIXES)}
    for name in ("embed_tokens.weight", "norm.weight"):
        if name not in w:
            raise HubError(f"weights: no {name} (or model.{name}); is this a {family} checkpoint?")
    vocab, d_model = w["embed_tokens.weight"].shape
    heads = hf_config.get("num_attention_heads", 32)
    attention_bias = bool(hf_config.get("attention_bias", False))
    d_k, rotary_dim = _head_sizes(hf_config)
    tie = bool(hf_config.get("tie_word_embeddings", False))
    eos = _first_int(hf_config.get("eos_token_id"))
    pad = _first_int(hf_config.get("pad_token_id"))
    pad = pad if pad is not None and 0 <= pad < vocab else eos if eos is not None and 0 <= eos < vocab else 0
    config = transformer_config(
        FIELD_NAMES, vocab_size=vocab, d_model=d_model, n_heads=heads,
        n_kv_heads=hf_config.get("num_key_value_heads") or heads, d_ff=hf_config.get("intermediate_size", 4 * d_model),
        n_encoder_layers=0, n_decoder_layers=hf_config.get("num_hidden_layers", 0), dropout=0.0,
        max_len=hf_config.get("max_position_embeddings", 2048), architecture="decoder-only", norm_first=True,
        positional="rotary", rope_theta=rope_theta(hf_config), rotary_dim=rotary_dim, d_k=d_k, d_v=d_k,
        tie_embeddings=tie, label_smoothing=0.0, pad_id=pad, embed_scale=False, norm="rmsnorm",
        norm_eps=hf_config.get("rms_norm_eps", 1e-6), activation=ACTIVATIONS[act], ffn_gated=True,
        ffn_bias=bool(hf_config.get("mlp_bias", False)), qkv_bias=family == "qwen2" or attention_bias,
        attn_out_bias=attention_bias, window=window(hf_config))

    state: dict[str, torch.Tensor] = {}
    used: set[str] = set()

    def take(name: str) -> torch.Tensor:
        if name not in w:
            raise HubError(f"weights: {name} missing")
        used.add(name)
        return w[name]

    state["tgt_embed.token.weight"] = take("embed_tokens.weight")
    biases = ("weight", "bias") if config.qkv_bias else ("weight",)
    for i in range(config.n_decoder_layers):
        hf, ours = f"layers.{i}.", f"decoder.{i}."
        for kind in biases:  # q, k, v stacked: our fused [W^Q | W^K | W^V]
            state[f"{ours}self_attn.qkv.{kind}"] = torch.cat([take(f"{hf}self_attn.{p}_proj.{kind}") for p in "qkv"])
        for theirs, mine in (("self_attn.o_proj", "self_attn.out"), ("mlp.gate_proj", "ffn.gate"),
                             ("mlp.up_proj", "ffn.w1"), ("mlp.down_proj", "ffn.w2")):
            state[f"{ours}{mine}.weight"] = take(f"{hf}{theirs}.weight")
            bias = config.attn_out_bias if mine == "self_attn.out" else config.ffn_bias
            if bias:
                state[f"{ours}{mine}.bias"] = take(f"{hf}{theirs}.bias")
        state[f"{ours}res1.norm.weight"] = take(f"{hf}input_layernorm.weight")
        state[f"{ours}res3.norm.weight"] = take(f"{hf}post_attention_layernorm.weight")
    state["decoder_norm.weight"] = take("norm.weight")
    head = w.get("lm_head.weight")
    if head is not None:
        used.add("lm_head.weight")
        if not tie:
            state["generator.weight"] = head
        elif not torch.equal(head, w["embed_tokens.weight"]):
            raise HubError("weights: lm_head.weight differs from embed_tokens.weight although tie_word_embeddings "
                           "is true")
    elif not tie:
        if task == "lm":
            raise HubError("weights: tie_word_embeddings is false but there is no lm_head.weight")
        config = config.replace(tie_embeddings=True)  # a headless model: the output layer is never shown
    left = sorted(set(w) - used)
    if left:
        raise HubError(f"weights: {len(left)} tensors this {family} loader has no place for (e.g. {left[:4]}); only "
                       f"the language-model head or none is supported")
    return config, state


def meta(hf_config: dict) -> dict:
    """task "lm" (next-token predictions), or "features" for the network without its head."""
    return {"task": task_of(hf_config)}


# -----------------------------------------------------------------------------
# tokenizers

class SentencePieceLlamaTokenizer:
    """A SentencePiece tokenizer.model as Llama 2, TinyLlama and Mistral ship it, run by sentencepiece itself
    (byte fallback, "▁" for a space, a space added in front). encode() adds no BOS; pad is the model's pad, else
    its end-of-text (Llama has no padding token; a decoder-only model never reads it)."""
    kind = "sentencepiece"
    source = SPM_FILE

    def __init__(self, sp, pad_id: int | None = None):
        self.sp = sp
        self.unk_id, self.bos_id, self.eos_id = sp.unk_id(), sp.bos_id(), sp.eos_id()
        for role in ("unk", "bos", "eos"):
            if not 0 <= getattr(self, f"{role}_id") < sp.get_piece_size():
                raise HubError(f"{SPM_FILE}: no {role} token")
        self.pad_id = pad_id if pad_id is not None and 0 <= pad_id < sp.get_piece_size() else \
            (sp.pad_id() if sp.pad_id() >= 0 else self.eos_id)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    @property
    def largest_id(self) -> int:
        return self.sp.get_piece_size() - 1

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(text)

    def decode(self, ids) -> str:
        skip = (self.pad_id, self.bos_id, self.eos_id)
        return self.sp.decode([int(i) for i in ids if int(i) not in skip])

    def pieces(self, text: str) -> list[str]:
        return self.sp.encode(text, out_type=str)

    def id_to_piece(self, i: int) -> str:
        return self.sp.id_to_piece(int(i))

    def is_byte(self, i: int) -> bool:
        return bool(self.sp.is_byte(int(i)))

    def is_special(self, i: int) -> bool:
        return int(i) in (self.pad_id, self.bos_id, self.eos_id, self.unk_id) or bool(self.sp.is_control(int(i)))


class SplitByteBPETokenizer(ByteBPETokenizer):
    """Byte-level BPE whose pre-tokenizer is a regex of its own (Llama 3, Qwen2: digits one to three at a time,
    a letter run with one leading symbol, ...), NFC-normalised first where the file says so, and with
    ignore_merges a word found whole in the vocabulary taken whole."""

    def __init__(self, *args, pattern: str, nfc: bool = False, ignore_merges: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.pattern, self.nfc, self.ignore_merges = regex.compile(pattern), nfc, ignore_merges

    def _word_ids(self, word: str) -> tuple[int, ...]:
        if self.ignore_merges and word in self.encoder:
            return (self.encoder[word],)
        return super()._word_ids(word)

    def _encode_text(self, segment: str, ids: list[int]) -> None:
        if self.nfc:
            segment = unicodedata.normalize("NFC", segment)
        start = 0
        for m in self.pattern.finditer(segment):  # "Isolated": the matches and the text between them, each a word
            for word in (segment[start:m.start()], m.group()):
                if word:
                    ids.extend(self._word_ids("".join(self.byte_encoder[b] for b in word.encode("utf-8"))))
            start = m.end()
        if segment[start:]:
            ids.extend(self._word_ids("".join(self.byte_encoder[b] for b in segment[start:].encode("utf-8"))))


def _split_pattern(path: Path, d: dict) -> tuple[str | None, bool]:
    """(the Split pre-tokenizer's regex or None for GPT-2's ByteLevel, NFC first?) of a tokenizer.json; anything
    else refused by name."""
    norm = d.get("normalizer")
    kind = norm.get("type") if isinstance(norm, dict) else norm
    if kind not in (None, "NFC"):
        raise HubError(f"{path}: a normalizer ({str(kind)[:40]!r}) this byte-level BPE does not have")
    pre = d.get("pre_tokenizer") if isinstance(d.get("pre_tokenizer"), dict) else {}
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
    steps = steps if isinstance(steps, list) else []
    if len(steps) == 1 and isinstance(steps[0], dict) and steps[0].get("type") == "ByteLevel" \
            and steps[0].get("use_regex", True):
        return None, kind == "NFC"
    if len(steps) == 2 and all(isinstance(s, dict) for s in steps) and steps[0].get("type") == "Split" \
            and steps[1].get("type") == "ByteLevel" and not steps[1].get("use_regex", True) \
            and steps[0].get("behavior") == "Isolated" and not steps[0].get("invert") \
            and isinstance((steps[0].get("pattern") or {}).get("Regex"), str):
        return steps[0]["pattern"]["Regex"], kind == "NFC"
    model = d.get("model") if isinstance(d.get("model"), dict) else {}
    if model.get("byte_fallback"):
        raise HubError(f"{path}: a SentencePiece-style BPE (byte fallback); put the model's {SPM_FILE} beside it")
    raise HubError(f"{path}: pre-tokenizer {str(pre.get('type'))[:40]!r}; only byte-level BPE (ByteLevel, or a "
                   "Split regex then ByteLevel) is supported")


def _token(hf_config: dict, conf: dict, role: str, names: dict[int, str]) -> str | None:
    """The text of the bos / eos / pad token: config.json's <role>_token_id, else tokenizer_config.json's."""
    i = _first_int(hf_config.get(f"{role}_token_id"))
    if i is not None and i in names:
        return names[i]
    value = conf.get(f"{role}_token")
    value = value.get("content") if isinstance(value, dict) else value
    return value if isinstance(value, str) and value in names.values() else None


def tokenizer(folder: Path, hf_config: dict):
    folder = Path(folder)
    if (folder / SPM_FILE).is_file():
        import sentencepiece as spm
        try:
            data = (folder / SPM_FILE).read_bytes()
            sp = spm.SentencePieceProcessor(model_proto=data)
        except Exception as e:  # sentencepiece raises RuntimeError / OSError on bad protos
            raise HubError(f"{folder / SPM_FILE}: not a SentencePiece model "
                           f"({str(e).strip()[:120] or type(e).__name__})") from None
        return SentencePieceLlamaTokenizer(sp, _first_int(hf_config.get("pad_token_id")))
    if not (folder / TOKENIZER_JSON).is_file():
        raise HubError(f"{folder}: no {SPM_FILE} and no {TOKENIZER_JSON} (a {hf_config['model_type']} tokenizer is "
                       "one of them)")
    path = folder / TOKENIZER_JSON
    d = bytebpe.read_json(path, entries=2 * bytebpe.vocabulary_rows(hf_config))
    if not isinstance(d, dict) or not isinstance(d.get("model"), dict) or d["model"].get("type") != "BPE":
        raise HubError(f"{path}: not a BPE tokenizer")
    pattern, nfc = _split_pattern(path, d)
    model = d["model"]
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not all(isinstance(v, int) for v in vocab.values()):
        raise HubError(f"{path}: model.vocab is not a {{piece: id}} dictionary")
    merges = []
    for n, m in enumerate(model.get("merges") or []):
        pair = m.split(" ") if isinstance(m, str) else m
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(p, str) and p for p in pair):
            raise HubError(f"{path}: merge {n} is not two symbols: {str(m)[:80]!r}")
        merges.append((pair[0], pair[1]))
    added, strip, prefix, conf = bytebpe.added_tokens(folder, bytebpe.vocabulary_rows(hf_config))
    names = {i: s for s, i in {**vocab, **added}.items()}
    roles = {role: _token(hf_config, conf, role, names) for role in ("bos", "eos", "pad")}
    roles["eos"] = roles["eos"] or roles["bos"]
    if roles["eos"] is None:
        raise HubError(f"{path}: no end-of-text token (config.json's eos_token_id names none of its tokens)")
    roles["bos"] = roles["bos"] or roles["eos"]  # Qwen2 has none: its end-of-text starts a context, as GPT-2's
    roles["pad"] = roles["pad"] or roles["eos"]
    roles["unk"] = roles["eos"]  # byte-level BPE never needs an unknown token
    if pattern is None:
        tok = ByteBPETokenizer(vocab, merges, None, added, prefix, roles=roles, strip=strip)
    else:
        tok = SplitByteBPETokenizer(vocab, merges, None, added, prefix, roles=roles, strip=strip, pattern=pattern,
                                    nfc=nfc, ignore_merges=bool(model.get("ignore_merges")))
    tok.source = TOKENIZER_JSON
    return tok
