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

The tokenizer is WordPiece (model/hub/wordpiece.py), the same ids as transformers' `BertTokenizer`."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import torch

from model.nn.config import TransformerConfig
from model.nn.transformer import Intermediates, Transformer
from model.hub import HubError
from model.hub.wordpiece import WordPieceTokenizer

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
    if cfg.segment_vocab:  # type_vocab_size 0: no segment embeddings (DistilBERT, via model/hub/distilbert.py)
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
    if hasattr(tok, "pair"):  # a tokenizer with its own layout (RoBERTa: <s> A </s></s> B </s>, all segment 0)
        ids, segments = tok.pair(tok.encode(text), tok.encode(text_b) if text_b and text_b.strip() else None)
    elif text_b is not None and text_b.strip():
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
