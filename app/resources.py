"""Cached, server-wide resources (one copy per Streamlit server, not per rerun)."""
from __future__ import annotations

import time
from concurrent.futures import wait
from pathlib import Path

import streamlit as st

from app import measuring  # the server's measuring process (in_background)
from app.jobs import runs_dir  # one rule for where runs live: $ATLAS_RUNS_DIR or runs/

from app.fast.heap import settle_heap  # after each model load (app.fast.heap says why)
from app.i18n import lang, t
from model.nn.config import TransformerConfig, parameter_formula
from model.nn.device import DeviceParts, best_device, cpu_only_machine, device_parts, parse_description


@st.cache_resource(show_spinner=False)
def _device_parts(device: str | None) -> DeviceParts:
    if device is None and cpu_only_machine():  # known without torch: the CPU, with the server's thread budget
        import platform

        from app.jobs import server_threads
        return DeviceParts("cpu", threads=server_threads(), machine=platform.machine())
    return device_parts(device)


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


@st.cache_resource(show_spinner=False)
def measurements(page: str) -> dict:
    """A page's store of what it measured on this server, the same dict for every session (a measurement runs
    live with a progress bar, which a cached function would replay, and is then kept here by the page)."""
    return {}


@st.cache_data(show_spinner=False, max_entries=4)
def checked_upload(data: bytes, name: str) -> dict:
    """The training page's check of an uploaded corpus (app.jobs.options.check_upload), once per file, not on
    every rerun."""
    from app.jobs.options import check_upload
    return check_upload(data, name)


# ----------------------------------------------------------------------------- models

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = {"en-ko": ROOT / "assets" / "models" / "en-ko", "lm": ROOT / "assets" / "models" / "lm"}


def pretrained_dir() -> Path:
    """Where a learner puts pretrained models in the Hugging Face layout: $ATLAS_PRETRAINED_DIR or pretrained/."""
    import os
    return Path(os.environ.get("ATLAS_PRETRAINED_DIR") or ROOT / "pretrained")


PRETRAINED_FRESH_S = 10.0  # a model the learner just put in pretrained/ shows up within this many seconds
SIZES_FRESH_S = 60.0  # a folder's sizes change only when its files are replaced


def pretrained_models() -> dict[str, Path]:
    """Label -> folder of every pretrained model we can run: pretrained/<name>/ and the local hub cache, scanned
    at most every PRETRAINED_FRESH_S seconds, not on every rerun (each candidate's config.json is read)."""
    from model.hub import hub_cache_dir
    return from_disk(_pretrained_models, str(pretrained_dir()), str(hub_cache_dir()), fresh_s=PRETRAINED_FRESH_S)


def _pretrained_models(base_dir: str, cache_dir: str) -> dict[str, Path]:
    from model.hub import cached_models, is_hf_folder, supported
    found: dict[str, Path] = {}
    base = Path(base_dir)
    if base.is_dir():
        for folder in sorted(p for p in base.iterdir() if p.is_dir()):
            if is_hf_folder(folder) and supported(folder):
                found[f"pretrained: {folder.name}"] = folder
    for name, folder in cached_models(Path(cache_dir)).items():
        found.setdefault(f"pretrained: {name}", folder)
    from model.hub.packages import package_models
    for name, folder in package_models().items():  # a model an installed Python package carries
        found.setdefault(f"package: {name}", folder)
    return found


def pretrained_sizes(folders: tuple[str, ...]) -> list[dict | None]:
    """model.hub.size_summary of each pretrained folder (None for one that cannot be read), read from the
    config and the weights file's header only, at most every SIZES_FRESH_S seconds."""
    return from_disk(_pretrained_sizes, tuple(folders), fresh_s=SIZES_FRESH_S)


def _pretrained_sizes(folders: tuple[str, ...]) -> list[dict | None]:
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


def weights_stamp(path: Path | str | None) -> float:
    """The version of a model folder's weights: the time its weights file was last written (0.0 when it has
    none). A training run that saves newer weights changes it, so it is part of every cache key of what a
    model computes (of_weights) and of the figures drawn from that."""
    if not path:
        return 0.0
    for name in ("model.safetensors", "pytorch_model.bin"):
        try:
            return (Path(path) / name).stat().st_mtime
        except OSError:
            continue
    return 0.0


MODELS_KEPT = 8  # loaded models kept for all sessions (the least recently used go first)
RESULTS_KEPT = 256  # what models computed (translations, attention, predictions), kept for all sessions


@st.cache_resource(show_spinner=False, max_entries=MODELS_KEPT)
def _load(path: str, stamp: float, task: str | None):
    """The model in folder `path` at version `stamp`: a Transformer (our checkpoint or a pretrained import), or,
    with a family task (model.family), that family's model."""
    if task is not None:
        from model.family import load_family_dir
        loaded = load_family_dir(path, expect=task)
    else:
        from model.hub import is_hf_folder, load_pretrained, pretrained_dtype
        from model.training.checkpoint import load_model_dir
        if is_hf_folder(Path(path)):
            device = best_device()
            loaded = load_pretrained(path, device=device, dtype=pretrained_dtype(device))
        else:
            loaded = load_model_dir(path, device=best_device())
    settle_heap()  # the model (and the modules its page imported) stay for the server's life
    return loaded


def load_model(path: Path):
    """A LoadedModel, loaded once per server per version of the weights (raises CheckpointError)."""
    return _load(str(path), weights_stamp(path), None)


def load_family_model(path: Path, task: str):
    """A LoadedFamily (model.family), once per server per version of the weights; CheckpointError when the
    folder holds another family, a damaged file or nothing."""
    return _load(str(path), weights_stamp(path), task)


def _cache_name(fn) -> str:
    """A module-level function's full name: what a cache keys it by (a lambda or a nested function has none
    that is unique)."""
    name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}"
    if "<" in name or name.startswith(".") or name.endswith("."):
        raise ValueError(f"cache a module-level function, not {fn!r}")
    return name


@st.cache_resource(show_spinner=False, max_entries=RESULTS_KEPT)
def _of_weights(name: str, path: str, stamp: float, task: str | None, network: bool, args: tuple, kwargs: tuple,
                _fn):
    loaded = _load(path, stamp, task)
    return _fn(loaded.model if network else loaded, *args, **dict(kwargs))


def of_weights(fn, path: Path, *args, task: str | None = None, network: bool = False, **kwargs):
    """`fn(the model in folder path, *args, **kwargs)` once for the whole server per (fn, folder, version of
    its weights, arguments): every session asking the same shares one result, so it must only be read. `fn` is
    a module-level function (of model/, or a view's adapter); `fn` gets the loaded model (LoadedModel), or with
    network=True its network (loaded.model); `task` loads a family model (model.family) instead."""
    return _of_weights(_cache_name(fn), str(path), weights_stamp(path), task, network, args,
                       tuple(sorted(kwargs.items())), fn)


@st.cache_data(show_spinner=False, max_entries=RESULTS_KEPT)
def _computed(name: str, args: tuple, kwargs: tuple, _fn):
    return _fn(*args, **dict(kwargs))


def computed(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` of a pure module-level function of model/ (no model folder: a lesson's numbers),
    once for the whole server per arguments; each caller gets its own copy (st.cache_data)."""
    return _computed(_cache_name(fn), args, tuple(sorted(kwargs.items())), fn)


READS_KEPT = 64  # values read from disk (a runs folder's summaries, the pretrained models found), for all sessions


@st.cache_data(show_spinner=False, max_entries=READS_KEPT)
def _from_disk(name: str, args: tuple, kwargs: tuple, fresh_s: float, period: int, _fn):
    return _fn(*args, **dict(kwargs))


def from_disk(fn, *args, fresh_s: float, **kwargs):
    """`fn(*args, **kwargs)` of a module-level function that reads files that change under the server (run
    folders, a study's table, the pretrained models found), read at most once per `fresh_s` seconds for the whole
    server and not on every rerun: what a session gets is at most `fresh_s` seconds old (the key holds the
    current period of `fresh_s` seconds, and an old period's entry goes with the least recently used). Each caller
    gets its own copy (st.cache_data)."""
    return _from_disk(_cache_name(fn), args, tuple(sorted(kwargs.items())), float(fresh_s),
                      int(time.time() // fresh_s), fn)


def in_background(name: str, calls: list[tuple], wait_s: float | None) -> list | None:
    """[fn(*args) for fn, args in calls], each call computed once for the whole server, one at a time in the
    server's measuring process (app.measuring; a measurement: times taken beside another are not worth reading),
    while the page's run goes on. `fn` is a module-level function and `args` plain values (both go to the other
    process). Waits at most `wait_s` seconds (None: until they are done); then the values in order
    when all are done, or None: the page shows what it has and asks again (`app.ui.newest`, `pending`). A call
    this session asked for under `name` last time and no longer asks for is dropped if it has not started (a
    learner sliding past a setting does not wait for it). A call whose process died, or that another session
    dropped, is asked for again once. Values are shared between sessions: only read them."""
    asked = [measuring.future_of(_cache_name(fn), fn, tuple(args)) for fn, args in calls]
    slot = BACKGROUND_SLOT + name
    now = {key for key, _ in asked}
    measuring.drop(set(st.session_state.get(slot, ())) - now)
    st.session_state[slot] = tuple(now)
    futures = [fut for _, fut in asked]
    _wait(futures, wait_s)
    if any(measuring.lost(fut) for fut in futures):
        futures = [measuring.future_of(_cache_name(fn), fn, tuple(args))[1] for fn, args in calls]
        _wait(futures, wait_s)
    if not all(fut.done() for fut in futures) or any(fut.cancelled() for fut in futures):
        return None
    return [fut.result() for fut in futures]


def _wait(futures: list, wait_s: float | None) -> None:
    """Waits for `futures` at most `wait_s` seconds (None: until done), saying often that they are still wanted
    (app.measuring.Call.stale: calls that nobody asks about are not started)."""
    end, every = None if wait_s is None else time.monotonic() + wait_s, min(1.0, measuring.STALE_S / 3)
    while True:
        measuring.ask(futures)
        left = every if end is None else min(every, end - time.monotonic())
        if not wait(futures, timeout=max(0.0, left)).not_done or (end is not None and time.monotonic() >= end):
            return


BACKGROUND_SLOT = "_background_"  # + a name: the calls this session last asked for under it (in_background)


def leave_background() -> None:
    """This session left the page that asked: its calls that have not started are dropped (the next page's moves do
    not share the machine with measurements nobody looks at); those under way finish, and their values are kept for
    whoever asks again (a page that comes back asks anew, and shows what it had meanwhile)."""
    for slot in [k for k in st.session_state if isinstance(k, str) and k.startswith(BACKGROUND_SLOT)]:
        measuring.drop(st.session_state[slot])
        del st.session_state[slot]


def background_done(calls: list[tuple]) -> bool:
    """Whether every call of in_background's `calls` has its value (or failed: the next ask says how)."""
    return measuring.done([(_cache_name(fn), tuple(args)) for fn, args in calls])


def warm_first_model() -> None:
    """The first shipped model (the inspector's first choice, the masks page's demonstration), its card and
    vocabulary, in the caches the pages read (app.fast.warmup.warm_up, while the learner reads the first page): loading
    them was most of the inspector's first run."""
    for path in SHIPPED.values():
        if (path / "config.json").is_file():
            load_model(path)
            card(path)
            vocabulary(path)
            return


# What the inspector and the family page ask of a model: each a model/ function through of_weights.

def vocabulary(path: Path):
    """What the model's input side met in training (model.data.vocabulary.Vocabulary: token ids, words, a
    palette); cached per version of the weights."""
    from model.data.vocabulary import model_vocabulary
    return of_weights(model_vocabulary, path)


def card(path: Path):
    """The model's key facts (model.training.card.CardFacts), cached per version of the weights."""
    from model.training.card import card_facts
    return of_weights(card_facts, path)


def translation(path: Path, text: str, greedy: bool, beam: int):
    """Cached per (model version, text, decoding): moving a slider does not decode again."""
    from model.inference.decode import translate
    return of_weights(translate, path, text, beam_size=beam, greedy=greedy)


def forward_pass(path: Path, ids: list[int]):
    """The attention (Intermediates) of one recorded forward pass of an encoder-only or decoder-only
    model, cached per (model version, ids)."""
    from model.lessons.probe import forward_attention
    return of_weights(forward_attention, path, list(ids), network=True)


def lm_positions(path: Path, ids: list[int], k: int = 5):
    """A decoder-only model's next-token candidates at every position of ids, cached per (model
    version, ids, k)."""
    from model.lessons.probe import lm_position_candidates
    return of_weights(lm_position_candidates, path, list(ids), k, network=True)


def fill_mask(path: Path, text: str, text_b: str = ""):
    """A BERT-style model's predictions at each [MASK] and its attention (model.hub.bert.FillMask), cached;
    with text_b, the pair [CLS] text [SEP] text_b [SEP] (segments 0 and 1)."""
    from model.hub.bert import fill_mask as fill
    return of_weights(fill, path, text, text_b=(text_b or "").strip() or None)


def next_token(path: Path, ids: list[int], temperature: float, top_k: int):
    """A decoder-only model's next-token probabilities and attention for ids (model.inference.decode.lm_next_token),
    cached per (model version, ids, temperature, top-k): every session typing the same text shares one pass."""
    from model.inference.decode import lm_next_token
    return of_weights(lm_next_token, path, list(ids), network=True, temperature=float(temperature), top_k=int(top_k))


# ----------------------------------------------------------------------------- what pages draw, shared

VIEWS_KEPT = 256  # built figures and tables kept for all sessions (the least recently used go first)


@st.cache_resource(show_spinner=False, max_entries=VIEWS_KEPT)
def _shared_view(name: str, language: str, key: tuple, _build):
    return _build()


def shared_view(name: str, key: tuple, build):
    """`build()` (a figure, table rows, text: anything the page only reads) once for the whole server per
    (name, key, current language), kept among the VIEWS_KEPT most recently used. The language is part of the
    key by construction (what a page shows has its words); `key` must hold everything else the result depends
    on (the model folder and weights version, the text, the options), since every session asking with an equal
    key gets this very object: callers never modify it. Numbers a model/ function computes, which hold no words,
    are cached once for every language instead (computed, of_weights). A key that is not a tuple of plain values
    (text, numbers, tuples of them: weights_key(path) for a model's) raises TypeError naming the view."""
    _check_key(name, key)
    return _shared_view(name, lang(), key, build)


def _check_key(name: str, key) -> None:
    """A view's key is a hashable tuple: a list, an array or a model in it (hashed by its contents on every rerun,
    or not at all) is a caller's mistake, said here with the view's name rather than deep in Streamlit's hasher."""
    if not isinstance(key, tuple):
        raise TypeError(f"shared view {name!r}: the key is a tuple, not {type(key).__name__}")
    try:
        hash(key)
    except TypeError:
        at = next(i for i, part in enumerate(key) if not _hashable(part))
        raise TypeError(f"shared view {name!r}: part {at} of the key is a {type(key[at]).__name__}; a key holds "
                        "text, numbers and tuples of them") from None


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def weights_key(path: Path | str) -> tuple[str, float]:
    """(folder, weights_stamp(folder)): how a shared_view key names a model whose outputs the view draws, so a
    training run that saves newer weights gets new views."""
    return str(path), weights_stamp(path)


def shared_figure(name: str, key: tuple, build):
    """shared_view for a plotly figure, made ready to draw before it is shared (app.charts.style.ready_figure:
    its dict made once, with the toolbar room; app.ui.plot then draws it as it is, and no session can change
    the shared object)."""
    from app.charts.style import ready_figure
    return shared_view(name, key, lambda: ready_figure(build()))


def table_data(rows: list[dict]):
    """Table rows as a pyarrow Table: st.dataframe sends a Table as it is, where a list of rows goes through
    pandas and back to Arrow on every draw. Rows Arrow cannot type (a column mixing
    text and numbers) stay rows."""
    import pyarrow as pa
    try:
        return pa.Table.from_pylist(rows) if rows else rows
    except (pa.ArrowException, TypeError, ValueError):
        return rows


def shared_table(name: str, key: tuple, build):
    """shared_view for table rows (`build()` returns a list of dicts), converted once for every session."""
    return shared_view(name, key, lambda: table_data(build()))
