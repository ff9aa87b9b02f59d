"""Which device to compute on: CUDA, then Apple MPS, then the CPU."""
from __future__ import annotations

import os
import platform

import torch


def available(device: torch.device) -> bool:
    if device.type == "cuda":
        return torch.cuda.is_available() and (device.index or 0) < torch.cuda.device_count()
    if device.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        return mps is not None and mps.is_available()
    return device.type == "cpu"


def best_device() -> torch.device:
    """ATLAS_DEVICE (cpu, cuda, cuda:1, mps) when set and present; else CUDA, then MPS, then CPU."""
    wanted = os.environ.get("ATLAS_DEVICE", "").strip().lower()
    if wanted:
        try:
            device = torch.device(wanted)
        except RuntimeError:
            device = None  # not a device name: fall through to the automatic choice
        if device is not None and (device.type == "cpu" or available(device)):
            return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if available(torch.device("mps")):
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
