"""Cached, server-wide resources (one copy per Streamlit server, not per rerun)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.jobs import runs_dir  # one rule for where runs live: $ATLAS_RUNS_DIR or runs/

from model.config import PRESETS, TransformerConfig
from model.device import best_device, describe_device
from model.transformer import count_parameters


@st.cache_resource(show_spinner=False)
def device_description() -> str:
    return describe_device(best_device())


@st.cache_data(show_spinner=False)
def parameter_count(config_dict: dict) -> int:
    """Exact parameter count of a configuration (counted on the meta device, nothing allocated)."""
    return count_parameters(TransformerConfig.from_dict(config_dict))


def preset_parameter_count(name: str) -> int:
    return parameter_count(PRESETS[name].to_dict())


@st.cache_resource(show_spinner=False)
def shared_tokenizer():
    """The shipped sentencepiece tokenizer (English and Korean)."""
    from model.tokenizer import load_tokenizer
    return load_tokenizer()


@st.cache_resource(show_spinner=False)
def demo_model(vocab_size: int):
    """The masks page's small encoder-decoder with seeded random weights (model.probe)."""
    from model.probe import seeded_demo_model
    return seeded_demo_model(vocab_size)


# ----------------------------------------------------------------------------- models

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
def _training_pieces(path: str, stamp: float) -> frozenset[int]:
    from model.probe import training_piece_ids
    return training_piece_ids(load_model(Path(path)))


def training_pieces(path: Path) -> frozenset[int]:
    """Token ids the model met in training (its task's train split), to flag unseen pieces; cached
    per version of the weights."""
    return _training_pieces(str(path), _stamp(Path(path)))


@st.cache_resource(show_spinner=False, max_entries=64)
def _translation(path: str, stamp: float, text: str, greedy: bool, beam: int):
    from model.decode import translate
    return translate(load_model(Path(path)), text, beam_size=beam, greedy=greedy)


def translation(path: Path, text: str, greedy: bool, beam: int):
    """Cached per (model version, text, decoding): moving a slider does not decode again."""
    return _translation(str(path), _stamp(Path(path)), text, greedy, beam)


@st.cache_resource(show_spinner=False, max_entries=64)
def _forward_pass(path: str, stamp: float, ids: tuple[int, ...]):
    from model.probe import forward_attention
    return forward_attention(load_model(Path(path)).model, list(ids))


def forward_pass(path: Path, ids: list[int]):
    """The attention (Intermediates) of one recorded forward pass of an encoder-only or decoder-only
    model, cached per (model version, ids)."""
    return _forward_pass(str(path), _stamp(Path(path)), tuple(ids))
