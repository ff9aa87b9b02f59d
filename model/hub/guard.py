"""What a checkpoint is allowed to make this process allocate, checked before anything is allocated.

A model folder is input from anyone who can drop files into the model folder or type a Hub id, so every size
it states is checked before it is used:
- config.json is read with a size limit and a nesting limit, and every size the loader reads from it must be
  an ordinary whole number (not Infinity, NaN, 1e12 written as a float, a string or a negative);
- the weights file's header (shapes and dtypes only; safetensors' JSON header, or a memory-mapped
  weights-only read of a .bin) is checked for consistency, and the config's sizes must agree with the shapes
  actually stored ("config says hidden_size 1000000000 but the weights are 32 wide");
- the memory the model will take is estimated, first from the stored shapes (float32 copies of every tensor
  plus working room), then from the config once converted (parameters x 4 bytes plus the position tables
  that are computed rather than stored), against a budget: a share of the memory available now, and at most
  ATLAS_MODEL_MEMORY_GB (default 16);
- weights that are not floating point are refused by name; float16 / bfloat16 / float64 are converted to
  float32 with a note; NaN or infinite values are refused by name.
Every refusal is a HubError whose message is one sentence; the original exception, where there was one, is
kept as its `detail`. No torch import at module level (the overview lists folders without it)."""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

from model.errors import CheckpointError

CONFIG_LIMIT = 16 * 2**20  # bytes of config.json (a config with 20k labels is about 1 MiB)
TEXT_LIMIT = 64 * 2**20  # bytes of a tokenizer's file (the largest real tokenizer.json, Gemma's, is about 35 MiB)
SMALL_JSON_LIMIT = 2**20  # bytes of a settings file: tokenizer_config.json, preprocessor_config.json, ...
HEADER_LIMIT = 16 * 2**20  # bytes of a safetensors header (a real one is under 1 MiB: about 150 bytes a tensor)
MAX_TENSORS = 100_000  # entries of a weights file (a real one has a few thousand at most)
PICKLE_LIMIT = 16 * 2**20  # bytes of a .bin's data.pkl, the pickle that lists its tensors (about 200 bytes each)
PEEK = 64 * 2**10  # bytes read from the start of a file read only for its first lines (README.md, LICENSE)
QUOTE = 60  # characters of a quoted value in a refusal
MAX_SIZE = 2**31 - 1  # any one size: beyond it products of sizes leave what tensor code indexes safely
MAX_COMPUTED_POSITIONS = 2**16  # rows of a position table built from the config alone (stored ones are in the file)
BUDGET_SHARE = 0.75  # of the memory available now
HEADROOM = 256 * 2**20  # activations and the interpreter's own working room, beyond the weights
DEFAULT_CAP_GB = 16.0

DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "I32": 4, "I16": 2,
               "I8": 1, "U8": 1, "U16": 2, "U32": 4, "U64": 8, "BOOL": 1}
FLOATS = {"F64", "F32", "F16", "BF16"}
TORCH_NAMES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64", "I32": "int32",
               "I16": "int16", "I8": "int8", "U8": "uint8", "U16": "uint16", "U32": "uint32", "U64": "uint64",
               "BOOL": "bool", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}
# stored buffers the converters drop: position ids, GPT-2's causal-mask constants
BUFFERS = ("position_ids", "token_type_ids", ".attn.bias", ".attn.masked_bias")


def _hub_error(message: str, detail: str | None = None) -> CheckpointError:
    from model.hub import HubError
    return HubError(message, detail)


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:200]}" if text else type(e).__name__


def quote(value, most: int = QUOTE) -> str:
    """A value as a refusal quotes it: repr, cut to `most` characters (a value can be megabytes long)."""
    text = repr(value) if not isinstance(value, (list, tuple, dict)) or len(value) < 1000 else \
        f"{type(value).__name__} of {len(value):,} entries"
    return text if len(text) <= most else text[:most - 1] + "…"


def peek(path: Path, limit: int = PEEK) -> str:
    """The first `limit` bytes of a file as text (a file read only for its first lines is never read whole)."""
    with open(path, "rb") as f:
        return f.read(limit).decode("utf-8", errors="replace")


def lines(path: Path, most: int, what: str) -> list[str]:
    """A text file's lines (split at \\n, a last empty one dropped), refused when it has more than `most`: counted
    in the bytes before any line is made (a file of millions of lines never becomes millions of strings)."""
    try:
        with open(path, "rb") as f:
            data = f.read(TEXT_LIMIT + 1)
    except OSError as e:
        raise _hub_error(f"{path.name}: cannot be read ({e.strerror or e})") from None
    if len(data) > TEXT_LIMIT:
        raise _hub_error(f"{path.name}: more than the {TEXT_LIMIT:,} bytes a tokenizer's file may have")
    n = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if n > most:
        raise _hub_error(f"{path.name}: {n:,} lines, more than the {most:,} {what}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _hub_error(f"{path.name}: not UTF-8 text ({e.reason} at byte {e.start:,})") from None
    out = text.split("\n")
    if out and out[-1] == "":
        out.pop()
    return out


def check_vocabulary(largest: int, rows: int, where: str) -> None:
    """The tokenizer's largest id (`largest`) must have a row in the token embedding (`rows` rows): every id it
    can give, the model can read."""
    if largest >= rows:
        raise _hub_error(f"{where}: the tokenizer gives ids up to {largest:,}, but the model's token embedding has "
                         f"{rows:,} rows (ids 0 to {rows - 1:,}); the tokenizer and the weights do not belong "
                         f"together")


# -----------------------------------------------------------------------------
# config.json

def _constant(name: str) -> float:
    return float(name.lower().replace("infinity", "inf"))  # Infinity, -Infinity, NaN: judged where they are used


def parse_json(data: bytes | str, where: str):
    """JSON, or HubError naming `where` (malformed, not UTF-8, nested deeper than a parser can follow)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return json.loads(text, parse_constant=_constant)
    except RecursionError:
        raise _hub_error(f"{where}: nested too deeply to be read as JSON") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise _hub_error(f"{where}: not readable JSON ({str(e).splitlines()[0][:120]})") from None


def read_json(path: Path, limit: int = CONFIG_LIMIT, name: str | None = None):
    """A JSON file of at most `limit` bytes, or HubError naming the file (as `name` when given: a refusal about a
    tokenizer's file names it alone, not the folders above it)."""
    path = Path(path)
    where = name or str(path)
    try:
        if not path.is_file():
            raise _hub_error(f"{where}: not a file")
        with open(path, "rb") as f:  # at most limit + 1 bytes, whatever the file system says its size is
            data = f.read(limit + 1)
        if len(data) > limit:
            raise _hub_error(f"{where}: more than the {limit:,} bytes this file may have")
    except OSError as e:
        raise _hub_error(f"{where}: cannot be read ({e.strerror or e})") from None
    return parse_json(data, where)


def check_folder(folder: Path, reads: tuple[str, ...] = ()) -> None:
    """Every entry of a model folder is a folder or a regular file (a link to /dev/zero or a pipe would be read
    forever), and no file the loader reads whole (`reads`: the tokenizers' files) is over TEXT_LIMIT bytes. Other
    files (a README, a LICENSE, notes) are never read whole, whatever their size."""
    for entry in sorted(Path(folder).iterdir()):
        try:
            if entry.is_dir():
                continue
            if not entry.is_file():
                raise _hub_error(f"{entry.name}: not a regular file (a link to a device or a pipe cannot be a "
                                 f"model file)")
            if entry.name in reads and entry.stat().st_size > TEXT_LIMIT:
                raise _hub_error(f"{entry.name}: {entry.stat().st_size:,} bytes, more than the {TEXT_LIMIT:,} a "
                                 f"tokenizer's file may have")
        except OSError as e:
            raise _hub_error(f"{entry.name}: cannot be read ({e.strerror or e})") from None


def whole(hf: dict, key: str, least: int = 0):
    """config.json's `key` as an int (None when absent), or HubError: Infinity, NaN, 1e12 written as a float,
    a string, a bool or a negative number is not a size."""
    value = hf.get(key)
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            raise _hub_error(f"config.json: {key} is {value:g}, written as a decimal number where a whole number "
                             f"belongs")
        raise _hub_error(f"config.json: {key} is {quote(value)}, not a whole number")
    if not least <= value <= MAX_SIZE:
        raise _hub_error(f"config.json: {key} is {value}, outside {least} to {MAX_SIZE}")
    return value


def check_sizes(declared: dict, hf: dict) -> None:
    """Every size the family reads from config.json (its declared SIZE_KEYS: key -> least allowed value) is a whole
    number in range (HubError naming it)."""
    for key, least in declared.get("SIZE_KEYS", {}).items():
        whole(hf, key, least)
    for key in ("pad_token_id", "eos_token_id", "bos_token_id", "decoder_start_token_id"):
        value = hf.get(key)
        if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)
                                        and not -1 <= value <= MAX_SIZE):
            raise _hub_error(f"config.json: {key} is {quote(value)}, not a token id")


def transformer_config(names: dict[str, str], **options):
    """TransformerConfig(**options), with what it would refuse refused first in the checkpoint's own words:
    `names` maps our field names to the config.json keys they come from (a learner's config says n_embd and
    layer_norm_epsilon, never d_model or norm_eps)."""
    from model.nn.config import TransformerConfig

    def say(field: str) -> str:
        return names.get(field, field)

    def number(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    eps = options.get("norm_eps")
    if eps is not None and not (number(eps) and 0 < eps < 1):
        raise _hub_error(f"config.json: {say('norm_eps')} is {quote(eps)}; a LayerNorm's epsilon must be a number "
                         f"between 0 and 1")
    drop = options.get("dropout")
    if drop is not None and not (number(drop) and 0 <= drop < 1):
        raise _hub_error(f"config.json: {say('dropout')} is {quote(drop)}; a dropout probability must be at least 0 "
                         f"and below 1")
    d, h = options.get("d_model"), options.get("n_heads")
    if isinstance(d, int) and isinstance(h, int) and h > 0 and d % h:
        raise _hub_error(f"config.json: {say('d_model')} {d} is not divisible by {say('n_heads')} {h} (every "
                         f"attention head takes an equal share of the width)")
    try:
        return TransformerConfig(**options)
    except (TypeError, ValueError) as e:
        text = str(e).splitlines()[0][:160] if str(e).strip() else type(e).__name__
        for ours in sorted(names, key=len, reverse=True):
            text = re.sub(rf"\b{ours}\b", names[ours], text)
        raise _hub_error(f"config.json: these settings make no model this loader can build ({text})") from None


# -----------------------------------------------------------------------------
# the config against the weights file's header (read by model/hub/stored.py)

def _find(shapes: dict, pattern: str):
    rx = re.compile(rf"(?:^|\.){pattern}$")
    return next(((name, shape) for name, (_, shape) in shapes.items() if rx.search(name)), (None, None))


def check_agreement(declared: dict, hf: dict, shapes: dict) -> None:
    """The config's sizes against the shapes stored, as the family declares them (AGREE: config key -> (stored
    tensor, axis); LAYERS: config key -> the layer index in stored names): a disagreement is refused by name,
    before the config is used to build anything."""
    for key, (pattern, axis) in declared.get("AGREE", {}).items():
        value = hf.get(key)
        name, shape = _find(shapes, pattern)
        if value is None or name is None or len(shape) <= axis:
            continue
        if value != shape[axis]:
            have = f"are {shape[axis]} wide" if axis == len(shape) - 1 else f"have {shape[axis]}"
            raise _hub_error(f"config.json says {key} {value} but the weights {have} ({name} has shape "
                             f"{tuple(shape)})")
    for key, pattern in declared.get("LAYERS", {}).items():
        value = hf.get(key)
        rx = re.compile(rf"(?:^|\.){pattern}")
        found = {int(m.group(1)) for name in shapes if (m := rx.search(name))}
        if value is not None and found and value != len(found):
            raise _hub_error(f"config.json says {key} {value} but the weights hold {len(found)} layers")


def check_dtypes(shapes: dict, where: str) -> None:
    """Weights stored in a type that is not read are refused by name (integer buffers the converters drop are not
    weights): integers and booleans are not weights at all; float8 is floating point, but a scaled format this
    loader does not convert."""
    for name, (dtype, _) in shapes.items():
        if dtype not in FLOATS and not name.endswith(BUFFERS):
            kind = TORCH_NAMES.get(dtype, dtype)
            if str(dtype).upper().startswith("F8") or "float8" in str(dtype):
                raise _hub_error(f"{where}: the weight {quote(name)} is stored as {kind} (8-bit floating point), "
                                 f"which is not supported: this loader reads float32, float16, bfloat16 and "
                                 f"float64")
            raise _hub_error(f"{where}: the weight {quote(name)} is stored as {kind}, not as floating-point "
                             f"numbers")


# -----------------------------------------------------------------------------
# memory

def available_memory() -> int | None:
    """Bytes of memory available now (Linux /proc/meminfo), or None when unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def cap() -> int:
    """ATLAS_MODEL_MEMORY_GB (default 16) in bytes: no model may take more, whatever is free."""
    try:
        gb = float(os.environ.get("ATLAS_MODEL_MEMORY_GB", DEFAULT_CAP_GB))
    except ValueError:
        gb = DEFAULT_CAP_GB
    return int(max(gb, 0.0) * 2**30) if math.isfinite(gb) else int(DEFAULT_CAP_GB * 2**30)


def budget(available: int | None = None) -> tuple[int, int | None]:
    """(bytes a model may take, bytes available now or None)."""
    available = available_memory() if available is None else available
    limit = cap()
    if available is not None:
        limit = min(limit, int(available * BUDGET_SHARE))
    return limit, available


def check_budget(need: int, where: str, available: int | None = None, why: str = "") -> None:
    limit, avail = budget(available)
    if need <= limit:
        return
    have = (f"this machine has {avail / 2**30:.1f} GiB available (a model may use {limit / 2**30:.1f} GiB of it)"
            if avail is not None and limit < cap() else f"a model may use at most {limit / 2**30:.1f} GiB here "
                                                         f"(ATLAS_MODEL_MEMORY_GB)")
    raise _hub_error(f"{where}: this model needs about {need / 2**30:.1f} GiB of memory to load{why}, and {have}")


def stored_need(shapes: dict) -> int:
    """Bytes to read and hold the stored tensors: as stored, plus float32 copies, plus working room."""
    total = 0
    for dtype, shape in shapes.values():
        n = math.prod(shape)
        total += n * DTYPE_BYTES.get(dtype, 8) + n * 4
    return total + HEADROOM


def config_need(config) -> tuple[int, int]:
    """(bytes, rows of computed position tables) our Transformer of `config` takes: parameters x 4 bytes, the
    sinusoid tables built from the config alone (float64 while computed, then float32), and working room."""
    from model.nn.config import parameter_formula
    need = parameter_formula(config) * 4 + HEADROOM
    rows = 0
    if config.positional == "sinusoidal":
        tables = int(config.has_encoder) + int(config.has_decoder)
        rows = config.max_len
        need += tables * rows * config.d_model * 4 + rows * config.d_model * 16  # kept, plus the one being computed
    return need, rows


def check_config_need(config, where: str, available: int | None = None) -> None:
    need, rows = config_need(config)
    if rows > MAX_COMPUTED_POSITIONS:
        raise _hub_error(f"config.json: max_position_embeddings {rows:,} asks for a table of that many sinusoids, "
                         f"computed from the config alone (the weights store none); at most "
                         f"{MAX_COMPUTED_POSITIONS:,} positions are built")
    check_budget(need, where, available, " (from its config)")


# -----------------------------------------------------------------------------
# values

def check_values(weights: dict, where: str, copy: bool = False) -> tuple[dict, dict[str, int]]:
    """float32 weights, and what was converted: {stored dtype: how many tensors}; HubError for a tensor holding
    NaN or infinity.
    copy=True copies float32 tensors too (a memory-mapped file's tensors become the process's own)."""
    import torch
    out, converted = {}, {}
    for name, t in weights.items():
        if name.endswith(BUFFERS) or not t.is_floating_point():
            out[name] = t
            continue
        if t.dtype != torch.float32:
            converted.setdefault(str(t.dtype).removeprefix("torch."), []).append(name)
            t = t.float()
        elif copy:
            t = t.clone()
        # one pass without a mask the tensor's size: the smallest and largest value are NaN if any is, and
        # infinite if any is; the values are counted only when a weight fails
        bad = 0
        if t.numel() and not all(map(math.isfinite, (float(x) for x in torch.aminmax(t)))):
            bad = int((~torch.isfinite(t)).sum())
        if bad:
            nan = int(torch.isnan(t).sum())
            kind = "NaN" if nan == bad else ("infinite" if nan == 0 else "NaN or infinite")
            raise _hub_error(f"{where}: {bad:,} of the {t.numel():,} values of the weight {name} are not finite "
                             f"({kind}); a model with such weights computes nothing meaningful")
        out[name] = t
    return out, {dtype: len(names) for dtype, names in converted.items()}
