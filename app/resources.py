"""Cached, server-wide resources (one copy per Streamlit server, not per rerun)."""
from __future__ import annotations

import gc
from pathlib import Path

import streamlit as st

from app.jobs import runs_dir  # one rule for where runs live: $ATLAS_RUNS_DIR or runs/

from app.i18n import t
from model.nn.config import PRESETS, TransformerConfig, parameter_formula
from model.nn.device import DeviceParts, best_device, cpu_only_machine, device_parts, parse_description


def settle_heap() -> None:
    """Make full garbage collections cheap. With torch, plotly and a model loaded one walks ~300k long-lived
    objects: 0.17-0.6 s holding the GIL (Streamlit's collection after every run, runner.postScriptGC, is off
    in .streamlit/config.toml for that reason; Python still starts full collections of its own). Collect
    once, then move what is alive now (modules, loaded models) into the permanent generation (gc.freeze):
    later collections only walk what the runs themselves create, so memory stays flat and reruns stop
    queueing behind the collector. Called when this module is first imported, at the end of the warm-up
    (app.jobs.warm_up) and after each model load."""
    gc.collect()
    gc.freeze()


@st.cache_resource(show_spinner=False)
def _device_parts(device: str | None) -> DeviceParts:
    if device is None and cpu_only_machine():  # known without torch: the CPU, with the server's thread budget
        import platform

        from app.jobs import server_threads
        return DeviceParts("cpu", threads=server_threads(), machine=platform.machine())
    import torch
    return device_parts(torch.device(device) if device else best_device())


def device_text(parts: DeviceParts | str | None) -> str:
    """A device in the current language: DeviceParts, or a description as the trainer recorded it
    (model.nn.device.describe_device); a description it cannot read is shown as it is."""
    if isinstance(parts, str):
        parts = parse_description(parts) or parts
    if not isinstance(parts, DeviceParts):
        return parts or ""
    return t(f"device.{parts.kind}", name=parts.name, memory=parts.memory_gib, threads=parts.threads,
             machine=parts.machine)


def device_description(device=None) -> str:
    """The compute device (default: the one the app uses), in the current language."""
    return device_text(_device_parts(str(device) if device is not None else None))


@st.cache_data(show_spinner=False, max_entries=256)
def parameter_count(config_dict: dict) -> int:
    """Exact parameter count of a configuration, term by term (model.nn.transformer.parameter_formula: instant,
    and checked against counting the tensors of a model built on the meta device in tests/model/test_table3.py)."""
    return parameter_formula(TransformerConfig.from_dict(config_dict))


def preset_parameter_count(name: str) -> int:
    return parameter_count(PRESETS[name].to_dict())


@st.cache_resource(show_spinner=False)
def shared_tokenizer():
    """The shipped sentencepiece tokenizer (English and Korean)."""
    from model.data.tokenizer import load_tokenizer
    return load_tokenizer()


@st.cache_resource(show_spinner=False)
def demo_model(vocab_size: int):
    """The masks page's small encoder-decoder with seeded random weights (model.lessons.probe)."""
    from model.lessons.probe import seeded_demo_model
    return seeded_demo_model(vocab_size)


# ----------------------------------------------------------------------------- models

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = {"en-ko": ROOT / "assets" / "models" / "en-ko", "lm": ROOT / "assets" / "models" / "lm"}


def pretrained_dir() -> Path:
    """Where a learner puts pretrained models in the Hugging Face layout: $ATLAS_PRETRAINED_DIR or pretrained/."""
    import os
    return Path(os.environ.get("ATLAS_PRETRAINED_DIR") or ROOT / "pretrained")


def pretrained_models() -> dict[str, Path]:
    """Label -> folder of every pretrained model we can run: pretrained/<name>/ and the local hub cache."""
    from model.hub import hub_cache_dir
    return _pretrained_models(str(pretrained_dir()), str(hub_cache_dir()))


@st.cache_data(ttl=10, show_spinner=False)
def _pretrained_models(base_dir: str, cache_dir: str) -> dict[str, Path]:
    """Scanned at most every 10 s, not on every rerun (each candidate's config.json is read)."""
    from model.hub import cached_models, is_hf_folder, supported
    found: dict[str, Path] = {}
    base = Path(base_dir)
    if base.is_dir():
        for folder in sorted(p for p in base.iterdir() if p.is_dir()):
            if is_hf_folder(folder) and supported(folder):
                found[f"pretrained: {folder.name}"] = folder
    for name, folder in cached_models(Path(cache_dir)).items():
        found.setdefault(f"pretrained: {name}", folder)
    return found


@st.cache_data(ttl=60, show_spinner=False, max_entries=16)
def pretrained_sizes(folders: tuple[str, ...]) -> list[dict | None]:
    """model.hub.size_summary of each pretrained folder (None for one that cannot be read), read from the
    config and the weights file's header only."""
    from model.hub import HubError, size_summary
    out = []
    for folder in folders:
        try:
            out.append(size_summary(folder))
        except (HubError, OSError, ValueError, TypeError):
            out.append(None)
    return out


def available_models() -> dict[str, Path]:
    """Label -> model directory: the shipped models, every run that has saved weights, then pretrained
    models (pretrained/ and the local Hugging Face cache)."""
    found = {name: path for name, path in SHIPPED.items() if (path / "config.json").is_file()}
    base = runs_dir()
    if base.is_dir():
        from model.family import family_of
        for cfg in sorted(base.glob("*/model/config.json"), key=lambda p: p.stat().st_mtime, reverse=True):
            if family_of(cfg.parent) is None:  # ViT, DETR and BERT-style runs open on the family page
                found[f"run: {cfg.parent.parent.name}"] = cfg.parent
    found.update(pretrained_models())
    return found


def model_stamp(path: Path) -> float:
    """The version of a model folder's weights (see _stamp): part of every cache key of what it computes."""
    return _stamp(Path(path))


def _stamp(path: Path) -> float:
    """Changes when the weights are rewritten (a training run saves a newer checkpoint)."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        try:
            return (path / name).stat().st_mtime
        except OSError:
            continue
    return 0.0


def pretrained_dtype(device):
    """bfloat16 for imported models on a CUDA GPU when ATLAS_BF16=1 (half the memory, faster); else float32."""
    import os

    import torch
    on = os.environ.get("ATLAS_BF16", "").strip().lower() in ("1", "true", "yes", "on")
    return torch.bfloat16 if on and getattr(device, "type", str(device)) == "cuda" else None


@st.cache_resource(show_spinner=False, max_entries=8)
def _load(path: str, stamp: float):
    from model.training.checkpoint import load_model_dir
    from model.hub import is_hf_folder, load_pretrained
    if is_hf_folder(Path(path)):
        device = best_device()
        loaded = load_pretrained(path, device=device, dtype=pretrained_dtype(device))
    else:
        loaded = load_model_dir(path, device=best_device())
    settle_heap()  # the model (and the modules its page imported) stay for the server's life
    return loaded


def load_model(path: Path):
    """A LoadedModel, loaded once per server per version of the weights (raises CheckpointError)."""
    return _load(str(path), _stamp(Path(path)))


def warm_first_model() -> None:
    """The first shipped model (the inspector's first choice, the masks page's demonstration), its card and
    vocabulary, in the caches the pages read (app.jobs.warm_up, while the learner reads the first page): they
    were ~80 ms of the inspector's 160 ms first run here."""
    for path in SHIPPED.values():
        if (path / "config.json").is_file():
            load_model(path)
            card(path)
            vocabulary(path)
            return


@st.cache_resource(show_spinner=False, max_entries=8)
def _vocabulary(path: str, stamp: float):
    from model.data.vocabulary import model_vocabulary
    return model_vocabulary(load_model(Path(path)))


def vocabulary(path: Path):
    """What the model's input side met in training (model.data.vocabulary.Vocabulary: token ids, words, a
    palette); cached per version of the weights."""
    return _vocabulary(str(path), _stamp(Path(path)))


@st.cache_resource(show_spinner=False, max_entries=8)
def _card(path: str, stamp: float):
    from model.training.card import card_facts
    return card_facts(load_model(Path(path)))


def card(path: Path):
    """The model's key facts (model.training.card.CardFacts), cached per version of the weights."""
    return _card(str(path), _stamp(Path(path)))


@st.cache_resource(show_spinner=False, max_entries=64)
def _translation(path: str, stamp: float, text: str, greedy: bool, beam: int):
    from model.inference.decode import translate
    return translate(load_model(Path(path)), text, beam_size=beam, greedy=greedy)


def translation(path: Path, text: str, greedy: bool, beam: int):
    """Cached per (model version, text, decoding): moving a slider does not decode again."""
    return _translation(str(path), _stamp(Path(path)), text, greedy, beam)


@st.cache_resource(show_spinner=False, max_entries=64)
def _forward_pass(path: str, stamp: float, ids: tuple[int, ...]):
    from model.lessons.probe import forward_attention
    return forward_attention(load_model(Path(path)).model, list(ids))


def forward_pass(path: Path, ids: list[int]):
    """The attention (Intermediates) of one recorded forward pass of an encoder-only or decoder-only
    model, cached per (model version, ids)."""
    return _forward_pass(str(path), _stamp(Path(path)), tuple(ids))


@st.cache_resource(show_spinner=False, max_entries=64)
def _lm_positions(path: str, stamp: float, ids: tuple[int, ...], k: int):
    from model.lessons.probe import lm_position_candidates
    return lm_position_candidates(load_model(Path(path)).model, list(ids), k)


def lm_positions(path: Path, ids: list[int], k: int = 5):
    """A decoder-only model's next-token candidates at every position of ids, cached per (model
    version, ids, k)."""
    return _lm_positions(str(path), _stamp(Path(path)), tuple(ids), k)


@st.cache_resource(show_spinner=False, max_entries=64)
def _fill_mask(path: str, stamp: float, text: str, text_b: str):
    from model.hub.bert import fill_mask
    return fill_mask(load_model(Path(path)), text, text_b=text_b or None)


def fill_mask(path: Path, text: str, text_b: str = ""):
    """A BERT-style model's predictions at each [MASK] and its attention (model.hub.bert.FillMask), cached;
    with text_b, the pair [CLS] text [SEP] text_b [SEP] (segments 0 and 1)."""
    return _fill_mask(str(path), _stamp(Path(path)), text, (text_b or "").strip())


@st.cache_resource(show_spinner=False, max_entries=64)
def _next_token(path: str, stamp: float, ids: tuple[int, ...], temperature: float, top_k: int):
    from model.inference.decode import lm_next_token
    return lm_next_token(load_model(Path(path)).model, list(ids), temperature=temperature, top_k=top_k)


def next_token(path: Path, ids: list[int], temperature: float, top_k: int):
    """A decoder-only model's next-token probabilities and attention for ids (model.inference.decode.lm_next_token),
    cached per (model version, ids, temperature, top-k): every session typing the same text shares one pass."""
    return _next_token(str(path), _stamp(Path(path)), tuple(ids), float(temperature), int(top_k))


# ----------------------------------------------------------------------------- what pages draw, shared

VIEWS_KEPT = 256  # built figures and tables kept for all sessions (the least recently used go first)


@st.cache_resource(show_spinner=False, max_entries=VIEWS_KEPT)
def _shared_view(name: str, key: tuple, _build):
    return _build()


def shared_view(name: str, key: tuple, build):
    """`build()` (a figure, table rows: anything the page only reads) once for the whole server per
    (name, key), kept among the VIEWS_KEPT most recently used. `key` must hold everything the result
    depends on — the model folder and weights version, the text, the options, the language — since every
    session asking with an equal key gets this very object: callers never modify it."""
    return _shared_view(name, key, build)


def shared_figure(name: str, key: tuple, build):
    """shared_view for a plotly figure, made ready to draw before it is shared (app.charts.style.ready_figure:
    its dict made once, with the toolbar room; app.ui.plot then draws it as it is, and no session can change
    the shared object)."""
    from app.charts.style import ready_figure
    return shared_view(name, key, lambda: ready_figure(build()))


def table_data(rows: list[dict]):
    """Table rows as a pyarrow Table: st.dataframe sends a Table as it is, where a list of rows goes through
    pandas and back to Arrow on every draw (~8 ms a table here). Rows Arrow cannot type (a column mixing
    text and numbers) stay rows."""
    import pyarrow as pa
    try:
        return pa.Table.from_pylist(rows) if rows else rows
    except (pa.ArrowException, TypeError, ValueError):
        return rows


def shared_table(name: str, key: tuple, build):
    """shared_view for table rows (`build()` returns a list of dicts), converted once for every session."""
    return shared_view(name, key, lambda: table_data(build()))


settle_heap()
