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

from model.atomic import atomic_path, atomic_write_json
from model.errors import CheckpointError  # noqa: F401  (defined without torch, raised and caught as model.training.checkpoint's)
from model.nn.config import TransformerConfig
from model.nn.transformer import Transformer

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
META_FILE = "meta.json"
TRAIN_FORMAT = "attention-atlas-train/1"


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


def available_memory() -> int | None:
    """Bytes of memory available now (Linux /proc/meminfo), or None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def stored_values(path: str | os.PathLike) -> int | None:
    """How many numbers a safetensors file holds, read from its header only (None when the header
    cannot be read: load_model then says what is wrong with the file)."""
    try:
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            if not 0 < n <= 100_000_000:
                return None
            header = json.loads(f.read(n))
        total = 0
        for name, info in header.items():
            if name == "__metadata__":
                continue
            count = 1
            for dim in info["shape"]:
                count *= int(dim)
            total += count
        return total
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def check_model_size(config: TransformerConfig, weights: Path, where: Path) -> int:
    """Refuse, before anything is allocated, a config.json that asks for more parameters than the
    weights file holds (it could never load) or more memory than this machine has. The parameters
    are counted on the meta device (no memory). Returns the parameter count."""
    from model.nn.transformer import count_parameters
    try:
        params = count_parameters(config)
    except Exception as e:  # a config the model cannot be built from
        raise CheckpointError(f"{where}: invalid config ({_brief(e)})") from None
    stored = stored_values(weights)
    if stored is not None and params > stored:
        raise CheckpointError(f"{weights}: the weights do not match config.json (it describes a model of "
                              f"{params:,} parameters, the file holds only {stored:,} values; refused before "
                              f"loading: was config.json edited?)")
    need = params * 4 * 2  # float32 weights, plus the file's tensors read alongside
    free = available_memory()
    if free is not None and need > free:
        raise CheckpointError(f"{where}: this model ({params:,} parameters) needs about {need / 2**30:.1f} GiB "
                              f"of memory to load, but only {free / 2**30:.1f} GiB is available; refused")
    return params


def load_model_dir(directory: str | os.PathLike, device: str | torch.device = "cpu") -> LoadedModel:
    """Read a model directory written by save_model_dir. Raises CheckpointError on any problem.
    A config.json that cannot fit its weights, or this machine, is refused before allocating."""
    from safetensors.torch import load_model

    d = Path(directory)
    if not d.is_dir():
        raise CheckpointError(f"{d}: model directory not found")
    config = load_config(d)
    weights = d / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{weights}: file not found")
    check_model_size(config, weights, d / CONFIG_FILE)
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
    from model.data.tokenizer import TokenizerError, load_tokenizer  # lazy: the tokenizer is optional

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

# How torch's weights-only unpickler words a refused global: "Unsupported global: GLOBAL x.y was not an
# allowed global by default" (a class or function outside its allow-list) and, since 2.x, "Trying to load
# unsupported GLOBAL posix.system whose module posix is blocked" (a blocked module such as os).
_REFUSED = re.compile(r"unsupported global:?\s+GLOBAL\s+([\w.<>]+)", re.IGNORECASE)
# Globals an Attention Atlas checkpoint may hold: torch's tensor rebuilders and containers.
_PLAIN_MODULES = ("torch", "collections", "_codecs", "builtins")
_PLAIN_BUILTINS = {"builtins.set", "builtins.frozenset", "builtins.bytearray", "builtins.slice", "builtins.complex"}


def refused_global(error: BaseException, path: str | os.PathLike | None = None) -> str | None:
    """The class or function whose load torch refused (loading it could run code), or None when the
    file is merely damaged. Read from torch's message, and, should its wording change again, from the
    pickle's own opcodes (read, never executed)."""
    m = _REFUSED.search(str(error))
    if m:
        return m.group(1).rstrip(".")
    if path is None or not isinstance(error, pickle.UnpicklingError):
        return None
    for name in _pickle_globals(Path(path)):
        module = name.split(".", 1)[0]
        if module not in _PLAIN_MODULES or (module == "builtins" and name not in _PLAIN_BUILTINS):
            return name
    return None


def _pickle_globals(path: Path, limit: int = 64 * 2**20) -> list[str]:
    """The globals (module.name) a pickle names, in order: a torch zip's data.pkl or a raw pickle.
    pickletools only lists opcodes; nothing is imported or called."""
    import pickletools
    import zipfile
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                member = next((n for n in z.namelist() if n.endswith("data.pkl")), None)
                if member is None or z.getinfo(member).file_size > limit:
                    return []
                data = z.read(member)
        else:
            with open(path, "rb") as f:
                data = f.read(limit)
    except (OSError, zipfile.BadZipFile, ValueError):
        return []
    names, strings, memo, memoized = [], [], {}, 0
    top_is_string = False  # whether the last opcode pushed a string (what MEMOIZE / PUT then store)
    try:
        for op, arg, _ in pickletools.genops(data):
            pushed = False
            if op.name in ("GLOBAL", "INST"):
                names.append(str(arg).replace(" ", "."))
            elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8", "SHORT_BINSTRING",
                             "BINSTRING", "STRING"):
                strings.append(str(arg))
                pushed = True
            elif op.name == "MEMOIZE":
                if top_is_string:
                    memo[memoized] = strings[-1]
                memoized += 1
                pushed = top_is_string
            elif op.name in ("BINPUT", "LONG_BINPUT", "PUT"):
                if top_is_string:
                    memo[int(arg)] = strings[-1]
                pushed = top_is_string
            elif op.name in ("BINGET", "LONG_BINGET", "GET") and int(arg) in memo:
                strings.append(memo[int(arg)])
                pushed = True
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                names.append(f"{strings[-2]}.{strings[-1]}")
            top_is_string = pushed
    except Exception:  # a damaged pickle: whatever was read so far
        pass
    return names

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
    except Exception as e:  # UnpicklingError (a refused global), truncated zip, garbage bytes
        name = refused_global(e, path)
        if name:  # weights_only refused a class or function: loading it could run code
            raise CheckpointError(f"{path}: holds a {name} object, not only plain tensors, numbers and "
                                  f"strings; refused, since loading it could run code") from None
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


# -----------------------------------------------------------------------------
# checkpoint averaging (the paper, section 6.1: the base models average the last 5 checkpoints)

def save_weights(path: str | os.PathLike, model: torch.nn.Module) -> None:
    """The model's weights alone as a safetensors file (tied tensors stored once), atomically."""
    from safetensors.torch import save_model
    with atomic_path(path) as tmp:
        save_model(model, str(tmp), metadata={"format": "pt"})


def average_into(model: torch.nn.Module, paths: list) -> None:
    """Set `model`'s weights to the element-wise mean of the weights files `paths` (save_weights):
    floating-point tensors are summed in float64 and cast back; anything else (integer buffers) is
    taken from the last file. Tied weights are written once through their shared storage."""
    from safetensors.torch import load_file
    if not paths:
        raise ValueError("nothing to average")
    sums: dict[str, torch.Tensor] = {}
    last: dict[str, torch.Tensor] = {}
    for p in paths:
        try:
            tensors = load_file(str(p))
        except Exception as e:
            raise CheckpointError(f"{p}: damaged or not a safetensors file ({_brief(e)})") from None
        if sums and set(tensors) != set(last):
            raise CheckpointError(f"{p}: holds other tensors than {Path(paths[0]).name}")
        for name, t in tensors.items():
            if t.is_floating_point():
                sums[name] = sums[name] + t.double() if name in sums else t.double()
            last[name] = t
    own = model.state_dict()
    missing = [n for n in last if n not in own]
    if missing:
        raise CheckpointError(f"{paths[0]}: tensors {missing[:3]} are not in this model")
    with torch.no_grad():
        for name, t in last.items():
            value = (sums[name] / len(paths)).to(t.dtype) if name in sums else t
            own[name].copy_(value)
