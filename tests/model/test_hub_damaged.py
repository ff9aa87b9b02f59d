"""Damaged and hostile checkpoints: tiny random Marian, GPT-2 and BERT folders saved with save_pretrained, then
broken in every way a learner's download or a hostile folder can be (truncated or lying safetensors, pickles,
symlinks, absurd configs, integer or non-finite weights, a config that disagrees with its weights, a missing
tokenizer). Each is refused by `load_pretrained` with one HubError sentence that says why (or loads with a
note where converting is right), `python -m model.hub check` exits non-zero with one line and no traceback,
and opening all of them keeps the process under 1 GB."""
from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("regex")

from model.hub import HubError, load_pretrained  # noqa: E402
from model.hub.__main__ import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KEYS = {  # family: (layers, width, feed-forward, heads, positions, token embeddings)
    "marian": ("encoder_layers", "d_model", "encoder_ffn_dim", "encoder_attention_heads", "max_position_embeddings",
               "model.shared.weight"),
    "gpt2": ("n_layer", "n_embd", "n_inner", "n_head", "n_positions", "transformer.wte.weight"),
    "bert": ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
             "max_position_embeddings", "bert.embeddings.word_embeddings.weight"),
}


def build_bases(root: Path) -> Path:
    """Tiny random Marian, GPT-2 and BERT folders (save_pretrained), each in a folder named by its family."""
    from tests.hub_fixtures_marian import build_marian_folder
    from tests.model.test_hub_bert import _make as make_bert
    from tests.model.test_hub_gpt2 import make_gpt2
    build_marian_folder(root / "marian")
    (root / "gpt2").mkdir()
    make_gpt2(root / "gpt2")
    make_bert(root / "bert")
    return root


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    return build_bases(tmp_path_factory.mktemp("damaged-bases"))


# -----------------------------------------------------------------------------
# ways to damage a folder

def config(**changes):
    def damage(d: Path):
        hf = json.loads((d / "config.json").read_text())
        hf.update({KEYS[d.name][k] if isinstance(k, int) else k: v for k, v in changes.items()})
        (d / "config.json").write_text(json.dumps(hf))  # Infinity / NaN written as JSON5-style constants
    return damage


def sized(index: int, value):
    """config.json's size number `index` of KEYS (0 layers, 1 width, 2 feed-forward, 3 heads, 4 positions)."""
    def damage(d: Path):
        hf = json.loads((d / "config.json").read_text())
        hf[KEYS[d.name][index]] = value
        (d / "config.json").write_text(json.dumps(hf))
    return damage


def raw_config(text: str):
    return lambda d: (d / "config.json").write_text(text)


def nested(d: Path):
    (d / "config.json").write_text('{"model_type": "bert", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")


def huge_config(d: Path):
    hf = json.loads((d / "config.json").read_text())
    hf["id2label"] = {str(i): "x" * 200 for i in range(90_000)}  # about 20 MB
    (d / "config.json").write_text(json.dumps(hf))


def weights(edit):
    """Rewrite model.safetensors after `edit(state)` (a dict of tensors) with safetensors itself."""
    def damage(d: Path):
        from safetensors.torch import load_file, save_file
        state = load_file(str(d / "model.safetensors"))
        edit(state)
        save_file(state, str(d / "model.safetensors"), metadata={"format": "pt"})
    return damage


def the_embedding(d_state: dict):
    return next(k for k in d_state if k.endswith(("shared.weight", "wte.weight", "word_embeddings.weight")))


def set_embedding(fn):
    def edit(state):
        k = the_embedding(state)
        state[k] = fn(state[k])
    return weights(edit)


def all_to(dtype):
    return weights(lambda s: s.update({k: v.to(dtype) for k, v in s.items() if v.is_floating_point()}))


def header_edit(edit):
    """Rewrite the safetensors header (the tensor data stays): a header that lies."""
    def damage(d: Path):
        p = d / "model.safetensors"
        data = p.read_bytes()
        n = int.from_bytes(data[:8], "little")
        head = json.loads(data[8:8 + n])
        edit(head)
        new = json.dumps(head).encode()
        p.write_bytes(len(new).to_bytes(8, "little") + new + data[8 + n:])
    return damage


def first_tensor(head: dict) -> dict:
    return head[sorted(k for k in head if k != "__metadata__")[0]]


def truncate(fraction: float):
    def damage(d: Path):
        p = d / "model.safetensors"
        data = p.read_bytes()
        p.write_bytes(data[: int(len(data) * fraction)])
    return damage


def lying_length(d: Path):
    p = d / "model.safetensors"
    data = p.read_bytes()
    p.write_bytes((2**62).to_bytes(8, "little") + data[8:])


class Boom:  # a pickle that would run a command if unpickled freely
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def evil_pickle(d: Path):
    (d / "model.safetensors").unlink()
    with open(d / "pytorch_model.bin", "wb") as f:
        pickle.dump({"w": Boom(str(d / "RAN"))}, f)


def evil_torch_save(d: Path):
    (d / "model.safetensors").unlink()
    torch.save({"w": Boom(str(d / "RAN"))}, d / "pytorch_model.bin")


def bin_of(edit=None, legacy: bool = False):
    """The weights as pytorch_model.bin (torch.save; legacy: the format before torch 1.6), edited."""
    def damage(d: Path):
        from safetensors.torch import load_file
        state = load_file(str(d / "model.safetensors"))
        (d / "model.safetensors").unlink()
        if edit:
            edit(state)
        torch.save(state, d / "pytorch_model.bin", _use_new_zipfile_serialization=not legacy)
    return damage


def symlink(name: str, target: str):
    def damage(d: Path):
        (d / name).unlink(missing_ok=True)
        (d / name).symlink_to(target)
    return damage


def no_tokenizer(d: Path):
    for name in ("vocab.json", "vocab.txt", "merges.txt", "tokenizer.json", "source.spm"):
        (d / name).unlink(missing_ok=True)


# (id, families, damage, the words the reason must have)
REFUSED = [
    ("layers Infinity", "marian gpt2 bert", None, "is inf, not a whole number"),  # damage: SPECIAL below
    ("layers NaN", "marian gpt2 bert", None, "is nan, not a whole number"),
    ("ffn 1e12", "marian gpt2 bert", sized(2, 1e12), "decimal number|not a whole number"),
    ("ffn 10**12", "marian gpt2 bert", sized(2, 10**12), "outside"),
    ("ffn disagrees", "marian gpt2 bert", sized(2, 1000), "says .* 1000 but the weights"),
    ("width 1e9", "marian gpt2 bert", sized(1, 1_000_000_000), "1000000000 but the weights are 32 wide"),
    ("width string", "marian gpt2 bert", sized(1, "32"), "not a whole number"),
    ("heads negative", "marian gpt2 bert", sized(3, -4), "outside"),
    ("heads zero", "marian gpt2 bert", sized(3, 0), "outside"),
    ("layers 10**6", "marian gpt2 bert", sized(0, 10**6), "1000000 but the weights hold 2 layers"),
    ("layers bool", "marian gpt2 bert", sized(0, True), "not a whole number"),
    ("positions 20M", "marian", sized(4, 20_000_000), "max_position_embeddings 20,000,000"),
    ("positions disagree", "gpt2 bert", sized(4, 20_000_000), "20000000 but the weights have 64"),
    ("vocab disagrees", "marian gpt2 bert", config(vocab_size=5), "vocab_size 5 but the weights have"),
    ("nested 100k", "marian gpt2 bert", nested, "nested too deeply"),
    ("config 20 MB", "bert", huge_config, "bytes this file may have"),
    ("config not JSON", "marian gpt2 bert", raw_config("{"), "not readable JSON"),
    ("config a list", "bert", raw_config("[1, 2]"), "no model_type"),
    ("config symlink /dev/zero", "bert", symlink("config.json", "/dev/zero"), "config.json"),
    ("truncated half", "marian gpt2 bert", truncate(0.5), "cannot be read safely"),
    ("truncated header", "marian gpt2 bert", truncate(0.0005), "cannot be read safely"),
    ("empty weights", "bert", truncate(0.0), "cannot be read safely"),
    ("header length 2**62", "marian gpt2 bert", lying_length, "header says"),
    ("header offsets lie", "marian gpt2 bert",
     header_edit(lambda h: first_tensor(h).update(data_offsets=[0, 10**12])), "cannot be read safely"),
    ("header shape lies", "marian gpt2 bert",
     header_edit(lambda h: first_tensor(h).update(shape=[10**9, 32])), "says shape"),
    ("header dtype lies", "marian gpt2 bert", header_edit(lambda h: first_tensor(h).update(dtype="I32")), "int32"),
    ("header dtype unknown", "gpt2", header_edit(lambda h: first_tensor(h).update(dtype="Q7")), "unknown dtype"),
    ("header overlaps", "bert", header_edit(lambda h: first_tensor(h).update(
        data_offsets=[0, first_tensor(h)["data_offsets"][1] - first_tensor(h)["data_offsets"][0]])
        if first_tensor(h)["data_offsets"][0] else h[sorted(k for k in h if k != "__metadata__")[1]].update(
        data_offsets=[0, h[sorted(k for k in h if k != "__metadata__")[1]]["data_offsets"][1]
                      - h[sorted(k for k in h if k != "__metadata__")[1]]["data_offsets"][0]])), "same bytes"),
    ("int64 weights", "marian gpt2 bert", set_embedding(lambda t: (t * 100).long()), "int64"),
    ("bool weights", "bert", set_embedding(lambda t: t > 0), "bool"),
    ("NaN weights", "marian gpt2 bert", set_embedding(lambda t: torch.full_like(t, float("nan"))),
     "not finite \\(NaN\\)"),
    ("Inf weights", "marian gpt2 bert", set_embedding(lambda t: t.index_fill(0, torch.tensor([0]), float("inf"))),
     "not finite \\(infinite\\)"),
    ("embedding too narrow", "marian gpt2 bert", set_embedding(lambda t: t[:, :16].contiguous()),
     "but the weights are 16 wide"),
    ("pickle that runs code", "marian gpt2 bert", evil_pickle, "cannot be read safely"),
    ("torch.save that runs code", "gpt2", evil_torch_save, "cannot be read safely"),
    ("bin with int64", "gpt2", bin_of(lambda s: s.update({the_embedding(s): s[the_embedding(s)].long()})), "int64"),
    ("bin with NaN", "bert", bin_of(lambda s: s[the_embedding(s)].fill_(float("nan"))), "not finite"),
    ("weights symlink /dev/zero", "marian gpt2 bert", symlink("model.safetensors", "/dev/zero"),
     "not a regular file"),
    ("missing tokenizer", "marian gpt2 bert", no_tokenizer, "not found|no vocab|vocab"),
]


def _layers_infinity(d: Path):
    text = (d / "config.json").read_text()
    hf = json.loads(text)
    hf[KEYS[d.name][0]] = "__INF__"
    (d / "config.json").write_text(json.dumps(hf).replace('"__INF__"', "Infinity"))


def _layers_nan(d: Path):
    hf = json.loads((d / "config.json").read_text())
    hf[KEYS[d.name][0]] = "__NAN__"
    (d / "config.json").write_text(json.dumps(hf).replace('"__NAN__"', "NaN"))


SPECIAL = {"layers Infinity": _layers_infinity, "layers NaN": _layers_nan}
CASES = [pytest.param(family, name, SPECIAL.get(name, damage), words, id=f"{family}-{name}")
         for name, families, damage, words in REFUSED for family in families.split()]


def damaged(bases: Path, tmp_path: Path, family: str, damage) -> Path:
    folder = tmp_path / family  # the family's name: the damage functions read KEYS by it
    shutil.copytree(bases / family, folder)
    damage(folder)
    return folder


@pytest.mark.parametrize("family, name, damage, words", CASES)
def test_a_damaged_checkpoint_is_refused_with_one_true_sentence(bases, tmp_path, capsys, family, name, damage, words):
    folder = damaged(bases, tmp_path, family, damage)
    with pytest.raises(HubError, match=words) as caught:
        load_pretrained(folder)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    assert not (folder / "RAN").exists()  # no pickle ever ran code
    capsys.readouterr()
    assert main(["check", str(folder)]) != 0  # the CLI: one line on stderr, nothing on stdout
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err


LOADS = [  # (id, family, damage, what the notes say)
    ("float16", "marian", all_to(torch.float16), "float16"),
    ("bfloat16", "gpt2", all_to(torch.bfloat16), "bfloat16"),
    ("float64", "bert", all_to(torch.float64), "float64"),
    ("as .bin", "bert", bin_of(), None),
    ("as a .bin from before torch 1.6", "gpt2", bin_of(legacy=True), None),
]


@pytest.mark.parametrize("name, family, damage, note", LOADS, ids=[x[0] for x in LOADS])
def test_weights_that_can_be_converted_load_with_a_note(bases, tmp_path, name, family, damage, note):
    folder = damaged(bases, tmp_path, family, damage)
    loaded = load_pretrained(folder)
    assert all(p.dtype == torch.float32 for p in loaded.model.parameters())
    converted = loaded.meta.get("converted", {})  # {stored dtype: tensors converted to float32}
    assert (note is None and not converted) or (set(converted) == {note} and converted[note] > 0), converted
    ref = load_pretrained(bases / family)
    tol = {"float16": 2e-3, "bfloat16": 2e-2}.get(name, 1e-6)
    for (n, a), (_, b) in zip(ref.model.state_dict().items(), loaded.model.state_dict().items()):
        assert torch.allclose(a, b, atol=tol * max(1.0, float(a.abs().max())), rtol=0), n


def test_weights_linked_from_outside_the_folder_load_as_the_hub_cache_links_them(bases, tmp_path):
    """A Hub cache's snapshot links each file to ../../blobs: a link to a regular file is read as that file."""
    folder = damaged(bases, tmp_path, "bert", lambda d: None)
    blob = tmp_path / "blobs" / "abc"
    blob.parent.mkdir()
    shutil.move(folder / "model.safetensors", blob)
    (folder / "model.safetensors").symlink_to(blob)
    assert load_pretrained(folder).model.num_parameters() == load_pretrained(bases / "bert").model.num_parameters()


def test_the_memory_budget_counts_what_the_config_builds_not_the_file(bases, tmp_path):
    """A Marian's sinusoid tables are computed from max_position_embeddings alone: 60000 positions of 32 wide
    are 15 MB the file never holds, and the budget counts them."""
    from model.hub.guard import HEADROOM
    folder = damaged(bases, tmp_path, "marian", sized(4, 60_000))
    load_pretrained(folder, available=4 * HEADROOM)  # enough
    size = (folder / "model.safetensors").stat().st_size
    # the stored tensors pass with this much, the tables from the config do not
    tight = int((HEADROOM + 2 * size + 2**20) / 0.75)
    with pytest.raises(HubError, match="of memory to load \\(from its config\\)"):
        load_pretrained(folder, available=tight)


def test_any_exception_of_a_converter_becomes_one_sentence_with_the_original_as_detail(bases, monkeypatch, capsys):
    from model.hub import gpt2

    def broken(hf, w):
        raise ZeroDivisionError("division by zero\nsecond line")
    monkeypatch.setattr(gpt2, "convert", broken)
    with pytest.raises(HubError, match=r"^gpt2: this checkpoint could not be loaded \(ZeroDivisionError: division "
                                       r"by zero\)$") as caught:
        load_pretrained(bases / "gpt2")
    assert "ZeroDivisionError" in caught.value.detail and "second line" in caught.value.detail
    capsys.readouterr()
    assert main(["check", str(bases / "gpt2")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["check", str(bases / "gpt2"), "--verbose"]) == 2  # the original error behind the sentence
    err = capsys.readouterr().err
    assert err.startswith("error: gpt2: this checkpoint could not be loaded") and "second line" in err


def test_the_cli_says_one_line_and_verbose_shows_the_detail(bases, tmp_path):
    """The real `python -m model.hub check`, in its own process, on two of the worst."""
    folder = damaged(bases, tmp_path, "bert", sized(1, 1_000_000_000))
    run = subprocess.run([sys.executable, "-m", "model.hub", "check", str(folder)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert run.returncode != 0 and run.stdout == ""
    assert run.stderr.strip().count("\n") == 0 and "Traceback" not in run.stderr, run.stderr
    assert "hidden_size 1000000000 but the weights are 32 wide" in run.stderr


PEAK_SCRIPT = r"""
import json, resource, sys
import torch
from model.hub import HubError, load_pretrained
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the interpreter, torch and the importers
peaks = {"(imports)": base}
for folder in sys.argv[1:]:
    try:
        load_pretrained(folder)
    except HubError:
        pass
    peaks[folder] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(peaks))
"""


def test_opening_every_damaged_checkpoint_stays_under_one_gigabyte(bases, tmp_path):
    """All of them opened in one fresh process: what opening them adds to its peak resident memory (ru_maxrss
    above the interpreter with torch and the importers loaded) stays under 1 GB."""
    folders = []
    for case in CASES:
        family, name, damage, _ = case.values
        where = tmp_path / f"case{len(folders)}"
        where.mkdir()
        folders.append(str(damaged(bases, where, family, damage)))
    run = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, *folders], capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    peaks = json.loads(run.stdout)
    base = peaks.pop("(imports)")
    worst = max(peaks, key=peaks.get)
    # what opening the checkpoints adds to the process (torch alone is several hundred MiB, more on a busy machine)
    assert peaks[worst] - base < 2**30, (worst, peaks[worst], base)
    assert peaks[worst] < 2**31, (worst, peaks[worst])
    print(f"peak {peaks[worst] / 2**20:.0f} MiB, {(peaks[worst] - base) / 2**20:.0f} MiB above the imports ({worst})")


def test_every_family_is_guarded():
    """Each family declares its sizes typed (SIZE_KEYS) and matched to the stored shapes (AGREE, LAYERS) before
    use."""
    from model.hub import FAMILIES
    from model.hub.families import declaration
    for family in FAMILIES:
        d = declaration(family)
        assert d["SIZE_KEYS"] and d["AGREE"] and d["LAYERS"], family
        assert set(d["AGREE"]) | set(d["LAYERS"]) <= set(d["SIZE_KEYS"]), family


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("where", [0, 777, 4095])
def test_one_value_that_is_not_finite_anywhere_in_a_weight_is_found(dtype, value, where):
    """The value check reads each weight's smallest and largest value in one pass: one NaN or infinity at the
    start, the middle or the end of a weight, stored in any float type, is found and counted."""
    from model.hub.guard import check_values
    w = torch.randn(64, 64).to(dtype)
    w.view(-1)[where] = value
    with pytest.raises(HubError, match=r"\b1 of the 4,096 values of the weight w are not finite"):
        check_values({"ok": torch.randn(3), "w": w}, "model.safetensors")
    assert check_values({"ok": torch.randn(3)}, "model.safetensors")[1] == {}
