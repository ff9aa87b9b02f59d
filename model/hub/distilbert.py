"""DistilBERT (Sanh et al., 2019) as our Transformer: BERT made smaller, loaded through model/hub/bert.py.

A `DistilBertForMaskedLM` checkpoint such as distilbert-base-uncased (or a `DistilBertModel`, or a sequence or
token classifier: model/hub/heads.py) is BERT (see bert.py for how BERT differs
from the paper) with these differences:
- no segment ("token type") embeddings: segment_vocab 0 (a pair [CLS] A [SEP] B [SEP] is read without them);
- no pooler; LayerNorm epsilon fixed at 1e-12;
- its own names for the same config and weights (dim, n_heads, n_layers, hidden_dim, activation; q_lin, k_lin,
  v_lin, out_lin, sa_layer_norm, ffn.lin1/lin2, output_layer_norm, vocab_transform/layer_norm/projector);
- sinusoidal_pos_embds: true starts the position table as the paper's sinusoids (interleaved sin, cos); the
  checkpoint stores the table, and transformers runs what is stored. Still the sinusoids: positional "sinusoidal"
  (computed, not a parameter); changed by training: a learned table, as stored.
So the config and weights are renamed to BERT's and converted by bert.convert; the tokenizer is the same
WordPiece (DistilBertTokenizer is BertTokenizer)."""
from __future__ import annotations

import re
from pathlib import Path

import torch

from model.hub import HubError, bert, heads
from model.hub.wordpiece import WordPieceTokenizer
from model.nn.config import TransformerConfig
from model.nn.layers import positional_encoding

# The family's declaration (model/hub/families.py reads it without importing this module: literals only)
MODEL_TYPES = ("distilbert",)
TITLE = "DistilBERT"
SIZES = ("n_layers", "dim", "hidden_dim", "n_heads")
SIZE_KEYS = {"vocab_size": 1, "dim": 1, "n_layers": 0, "n_heads": 1, "hidden_dim": 1, "max_position_embeddings": 1}
AGREE = {"dim": (r"embeddings\.word_embeddings\.weight", 1), "vocab_size": (r"embeddings\.word_embeddings\.weight", 0),
         "max_position_embeddings": (r"embeddings\.position_embeddings\.weight", 0),
         "hidden_dim": (r"transformer\.layer\.0\.ffn\.lin1\.weight", 0)}
LAYERS = {"n_layers": r"transformer\.layer\.(\d+)\."}
READS = ("vocab.txt", "tokenizer.json")
# the stored sinusoids, which our model computes (convert), when the config says they are still the sinusoids
UNCOUNTED = {r"position_embeddings\.weight$": "config:sinusoidal_pos_embds"}

# DistilBertConfig's defaults (an old config.json may leave any of them out)
DEFAULTS = {"vocab_size": 30522, "max_position_embeddings": 512, "sinusoidal_pos_embds": False, "n_layers": 6,
            "n_heads": 12, "dim": 768, "hidden_dim": 3072, "dropout": 0.1, "activation": "gelu",
            "pad_token_id": 0, "tie_word_embeddings": True}
# DistilBERT key -> BERT key
CONFIG_KEYS = {"vocab_size": "vocab_size", "dim": "hidden_size", "n_layers": "num_hidden_layers",
               "n_heads": "num_attention_heads", "hidden_dim": "intermediate_size", "activation": "hidden_act",
               "dropout": "hidden_dropout_prob", "max_position_embeddings": "max_position_embeddings",
               "pad_token_id": "pad_token_id", "tie_word_embeddings": "tie_word_embeddings"}
# DistilBERT tensor name (after "distilbert.") -> BERT's (after "bert.")
EMBEDDINGS = {"embeddings.word_embeddings.": "embeddings.word_embeddings.",
              "embeddings.position_embeddings.": "embeddings.position_embeddings.",
              "embeddings.LayerNorm.": "embeddings.LayerNorm.", "embeddings.position_ids": "embeddings.position_ids"}
LAYER = {"attention.q_lin.": "attention.self.query.", "attention.k_lin.": "attention.self.key.",
         "attention.v_lin.": "attention.self.value.", "attention.out_lin.": "attention.output.dense.",
         "sa_layer_norm.": "attention.output.LayerNorm.", "ffn.lin1.": "intermediate.dense.",
         "ffn.lin2.": "output.dense.", "output_layer_norm.": "output.LayerNorm."}
HEAD = {"vocab_transform.": "cls.predictions.transform.dense.",
        "vocab_layer_norm.": "cls.predictions.transform.LayerNorm.",
        "vocab_projector.weight": "cls.predictions.decoder.weight", "vocab_projector.bias": "cls.predictions.bias"}
LAYER_NAME = re.compile(r"^transformer\.layer\.(\d+)\.(.*)$")


def _get(hf: dict, key: str):
    value = hf.get(key)
    return DEFAULTS[key] if value is None and key in DEFAULTS else value


def bert_config(hf: dict) -> dict:
    """The config as BertConfig would spell it (type_vocab_size 0: no segment embeddings)."""
    out = {bert_key: _get(hf, key) for key, bert_key in CONFIG_KEYS.items()}
    out.update(model_type="bert", type_vocab_size=0, layer_norm_eps=1e-12,
               _pooler="pre_classifier", _pre_act="relu", _family="DistilBERT")  # its [CLS] transform: heads.py
    for key in ("tokenizer_class", "position_embedding_type", "is_decoder", "add_cross_attention", "architectures",
                "id2label", "problem_type"):
        if key in hf:
            out[key] = hf[key]
    return out


def _rename(name: str) -> str | None:
    """A DistilBERT tensor's BERT name, or None for one we do not know."""
    for old, new in HEAD.items():
        if name.startswith(old):
            return new + name[len(old):]
    body = name.removeprefix("distilbert.")
    for old, new in EMBEDDINGS.items():
        if body.startswith(old):
            return "bert." + new + body[len(old):]
    m = LAYER_NAME.match(body)
    for old, new in LAYER.items() if m else ():
        if m.group(2).startswith(old):
            return f"bert.encoder.layer.{m.group(1)}.{new}{m.group(2)[len(old):]}"
    return None


def bert_weights(hf: dict, weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors under BERT's names (a classifier's keep theirs: model/hub/heads.py); a tensor DistilBERT does
    not have is refused by its own name."""
    out, unknown = {}, []
    for name, tensor in weights.items():
        new = name if name.startswith(("pre_classifier.", "classifier.")) else _rename(name)
        if new is None:
            unknown.append(name)
        else:
            out[new] = tensor
    if unknown:
        raise heads.unsupported(hf, sorted(unknown), "DistilBERT")
    return out


def convert(hf_config: dict, weights: dict[str, torch.Tensor]) -> tuple[TransformerConfig, dict[str, torch.Tensor],
                                                                       dict]:
    """Our config and state, through bert.convert, and what it found (the head, its labels) for meta."""
    sinusoidal = bool(_get(hf_config, "sinusoidal_pos_embds"))
    as_bert = bert_config(hf_config)
    try:
        cfg, state, found = bert.convert(as_bert, bert_weights(hf_config, weights))
    except HubError as e:  # bert.py's words name BERT's keys: say DistilBERT's
        message = str(e)
        for key, bert_key in CONFIG_KEYS.items():
            message = message.replace(f" {bert_key} ", f" {key} ")
        raise HubError(message) from None
    if sinusoidal:  # the paper's fixed encoding, which our model computes, when the stored table is still it
        table = state["src_embed.position.weight"]
        want = positional_encoding(cfg.max_len, cfg.d_model, device="cpu", layout="interleaved")
        if table.shape == want.shape and torch.allclose(table.float(), want, atol=1e-6):
            del state["src_embed.position.weight"]
            cfg = cfg.replace(positional="sinusoidal", pe_layout="interleaved")
        # else: trained away from the sinusoids (transformers 5 leaves the table trainable); transformers runs
        # the stored table, and so do we, as a learned one
    return cfg, state, found


meta = bert.meta  # the task convert found, a classifier's labels
build = bert.build  # a classifier's head as the module task_head


def tokenizer(folder: Path, hf_config: dict) -> WordPieceTokenizer:
    return WordPieceTokenizer.load(folder, hf_config)
