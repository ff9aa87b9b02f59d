"""RoBERTa (Liu et al., 2019) as our Transformer: BERT trained differently, loaded through model/hub/bert.py.

A `RobertaForMaskedLM` checkpoint such as roberta-base is BERT (see bert.py for how BERT differs from the paper)
with these differences:
- positions start after the padding index: transformers numbers a sentence's tokens padding_idx + 1,
  padding_idx + 2, ... (create_position_ids_from_input_ids), so the first pad_token_id + 1 rows of the position
  table are never read by a sentence without padding. We keep the rows that are read, in order: the table our
  model reads from 0 is the checkpoint's from pad_token_id + 1, and max_len is max_position_embeddings minus
  that offset (roberta-base: 514 rows, 512 tokens). Padding inside a sentence (a typed <pad>) would get
  transformers' padding position instead; the fill-mask input refuses it (`model_inputs`).
- one segment ("token type") embedding row (type_vocab_size 1): every token is segment 0, a pair too, which is
  read as <s> A </s></s> B </s>;
- the masked-LM head is lm_head (dense, GELU, layer_norm, decoder + bias), BERT's cls.predictions by other names
  (its GELU is the exact one whatever hidden_act says: a different hidden_act is refused);
- LayerNorm epsilon 1e-5 in the released models (read from config.json, as BERT's);
- the tokenizer is GPT-2's byte-level BPE (model/hub/bytebpe.py) with <s> </s> <pad> <unk> <mask>, where <mask>
  takes the space before it when its tokenizer files say so (lstrip), as in roberta-base.
So the config and weights are renamed to BERT's and converted by bert.convert, heads included (model/hub/heads.py):
`RobertaModel` (no head: task "features", attention and hidden states only), `RobertaForSequenceClassification`
(classifier.dense + tanh on <s>, then classifier.out_proj: BERT's pooler and classifier by other names) and
`RobertaForTokenClassification`."""
from __future__ import annotations

import re
from pathlib import Path

import torch

from model.hub import HubError, bert, bytebpe, heads
from model.hub.bytebpe import ByteBPETokenizer
from model.nn.config import TransformerConfig

# The family's declaration (model/hub/families.py reads it without importing this module: literals only)
MODEL_TYPES = ("roberta",)
TITLE = "RoBERTa"
SIZES = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads")
SIZE_KEYS = {"vocab_size": 1, "hidden_size": 1, "num_hidden_layers": 0, "num_attention_heads": 1,
             "intermediate_size": 1, "max_position_embeddings": 1, "type_vocab_size": 0}
AGREE = {"hidden_size": (r"embeddings\.word_embeddings\.weight", 1),
         "vocab_size": (r"embeddings\.word_embeddings\.weight", 0),
         "max_position_embeddings": (r"embeddings\.position_embeddings\.weight", 0),
         "type_vocab_size": (r"embeddings\.token_type_embeddings\.weight", 0),
         "intermediate_size": (r"encoder\.layer\.0\.intermediate\.dense\.weight", 0)}
LAYERS = {"num_hidden_layers": r"encoder\.layer\.(\d+)\."}
READS = ("vocab.json", "merges.txt", "tokenizer.json")
# a pooler (read only by a sequence classifier) and a next-sentence head no task here reads: convert leaves them out
UNCOUNTED = {r"(?:^|\.)pooler\.dense\.": "unless:classifier.", r"^cls\.seq_relationship\.": None}
POSITION_OFFSET = "pad_token_id"  # the position table's first pad_token_id + 1 rows are never read (see above)

# RobertaConfig's defaults (an old config.json may leave any of them out)
DEFAULTS = {"vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 3072, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "pad_token_id": 1,
            "tie_word_embeddings": True}
# RoBERTa's masked-LM head -> BERT's names
HEAD = {"lm_head.dense.": "cls.predictions.transform.dense.",
        "lm_head.layer_norm.": "cls.predictions.transform.LayerNorm.",
        "lm_head.decoder.weight": "cls.predictions.decoder.weight",
        "lm_head.decoder.bias": "cls.predictions.decoder.bias", "lm_head.bias": "cls.predictions.bias",
        # RobertaForSequenceClassification: Linear + tanh on <s>, then a Linear to the labels — BERT's pooler and
        # classifier (model/hub/heads.py); RobertaForTokenClassification's classifier is BERT's already
        "classifier.dense.": "bert.pooler.dense.", "classifier.out_proj.": "classifier.", "classifier.weight": "classifier.weight",
        "classifier.bias": "classifier.bias"}
# RoBERTa's classes -> BERT's, for heads.task_of (an architecture not listed keeps its own name in refusals)
ARCHITECTURES = {"RobertaForMaskedLM": "BertForMaskedLM", "RobertaModel": "BertModel",
                 "RobertaForSequenceClassification": "BertForSequenceClassification",
                 "RobertaForTokenClassification": "BertForTokenClassification"}
BODY = re.compile(r"^(roberta\.)?(embeddings|encoder|pooler)\.")
POSITIONS = "bert.embeddings.position_embeddings.weight"
SPECIALS = {"bos": "<s>", "eos": "</s>", "pad": "<pad>", "unk": "<unk>", "mask": "<mask>"}


def _get(hf: dict, key: str):
    value = hf.get(key)
    return DEFAULTS[key] if value is None and key in DEFAULTS else value


def offset(hf: dict) -> int:
    """The position of a sentence's first token: padding_idx + 1."""
    pad = _get(hf, "pad_token_id")
    if not isinstance(pad, int) or isinstance(pad, bool) or pad < 0:
        raise HubError(f"config.json: pad_token_id {pad!r} is not a token id (RoBERTa's positions start after it)")
    return pad + 1


def has_head(weights: dict[str, torch.Tensor]) -> bool:
    return any(k.startswith("lm_head.") for k in weights)


def bert_config(hf: dict) -> dict:
    """The config as BertConfig would spell it, with the position table that our model reads from 0."""
    out = {key: _get(hf, key) for key in DEFAULTS}
    rows = out["max_position_embeddings"]
    if not isinstance(rows, int) or isinstance(rows, bool) or rows <= offset(hf):
        raise HubError(f"config.json: max_position_embeddings {rows!r} leaves no position after the padding "
                       f"index {offset(hf) - 1} (RoBERTa's first token is at padding index + 1)")
    out.update(model_type="bert", max_position_embeddings=rows - offset(hf), _family="RoBERTa")
    for key in ("position_embedding_type", "is_decoder", "add_cross_attention", "attention_head_size", "id2label",
                "problem_type"):
        if key in hf:
            out[key] = hf[key]
    if isinstance(hf.get("architectures"), list):
        out["architectures"] = [ARCHITECTURES.get(a, a) if isinstance(a, str) else a for a in hf["architectures"]]
    return out


def bert_weights(hf: dict, weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors under BERT's names, the position table without its first padding index + 1 rows; a tensor
    RoBERTa does not have is refused by its own name."""
    out, unknown = {}, []
    for name, tensor in weights.items():
        new = next((bert_name + name[len(ours):] for ours, bert_name in HEAD.items() if name.startswith(ours)), None)
        if new is None and BODY.match(name):
            new = "bert." + name.removeprefix("roberta.")
        if new is None:
            unknown.append(name)
        else:
            out[new] = tensor
    if unknown:
        raise heads.unsupported(hf, sorted(unknown), "RoBERTa")
    if POSITIONS not in out:
        raise HubError("weights: no roberta.embeddings.position_embeddings.weight (is this a RoBERTa checkpoint?)")
    table = out[POSITIONS]
    rows = _get(hf, "max_position_embeddings")
    if table.dim() != 2 or table.shape[0] != rows:
        raise HubError(f"weights: the position table has shape {tuple(table.shape)}, but config.json says "
                       f"max_position_embeddings {rows}")
    out[POSITIONS] = table[offset(hf):]
    return out


def _check(hf: dict, weights: dict[str, torch.Tensor]) -> None:
    archs = hf.get("architectures") if isinstance(hf.get("architectures"), list) else []
    if has_head(weights) and _get(hf, "hidden_act") != "gelu":
        raise HubError(f"config.json: hidden_act {_get(hf, 'hidden_act')!r}; RoBERTa's masked-LM head always uses "
                       "the exact GELU, so only hidden_act 'gelu' runs both exactly")
    if "RobertaForMaskedLM" in archs and not has_head(weights):
        raise HubError("weights: config.json says RobertaForMaskedLM, but there is no lm_head.* (the masked-LM head)")


def convert(hf_config: dict, weights: dict[str, torch.Tensor]) -> tuple[TransformerConfig, dict[str, torch.Tensor],
                                                                       dict]:
    _check(hf_config, weights)
    as_bert = bert_config(hf_config)
    try:
        cfg, state, found = bert.convert(as_bert, bert_weights(hf_config, weights))
    except HubError as e:  # bert.py's words name BERT's keys and classes: say RoBERTa's
        message = str(e).replace("cls.predictions.*", "lm_head.*").replace("bert.pooler.dense", "classifier.dense")
        message = message.replace("bert.embeddings.", "roberta.embeddings.").replace("bert.encoder.", "roberta.encoder.")
        raise HubError(message) from None
    return cfg, state, found  # what bert.convert found (the head, its labels), for meta


meta = bert.meta  # the task convert found ("mlm", "classify", "tag", "features"), a classifier's labels
build = bert.build  # a classifier's head as the module task_head


# -----------------------------------------------------------------------------
# tokenizer

class RobertaTokenizer(ByteBPETokenizer):
    """Byte-level BPE with RoBERTa's special tokens: bos_id <s> (the [CLS] of BERT), eos_id </s> ([SEP]),
    pad_id <pad>, unk_id <unk>, mask_id <mask>."""
    @property
    def mask_token(self) -> str:
        """How the text writes the mask (the inspector's examples say [MASK], as for BERT)."""
        return self.roles["mask"]

    def pair(self, ids_a: list[int], ids_b: list[int] | None = None) -> tuple[list[int], list[int]]:
        """The model's input and its segments for one sentence or a pair: <s> A </s> or <s> A </s></s> B </s>,
        all segment 0 (transformers' RobertaTokenizer). A typed <pad> is refused: RoBERTa gives padding the
        padding position, which a sentence's other tokens never have."""
        ids = [self.bos_id, *ids_a, self.eos_id]
        if ids_b is not None:
            ids += [self.eos_id, *ids_b, self.eos_id]
        if self.pad_id in ids:
            raise ValueError(f"the text holds {self.id_to_piece(self.pad_id)}, which RoBERTa reads as padding; "
                             "take it out")
        return ids, [0] * len(ids)


def tokenizer(folder: Path, hf_config: dict) -> RobertaTokenizer:
    folder = Path(folder)
    vocab, merges, added, strip, prefix, conf = bytebpe.load(folder, "RoBERTa", hf_config)
    roles = {}
    for role, default in SPECIALS.items():
        token = conf.get(f"{role}_token", default)
        token = token.get("content") if isinstance(token, dict) else token
        roles[role] = token if isinstance(token, str) else default
    known = {**vocab, **added}
    missing = [f"{role} {token}" for role, token in roles.items() if token not in known]
    if missing:
        raise HubError(f"{folder}: the vocabulary has no {', '.join(missing)} (RoBERTa's special tokens)")
    tok = RobertaTokenizer(vocab, merges, added=added, add_prefix_space=prefix, roles=roles, strip=strip)
    tok.source = bytebpe.source(folder)
    return tok
