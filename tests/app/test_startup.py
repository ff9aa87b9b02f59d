"""The first page draws before torch has loaded: the entrypoint's and the overview's modules import
without torch, the machine's device is described without it when no accelerator can be present, and the
description is the one torch gives once it has loaded."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> list[str]:
    """The project modules a script imports at its top level (app.*, model.*)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("app", "model"):
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names if a.name.split(".")[0] in ("app", "model")]
    return names


def test_the_entrypoint_and_the_overview_import_without_torch():
    modules = sorted(set(imported_modules(ROOT / "app" / "main.py") + imported_modules(ROOT / "pages" / "overview.py")))
    assert "app.resources" in modules and "app.jobs" in modules
    code = ("import sys; sys.path.insert(0, %r)\n" % str(ROOT) + "".join(f"import {m}\n" for m in modules) +
            "from model import PRESETS, TransformerConfig\n"  # the package's light names stay light
            "from model.family import FAMILY_TASKS\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False", "a module the first page needs imports torch"


def test_the_package_still_gives_its_torch_names():
    import model
    from model.nn.transformer import Transformer
    assert model.Transformer is Transformer
    assert callable(model.scaled_dot_product_attention) and "noam_lr" in dir(model)


def test_cpu_only_machine_reads_the_device_nodes(monkeypatch):
    from model.nn import device
    monkeypatch.delenv("ATLAS_DEVICE", raising=False)
    monkeypatch.setattr(device.sys, "platform", "linux")
    monkeypatch.setattr(device.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(device.os.path, "exists", lambda p: False)
    assert device.cpu_only_machine()
    monkeypatch.setattr(device.glob, "glob", lambda pattern: ["/dev/nvidia0"])
    assert not device.cpu_only_machine()  # a GPU may be there: ask torch
    monkeypatch.setattr(device.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(device.os.path, "exists", lambda p: p == "/dev/kfd")
    assert not device.cpu_only_machine()
    monkeypatch.setattr(device.sys, "platform", "darwin")
    monkeypatch.setattr(device.os.path, "exists", lambda p: False)
    assert not device.cpu_only_machine()  # MPS cannot be ruled out without torch
    monkeypatch.setenv("ATLAS_DEVICE", "cpu")
    assert device.cpu_only_machine()


def test_the_description_without_torch_is_the_one_torch_gives():
    import torch

    from app import jobs, resources
    from model.nn.device import best_device, cpu_only_machine, device_parts
    if not cpu_only_machine():
        return  # a machine where torch must be asked: both paths are the same call
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(jobs.server_threads())  # what apply_server_threads gives the server's torch
        resources._device_parts.clear()
        assert resources._device_parts(None) == device_parts(best_device())
    finally:
        torch.set_num_threads(before)
        resources._device_parts.clear()


def test_the_overview_draws_without_importing_torch_or_pandas(tmp_path):
    """Not only the imports at the top: the overview's first run (the pretrained models it lists with their
    sizes, the counts of Table 3) calls nothing that loads torch. Torch's import in the background after the
    page has drawn (warm_up) is switched off here so that it cannot hide one. A pretrained model sits in
    the hub cache, so that its size is read (from the weights file's header) on this run too."""
    from safetensors.numpy import save_file
    snap = tmp_path / "hub" / "models--tiny--gpt" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text('{"model_type": "gpt2", "n_layer": 1, "n_embd": 8, "n_head": 2}')
    save_file({"wte.weight": np.zeros((5, 8), dtype=np.float32)}, str(snap / "model.safetensors"))
    code = ("import sys; sys.path.insert(0, %r)\n" % str(ROOT) +
            "import app.fast.warmup\n"
            "app.fast.warmup.warm_up = lambda: None\n"
            "from streamlit.testing.v1 import AppTest\n"
            "at = AppTest.from_file(%r, default_timeout=120)\n" % str(ROOT / "app" / "main.py") +
            "at.run()\n"
            "assert not at.exception, at.exception\n"
            "assert at.title and at.get('image'), 'the overview did not draw'\n"
            "pandas_loaded = 'pandas' in sys.modules\n"
            "from tests.apptest_read import tables\n"
            "models = list(tables(at)[0].iloc[:, 0])\n"
            "assert any('tiny/gpt' in m for m in models), models\n"
            "print(pandas_loaded)\n"
            "print('torch' in sys.modules)")
    env = {**__import__("os").environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "ATLAS_RUNS_DIR": str(tmp_path / "runs")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False", "the overview's first run imports torch"
    # nor pandas (0.4 s of the first page: st.dataframe loads it; the overview's tables are Markdown, app.ui.table)
    assert out.stdout.strip().splitlines()[-2] == "False", "the overview's first run imports pandas"
