"""The C allocator of a training process: keep freed memory for the next step instead of giving it back.

A training step allocates and frees the same large tensors (activations of 2-8 MB, their gradients) every step.
glibc's malloc hands blocks above its mmap threshold straight to the kernel and back, and trims the heap's free
top: so each step's tensors land in fresh pages, and the first write to every 4 KB page is a page fault.
`keep_freed_memory()` raises the mmap threshold to glibc's maximum (32 MB), the trim threshold to 1 GB and the
heap's growth step to 64 MB, so a step mostly reuses the last step's pages; the process keeps about its largest
step's memory, which it needs again at the next step anyway. Measured (2026-12-03, docs/benchmarks.md): page
faults per step of a small model 5,500 -> 800 (median of runs), a *small* step 2-4% faster (5 alternating pairs
of processes).
Elsewhere than glibc (macOS, musl) it does nothing.

`HUGE_PAGES` is the other half, an environment variable for the trainer's process (app/jobs/ sets it when it
starts one; torch reads it once, at its first allocation, so it cannot be set from inside a running process):
torch then places each CPU tensor of 2 MB or more on a 2 MB boundary and asks the kernel for transparent huge
pages there. The activations a step keeps for its backward pass are written to memory that is not in any cache,
and with 4 KB pages each of them also walks the page tables; a 2,048 × 1,024 product into fresh memory ran at 365
GFLOP/s against 421 into a buffer in cache (2026-12-04). Measured on a *small* step, eleven alternating pairs of
processes: 10 of 11 faster, by up to 4% (median ~2%); peak memory +7 to +10%. Where the kernel has huge pages
off, torch's request is ignored."""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # <malloc.h>
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024  # glibc's ceiling on 64-bit systems (HEAP_MAX_SIZE / 2): larger is refused
TRIM_THRESHOLD = 1024 * 1024 * 1024
TOP_PAD = 64 * 1024 * 1024  # the heap grows 64 MB at a time (fewer brk calls, each of them faulting pages in)
HUGE_PAGES = {"THP_MEM_ALLOC_ENABLE": "1"}  # c10's switch: 2 MB-aligned allocations from 2 MB up, madvise(HUGEPAGE)


@functools.lru_cache(maxsize=1)
def keep_freed_memory() -> bool:
    """Set glibc's thresholds once per process; True where they were taken."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    if not hasattr(libc, "mallopt"):
        return False
    return all(bool(libc.mallopt(option, value)) for option, value in
               ((M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX), (M_TRIM_THRESHOLD, TRIM_THRESHOLD), (M_TOP_PAD, TOP_PAD)))


def request_huge_pages() -> None:
    """HUGE_PAGES into this process's own environment, for a script that trains in-process (the benches); it must
    run before torch is imported. A value already set wins."""
    for name, value in HUGE_PAGES.items():
        os.environ.setdefault(name, value)
