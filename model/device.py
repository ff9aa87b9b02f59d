"""Which device to compute on: CUDA, then Apple MPS, then the CPU."""
from __future__ import annotations

import os
import platform

import torch


def best_device() -> torch.device:
    if os.environ.get("ATLAS_DEVICE"):
        return torch.device(os.environ["ATLAS_DEVICE"])
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def describe_device(device: torch.device | None = None) -> str:
    """A short human-readable description, e.g. 'CPU · 2 threads (x86_64)'."""
    device = device or best_device()
    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(idx)
        return f"CUDA · {props.name} ({props.total_memory / 2**30:.0f} GiB)"
    if device.type == "mps":
        return f"Apple MPS · {platform.machine()}"
    return f"CPU · {torch.get_num_threads()} threads ({platform.machine()})"
