"""model/allocator.py: a training process keeps freed memory for its next step (glibc only)."""
from __future__ import annotations

import ctypes.util
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

glibc = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc"
                           or not ctypes.util.find_library("c"), reason="glibc's malloc only")

# Training steps of a small model (d_model 128, 2 + 2 layers, 32 sentences of 64 tokens): the page faults of 5
# steps after 3 warm-up steps, that is of pages new to the process although the last step freed as many.
CODE = """
import resource, sys, torch
sys.path.insert(0, {root!r})
if {keep}:
    from model.allocator import keep_freed_memory
    assert keep_freed_memory()
from model import Transformer, TransformerConfig
torch.manual_seed(0)
torch.set_num_threads(1)
cfg = TransformerConfig(vocab_size=2000, d_model=128, n_heads=4, d_ff=512, n_encoder_layers=2, n_decoder_layers=2,
                        dropout=0.1, max_len=128)
m = Transformer(cfg)
opt = torch.optim.Adam(m.parameters())
src, tgt = torch.randint(4, 2000, (32, 64)), torch.randint(4, 2000, (32, 65))
def step():
    loss = m(src, tgt[:, :-1], labels=tgt[:, 1:]).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
for _ in range(3):
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(keep: bool) -> int:
    done = subprocess.run([sys.executable, "-c", CODE.format(root=str(ROOT), keep=keep)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


@glibc
def test_training_steps_reuse_the_last_steps_pages():
    """Measured: 5,500 page faults a step by default, 800 kept (bench/train_throughput.py: 2-4% a step on small)."""
    default, kept = _faults(keep=False), _faults(keep=True)
    assert kept * 3 < default, (kept, default)


@glibc
def test_the_trainer_keeps_freed_memory(monkeypatch):
    import argparse

    import model.train as train
    calls = []
    monkeypatch.setattr(train, "keep_freed_memory", lambda: calls.append(1) or True)
    train._devices(argparse.Namespace(device="cpu", threads=0))
    assert calls == [1]
