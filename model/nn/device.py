"""Which device to compute on: CUDA, then Apple MPS, then the CPU.

torch is imported inside the functions that need it: `cpu_only_machine` and the description helpers let
a page describe a machine without a GPU before torch has loaded."""
from __future__ import annotations

import glob
import os
import platform
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def cpu_only_machine() -> bool:
    """True when no accelerator can be present, known without importing torch: ATLAS_DEVICE=cpu, or a
    Linux machine with no NVIDIA (/dev/nvidia*), AMD ROCm (/dev/kfd) or WSL GPU (/dev/dxg) device node.
    False means "ask torch" (a GPU may be there; macOS may have MPS; other systems cannot be told)."""
    if os.environ.get("ATLAS_DEVICE", "").strip().lower() == "cpu":
        return True
    if not sys.platform.startswith("linux"):
        return False
    return not (glob.glob("/dev/nvidia[0-9]*") or os.path.exists("/dev/kfd") or os.path.exists("/dev/dxg"))


def available(device: torch.device) -> bool:
    import torch
    if device.type == "cuda":
        return torch.cuda.is_available() and (device.index or 0) < torch.cuda.device_count()
    if device.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        return mps is not None and mps.is_available()
    return device.type == "cpu"


def best_device() -> torch.device:
    """ATLAS_DEVICE (cpu, cuda, cuda:1, mps) when set and present; else CUDA, then MPS, then CPU."""
    import torch
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


@dataclass(frozen=True)
class DeviceParts:
    """What describe_device says, as parts a page can translate."""
    kind: str  # "cuda", "mps" or "cpu"
    name: str = ""  # the GPU's name (cuda)
    memory_gib: float = 0.0  # the GPU's memory (cuda)
    threads: int = 0  # torch threads (cpu)
    machine: str = ""  # platform.machine() (mps, cpu)


def device_parts(device: torch.device | str | None = None) -> DeviceParts:
    """The parts of a device's description (a device or its name, default the best): kind, GPU name and memory,
    CPU threads, machine."""
    import torch
    device = torch.device(device) if isinstance(device, str) else device or best_device()
    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(idx)
        return DeviceParts("cuda", name=props.name, memory_gib=props.total_memory / 2**30)
    if device.type == "mps":
        return DeviceParts("mps", machine=platform.machine())
    return DeviceParts("cpu", threads=torch.get_num_threads(), machine=platform.machine())


def format_parts(parts: DeviceParts) -> str:
    """The English one-line form written into run files and model cards."""
    if parts.kind == "cuda":
        return f"CUDA · {parts.name} ({parts.memory_gib:.0f} GiB)"
    if parts.kind == "mps":
        return f"Apple MPS · {parts.machine}"
    return f"CPU · {parts.threads} thread{'' if parts.threads == 1 else 's'} ({parts.machine})"


_FORMS = (("cuda", re.compile(r"CUDA · (?P<name>.+) \((?P<memory_gib>[0-9.]+) GiB\)")),
          ("mps", re.compile(r"Apple MPS · (?P<machine>.*)")),
          ("cpu", re.compile(r"CPU · (?P<threads>[0-9]+) threads? \((?P<machine>.*)\)")))


def parse_description(text: str) -> DeviceParts | None:
    """The parts of a description format_parts wrote (e.g. a model card's training device), or None."""
    for kind, form in _FORMS:
        m = form.fullmatch((text or "").strip())
        if m:
            fields = m.groupdict()
            if "threads" in fields:
                fields["threads"] = int(fields["threads"])
            if "memory_gib" in fields:
                fields["memory_gib"] = float(fields["memory_gib"])
            return DeviceParts(kind, **fields)
    return None


def describe_device(device: torch.device | None = None) -> str:
    """A short English description, e.g. 'CPU · 2 threads (x86_64)' (pages translate device_parts)."""
    return format_parts(device_parts(device))
