"""BERT (Devlin et al., 2018) as our Transformer: the encoder stack alone, with the head the checkpoint has.

A `BertForMaskedLM` (or `BertForPreTraining`) checkpoint such as bert-base-uncased is the paper's
encoder with these differences, each a `TransformerConfig` option (a `BertModel`, with or without its
pooler, and a sequence or token classifier load too: model/hub/heads.py):
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
from model.hub import HubError, heads
from model.hub.guard import transformer_config
from model.hub.wordpiece import WordPieceTokenizer

# The family's declaration (model/hub/families.py reads it without importing this module: literals only)
MODEL_TYPES = ("bert",)
TITLE = "BERT"
SIZES = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads")
SIZE_KEYS = {"vocab_size": 1, "hidden_size": 1, "num_hidden_layers": 0, "num_attention_heads": 1,
             "intermediate_size": 1, "max_position_embeddings": 1, "type_vocab_size": 0}
AGREE = {"hidden_size": (r"embeddings\.word_embeddings\.weight", 1),
         "vocab_size": (r"embeddings\.word_embeddings\.weight", 0),
         "max_position_embeddings": (r"embeddings\.position_embeddings\.weight", 0),
         "type_vocab_size": (r"embeddings\.token_type_embeddings\.weight", 0),
         "intermediate_size": (r"encoder\.layer\.0\.intermediate\.dense\.weight", 0)}
LAYERS = {"num_hidden_layers": r"encoder\.layer\.(\d+)\."}
READS = ("vocab.txt", "tokenizer.json")
# a pooler (read only by a sequence classifier) and a next-sentence head no task here reads: convert leaves them out
UNCOUNTED = {r"(?:^|\.)pooler\.dense\.": "unless:classifier.", r"^cls\.seq_relationship\.": None}

# hidden_act -> our activation, only where the function is exactly the same
ACTIVATIONS = {"gelu": "gelu", "gelu_python": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
               "relu": "relu", "silu": "swish", "swish": "swish"}

# BertConfig's defaults (an old config.json may leave any of them out)
DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 3072, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "pad_token_id": 0,
            "tie_word_embeddings": True}

# our TransformerConfig's fields -> BERT's config.json keys, for refusals in the checkpoint's own words
FIELD_NAMES = {"d_model": "hidden_size", "n_heads": "num_attention_heads", "norm_eps": "layer_norm_eps",
               "dropout": "hidden_dropout_prob", "d_ff": "intermediate_size", "max_len": "max_position_embeddings",
               "segment_vocab": "type_vocab_size", "n_encoder_layers": "num_hidden_layers"}

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
    return transformer_config(
        FIELD_NAMES, vocab_size=int(_get(hf, "vocab_size")), d_model=int(_get(hf, "hidden_size")),
        n_heads=int(_get(hf, "num_attention_heads")), d_ff=int(_get(hf, "intermediate_size")),
        n_encoder_layers=int(_get(hf, "num_hidden_layers")), n_decoder_layers=0,
        dropout=_get(hf, "hidden_dropout_prob"), max_len=int(_get(hf, "max_position_embeddings")),
        architecture="encoder-only", norm_first=False, positional="learned",
        tie_embeddings=bool(_get(hf, "tie_word_embeddings")), label_smoothing=0.0,
        pad_id=int(pad) if pad is not None else 0,
        activation=ACTIVATIONS[_get(hf, "hidden_act")], embed_scale=False,
        norm_eps=_get(hf, "layer_norm_eps"), output_bias=True,
        segment_vocab=int(_get(hf, "type_vocab_size")), embed_norm=True, mlm_transform=True)


class _Weights:
    """The checkpoint's tensors, taken one by one; what is never taken is reported."""

    def __init__(self, weights: dict[str, torch.Tensor]):
        self.w, self.used = weights, set()

    def take(self, *names: str) -> torch.Tensor:
        for name in names:
            if name in self.w:
                self.used.add(name)
                return self.w[name]
        raise HubError(f"weights: {names[0]} not found (is this a BERT checkpoint?)")

    def norm(self, prefix: str) -> tuple[torch.Tensor, torch.Tensor]:
        """A LayerNorm's weight and bias (older TensorFlow-era checkpoints call them gamma and beta)."""
        return self.take(f"{prefix}.weight", f"{prefix}.gamma"), self.take(f"{prefix}.bias", f"{prefix}.beta")

    def drop(self, name: str) -> None:
        self.used.add(name)

    def left(self) -> list[str]:
        return sorted(k for k in self.w if k not in self.used and not any(p.match(k) for p in IGNORED))


def convert(hf_config: dict, weights: dict[str, torch.Tensor]) -> tuple[TransformerConfig, dict[str, torch.Tensor],
                                                                       dict]:
    """Our config and state for a BERT checkpoint: the encoder, and the head it carries (model/hub/heads.py):
    the masked-LM head as our model's output layer, a classifier as `task_head.*` tensors (`build` makes them
    a module), or none; and what it found, {"task": ..., "labels": [...]}, which `meta` reads. hf_config is only
    read."""
    cfg = config_from_hf(hf_config)
    found: dict = {}
    p = "bert." if any(k.startswith("bert.") for k in weights) else ""
    task = heads.task_of(hf_config, weights, "cls.predictions.transform.dense.weight")
    w = _Weights(weights)
    out = _encoder(cfg, w, p)
    if task == "mlm":
        out.update(_mlm_head(cfg, w))
    else:  # no output layer of its own: the tied embedding, never shown (meta's task says so)
        cfg = cfg.replace(mlm_transform=False, output_bias=False, tie_embeddings=True)
        if task != "features":
            pooler = hf_config.get("_pooler", f"{p}pooler.dense")
            out.update(heads.take(task, w, pooler, hf_config.get("_pre_act", "tanh")))
            found["labels"] = heads.labels(hf_config, int(out[next(k for k in out if k.endswith("classifier.weight"))].shape[0]))
        for name in (f"{p}pooler.dense.weight", f"{p}pooler.dense.bias", "cls.seq_relationship.weight",
                     "cls.seq_relationship.bias"):
            w.drop(name)  # a pooler and next-sentence head no task here reads
    found["task"] = task
    left = w.left()
    if left:
        raise heads.unsupported(hf_config, left, hf_config.get("_family", "BERT"))
    _check_shapes(cfg, out, weights)
    return cfg, out, found


def _encoder(cfg: TransformerConfig, w: _Weights, p: str) -> dict[str, torch.Tensor]:
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
    return out


def _mlm_head(cfg: TransformerConfig, w: _Weights) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
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
    return out


def build(config: TransformerConfig, state: dict[str, torch.Tensor], path: Path) -> Transformer:
    """Our Transformer (model.hub.build_with) and, for a classifier, its head as the module `task_head`."""
    from model.hub import build_with
    body, head = heads.split(state)
    model = build_with(config, body, path)
    if head:
        model.add_module("task_head", heads.TaskHead.from_state(head))
    return model


def _check_shapes(cfg: TransformerConfig, state: dict[str, torch.Tensor], weights: dict[str, torch.Tensor]) -> None:
    """Every tensor's shape against our model's (built on the meta device: no memory used); a wrong one named as
    the checkpoint names it (`weights`)."""
    with torch.device("meta"):
        want = {k: tuple(v.shape) for k, v in Transformer(cfg).state_dict().items()}
    for key, tensor in state.items():
        if key in want and tuple(tensor.shape) != want[key]:
            raise HubError(f"weights: {their_name(key, tensor, weights)} has shape {tuple(tensor.shape)}, but "
                           f"config.json implies {want[key]}")


def their_name(key: str, tensor: torch.Tensor, weights: dict[str, torch.Tensor]) -> str:
    """The checkpoint's name for a tensor of our state `key` (a refusal names what the learner's file holds)."""
    found = next((name for name, t in weights.items() if t is tensor), None)
    if found:
        return found
    m = re.match(r"^(?:encoder|layers)\.(\d+)\.self_attn\.qkv\.(weight|bias)$", key)
    return f"layer {m.group(1)}'s query, key and value {m.group(2)}s" if m else "a tensor"


def meta(hf_config: dict, found: dict | None = None) -> dict:
    """The task `convert` found ("mlm", "classify", "tag" or "features": model/hub/heads.py), a classifier's
    label names (both in `found`), and the config's problem_type."""
    found = found or {}
    out = {"task": found.get("task", "mlm")}
    if found.get("labels"):
        out["labels"] = found["labels"]
    if hf_config.get("problem_type"):
        out["problem_type"] = hf_config["problem_type"]
    return out


def tokenizer(folder: Path, hf_config: dict) -> WordPieceTokenizer:
    return WordPieceTokenizer.load(folder, hf_config)


# ---------------------------------------------------------------------------------------------
# Fill in [MASK]

@dataclass
class FillMask:
    """What an encoder read and predicted. predictions: one (position, [(piece, probability), ...] best first)
    per [MASK] (a masked-LM head only), where position indexes `ids` / `pieces` / the attention maps (position 0
    is [CLS]); attention: every layer's bidirectional self-attention (Intermediates.encoder_self, each
    (1, H, L, L)); segments: 0 for [CLS] + sentence A + [SEP], 1 for sentence B + [SEP] (a pair); classes: a
    sequence classifier's [(label, probability), ...] best first; tags: a token classifier's (position, label,
    probability) for every token; one_segment: a pair was given to a model with a single segment embedding,
    so sentence B was read as segment 0 too; similarity: (L, L) cosine similarity of the last layer's hidden
    states, token by token (how alike the encoder's output vectors are)."""
    predictions: list[tuple[int, list[tuple[str, float]]]]
    attention: Intermediates
    ids: list[int]
    pieces: list[str]
    segments: list[int] | None = None
    classes: list[tuple[str, float]] | None = None
    tags: list[tuple[int, str, float]] | None = None
    one_segment: bool = False
    similarity: torch.Tensor | None = None


@torch.no_grad()
def fill_mask(loaded, text: str, top: int = 5, text_b: str | None = None) -> FillMask:
    """Run [CLS] + text + [SEP] (+ text_b + [SEP], as segment 1) through our model; with a masked-LM head the
    `top` most probable pieces at each [MASK], with a classifier its labels (model/hub/heads.py)."""
    tok, model = loaded.tokenizer, loaded.model
    task = (loaded.meta or {}).get("task", "mlm")
    ids = [tok.bos_id, *tok.encode(text), tok.eos_id]
    segments = [0] * len(ids)
    one_segment = False
    if hasattr(tok, "pair"):  # a tokenizer with its own layout (RoBERTa: <s> A </s></s> B </s>, all segment 0)
        ids, segments = tok.pair(tok.encode(text), tok.encode(text_b) if text_b and text_b.strip() else None)
        one_segment = bool(text_b and text_b.strip()) and not any(segments)  # B read as segment 0, as A
    elif text_b is not None and text_b.strip():
        second = [*tok.encode(text_b), tok.eos_id]
        # a model with one segment row (type_vocab_size 1) has no embedding for segment 1: B is read as segment 0
        one_segment = model.config.segment_vocab == 1
        ids, segments = ids + second, segments + [0 if one_segment else 1] * len(second)
    max_len = loaded.config.max_len
    if len(ids) > max_len:
        raise ValueError(f"the text is {len(ids)} tokens with [CLS] and [SEP]; this model reads at most {max_len}")
    seg = torch.tensor([segments], device=model.device) if model.config.segment_vocab else None
    out = model(torch.tensor([ids], device=model.device), return_attention=True, segments=seg)
    predictions, classes, tags = [], None, None
    if task == "mlm":
        probs = torch.softmax(out.logits[0].float(), dim=-1)  # (L, vocab)
        k = max(1, min(int(top), probs.size(-1)))
        for pos, i in enumerate(ids):
            if i == tok.mask_id:
                p, j = probs[pos].topk(k)
                predictions.append((pos, [(tok.id_to_piece(int(b)) if int(b) < tok.vocab_size else f"[{int(b)}]",
                                           float(a)) for a, b in zip(p.tolist(), j.tolist())]))
    elif task in ("classify", "tag") and getattr(model, "task_head", None) is not None:
        names = list(loaded.meta.get("labels") or [])
        probs = heads.probabilities(model.task_head(out.memory)[0], loaded.meta.get("problem_type"))
        name = lambda i: names[i] if i < len(names) else f"LABEL_{i}"
        if task == "classify":  # (labels,)
            order = probs.argsort(descending=True).tolist()
            classes = [(name(i), float(probs[i])) for i in order]
        else:  # (L, labels)
            best = probs.argmax(dim=-1).tolist()
            tags = [(pos, name(b), float(probs[pos, b])) for pos, b in enumerate(best)]
    h = torch.nn.functional.normalize(out.memory[0].float(), dim=-1)  # (L, D): each token's output vector, unit length
    return FillMask(predictions, out.attention, ids, [tok.id_to_piece(i) for i in ids], segments, classes, tags,
                    one_segment, (h @ h.T).clamp(-1, 1).cpu())
