"""The task heads a BERT-family checkpoint may carry on top of its encoder, and what each predicts.

An encoder checkpoint is one of:
- "mlm": a masked-LM head (BertForMaskedLM, BertForPreTraining, DistilBertForMaskedLM): fill in [MASK];
- "classify": a sequence-classification head (BertForSequenceClassification: the pooler's Linear + tanh on
  [CLS], then a Linear to the labels; DistilBertForSequenceClassification: pre_classifier's Linear + ReLU on
  [CLS], then the Linear): one label for the whole text;
- "tag": a token-classification head (…ForTokenClassification: a Linear on every token): one label per token;
- "features": the encoder alone (BertModel with or without its pooler, DistilBertModel, a
  sentence-transformers model): attention and hidden states, no prediction.
The head's tensors travel in the converted state under `task_head.<kind>.…` and are built into a `TaskHead`
that the family's `build` adds to our Transformer as its `task_head` module."""
from __future__ import annotations

import torch
import torch.nn as nn

from model.hub import HubError

# architectures (config.json) -> task; a class not listed whose weights carry more than the encoder is refused
ARCHITECTURES = {"BertForMaskedLM": "mlm", "BertForPreTraining": "mlm", "DistilBertForMaskedLM": "mlm",
                 "BertForSequenceClassification": "classify", "DistilBertForSequenceClassification": "classify",
                 "BertForTokenClassification": "tag", "DistilBertForTokenClassification": "tag",
                 "BertModel": "features", "DistilBertModel": "features", "BertForNextSentencePrediction": "features"}
TASKS = ("mlm", "classify", "tag", "features")
PREFIX = "task_head."
ACTS = {"tanh": torch.tanh, "relu": torch.relu}


def architecture(hf: dict) -> str | None:
    archs = hf.get("architectures")
    return archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None


def task_of(hf: dict, weights: dict[str, torch.Tensor], mlm_key: str) -> str:
    """What the checkpoint predicts, from its weights (config.json's architectures break the tie between a
    sequence and a token classifier, which both store `classifier.*`)."""
    if mlm_key in weights:
        return "mlm"
    arch = architecture(hf)
    if "classifier.weight" in weights:
        if arch in ARCHITECTURES and ARCHITECTURES[arch] in ("classify", "tag"):
            return ARCHITECTURES[arch]
        pooled = "pre_classifier.weight" in weights or any(k.endswith("pooler.dense.weight") for k in weights)
        return "classify" if pooled else "tag"  # a token classifier is saved without a pooler
    return "features"


def unsupported(hf: dict, left: list[str], family: str) -> HubError:
    """The refusal for tensors no importer takes: the architecture by name when config.json gives one."""
    arch = architecture(hf)
    shown = f"{left[:5]}{' …' if len(left) > 5 else ''}"
    if arch and arch not in ARCHITECTURES:
        return HubError(f"unsupported architecture {arch}: its tensors {shown} are a head this {family} importer "
                        "does not run (supported: the encoder alone, masked-LM, sequence or token classification)")
    return HubError(f"weights: tensors this {family} importer does not know how to use: {shown} "
                    "(a variant we cannot run exactly)")


def labels(hf: dict, n: int) -> list[str]:
    """The names of the n classes: config.json's id2label, LABEL_i where it says nothing."""
    raw = hf.get("id2label") if isinstance(hf.get("id2label"), dict) else {}
    names = {}
    for k, v in raw.items():
        try:
            names[int(k)] = str(v)
        except (TypeError, ValueError):
            continue
    return [names.get(i, f"LABEL_{i}") for i in range(n)]


def take(task: str, w, pooler: str, pre_act: str) -> dict[str, torch.Tensor]:
    """The head's tensors from `w` (bert._Weights) under task_head.<kind>.*: for "classify" the [CLS]
    transform named `pooler` (BERT's pooler.dense with tanh, DistilBERT's pre_classifier with ReLU)."""
    out = {}
    if task == "classify":
        kind = f"sequence_{pre_act}"
        out[f"{PREFIX}{kind}.pre.weight"] = w.take(f"{pooler}.weight")
        out[f"{PREFIX}{kind}.pre.bias"] = w.take(f"{pooler}.bias")
    else:
        kind = "token"
    out[f"{PREFIX}{kind}.classifier.weight"] = w.take("classifier.weight")
    out[f"{PREFIX}{kind}.classifier.bias"] = w.take("classifier.bias")
    return out


class TaskHead(nn.Module):
    """A classifier on the encoder's output: on [CLS] after an optional Linear + activation ("sequence"),
    or on every token ("token")."""

    def __init__(self, kind: str, d_model: int, n_labels: int, act: str | None = None):
        super().__init__()
        self.kind, self.act = kind, act
        self.pre = nn.Linear(d_model, d_model) if act else None
        self.classifier = nn.Linear(d_model, n_labels)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (B, L, D) -> logits (B, labels) for "sequence", (B, L, labels) for "token"."""
        if self.kind == "token":
            return self.classifier(hidden)
        x = hidden[:, 0]
        if self.pre is not None:
            x = ACTS[self.act](self.pre(x))
        return self.classifier(x)

    @classmethod
    def from_state(cls, state: dict[str, torch.Tensor]) -> "TaskHead":
        """The head whose tensors (names after task_head.) are `state`."""
        kind = next(iter(state)).split(".", 1)[0]
        w = state[f"{kind}.classifier.weight"]
        act = kind.split("_", 1)[1] if kind.startswith("sequence_") else None
        head = cls("token" if kind == "token" else "sequence", w.shape[1], w.shape[0], act)
        head.load_state_dict({k.split(".", 1)[1]: v for k, v in state.items()}, assign=True)
        return head


def split(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(the Transformer's tensors, the head's tensors without the task_head. prefix)."""
    head = {k[len(PREFIX):]: v for k, v in state.items() if k.startswith(PREFIX)}
    return {k: v for k, v in state.items() if not k.startswith(PREFIX)}, head


def probabilities(logits: torch.Tensor, hf_problem: str | None) -> torch.Tensor:
    """Each label's probability: softmax over the labels, or each label on its own (sigmoid) for a
    multi-label classifier; a single output (regression) is returned as it is."""
    logits = logits.float()
    if logits.size(-1) == 1:
        return logits
    if hf_problem == "multi_label_classification":
        return torch.sigmoid(logits)
    return torch.softmax(logits, dim=-1)
