"""Checkpoints that never mislead: a valid folder is described truly (`python -m model.hub check` on a ViT), a
damaged one is refused with one true, plain, short sentence that names the checkpoint's own fields (never our
internal TransformerConfig names or tensor names), nothing the loader has no reason to read is read, every size is
bounded before it is read or allocated, and options that compute the same numbers are accepted.

Damaged variants are built from tiny random models saved with transformers' save_pretrained
(tests/model/test_hub_damaged.py's bases, and a tiny ViT)."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("regex")

from model.hub import HubError, load_pretrained  # noqa: E402
from model.hub.__main__ import main  # noqa: E402
from tests.model.test_hub_damaged import CASES as DAMAGED_CASES  # noqa: E402
from tests.model.test_hub_damaged import bin_of, build_bases, damaged, weights  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MESSAGE_MOST = 300  # characters of a refusal: one sentence a learner reads


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    root = build_bases(tmp_path_factory.mktemp("trust-bases"))
    from tests.model.test_hub_vit import _save
    (root / "vit").mkdir()
    _save(root / "vit", {})
    (root / "vit-grey").mkdir()
    _save(root / "vit-grey", {"image_size": 24, "patch_size": 4, "num_channels": 1, "num_attention_heads": 3})
    return root


# -----------------------------------------------------------------------------
# ways to damage a folder (each takes the folder)

def edit_config(**changes):
    def damage(d: Path):
        hf = json.loads((d / "config.json").read_text())
        hf.update(changes)
        (d / "config.json").write_text(json.dumps(hf))
    return damage


def nan_config(key: str):
    def damage(d: Path):
        hf = json.loads((d / "config.json").read_text())
        hf[key] = "__NAN__"
        (d / "config.json").write_text(json.dumps(hf).replace('"__NAN__"', "NaN"))
    return damage


def _bin_records(d: Path) -> tuple[list[zipfile.ZipInfo], dict[str, bytes]]:
    with zipfile.ZipFile(d / "pytorch_model.bin") as z:
        infos = z.infolist()
        return infos, {i.filename: z.read(i.filename) for i in infos}


def cut_record(which: str):
    """pytorch_model.bin with its smallest (or largest) storage record cut to 8 bytes, the zip otherwise intact."""
    def damage(d: Path):
        bin_of()(d)
        infos, data = _bin_records(d)
        records = [i.filename for i in infos if re.search(r"/data/\d+$", i.filename)]
        pick = (min if which == "smallest" else max)(records, key=lambda n: (len(data[n]), n))
        data[pick] = data[pick][:8]
        with zipfile.ZipFile(d / "pytorch_model.bin", "w", zipfile.ZIP_STORED) as z:
            for i in infos:
                z.writestr(i.filename, data[i.filename])
    return damage


def rewritten_bin(d: Path):
    """The same records written back by zipfile, nothing cut: the control for cut_record."""
    bin_of()(d)
    infos, data = _bin_records(d)
    with zipfile.ZipFile(d / "pytorch_model.bin", "w", zipfile.ZIP_STORED) as z:
        for i in infos:
            z.writestr(i.filename, data[i.filename])


def extra_vocab_lines(n: int):
    def damage(d: Path):
        with open(d / "vocab.txt", "a", encoding="utf-8") as f:
            f.write("".join(f"extra{i}\n" for i in range(n)))
    return damage


def extra_json_vocab(n: int):
    def damage(d: Path):
        vocab = json.loads((d / "vocab.json").read_text(encoding="utf-8"))
        start = max(vocab.values()) + 1
        vocab.update({f"extra{i}": start + i for i in range(n)})
        (d / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    return damage


def sparse(name: str, size: int, head: bytes = b""):
    """A file of `size` bytes that takes no disk (sparse), starting with `head`."""
    def damage(d: Path):
        with open(d / name, "wb") as f:
            f.write(head)
            f.truncate(size)
    return damage


def empty_tensors(n: int):
    """A safetensors header with `n` extra empty tensors."""
    def damage(d: Path):
        p = d / "model.safetensors"
        data = p.read_bytes()
        k = int.from_bytes(data[:8], "little")
        head = json.loads(data[8:8 + k])
        head.update({f"e{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(n)})
        new = json.dumps(head).encode()
        p.write_bytes(len(new).to_bytes(8, "little") + new + data[8 + k:])
    return damage


def many_merges(n: int):
    def damage(d: Path):
        with open(d / "merges.txt", "a", encoding="utf-8") as f:
            for start in range(0, n, 100_000):
                f.write("".join(f"a{i} b{i}\n" for i in range(start, min(n, start + 100_000))))
    return damage


def wordpiece_json_with_id(i: int):
    """BERT's vocabulary as a tokenizer.json (no vocab.txt) holding one token with id `i`."""
    def damage(d: Path):
        tokens = (d / "vocab.txt").read_text(encoding="utf-8").splitlines()
        (d / "vocab.txt").unlink()
        vocab = {t: n for n, t in enumerate(tokens)}
        vocab["far"] = i
        (d / "tokenizer.json").write_text(json.dumps({"model": {"type": "WordPiece", "vocab": vocab}}))
    return damage


def processor(**settings):
    def damage(d: Path):
        (d / "preprocessor_config.json").write_text(json.dumps(settings))
    return damage


def huge_image_mean(d: Path):
    with open(d / "preprocessor_config.json", "w") as f:
        f.write('{"image_mean": [')
        f.write(",".join(["0.5"] * 200_000) + ",")
        chunk = ",".join(["0.5"] * 100_000)
        for _ in range(499):
            f.write(chunk + ",")
        f.write("0.5]}")


def float8(d: Path):
    weights(lambda s: s.update({k: v.to(torch.float8_e4m3fn) for k, v in s.items() if v.is_floating_point()}))(d)


def gpt2_classifier(d: Path):
    """A GPT2ForSequenceClassification in place of the language model."""
    hf = json.loads((d / "config.json").read_text())
    (d / "model.safetensors").unlink()
    cfg = transformers.GPT2Config(**{k: hf[k] for k in ("vocab_size", "n_embd", "n_layer", "n_head", "n_positions")},
                                  num_labels=3, pad_token_id=hf["eos_token_id"])
    transformers.GPT2ForSequenceClassification(cfg).save_pretrained(d)


def resave(family_cls: str, **changes):
    """The folder's model saved again by transformers with config changes (an option a real checkpoint has)."""
    def damage(d: Path):
        cfg = transformers.AutoConfig.from_pretrained(d)
        for k, v in changes.items():
            setattr(cfg, k, v)
        model = getattr(transformers, family_cls).from_pretrained(d, config=cfg)
        model.save_pretrained(d)
    return damage


# (id, family folder, damage, the words the refusal must have)
REFUSED = [
    ("bin: smallest record cut to 8 bytes", "bert", cut_record("smallest"), r"truncated"),
    ("bin: largest record cut to 8 bytes", "gpt2", cut_record("largest"), r"truncated"),
    ("vocab.txt: 300 lines more than the embedding", "bert", extra_vocab_lines(300), r"vocab\.txt.*rows"),
    ("vocab.json: a million entries more", "marian", extra_json_vocab(1_000_000), r"vocab\.json"),
    ("vocab.json: 300 entries more (GPT-2)", "gpt2", extra_json_vocab(300), r"vocab\.json.*rows"),
    ("safetensors: a million empty tensors", "bert", empty_tensors(1_000_000), r"model\.safetensors"),
    ("merges.txt: 5 million merges", "gpt2", many_merges(5_000_000), r"merges\.txt"),
    ("tokenizer.json: an id of 250,000,000", "bert", wordpiece_json_with_id(250_000_000), r"tokenizer\.json"),
    ("image_mean of 50 million numbers", "vit", huge_image_mean, r"preprocessor_config\.json"),
    ("image_mean of 4 numbers", "vit", processor(image_mean=[0.5] * 4), r"preprocessor_config\.json: image_mean"),
    ("preprocessor size too large", "vit", processor(size={"height": 10**9, "width": 10**9}),
     r"^preprocessor_config\.json: "),
    ("float8 weights", "bert", float8, r"float8_e4m3fn"),
    ("GPT-2 layer_norm_epsilon NaN", "gpt2", nan_config("layer_norm_epsilon"), r"layer_norm_epsilon"),
    ("GPT-2 heads that do not divide", "gpt2", edit_config(n_head=5), r"n_embd 32 .*n_head 5"),
    ("BERT heads that do not divide", "bert", edit_config(num_attention_heads=5),
     r"hidden_size 32 .*num_attention_heads 5"),
    ("BERT layer_norm_eps 2", "bert", edit_config(layer_norm_eps=2.0), r"layer_norm_eps"),
    ("GPT-2 resid_pdrop 1.5", "gpt2", edit_config(resid_pdrop=1.5), r"resid_pdrop"),
    ("GPT2ForSequenceClassification", "gpt2", gpt2_classifier, r"GPT2ForSequenceClassification"),
]


def _case(name, family, damage, words):
    return pytest.param(family, damage, words, id=name)


@pytest.mark.parametrize("family, damage, words", [_case(*c) for c in REFUSED])
def test_damage_is_refused_with_one_true_sentence(bases, tmp_path, family, damage, words):
    folder = damaged(bases, tmp_path, family, damage)
    with pytest.raises(HubError, match=words) as caught:
        load_pretrained(folder)
    assert_plain(str(caught.value), folder)


def test_the_undamaged_controls_load(bases, tmp_path):
    """The zip rewritten without a cut loads (so a cut record is what the refusal is about), and so does a
    vocabulary shorter than the embedding."""
    a = load_pretrained(damaged(bases, tmp_path / "a", "bert", rewritten_bin))
    b = load_pretrained(bases / "bert")
    for (n, x), (_, y) in zip(a.model.state_dict().items(), b.model.state_dict().items()):
        assert torch.equal(x, y), n

    def fewer_lines(d: Path):
        lines = (d / "vocab.txt").read_text(encoding="utf-8").splitlines()
        (d / "vocab.txt").write_text("".join(t + "\n" for t in lines[:-3]), encoding="utf-8")
    short = load_pretrained(damaged(bases, tmp_path / "b", "bert", fewer_lines))
    assert short.tokenizer.vocab_size == b.tokenizer.vocab_size - 3 < short.config.vocab_size


def test_a_truncated_record_is_refused_before_it_is_read(bases, tmp_path, monkeypatch):
    """The records' sizes are checked before torch reads a byte of them."""
    folder = damaged(bases, tmp_path, "bert", cut_record("smallest"))
    calls = []
    real = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(a) or real(*a, **k))
    with pytest.raises(HubError, match="truncated"):
        load_pretrained(folder)
    assert calls == []


# -----------------------------------------------------------------------------
# what loads

def test_check_describes_a_vit(bases, capsys):
    assert main(["check", str(bases / "vit")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vit ") and "parameters" in out and "Traceback" not in out, out
    assert "patch" in out and "image" in out, out


def test_huge_files_the_loader_has_no_reason_to_read_are_not_read(bases, tmp_path):
    """A sparse 1.5 GB README.md and a 3 GB LICENSE: the model loads, its licence read from their first lines,
    and the process grows by far less than either file (they are never read whole)."""
    import resource
    folder = damaged(bases, tmp_path, "bert", sparse("README.md", 3 * 2**29, b"---\nlicense: mit\n---\n"))
    sparse("LICENSE", 3 * 2**30, b"Apache License 2.0\n")(folder)
    sparse("notes.txt", 3 * 2**30)(folder)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    loaded = load_pretrained(folder)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before < 2**28
    assert loaded.meta["licence"] == "Apache License 2.0"


def test_gelu_python_bert_matches_transformers(bases, tmp_path):
    """hidden_act gelu_python is the exact GELU written in Python: the same function as gelu."""
    folder = damaged(bases, tmp_path, "bert", edit_config(hidden_act="gelu_python"))
    ours = load_pretrained(folder)
    ref = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    ids = torch.tensor([[2, 5, 9, 11, 7, 3]])
    with torch.no_grad():
        want = ref(ids, output_attentions=True)
        got = ours.model(ids, return_attention=True, segments=torch.zeros_like(ids))
    assert torch.allclose(got.logits, want.logits, atol=1e-4)
    for a, b in zip(got.attention.encoder_self, want.attentions):
        assert torch.allclose(a, b, atol=1e-5)


def test_reorder_and_upcast_attn_gpt2_matches_transformers(bases, tmp_path):
    """reorder_and_upcast_attn computes attention in float32 with the scale applied first: in float32, the same
    numbers."""
    folder = damaged(bases, tmp_path, "gpt2", edit_config(reorder_and_upcast_attn=True))
    ours = load_pretrained(folder)
    ref = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    assert ref.config.reorder_and_upcast_attn
    ids = torch.tensor([[3, 17, 40, 2, 9, 60]])
    with torch.no_grad():
        want = ref(ids, output_attentions=True)
        got = ours.model(ids, return_attention=True)
    assert torch.allclose(got.logits, want.logits, atol=1e-4)
    for a, b in zip(got.attention.decoder_self, want.attentions):
        assert torch.allclose(a, b, atol=1e-5)


def test_a_grey_vit_is_told_the_truth_about_channels(bases):
    """A 1-channel ViT reads grey pictures; the image processor gives red, green and blue: the sentence says the
    channels, not two equal sizes."""
    from model.hub.vit import see_image
    loaded = load_pretrained(bases / "vit-grey")
    with pytest.raises(ValueError) as caught:
        see_image(loaded, np.zeros((30, 30, 3), dtype=np.uint8))
    message = str(caught.value)
    assert "1" in message and "3" in message and "channel" in message, message
    assert not re.search(r"(\d+×\d+).*reads \1", message), message


# -----------------------------------------------------------------------------
# the whole kind: every refusal plain, true to the checkpoint's own names, short; memory bounded

INTERNAL_FIELDS = {f.name for f in dataclasses.fields(__import__("model.nn.config", fromlist=["x"]).TransformerConfig)
                   if "_" in f.name}
# our model's own tensor names (a checkpoint never has them)
INTERNAL_TENSORS = re.compile(r"\b(src_embed|tgt_embed|self_attn\.qkv|cross_attn\.kv|res\d\.norm|ffn\.w\d|"
                              r"generator\.weight|logits_bias|task_head|decoder_norm)\b")


def assert_plain(message: str, folder: Path) -> None:
    """One line, at most MESSAGE_MOST characters, and no name the checkpoint does not have: a TransformerConfig
    field that is not one of its config.json keys, or one of our tensor names."""
    assert "\n" not in message and len(message) <= MESSAGE_MOST, (len(message), message[:500])
    from model.hub.guard import read_json
    try:  # the damaged config itself may be a link to /dev/zero, nested past any parser, or not JSON
        keys = set(read_json(folder / "config.json")) if (folder / "config.json").is_file() else set()
    except (HubError, TypeError):
        keys = set()
    internal = sorted(n for n in INTERNAL_FIELDS - keys if re.search(rf"\b{n}\b", message))
    assert not internal, (internal, message)
    assert not INTERNAL_TENSORS.search(message), message


ALL_REFUSED = ([pytest.param(f, d, id=f"trust-{n}") for n, f, d, _ in REFUSED]
               + [pytest.param(c.values[0], c.values[2], id=f"damaged-{c.id}") for c in DAMAGED_CASES])


@pytest.mark.parametrize("family, damage", ALL_REFUSED)
def test_every_refusal_is_plain_short_and_names_only_the_checkpoints_fields(bases, tmp_path, family, damage):
    folder = damaged(bases, tmp_path, family, damage)
    with pytest.raises(HubError) as caught:
        load_pretrained(folder)
    assert_plain(str(caught.value), folder)


PEAK_SCRIPT = r"""
import json, resource, sys
import torch
from model.hub import HubError, load_pretrained
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
peaks = {"(imports)": base}
for folder in sys.argv[1:]:
    try:
        load_pretrained(folder)
    except HubError:
        pass
    peaks[folder] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(peaks))
"""

BIG = [  # what made a process pass 1 GB: each opened in a fresh process
    ("README 1.5 GB", "bert", sparse("README.md", 3 * 2**29, b"---\nlicense: mit\n---\n")),
    ("LICENSE 3 GB", "gpt2", sparse("LICENSE", 3 * 2**30, b"MIT\n")),
    *[(n, f, d) for n, f, d, _ in REFUSED if n.startswith(("safetensors", "merges", "tokenizer.json", "image_mean of 50",
                                                           "vocab.json: a million"))],
]


@pytest.mark.parametrize("name, family, damage", BIG, ids=[b[0] for b in BIG])
def test_opening_what_once_took_gigabytes_stays_under_a_quarter_of_one(bases, tmp_path, name, family, damage):
    folder = damaged(bases, tmp_path, family, damage)
    run = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(folder)], capture_output=True, text=True, cwd=ROOT,
                         timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    peaks = json.loads(run.stdout)
    base = peaks.pop("(imports)")
    assert peaks[str(folder)] - base < 2**28, (name, (peaks[str(folder)] - base) / 2**20)

