"""Which module runs which checkpoint: each family module declares itself, and this reads the declarations.

A family is one module, model/hub/<name>.py, listed once in `model.hub.FAMILIES`. Besides its functions
(`convert`, `tokenizer`, `meta`, optionally `build`) it declares, as plain literals at module level:

    MODEL_TYPES = ("gpt2",)          # config.json "model_type" values it runs (one module may run several)
    TITLE = "GPT-2"                  # its name in sentences ("supported: ...")
    IMAGE = False                    # True: it reads pictures (the family page opens it, the inspector does not)
    SIZES = ("n_layer", "n_embd", "n_inner", "n_head")   # config keys of (layers, width, feed-forward, heads)
    SIZE_KEYS = {"n_embd": 1, ...}   # every size convert reads: a whole number, at least this (model/hub/guard.py)
    AGREE = {"n_embd": (r"wte\\.weight", 1), ...}   # config key -> (stored tensor, axis) it must equal
    LAYERS = {"n_layer": r"h\\.(\\d+)\\."}          # config key -> the layer index in stored names
    READS = ("vocab.json", "merges.txt", "tokenizer.json")   # the tokenizer's files, read whole (size-checked)
    UNCOUNTED = {r"pattern": None}   # stored tensors that are no parameter of ours (size_summary); a value names a
                                     # config key: left out only when it is true
    POSITION_OFFSET = "pad_token_id" # (RoBERTa) the position table's first pad_token_id + 1 rows are never read

The declarations are read from the module's source (`ast.literal_eval`), not by importing it: the family
modules import torch, and listing folders and their sizes (the overview's first page) must not. A test holds each
declaration to the imported module's own values. Defaults: SIZES the common Hugging Face names, IMAGE False,
TITLE the model types, empty rules."""
from __future__ import annotations

import ast
import importlib
import importlib.util
from functools import lru_cache

DECLARED = ("MODEL_TYPES", "TITLE", "IMAGE", "SIZES", "SIZE_KEYS", "AGREE", "LAYERS", "READS", "UNCOUNTED",
            "POSITION_OFFSET")
DEFAULTS = {"IMAGE": False, "SIZES": ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads"),
            "SIZE_KEYS": {}, "AGREE": {}, "LAYERS": {}, "READS": (), "UNCOUNTED": {}, "POSITION_OFFSET": None}


def _registry() -> tuple[str, ...]:
    from model.hub import FAMILIES
    return FAMILIES


@lru_cache(maxsize=None)
def _source_declaration(name: str, origin: str) -> dict:
    with open(origin, encoding="utf-8") as f:
        tree = ast.parse(f.read(), origin)
    found = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        for target in targets:
            if isinstance(target, ast.Name) and target.id in DECLARED and node.value is not None:
                try:
                    found[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    raise TypeError(f"model/hub/{name}.py: {target.id} must be written as a literal (it is read "
                                    f"without importing the module)") from None
    if "MODEL_TYPES" not in found:
        raise TypeError(f"model/hub/{name}.py declares no MODEL_TYPES")
    return {**DEFAULTS, "TITLE": "/".join(found["MODEL_TYPES"]), **found, "name": name}


def declaration(name: str) -> dict:
    """A family module's declaration (the names above, with their defaults, and "name"), read from its source."""
    spec = importlib.util.find_spec(f"model.hub.{name}")
    if spec is None or not spec.origin:
        raise ModuleNotFoundError(f"no family module model/hub/{name}.py")
    return _source_declaration(name, spec.origin)


def declarations() -> list[dict]:
    return [declaration(name) for name in _registry()]


def family_of(model_type: str) -> str | None:
    """The name of the family module whose MODEL_TYPES has `model_type`, or None."""
    return next((d["name"] for d in declarations() if model_type in d["MODEL_TYPES"]), None)


def module(name: str):
    return importlib.import_module(f"model.hub.{name}")


def titles() -> str:
    return ", ".join(d["TITLE"] for d in declarations())


def reads() -> tuple[str, ...]:
    """Every file some family's tokenizer reads whole."""
    return tuple(dict.fromkeys(f for d in declarations() for f in d["READS"]))
