"""Safe, atomic persistence: model directories (safetensors + JSON) and training checkpoints.

Nothing here ever unpickles arbitrary objects: weights live in safetensors files, settings in
JSON, and training checkpoints are plain dicts read with `torch.load(weights_only=True)`.
Every file is written atomically (model/atomic.py), so a crash never leaves a half-written file
under its final name.

A model directory holds:
    config.json        TransformerConfig.to_dict()
    model.safetensors  the weights (tied embeddings stored once, see safetensors.torch.save_model)
    tokenizer file(s)  whatever tokenizer.save(dir) writes (optional)
    meta.json          a free dict (task, steps, scores, ...); save_model_dir adds "has_tokenizer"
"""
from __future__ import annotations

import json
import os
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .atomic import atomic_path, atomic_write_json
from .config import TransformerConfig
from .transformer import Transformer

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
META_FILE = "meta.json"
TRAIN_FORMAT = "attention-atlas-train/1"


class CheckpointError(RuntimeError):
    """A model directory or checkpoint that cannot be read or written; the message names the file."""


def _brief(e: BaseException, limit: int = 400) -> str:
    """One line from an exception message: no ANSI colours, no line breaks, bounded length."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
    text = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise CheckpointError(f"{path}: file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: not valid JSON ({e})") from None


# -----------------------------------------------------------------------------
# model directories

@dataclass
class LoadedModel:
    model: Transformer  # in eval mode
    tokenizer: Any | None
    config: TransformerConfig
    meta: dict = field(default_factory=dict)
    path: Path | None = None


def save_model_dir(directory: str | os.PathLike, model: Transformer, tokenizer=None, meta: dict | None = None) -> Path:
    """Write config.json, model.safetensors, the tokenizer (if given) and meta.json into `directory`.
    Each file is replaced atomically (the folder as a whole is not); meta.json is written last."""
    from safetensors.torch import save_model

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    atomic_write_json(d / CONFIG_FILE, model.config.to_dict())
    try:
        with atomic_path(d / WEIGHTS_FILE) as tmp:
            save_model(model, str(tmp), metadata={"format": "pt"})
    except Exception as e:
        raise CheckpointError(f"{d / WEIGHTS_FILE}: could not write the weights ({e})") from None
    if tokenizer is not None:
        tokenizer.save(d)
    meta = dict(meta or {})
    meta["has_tokenizer"] = tokenizer is not None
    try:
        atomic_write_json(d / META_FILE, meta)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{d / META_FILE}: meta is not JSON-serialisable ({e})") from None
    return d


def load_config(directory: str | os.PathLike) -> TransformerConfig:
    path = Path(directory) / CONFIG_FILE
    d = _read_json(path)
    if not isinstance(d, dict):
        raise CheckpointError(f"{path}: expected a JSON object, got {type(d).__name__}")
    try:
        return TransformerConfig.from_dict(d)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: invalid config ({e})") from None


def load_model_dir(directory: str | os.PathLike, device: str | torch.device = "cpu") -> LoadedModel:
    """Read a model directory written by save_model_dir. Raises CheckpointError on any problem."""
    from safetensors.torch import load_model

    d = Path(directory)
    if not d.is_dir():
        raise CheckpointError(f"{d}: model directory not found")
    config = load_config(d)
    weights = d / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{weights}: file not found")
    model = Transformer(config)
    try:
        load_model(model, str(weights), strict=True, device="cpu")
    except RuntimeError as e:  # missing / unexpected keys, shape mismatch
        raise CheckpointError(f"{weights}: the weights do not match config.json ({_brief(e)})") from None
    except Exception as e:  # SafetensorError and friends: truncated or corrupt file
        raise CheckpointError(f"{weights}: damaged or not a safetensors file ({_brief(e)})") from None
    model.to(device).eval()

    meta_path = d / META_FILE
    meta = _read_json(meta_path) if meta_path.exists() else {}
    if not isinstance(meta, dict):
        raise CheckpointError(f"{meta_path}: expected a JSON object, got {type(meta).__name__}")

    tokenizer = _load_tokenizer(d, required=meta.get("has_tokenizer"))
    if tokenizer is not None and tokenizer.vocab_size > config.vocab_size:
        raise CheckpointError(f"{d}: the tokenizer has {tokenizer.vocab_size} tokens but config.json "
                              f"says vocab_size={config.vocab_size}")
    return LoadedModel(model=model, tokenizer=tokenizer, config=config, meta=meta, path=d)


def _load_tokenizer(d: Path, required: bool | None):
    """required=True: must load; False: skip; None (unknown, hand-made dir): load if possible."""
    if required is False:
        return None
    from .tokenizer import TokenizerError, load_tokenizer  # lazy: the tokenizer is optional

    try:
        return load_tokenizer(d)
    except TokenizerError as e:
        if required:
            raise CheckpointError(f"{d}: cannot load the tokenizer ({_brief(e)})") from None
        return None
    except Exception as e:  # anything else from a broken tokenizer file
        raise CheckpointError(f"{d}: cannot load the tokenizer ({type(e).__name__}: {_brief(e)})") from None


# -----------------------------------------------------------------------------
# training checkpoints (plain dicts only, read back with weights_only=True)

_SCALARS = (type(None), bool, int, float, str)  # exact types: numpy scalars would not load back


def _check_plain(obj: Any, where: str = "extra") -> None:
    """Raise TypeError early for anything torch.load(weights_only=True) could not read back."""
    if type(obj) in _SCALARS or isinstance(obj, torch.Tensor):
        return
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _check_plain(v, f"{where}[{i}]")
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, (str, int)):
                raise TypeError(f"{where}: dict keys must be str or int, got {type(k).__name__}")
            _check_plain(v, f"{where}[{k!r}]")
        return
    raise TypeError(f"{where}: {type(obj).__name__} is not a plain value (use numbers, strings, "
                    f"lists, dicts and tensors only)")


def save_training_state(path: str | os.PathLike, model: torch.nn.Module, optimizer=None, scheduler=None,
                        step: int = 0, extra: dict | None = None) -> None:
    """torch.save a plain dict {format, step, model, optimizer, scheduler, config, extra}, atomically."""
    extra = dict(extra or {})
    _check_plain(extra)
    state = {
        "format": TRAIN_FORMAT,
        "step": int(step),
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "config": model.config.to_dict() if hasattr(model, "config") else None,
        "extra": extra,
    }
    _check_plain({k: v for k, v in state.items() if k != "extra"}, "state")
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def load_training_state(path: str | os.PathLike, model: torch.nn.Module, optimizer=None, scheduler=None) -> dict:
    """Restore model (and optimizer, scheduler when given) in place. Returns {"step", "extra", "config"}."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: file not found")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        m = re.search(r"Unsupported global: GLOBAL (\S+)", str(e))
        if m:  # weights_only refused a class or function: loading it could run code
            raise CheckpointError(f"{path}: holds a {m.group(1)} object, not only plain tensors, numbers and "
                                  f"strings; refused, since loading it could run code") from None
        raise CheckpointError(f"{path}: damaged or not a training checkpoint ({_brief(e, 200)})") from None
    except Exception as e:  # truncated zip, garbage bytes
        raise CheckpointError(f"{path}: damaged or not a training checkpoint ({_brief(e, 200)})") from None
    if not isinstance(state, dict) or state.get("format") != TRAIN_FORMAT or "model" not in state:
        raise CheckpointError(f"{path}: not an Attention Atlas training checkpoint")
    try:
        model.load_state_dict(state["model"])
    except Exception as e:
        raise CheckpointError(f"{path}: weights do not fit this model ({_brief(e)})") from None
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler)):
        if obj is None:
            continue
        if state.get(name) is None:
            raise CheckpointError(f"{path}: has no {name} state")
        try:
            obj.load_state_dict(state[name])
        except Exception as e:
            raise CheckpointError(f"{path}: {name} state does not fit ({_brief(e)})") from None
    return {"step": int(state.get("step", 0)), "extra": state.get("extra") or {}, "config": state.get("config")}
