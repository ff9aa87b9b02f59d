"""The weights file's header: the names, shapes and dtypes of its tensors, read before any tensor data is, every
entry checked against the file (a truncated file, a header that lies about offsets, shapes or dtypes, a storage
record cut short: HubError naming the file). A safetensors file's JSON header is bounded in bytes and entries;
a .bin (torch.save's zip) has its storage records' sizes checked against its list of tensors, read by an inert
unpickler that imports and calls nothing, before torch maps any of it. No torch import at module level."""
from __future__ import annotations

import math
from pathlib import Path

from model.errors import CheckpointError
from model.hub.guard import (DTYPE_BYTES, HEADER_LIMIT, MAX_SIZE, MAX_TENSORS, PICKLE_LIMIT, TORCH_NAMES, _hub_error,
                             first_line, parse_json, quote)



def header(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """{name: (dtype, shape)} of a safetensors file, read from its header alone, every entry checked against
    the file's length (a truncated file or a header that lies about offsets, shapes or dtypes: HubError)."""
    def bad(reason: str):
        return _hub_error(f"{path.name}: cannot be read safely ({reason})")

    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise bad(f"{size} bytes, too short to be a safetensors file")
        n = int.from_bytes(head, "little")
        if n > size - 8:
            raise bad(f"its header says it is {n:,} bytes long, but the file has {size - 8:,} "
                      f"bytes after the length (truncated or not a safetensors file)")
        if n > HEADER_LIMIT:
            raise bad(f"its header is {n:,} bytes long, more than the {HEADER_LIMIT:,} a model file's list of "
                      f"tensors may take")
        raw = f.read(n)
    try:
        d = parse_json(raw, "its header")
    except CheckpointError as e:
        raise bad(str(e)) from None
    if not isinstance(d, dict):
        raise bad("its header is not a table of tensors")
    if len(d) > MAX_TENSORS:
        raise bad(f"its header lists {len(d):,} tensors, more than the {MAX_TENSORS:,} a model file may have")
    data, out, spans = size - 8 - n, {}, []
    for name, e in d.items():
        if name == "__metadata__":
            continue
        dtype, shape, offsets = (e.get(k) for k in ("dtype", "shape", "data_offsets")) if isinstance(e, dict) \
            else (None, None, None)
        if dtype not in DTYPE_BYTES:
            raise bad(f"tensor {quote(name)} has an unknown dtype {quote(dtype)}")
        if not (isinstance(shape, list) and all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SIZE
                                                for s in shape)):
            raise bad(f"tensor {quote(name)} has no valid shape ({quote(shape)})")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)
                and 0 <= offsets[0] <= offsets[1]):
            raise bad(f"tensor {quote(name)} has no valid data offsets ({quote(offsets)})")
        if offsets[1] > data:
            raise bad(f"tensor {name} ends at byte {offsets[1]:,} of the data, but the file "
                             f"holds {data:,} bytes of data (truncated?)")
        need = math.prod(shape) * DTYPE_BYTES[dtype]
        if need != offsets[1] - offsets[0]:
            raise bad(f"tensor {name} says shape {tuple(shape)} of {dtype} ({need:,} bytes) "
                             f"but holds {offsets[1] - offsets[0]:,} bytes")
        out[name] = (dtype, tuple(shape))
        spans.append((offsets[0], offsets[1], name))
    spans.sort()
    for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
        if start < end:
            raise bad(f"tensors {a} and {b} claim the same bytes")
    return out


_TORCH_DTYPES = {v: k for k, v in TORCH_NAMES.items()}


class _Inert:
    """What the listing pickle's every class and function becomes while its tensors are listed: nothing is
    imported and nothing of the file's is called (the pickle only says which storage records exist and how many
    numbers each holds)."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Inert()

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, value):
        pass

    def extend(self, values):
        pass


def _storages(data: bytes) -> list[tuple[str, str, int]]:
    """(record key, storage class name, numbers) of every storage a torch.save pickle refers to, read without
    importing or calling anything it names."""
    import io
    import pickle
    found = []

    class Lister(pickle.Unpickler):
        def find_class(self, module, name):
            return type(str(name)[:100], (_Inert,), {"qualname": f"{module}.{name}"[:200]})

        def persistent_load(self, pid):
            if isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage":
                found.append((str(pid[2]), getattr(pid[1], "__name__", "?"), pid[4]))
            return _Inert()

    Lister(io.BytesIO(data)).load()
    return found


def check_bin_records(path: Path) -> None:
    """A zip-format .bin (torch.save since 1.6): every storage record holds the bytes its tensors need, checked from
    the zip's directory and the pickle's list of storages before torch maps a byte of them (a record cut short
    would otherwise be read past its end, silently, from whatever follows it in the file). A file from before torch
    1.6 is not a zip: torch reads it whole and checks it itself."""
    import zipfile

    import torch

    def bad(reason: str):
        return _hub_error(f"{path.name}: cannot be read safely ({reason})")

    if not zipfile.is_zipfile(path):
        return
    try:
        with zipfile.ZipFile(path) as z:
            infos = {i.filename: i for i in z.infolist()}
            listing = [n for n in infos if n.endswith("/data.pkl") and n.count("/") == 1]
            if len(listing) != 1:
                raise bad("no list of tensors (data.pkl) in it")
            prefix = listing[0][: -len("data.pkl")]
            if infos[listing[0]].file_size > PICKLE_LIMIT:
                raise bad(f"its list of tensors is {infos[listing[0]].file_size:,} bytes, more than the "
                          f"{PICKLE_LIMIT:,} a model file's may take")
            data = z.read(listing[0])
    except (OSError, zipfile.BadZipFile, EOFError) as e:
        raise bad(first_line(e)) from None
    try:
        storages = _storages(data)
    except Exception as e:  # a malformed pickle: whatever the unpickler says, in one line
        raise bad(first_line(e)) from None
    for key, kind, numbers in storages:
        record = infos.get(f"{prefix}data/{key}")
        dtype = getattr(getattr(torch, kind, None), "dtype", None) if kind.endswith("Storage") else None
        if record is None or not isinstance(dtype, torch.dtype) or not isinstance(numbers, int) or numbers < 0:
            raise bad(f"its list of tensors names a storage record {quote(key, 20)} that it does not hold")
        need = numbers * dtype.itemsize
        if record.file_size < need:
            raise bad(f"storage record data/{quote(key, 20)} holds {record.file_size:,} bytes, but its tensors "
                      f"need {need:,}: the file is truncated or damaged")


def bin_header(state: dict) -> dict[str, tuple[str, tuple[int, ...]]]:
    """{name: (dtype, shape)} of a memory-mapped .bin's tensors (safetensors' dtype names for floats)."""
    return {k: (_TORCH_DTYPES.get(str(v.dtype).removeprefix("torch."), str(v.dtype).removeprefix("torch.")),
                tuple(v.shape)) for k, v in state.items()}
