"""The Transformer family: BERT-style masked LM, ViT and DETR as small models trained here.

Each member is a `FamilyTask`: it knows its data (seeded, fixed splits), builds its model from a config
dataclass, cuts batches, computes the loss and scores a split. The trainer (model/training/train.py) runs every
task through the same loop, status files, checkpoints and resume as translation, so a family run shows
on the training page like any other.

A family model directory (written by save_family_dir, read by load_family_dir):
    config.json        {"family": "<task name>", **config.to_dict()}
    model.safetensors  the weights
    meta.json          a free dict (task, steps, test scores, command, ...)
    CARD.md            the English text of the card (shipped models)
    + whatever the task's save_extra writes (a tokenizer)

Every member builds its layers from the same attention code as the paper's Transformer
(model.nn.attention.MultiHeadAttention, model.nn.layers.EncoderLayer / FeedForward / Residual), so a learner
sees the same code behave four ways."""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from model.atomic import atomic_path, atomic_write_json

if TYPE_CHECKING:
    import torch

# torch and the checkpoint code load when a model is built, saved or read (model.training.checkpoint imports torch),
# so the task list above can be read by a page before torch has loaded.

# task name -> "module:class" (imported only when used, so the app starts without them)
FAMILY_TASKS: dict[str, str] = {  # (also the order of the training page's task list)
    "mlm": "model.family.mlm:MlmTask",
    "vit-digits": "model.family.vit:VitDigitsTask",
    "detr-shapes": "model.family.detr:DetrShapesTask",
}


class FamilyTask:
    """What the trainer needs from a family member. Subclasses set `name` and implement the methods
    marked abstract; the defaults fit most members.

    Conventions:
    - `config` objects are frozen dataclasses with `to_dict()` and a classmethod `from_dict(d)`;
      `config_class` names that class. The model built from a config has `.config`.
    - `batch(step, seed, rank, batch_size, device)` depends only on its arguments (a resumed run sees
      the same data); it returns whatever `loss` takes.
    - `loss(model, batch)` returns (scalar loss tensor, n_items) where n_items is what the trainer
      counts for throughput ("tokens": masked tokens, patches, image tokens).
    - `evaluate(model, device)` -> {name: float} on the validation split (shown as curves; cheap: seconds).
    - `score_test(model, device)` -> {name: float} on the test split (the shipped card's scores).
    """

    name: str = ""
    config_class: type = object
    throughput_unit: str = "tokens"
    # The training page's curves and table read three standard keys of an evaluation: "val_loss",
    # "val_token_acc" (the task's main accuracy) and "val_exact" (a second score). Each names the key of
    # this task's evaluate() that fills it; the trainer adds them to every evaluation record.
    standard_metrics: dict = {}

    def __init__(self, seed: int = 0):
        self.seed = seed

    # -- model
    def default_config(self, args) -> Any:
        raise NotImplementedError

    def build(self, config) -> torch.nn.Module:
        raise NotImplementedError

    def d_model(self, config) -> int:
        """For the warm-up schedule lrate = d_model^-0.5 * min(...)."""
        return int(config.d_model)

    def optimizer(self, model: torch.nn.Module, args):
        """(optimizer, LambdaLR scheduler). Default: the paper's Adam and warm-up schedule."""
        import torch

        from model.training.schedule import ADAM_BETAS, ADAM_EPS, noam_lambda
        opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=ADAM_BETAS, eps=ADAM_EPS)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, noam_lambda(self.d_model(model.config), args.warmup,
                                                                    args.lr_factor))
        return opt, sched

    # -- data and loss
    def batch(self, step: int, seed: int, rank: int, batch_size: int, device) -> Any:
        raise NotImplementedError

    def loss(self, model: torch.nn.Module, batch) -> tuple[torch.Tensor, int]:
        raise NotImplementedError

    # -- scores
    def evaluate(self, model: torch.nn.Module, device) -> dict:
        raise NotImplementedError

    def score_test(self, model: torch.nn.Module, device) -> dict:
        raise NotImplementedError

    def card_notes(self) -> list[str]:
        """Lines for the model card on where this member's recipe differs from the paper's (an optimiser of
        its own, a changed loss weight, ...)."""
        return []

    # -- files
    def save_extra(self, directory: Path) -> None:
        """Anything besides config and weights the model needs at inference (a tokenizer)."""

    def load_extra(self, directory: Path) -> Any:
        """What save_extra wrote, loaded (None when nothing)."""
        return None


def family_task(name: str, seed: int = 0) -> FamilyTask:
    """An instance of the task called `name` (KeyError for an unknown one)."""
    module, cls = FAMILY_TASKS[name].split(":")
    return getattr(importlib.import_module(module), cls)(seed)


def is_family_task(name: str | None) -> bool:
    return name in FAMILY_TASKS


@dataclass
class LoadedFamily:
    task: str
    model: torch.nn.Module  # in eval mode
    config: Any
    meta: dict = field(default_factory=dict)
    extra: Any = None  # what the task's load_extra returned (a tokenizer)
    path: Path | None = None


def save_family_dir(directory: str | os.PathLike, task: FamilyTask, model: torch.nn.Module,
                    meta: dict | None = None) -> Path:
    """config.json (with the family), model.safetensors, extras, then meta.json: each file atomically."""
    from model.training.checkpoint import CONFIG_FILE, META_FILE, WEIGHTS_FILE, CheckpointError
    from safetensors.torch import save_model

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    atomic_write_json(d / CONFIG_FILE, {"family": task.name, **model.config.to_dict()})
    try:
        with atomic_path(d / WEIGHTS_FILE) as tmp:
            save_model(model, str(tmp), metadata={"format": "pt"})
    except Exception as e:
        raise CheckpointError(f"{d / WEIGHTS_FILE}: could not write the weights ({e})") from None
    task.save_extra(d)
    atomic_write_json(d / META_FILE, {"task": task.name, **dict(meta or {})})
    return d


def family_of(directory: str | os.PathLike) -> str | None:
    """The family task a model directory holds, or None (a Transformer directory, or no config)."""
    from model.training.checkpoint import CONFIG_FILE, CheckpointError, _read_json
    try:
        cfg = _read_json(Path(directory) / CONFIG_FILE)
    except CheckpointError:
        return None
    return cfg.get("family") if isinstance(cfg, dict) and isinstance(cfg.get("family"), str) else None


def load_family_dir(directory: str | os.PathLike, expect: str | None = None, device="cpu") -> LoadedFamily:
    """Read a family model directory. CheckpointError (with the file named) for anything wrong: no such
    folder, another family than `expect`, a config that does not fit, damaged weights."""
    from safetensors.torch import load_model

    from model.training.checkpoint import CONFIG_FILE, META_FILE, WEIGHTS_FILE, CheckpointError, _brief, _read_json

    d = Path(directory)
    if not d.is_dir():
        raise CheckpointError(f"{d}: model directory not found")
    raw = _read_json(d / CONFIG_FILE)
    if not isinstance(raw, dict) or raw.get("family") not in FAMILY_TASKS:
        found = raw.get("family") if isinstance(raw, dict) else None
        raise CheckpointError(f"{d / CONFIG_FILE}: not a model of the Transformer family "
                              f"({'family ' + repr(found) if found else 'no family named'})")
    name = raw["family"]
    if expect is not None and name != expect:
        raise CheckpointError(f"{d}: holds a {name} model, not {expect}")
    task = family_task(name)
    try:
        config = task.config_class.from_dict({k: v for k, v in raw.items() if k != "family"})
        model = task.build(config)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{d / CONFIG_FILE}: invalid config ({_brief(e)})") from None
    weights = d / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{weights}: file not found")
    try:
        load_model(model, str(weights), strict=True, device="cpu")
    except RuntimeError as e:
        raise CheckpointError(f"{weights}: the weights do not match config.json ({_brief(e)})") from None
    except Exception as e:
        raise CheckpointError(f"{weights}: damaged or not a safetensors file ({_brief(e)})") from None
    model.to(device).eval()
    meta = _read_json(d / META_FILE) if (d / META_FILE).exists() else {}
    if not isinstance(meta, dict):
        raise CheckpointError(f"{d / META_FILE}: expected a JSON object")
    try:
        extra = task.load_extra(d)
    except CheckpointError:
        raise
    except Exception as e:
        raise CheckpointError(f"{d}: cannot load the model's extra files ({type(e).__name__}: {_brief(e)})") from None
    return LoadedFamily(name, model, config, meta, extra, d)
