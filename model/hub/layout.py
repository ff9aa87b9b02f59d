"""The sentence-transformers layout: a folder whose modules.json lists a Transformer module (a BertModel in
the folder itself, as all-MiniLM-L6-v2 has it, or in a subfolder such as 0_BERT/ or 0_Transformer/) and a
Pooling module (1_Pooling/config.json: how the token vectors become one sentence vector). `model_folder`
finds the Hugging Face model inside; `pooling` says how the sentence vector is made. No torch here."""
from __future__ import annotations

from pathlib import Path

from model.errors import CheckpointError
from model.hub.guard import read_json  # size-limited, regular files only (a link to /dev/zero is refused)

MODULES = "modules.json"
POOLING_MODES = ("cls", "mean", "max", "mean_sqrt_len", "weightedmean", "lasttoken")


def _modules(folder: Path) -> list[dict]:
    try:
        d = read_json(folder / MODULES)
    except CheckpointError:
        return []
    return [m for m in d if isinstance(m, dict)] if isinstance(d, list) else []


def _inside(folder: Path, sub) -> Path | None:
    """folder/sub when it is a folder inside `folder` (a path that climbs out or is absolute is refused)."""
    if not isinstance(sub, str):
        return None
    try:
        path = (folder / sub).resolve()
        return path if path.is_dir() and path.is_relative_to(folder.resolve()) else None
    except (OSError, ValueError):
        return None


def _has_model_config(folder: Path) -> bool:
    try:
        return isinstance(read_json(folder / "config.json").get("model_type"), str)
    except Exception:
        return False


def model_folder(folder) -> Path:
    """The folder holding the Hugging Face model: `folder` itself, or the subfolder its modules.json names as
    the Transformer module when `folder` has no model config of its own."""
    folder = Path(folder)
    if _has_model_config(folder):
        return folder
    for module in _modules(folder):
        if str(module.get("type", "")).rsplit(".", 1)[-1] in ("Transformer", "BERT"):
            sub = _inside(folder, module.get("path", ""))
            if sub is not None and _has_model_config(sub):
                return sub
    return folder


def pooling(folder) -> str | None:
    """How a sentence-transformers folder pools its token vectors into a sentence vector ("mean", "cls", …), or
    None for a folder that is not one."""
    folder = Path(folder)
    for module in _modules(folder):
        if str(module.get("type", "")).endswith(".Pooling"):
            sub = _inside(folder, module.get("path", ""))
            try:
                conf = read_json(sub / "config.json") if sub else {}
            except CheckpointError:
                conf = {}
            if isinstance(conf, dict):
                if isinstance(conf.get("pooling_mode"), str):
                    return conf["pooling_mode"]
                for mode in POOLING_MODES:
                    if conf.get(f"pooling_mode_{mode}_tokens") is True or conf.get(f"pooling_mode_{mode}_token") is True:
                        return mode
            return "mean"  # the Pooling module's default
    return None
