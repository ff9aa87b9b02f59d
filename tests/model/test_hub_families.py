"""One place per family: each family module declares everything about itself (model types, title, the config's size
keys, the guard's shape rules, the tokenizer's files, what the size table leaves out) and dispatch reads the
declarations (model/hub/families.py), without importing the modules; a converter never writes into the config it
is given; and a new family is one module: the recipe in docs/architecture.md, tried here on a module written in a
temporary folder."""
from __future__ import annotations

import copy
import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("regex")

import model.hub as hub  # noqa: E402
from model.hub import HubError, families, load_pretrained, size_summary  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    from tests.model.test_hub_damaged import build_bases
    return build_bases(tmp_path_factory.mktemp("family-bases"))


@pytest.mark.parametrize("name", hub.FAMILIES)
def test_each_declaration_read_from_the_source_is_the_modules_own(name):
    """What dispatch reads without importing a module is what the module holds once imported."""
    module = importlib.import_module(f"model.hub.{name}")
    declared = families.declaration(name)
    for key in families.DECLARED:
        if hasattr(module, key):
            assert declared[key] == getattr(module, key), (name, key)
    for key, (pattern, axis) in declared["AGREE"].items():
        assert key in declared["SIZE_KEYS"] and isinstance(pattern, str) and isinstance(axis, int), (name, key)


def test_every_model_type_has_exactly_one_family():
    seen: dict[str, str] = {}
    for d in families.declarations():
        for model_type in d["MODEL_TYPES"]:
            assert model_type not in seen, (model_type, seen.get(model_type), d["name"])
            seen[model_type] = d["name"]
            assert hub.known_family(model_type) == d["name"]
    with pytest.raises(HubError, match="supported: .*GPT-2.*ViT"):
        hub.known_family("t5")


def test_listing_and_sizing_folders_imports_no_torch(bases):
    """The overview's first page lists folders and their sizes without torch: dispatch reads declarations."""
    code = ("import sys; from model.hub import known_family, size_summary, supported\n"
            "from model.hub.families import declarations\n"
            "assert [known_family(t) for d in declarations() for t in d['MODEL_TYPES']]\n"
            f"print(size_summary({str(bases / 'bert')!r})['parameters'], supported({str(bases / 'gpt2')!r}))\n"
            "print('torch' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout.split()
    assert out[-1] == "False" and out[-2] == "True" and int(out[-3]) > 0, run.stdout


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file
    return load_file(str(folder / "model.safetensors"))


@pytest.mark.parametrize("family, cls_name", [("bert", "BertForMaskedLM"), ("bert", "BertForSequenceClassification"),
                                              ("roberta", None), ("distilbert", None), ("gpt2", None),
                                              ("marian", None)])
def test_convert_only_reads_the_config_it_is_given(bases, tmp_path, family, cls_name):
    """A converter gives what it found back in its result (the head, its labels), never by writing into the
    config dictionary it was handed."""
    if family == "bert" and cls_name != "BertForMaskedLM":
        from tests.model.test_hub_bert import _make
        folder = _make(tmp_path / "cls", cls_name=cls_name, num_labels=3)
    elif family in ("roberta", "distilbert"):
        module = importlib.import_module(f"tests.model.test_hub_{family}")
        folder = _tiny(module, tmp_path)
    else:
        folder = bases / family
    hf = json.loads((folder / "config.json").read_text())
    before = copy.deepcopy(hf)
    result = hub.family_module(hf["model_type"]).convert(hf, _weights(folder))
    assert hf == before
    if family == "bert":
        found = result[2]
        assert found["task"] == ("mlm" if cls_name == "BertForMaskedLM" else "classify")
        meta = load_pretrained(folder).meta
        assert meta["task"] == found["task"] and (cls_name == "BertForMaskedLM" or len(meta["labels"]) == 3)


def _tiny(module, tmp_path: Path) -> Path:
    """A tiny saved folder of a test module's family (its own maker)."""
    for maker in ("make_roberta", "_make", "make"):
        if hasattr(module, maker):
            folder = tmp_path / "tiny"
            made = getattr(module, maker)(folder)
            return made if isinstance(made, Path) else folder
    pytest.skip(f"{module.__name__} has no maker")


# -----------------------------------------------------------------------------
# the recipe, tried: a new family is one module

ECHO = '''"""Echo: GPT-2 under another model_type, a family written as the recipe says (one module)."""
from model.hub.gpt2 import convert, meta, tokenizer  # noqa: F401

MODEL_TYPES = ("echo-gpt2",)
TITLE = "Echo"
SIZES = ("n_layer", "n_embd", "n_inner", "n_head")
SIZE_KEYS = {"vocab_size": 1, "n_embd": 1, "n_layer": 0, "n_head": 1, "n_inner": 1, "n_positions": 1}
AGREE = {"n_embd": (r"wte\\.weight", 1), "vocab_size": (r"wte\\.weight", 0)}
LAYERS = {"n_layer": r"h\\.(\\d+)\\."}
READS = ("vocab.json", "merges.txt")
'''


def test_a_new_family_is_one_module(bases, tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "echo.py").write_text(ECHO)
    monkeypatch.setattr(hub, "__path__", [*hub.__path__, str(tmp_path / "pkg")])
    monkeypatch.setattr(hub, "FAMILIES", (*hub.FAMILIES, "echo"))
    monkeypatch.delitem(sys.modules, "model.hub.echo", raising=False)
    folder = tmp_path / "echo"
    shutil.copytree(bases / "gpt2", folder)
    hf = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**hf, "model_type": "echo-gpt2"}))
    assert hub.known_family("echo-gpt2") == "echo"
    ours, theirs = load_pretrained(folder), load_pretrained(bases / "gpt2")
    assert ours.meta["family"] == "echo" and ours.config == theirs.config
    assert size_summary(folder)["parameters"] == size_summary(bases / "gpt2")["parameters"]
    (folder / "config.json").write_text(json.dumps({**hf, "model_type": "echo-gpt2", "n_embd": 48}))
    with pytest.raises(HubError, match="n_embd 48 but the weights are 32 wide"):  # its own guard rules
        load_pretrained(folder)
    with pytest.raises(HubError, match="Echo"):
        hub.known_family("no-such-type")
