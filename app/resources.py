"""Cached, server-wide resources (one copy per Streamlit server, not per rerun)."""
from __future__ import annotations

import streamlit as st
import torch

from model.config import PRESETS, TransformerConfig
from model.device import best_device, describe_device


@st.cache_resource(show_spinner=False)
def device_description() -> str:
    return describe_device(best_device())


@st.cache_data(show_spinner=False)
def parameter_count(config_dict: dict) -> int:
    """Count parameters on the meta device: no memory is allocated, the count is exact."""
    from model.transformer import Transformer
    with torch.device("meta"):
        return Transformer(TransformerConfig.from_dict(config_dict)).num_parameters()


def preset_parameter_count(name: str) -> int:
    return parameter_count(PRESETS[name].to_dict())


# ----------------------------------------------------------------------------- models
from pathlib import Path  # noqa: E402

from app.jobs import runs_dir  # noqa: E402  (one rule for where runs live: $ATLAS_RUNS_DIR or runs/)

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = {"en-ko": ROOT / "assets" / "models" / "en-ko", "lm": ROOT / "assets" / "models" / "lm"}


def available_models() -> dict[str, Path]:
    """Label -> model directory: the shipped models, then every run that has saved weights."""
    found = {name: path for name, path in SHIPPED.items() if (path / "config.json").is_file()}
    base = runs_dir()
    if base.is_dir():
        for cfg in sorted(base.glob("*/model/config.json"), key=lambda p: p.stat().st_mtime, reverse=True):
            found[f"run: {cfg.parent.parent.name}"] = cfg.parent
    return found


def _stamp(path: Path) -> float:
    """Changes when the weights are rewritten (a training run saves a newer checkpoint)."""
    try:
        return (path / "model.safetensors").stat().st_mtime
    except OSError:
        return 0.0


@st.cache_resource(show_spinner=False, max_entries=8)
def _load(path: str, stamp: float):
    from model.checkpoint import load_model_dir
    return load_model_dir(path, device=best_device())


def load_model(path: Path):
    """A LoadedModel, loaded once per server per version of the weights (raises CheckpointError)."""
    return _load(str(path), _stamp(Path(path)))


@st.cache_resource(show_spinner=False, max_entries=8)
def training_piece_ids(path: str, stamp: float) -> frozenset[int]:
    """Token ids the model met in training (its task's train split), to flag unseen pieces."""
    from model.corpus import task_pairs
    loaded = load_model(Path(path))
    meta = loaded.meta or {}
    task = meta.get("task")
    if task not in ("en-ko", "lm", "copy", "reverse", "sort"):
        return frozenset()
    pairs = task_pairs(task)["train"]
    tok = loaded.tokenizer
    seen: set[int] = set()
    for s, t in pairs:
        seen.update(tok.encode(s))
        seen.update(tok.encode(t))
    return frozenset(seen)


@st.cache_resource(show_spinner=False, max_entries=64)
def _translation(path: str, stamp: float, text: str, greedy: bool, beam: int):
    from model.decode import translate
    return translate(load_model(Path(path)), text, beam_size=beam, greedy=greedy)


def translation(path: Path, text: str, greedy: bool, beam: int):
    """Cached per (model version, text, decoding): moving a slider does not decode again."""
    return _translation(str(path), _stamp(Path(path)), text, greedy, beam)


@st.cache_resource(show_spinner=False, max_entries=64)
def _encoder_pass(path: str, stamp: float, ids: tuple[int, ...]):
    import torch
    loaded = load_model(Path(path))
    with torch.inference_mode():
        x = torch.tensor([list(ids)], device=loaded.model.device)
        return loaded.model(x, return_attention=True)


def forward_pass(path: Path, ids: list[int]):
    """One recorded forward pass (encoder-only or decoder-only models)."""
    return _encoder_pass(str(path), _stamp(Path(path)), tuple(ids))
