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

Tokenizer: byte-level BPE (vocab.json + merges.txt, or tokenizer.json), our own implementation of GPT-2's
encoder.py in model/hub/bytebpe.py, which RoBERTa shares.
"""
from __future__ import annotations

from pathlib import Path

import torch

from model.nn.config import TransformerConfig
from model.hub import HubError, bytebpe
from model.hub.guard import transformer_config
from model.hub.bytebpe import MERGES_FILE, PRETOKENIZE, VOCAB_FILE, ByteBPETokenizer, bytes_to_unicode  # noqa: F401

# The family's declaration (model/hub/families.py reads it without importing this module: literals only)
MODEL_TYPES = ("gpt2",)
TITLE = "GPT-2"
SIZES = ("n_layer", "n_embd", "n_inner", "n_head")
SIZE_KEYS = {"vocab_size": 1, "n_embd": 1, "n_layer": 0, "n_head": 1, "n_inner": 1, "n_positions": 1, "n_ctx": 1}
AGREE = {"n_embd": (r"wte\.weight", 1), "vocab_size": (r"wte\.weight", 0), "n_positions": (r"wpe\.weight", 0),
         "n_inner": (r"h\.0\.mlp\.c_fc\.weight", 1)}
LAYERS = {"n_layer": r"h\.(\d+)\."}
READS = ("vocab.json", "merges.txt", "tokenizer.json")
UNCOUNTED = {r"\.attn\.(?:masked_)?bias$": None}  # the causal-mask constants older checkpoints store
END_OF_TEXT = "<|endoftext|>"

# Hugging Face activation names -> ours, only where the function is the same one.
ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh",
               "gelu": "gelu", "gelu_python": "gelu", "relu": "relu", "silu": "swish", "swish": "swish"}

# Options whose non-default value our attention cannot reproduce exactly: (default, why). (reorder_and_upcast_attn
# is not one: it computes the same scaled dot products in float32, which is what we compute.)
UNSUPPORTED = {
    "scale_attn_weights": (True, "attention without the 1/sqrt(d_k) scale"),
    "scale_attn_by_inverse_layer_idx": (False, "attention scaled by 1/(layer index + 1)"),
    "add_cross_attention": (False, "cross-attention layers in a GPT-2"),
}
# the classes (config.json's architectures) loaded: a language model, or the network without a head
ARCHITECTURES = ("GPT2LMHeadModel", "GPT2Model")
# our TransformerConfig's fields -> GPT-2's config.json keys, for refusals in the checkpoint's own words
FIELD_NAMES = {"d_model": "n_embd", "n_heads": "n_head", "norm_eps": "layer_norm_epsilon", "dropout": "resid_pdrop",
               "d_ff": "n_inner", "max_len": "n_positions", "n_decoder_layers": "n_layer"}

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
    archs = [a for a in hf_config.get("architectures") or [] if isinstance(a, str)] \
        if isinstance(hf_config.get("architectures"), list) else []
    other = [a for a in archs if a not in ARCHITECTURES]
    if other:
        raise HubError(f"config.json: architecture {other[0][:60]} is not supported (a GPT-2 loads as "
                       f"{' or '.join(ARCHITECTURES)})")
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
    config = transformer_config(
        FIELD_NAMES, vocab_size=vocab, d_model=d_model, n_heads=n_head, d_ff=d_ff, n_encoder_layers=0,
        n_decoder_layers=n_layer, dropout=hf_config.get("resid_pdrop", 0.1), max_len=n_positions,
        architecture="decoder-only", norm_first=True, positional="learned", tie_embeddings=tie,
        label_smoothing=0.0, pad_id=pad, activation=ACTIVATIONS[act], embed_scale=False,
        norm_eps=hf_config.get("layer_norm_epsilon", 1e-5))

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
    if "lm_head.weight" not in w and headless(hf_config):
        # GPT2Model: no head, so our output layer is the tied embedding, never shown (meta's task says so)
        config = config.replace(tie_embeddings=True)
    elif "lm_head.weight" in w:
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
                       f"only the language-model head (GPT2LMHeadModel) or none (GPT2Model) is supported")
    return config, state


def headless(hf_config: dict) -> bool:
    """A GPT2Model (the network without the language-model head), as config.json's architectures says. The
    original OpenAI checkpoints also store no lm_head, but their head is the tied embedding: they say
    GPT2LMHeadModel, or nothing, and are language models."""
    archs = hf_config.get("architectures")
    return isinstance(archs, list) and "GPT2Model" in archs and not any(
        isinstance(a, str) and a.endswith(("LMHeadModel", "DoubleHeadsModel")) for a in archs)


def meta(hf_config: dict) -> dict:
    """task "lm" (next-token predictions), or "features" for a GPT2Model: attention and hidden states only."""
    return {"task": "features" if headless(hf_config) else "lm"}


# -----------------------------------------------------------------------------
# tokenizer: byte-level BPE (model/hub/bytebpe.py), with <|endoftext|> as bos, eos, pad and unk

def tokenizer(folder: Path, hf_config: dict) -> ByteBPETokenizer:
    folder = Path(folder)
    vocab, merges, added, strip, prefix, _ = bytebpe.load(folder, "GPT-2", hf_config)
    special = END_OF_TEXT
    if special not in vocab and special not in added:
        eos = _first_int(hf_config.get("eos_token_id"))
        names = {i: s for s, i in {**vocab, **added}.items()}
        if eos is None or eos not in names:
            raise HubError(f"{folder / VOCAB_FILE}: no {END_OF_TEXT} and no eos_token_id in config.json")
        special = names[eos]
    tok = ByteBPETokenizer(vocab, merges, special, added, prefix, strip=strip)
    tok.source = bytebpe.source(folder)
    return tok
