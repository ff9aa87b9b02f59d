"""Real pretrained Transformers, run by our own model code.

A folder in the Hugging Face layout (config.json + model.safetensors or pytorch_model.bin + the
tokenizer's files) becomes a `LoadedModel` whose `model` is our `Transformer`: the family module maps
the checkpoint's config to a `TransformerConfig` (every difference from the paper is a named option)
and renames its weights to ours. Nothing here touches the network; see `model.hub.fetch` for downloads.

A family is one module, listed once in FAMILIES, that declares everything about it (model/hub/families.py reads the
declarations: model types, title, config size keys, the guard's shape rules, the tokenizer's files, what the size
table leaves out) and provides:

    def convert(hf_config: dict, weights: dict[str, Tensor]) -> (TransformerConfig, state[, found])
        # found: what convert learnt from the weights (a BERT's head: {"task": ..., "labels": ...}); convert never
        # writes into hf_config
    def tokenizer(folder: Path, hf_config: dict)      # our tokenizer interface (see model/data/tokenizer.py)
    def meta(hf_config: dict[, found: dict]) -> dict  # task ("translation"/"lm"/"mlm"/"features": no head), facts

Weights load safely: safetensors, or a PyTorch .bin with torch.load(weights_only=True) (a pickle that
would run code is refused). A model too large for this machine is refused with an estimate first.
An image family (vit.py) also provides build(config, state, path), its own model in place of the Transformer;
its "tokenizer" is the image processor."""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from model.errors import CheckpointError

if TYPE_CHECKING:  # torch loads when weights do: listing folders and sizes (the overview) runs without it
    import torch

    from model.training.checkpoint import LoadedModel
    from model.nn.transformer import Transformer

# the family modules, model/hub/<name>.py, each declaring its model types and everything else (model/hub/families.py)
FAMILIES = ("marian", "gpt2", "bert", "distilbert", "roberta", "vit", "xlm_roberta", "llama")
SAFETENSORS, PICKLE_BIN = "model.safetensors", "pytorch_model.bin"
LICENCE_FILES = ("LICENSE", "LICENSE.txt", "LICENSE.md", "README.md")
# the files every loader reads whole besides the weights and the families' own (their READS): their size is checked
# first; any other file is never read whole (a README or LICENSE only for its first lines)
READ_FILES = ("config.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
              "generation_config.json", "modules.json")


class HubError(CheckpointError):
    """A pretrained model folder that cannot be used; the message, one sentence, says what is wrong and names the
    file; `detail` keeps the original exception's type and text where there was one (the CLI's --verbose)."""

    def __init__(self, message: str, detail: str | None = None):
        super().__init__(message)
        self.detail = detail


def known_family(model_type: str) -> str:
    """The name of the family module whose declared MODEL_TYPES has config.json's model_type, else HubError
    (read from the modules' declarations, without importing them: they load torch)."""
    from model.hub import families
    name = families.family_of(model_type) if isinstance(model_type, str) else None
    if name is None:
        raise HubError(f"unsupported architecture {_guard().quote(model_type, 40)} (supported: {families.titles()})")
    return name


def family_module(model_type: str):
    """The module that handles a config.json model_type (its MODEL_TYPES lists the values it takes)."""
    return importlib.import_module(f"{__name__}.{known_family(model_type)}")


def declaration(model_type: str) -> dict:
    """What the family module of a config.json model_type declares (model/hub/families.py)."""
    from model.hub import families
    return families.declaration(known_family(model_type))


def read_hf_config(folder: Path) -> dict:
    path = Path(folder) / "config.json"
    if not path.is_file():
        raise HubError(f"{path}: file not found (a Hugging Face model folder has config.json)")
    from model.hub.guard import read_json
    d = read_json(path)  # size and nesting limited: HubError naming the file
    if not isinstance(d, dict) or not isinstance(d.get("model_type"), str):
        raise HubError(f"{path}: no model_type (is this a Hugging Face config?)")
    return d


def is_hf_folder(folder: Path) -> bool:
    """A folder that looks like a Hugging Face model (config.json with a model_type and weights), in it or in
    the subfolder a sentence-transformers modules.json names (model/hub/layout.py)."""
    from model.hub.layout import model_folder
    folder = model_folder(folder)
    if not ((folder / SAFETENSORS).is_file() or (folder / PICKLE_BIN).is_file()):
        return False
    try:
        return isinstance(_guard().read_json(folder / "config.json").get("model_type"), str)
    except Exception:
        return False


def weights_file(folder: Path) -> Path:
    for name in (SAFETENSORS, PICKLE_BIN):
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    raise HubError(f"{folder}: no {SAFETENSORS} or {PICKLE_BIN}")


def memory_needed(path: Path) -> int:
    """Bytes to read a weights file and hold its tensors as float32, from its header (model/hub/guard.py)."""
    return _guard().stored_need(stored_shapes(path)[0])


def check_memory(path: Path, available: int | None = None) -> None:
    _guard().check_budget(memory_needed(path), path.name, available)


def _guard():
    from model.hub import guard
    return guard


def stored_shapes(path: Path) -> tuple[dict, dict | None]:
    """({name: (dtype, shape)}, None) from a safetensors header, no tensor data read; for a .bin, the shapes of
    a memory-mapped weights-only read and that state (its data is paged in only when used). HubError when the
    file is damaged or would run code."""
    if path.suffix == ".safetensors":
        from model.hub.stored import header
        return header(path), None
    import torch

    from model.hub.stored import bin_header, check_bin_records
    check_bin_records(path)  # every record holds what its tensors need, before torch maps any of it
    try:
        try:
            state = torch.load(str(path), map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as e:  # a file from before torch 1.6 cannot be mapped: read whole, if it fits
            if "zipfile" not in str(e):
                raise
            _guard().check_budget(3 * path.stat().st_size, path.name)
            state = torch.load(str(path), map_location="cpu", weights_only=True)
    except HubError:
        raise
    except Exception as e:  # corrupt file, or a pickle that asks for code (weights_only refuses it)
        raise HubError(f"{path.name}: cannot be read safely ({_guard().first_line(e)})", repr(e)) from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise HubError(f"{path.name}: not a dictionary of tensors")
    return bin_header(state), state


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors, safely: safetensors, or torch.load(weights_only=True) for .bin."""
    import torch
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file
            return load_file(str(path), device="cpu")
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as e:  # corrupt file, or a pickle that asks for code (weights_only refuses it)
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        raise HubError(f"{path.name}: cannot be read safely ({first})") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise HubError(f"{path.name}: not a dictionary of tensors")
    return state


def licence(folder: Path, hf_config: dict) -> str | None:
    """The licence as the model's files state it: a LICENSE file's first line, or the README's
    `license:` front-matter line."""
    for name in LICENCE_FILES:
        p = Path(folder) / name
        if not p.is_file():
            continue
        try:
            text = _guard().peek(p)  # its first lines only: a licence file may be any size
        except OSError:
            continue
        if name == "README.md":
            for line in text.splitlines()[:40]:
                if line.lower().startswith("license:"):
                    return line.split(":", 1)[1].strip()
        elif text.strip():
            return text.strip().splitlines()[0][:200]
    return None


def pretrained_dtype(device) -> torch.dtype | None:
    """bfloat16 for imported models on a CUDA GPU when ATLAS_BF16=1 (half the memory, faster); else None
    (float32)."""
    import torch
    on = os.environ.get("ATLAS_BF16", "").strip().lower() in ("1", "true", "yes", "on")
    return torch.bfloat16 if on and getattr(device, "type", str(device)) == "cuda" else None


def load_pretrained(folder: str | os.PathLike, device: str | torch.device = "cpu",
                    available: int | None = None, dtype: torch.dtype | None = None) -> LoadedModel:
    """A Hugging Face model folder as our Transformer + tokenizer. Raises HubError, one sentence, on any problem
    (any other exception is wrapped into one; its text stays as the error's `detail`). Every size the config
    states is checked against the stored shapes and a memory budget before anything is allocated
    (model/hub/guard.py); `available` overrides the memory available now, in bytes.
    dtype=torch.bfloat16 halves the memory and speeds a GPU up; the numbers then differ from float32 in
    about the third significant digit (decoding and figures read them back as float32)."""
    import traceback
    try:
        return _load_pretrained(Path(folder), device, available, dtype)
    except HubError:
        raise
    except MemoryError:
        raise HubError(f"{Path(folder).name}: ran out of memory while loading this model",
                       traceback.format_exc()) from None
    except Exception as e:  # a converter's or tokenizer's own failure: one sentence, the rest as detail
        raise HubError(f"{Path(folder).name}: this checkpoint could not be loaded ({_guard().first_line(e)})",
                       traceback.format_exc()) from None


def _load_pretrained(folder: Path, device, available: int | None, dtype) -> LoadedModel:
    from model.hub.layout import model_folder, pooling
    from model.training.checkpoint import LoadedModel
    guard = _guard()
    if not folder.is_dir():
        raise HubError(f"{folder}: folder not found")
    outer, folder = folder, model_folder(folder)  # a sentence-transformers folder: its Transformer module
    from model.hub import families
    # every file a regular one, those read of a sane size, before any is read
    guard.check_folder(folder, READ_FILES + families.reads())
    hf = read_hf_config(folder)
    kind = known_family(hf["model_type"])
    declared = families.declaration(kind)
    guard.check_sizes(declared, hf)  # whole numbers, before any is used
    path = weights_file(folder)
    shapes, state = stored_shapes(path)  # the header only (safetensors), or a memory-mapped .bin
    guard.check_dtypes(shapes, path.name)
    guard.check_agreement(declared, hf, shapes)
    guard.check_budget(guard.stored_need(shapes), path.name, available)
    weights, converted = guard.check_values(read_weights(path) if state is None else state, path.name,
                                        copy=state is not None)
    family = families.module(kind)
    try:
        config, state, *found = family.convert(hf, weights)  # found: what the weights showed (a head, labels)
    except (KeyError, ValueError, TypeError, IndexError) as e:
        raise HubError(f"{folder.name}: config or weights not as expected for {hf['model_type']} "
                       f"({guard.first_line(e)})", repr(e)) from None
    if not hasattr(family, "build"):  # our Transformer: what the config makes it allocate, before it does
        guard.check_config_need(config, folder.name, available)
    model = getattr(family, "build", build_with)(config, state, path)  # an image family builds its own model
    model.to(device=device, dtype=dtype).eval()
    tok = family.tokenizer(folder, hf)
    if getattr(tok, "largest_id", None) is not None:  # every id the tokenizer gives has a row in the embedding
        guard.check_vocabulary(tok.largest_id, config.vocab_size, getattr(tok, "source", "the tokenizer"))
    meta: dict[str, Any] = {"source": "pretrained", "family": family.__name__.rsplit(".", 1)[-1],
                            "model_type": hf["model_type"], "hf_name": hf.get("_name_or_path") or folder.name,
                            "licence": licence(folder, hf), "folder": str(folder),
                            **(family.meta(hf, found[0]) if found else family.meta(hf))}
    if converted:  # what was converted on the way (float16 weights read as float32): {stored dtype: tensors}
        meta["converted"] = converted
    if pooling(outer):  # a sentence-embedding model: how its token vectors become one sentence vector
        meta["pooling"] = pooling(outer)
    if dtype is not None:
        meta["dtype"] = str(dtype).removeprefix("torch.")
    for name in ("source_lang", "target_lang"):  # what the tokenizer's files say, when the config did not
        if getattr(tok, name, None) and not meta.get(name):
            meta[name] = getattr(tok, name)
    if getattr(tok, "language_codes", None):
        meta["language_codes"] = list(tok.language_codes)
    return LoadedModel(model=model, tokenizer=tok, config=config, meta=meta, path=folder)


def build_with(config, state: dict[str, torch.Tensor], path: Path) -> Transformer:
    """Our Transformer holding `state`, built on the meta device so that no random initialisation is spent
    on weights about to be replaced (seconds for a 74M-parameter model); the sinusoid tables, which are
    computed rather than stored, are then made on the CPU."""
    import torch

    from model.nn.layers import positional_encoding
    from model.nn.transformer import Transformer
    with torch.device("meta"):
        model = Transformer(config)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    if missing or unexpected:
        raise HubError(f"{path.name}: weights do not match (missing {sorted(missing)[:5]}, "
                       f"unexpected {sorted(unexpected)[:5]})")
    for module in model.modules():
        pe = getattr(module, "pe", None)
        if isinstance(pe, torch.Tensor) and pe.is_meta:
            module.pe = positional_encoding(config.max_len, config.d_model, device="cpu", layout=config.pe_layout)
    left = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if left:
        raise HubError(f"{path.name}: weights do not match (missing {left[:5]})")
    return model


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def cached_models(cache: Path | None = None, images: bool = False) -> dict[str, Path]:
    """{"owner/name": snapshot folder} for every model in the local hub cache that we can run
    (newest snapshot; a family we support; weights present): text models, or with images=True image models."""
    cache = hub_cache_dir() if cache is None else Path(cache)
    found: dict[str, Path] = {}
    if not cache.is_dir():
        return found
    for repo in sorted(cache.glob("models--*")):
        snaps = sorted((repo / "snapshots").glob("*"), key=lambda p: p.stat().st_mtime, reverse=True)
        for snap in snaps:
            if is_hf_folder(snap) and supported(snap, images):
                found[repo.name[len("models--"):].replace("--", "/")] = snap
                break
    return found


def supported(folder: Path, images: bool = False) -> bool:
    """A text model we can run (the inspector's), or with images=True an image model (the family page's ViT)."""
    from model.hub.layout import model_folder
    try:
        return declaration(read_hf_config(model_folder(folder))["model_type"])["IMAGE"] == images
    except HubError:
        return False


def size_summary(folder: str | os.PathLike) -> dict:
    """A pretrained folder's sizes without loading its weights, for a table beside the paper's models:
    {"family", "layers", "d_model", "d_ff", "heads", "parameters"}. Parameters are counted from the tensor
    shapes in the weights file's header (safetensors) or a memory-mapped, weights-only read (.bin); a
    tied tensor is counted once (safetensors stores it once; a .bin shares its storage). HubError when
    unreadable."""
    import re

    from model.hub.layout import model_folder
    folder = model_folder(folder)
    hf = read_hf_config(folder)
    kind = hf["model_type"]
    declared = declaration(kind)  # unsupported families are refused here
    layers, d, ff, heads = (hf.get(k) for k in declared["SIZES"])
    if ff is None and isinstance(d, int):  # the feed-forward width most configs default to (GPT-2's n_inner: null)
        ff = 4 * d
    path = weights_file(folder)
    shapes: dict[str, tuple] = {}
    try:
        if path.suffix == ".safetensors":  # save_pretrained stores a tied tensor once
            from safetensors import safe_open
            with safe_open(str(path), framework="numpy") as f:  # reads the header only: no torch needed
                shapes = {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}
        else:  # torch.save keeps tied tensors as one storage: count each storage once
            import torch
            state = torch.load(str(path), map_location="cpu", weights_only=True, mmap=True)
            seen = set()
            for k, v in state.items():
                if isinstance(v, torch.Tensor):
                    where = (v.untyped_storage().data_ptr(), v.storage_offset(), tuple(v.shape))
                    if where not in seen:
                        seen.add(where)
                        shapes[k] = tuple(v.shape)
    except Exception as e:
        raise HubError(f"{path.name}: cannot be read safely ({str(e).strip()[:200] or type(e).__name__})") from None
    counted = 0
    skip = [re.compile(pattern) for pattern, when in declared["UNCOUNTED"].items() if _applies(when, hf, shapes)]
    offset = declared["POSITION_OFFSET"]
    for name, shape in shapes.items():
        if name.endswith(("position_ids", "rotary_emb.inv_freq")) or any(rx.search(name) for rx in skip):
            continue  # buffers, computed tables, heads no task here reads: the family's UNCOUNTED
        if offset and name.endswith("position_embeddings.weight") and len(shape) == 2:
            pad = hf.get(offset) if isinstance(hf.get(offset), int) else 1
            shape = (shape[0] - min(shape[0], max(pad, 0) + 1), shape[1])  # rows no sentence reads (roberta.py)
        n = 1
        for s in shape:
            n *= int(s)
        counted += n
    return {"family": kind, "layers": layers, "d_model": d, "d_ff": ff, "heads": heads, "parameters": counted}


def _applies(when, hf: dict, shapes: dict) -> bool:
    """Whether an UNCOUNTED rule applies: always (None), when a config key is true ("config:key"), or when no
    stored tensor starts with a prefix ("unless:prefix": a pooler is read by a classifier)."""
    if when is None:
        return True
    kind, _, what = str(when).partition(":")
    if kind == "config":
        return bool(hf.get(what))
    return not any(name.startswith(what) for name in shapes)
