"""model/training/allocator.py: a training process keeps freed memory for its next step (glibc only).

Checked where glibc itself keeps the fact: a block malloc got from mmap carries the IS_MMAPPED bit (2) in its
chunk's size word, just before the address malloc returns, and the heap's end (sbrk(0)) moves back when free()
trims the heap. A 16 MB block is what a training step makes and frees many times over."""
from __future__ import annotations

import ctypes.util
import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

glibc = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc"
                           or not ctypes.util.find_library("c"), reason="glibc's malloc only")

CODE = """
import ctypes, json, sys
sys.path.insert(0, {root!r})
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.sbrk.restype = ctypes.c_void_p
libc.sbrk.argtypes = [ctypes.c_ssize_t]
kept = False
if {keep}:
    from model.training.allocator import keep_freed_memory
    kept = keep_freed_memory()
n = 16 * 1024 * 1024
p = libc.malloc(n)
mmapped = bool(ctypes.c_size_t.from_address(p - ctypes.sizeof(ctypes.c_size_t)).value & 2)
end = libc.sbrk(0)
libc.free(p)
print(json.dumps({{"kept": kept, "mmapped": mmapped, "heap_shrank": libc.sbrk(0) != end}}))
"""


def _run(keep: bool) -> dict:
    done = subprocess.run([sys.executable, "-c", CODE.format(root=str(ROOT), keep=keep)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.split("\n")[-2])


@glibc
def test_a_step_sized_block_stays_in_the_heap_when_freed():
    default, kept = _run(keep=False), _run(keep=True)
    assert default["mmapped"]  # by default: straight from the kernel, and back to it on free
    assert kept["kept"] and not kept["mmapped"] and not kept["heap_shrank"]  # kept: in the heap, and left there


@glibc
def test_the_trainer_keeps_freed_memory(monkeypatch):
    import argparse

    import model.training.train as train
    calls = []
    monkeypatch.setattr(train, "keep_freed_memory", lambda: calls.append(1) or True)
    train._devices(argparse.Namespace(device="cpu", threads=0))
    assert calls == [1]


def test_the_trainer_process_asks_torch_for_huge_pages(tmp_path, monkeypatch):
    """torch reads THP_MEM_ALLOC_ENABLE once, at its first allocation: only the environment of the trainer's
    process can carry it (model.training.allocator.HUGE_PAGES). A value the user set wins."""
    from app.jobs import JobManager
    from model.training.allocator import HUGE_PAGES
    monkeypatch.delenv("THP_MEM_ALLOC_ENABLE", raising=False)
    env = JobManager(tmp_path / "runs", python="/bin/false").trainer_env()
    assert HUGE_PAGES == {"THP_MEM_ALLOC_ENABLE": "1"} and env["THP_MEM_ALLOC_ENABLE"] == "1"
    monkeypatch.setenv("THP_MEM_ALLOC_ENABLE", "0")
    assert JobManager(tmp_path / "runs2", python="/bin/false").trainer_env()["THP_MEM_ALLOC_ENABLE"] == "0"
