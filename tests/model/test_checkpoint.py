"""Model directories and training checkpoints: round trips, and clear errors on damaged files."""
import json
import os
import sys
import types
from pathlib import Path

import pytest
import torch

from model import PRESETS, Transformer
from model.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text
from model.training.checkpoint import (
    CheckpointError, load_model_dir, load_training_state, save_model_dir, save_training_state,
)


class FakeTokenizerError(ValueError):
    pass


class FakeTokenizer:
    """Same attributes as model.data.tokenizer's tokenizer; saves its vocabulary as tokenizer.json."""
    pad_id, unk_id, bos_id, eos_id = 0, 1, 2, 3

    def __init__(self, vocab):
        self.vocab = list(vocab)
        self.vocab_size = len(self.vocab)

    def encode(self, text):
        return [self.vocab.index(w) if w in self.vocab else self.unk_id for w in text.split()]

    def decode(self, ids):
        return " ".join(self.vocab[i] for i in ids if i > 3)

    def pieces(self, text):
        return text.split()

    def id_to_piece(self, i):
        return self.vocab[i]

    def save(self, d):
        atomic_write_json(Path(d) / "tokenizer.json", {"vocab": self.vocab})


def fake_load_tokenizer(d):
    p = Path(d) / "tokenizer.json"
    try:
        return FakeTokenizer(json.loads(p.read_text())["vocab"])
    except (OSError, ValueError, KeyError) as e:
        raise FakeTokenizerError(f"{p}: {e}") from None


@pytest.fixture
def fake_tokenizer_module(monkeypatch):
    """Stand in for model.tokenizer (written elsewhere) so these tests depend on nothing else."""
    mod = types.ModuleType("model.data.tokenizer")
    mod.TokenizerError, mod.load_tokenizer = FakeTokenizerError, fake_load_tokenizer
    monkeypatch.setitem(sys.modules, "model.data.tokenizer", mod)
    return mod


@pytest.fixture
def model():
    torch.manual_seed(0)
    return Transformer(PRESETS["tiny"]).eval()


def logits(m):
    src = torch.tensor([[5, 6, 7, 8, 3]])
    tgt = torch.tensor([[2, 9, 10, 11]])
    with torch.no_grad():
        return m(src, tgt).logits


def test_model_dir_round_trip(tmp_path, model, fake_tokenizer_module):
    tok = FakeTokenizer(["<pad>", "<unk>", "<s>", "</s>", "hello", "world"])
    save_model_dir(tmp_path / "m", model, tok, meta={"task": "copy", "steps": 12, "bleu": 31.5})
    names = {p.name for p in (tmp_path / "m").iterdir()}
    assert names == {"config.json", "model.safetensors", "meta.json", "tokenizer.json"}  # no temp files left
    loaded = load_model_dir(tmp_path / "m")
    assert not loaded.model.training
    assert loaded.config == model.config
    assert loaded.meta["task"] == "copy" and loaded.meta["steps"] == 12 and loaded.meta["has_tokenizer"]
    assert loaded.tokenizer.vocab == tok.vocab and loaded.path == tmp_path / "m"
    torch.testing.assert_close(logits(loaded.model), logits(model), atol=0, rtol=0)
    m = loaded.model  # the tie (section 3.4) survives: one tensor for both embeddings and the softmax
    assert m.src_embed.token.weight is m.tgt_embed.token.weight
    assert m.num_parameters() == model.num_parameters()


def test_model_dir_without_tokenizer_untied(tmp_path):
    torch.manual_seed(1)
    m = Transformer(PRESETS["tiny"].replace(tie_embeddings=False, architecture="decoder-only", positional="learned"))
    save_model_dir(tmp_path, m)  # no tokenizer: model.data.tokenizer is never imported
    loaded = load_model_dir(tmp_path)
    assert loaded.tokenizer is None and loaded.meta == {"has_tokenizer": False}
    x = torch.tensor([[2, 5, 6]])
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(x).logits, m.eval()(x).logits, atol=0, rtol=0)


def test_missing_and_bad_files(tmp_path, model):
    with pytest.raises(CheckpointError, match="not found"):
        load_model_dir(tmp_path / "nope")
    save_model_dir(tmp_path, model)
    cfg = tmp_path / "config.json"
    good = cfg.read_text()

    cfg.write_text("{not json")
    with pytest.raises(CheckpointError, match="config.json"):
        load_model_dir(tmp_path)
    cfg.write_text(json.dumps({**json.loads(good), "colour": "blue"}))
    with pytest.raises(CheckpointError, match="colour"):
        load_model_dir(tmp_path)
    cfg.write_text(json.dumps({**json.loads(good), "n_heads": 5}))  # fails validation
    with pytest.raises(CheckpointError, match="config.json"):
        load_model_dir(tmp_path)
    cfg.write_text(json.dumps({**json.loads(good), "d_ff": 256}))  # valid config, wrong shapes
    with pytest.raises(CheckpointError, match="model.safetensors: the weights do not match config.json"):
        load_model_dir(tmp_path)
    cfg.write_text(good)

    (tmp_path / "meta.json").write_text("[1, 2")
    with pytest.raises(CheckpointError, match="meta.json"):
        load_model_dir(tmp_path)
    (tmp_path / "meta.json").unlink()  # meta is optional
    assert load_model_dir(tmp_path).meta == {}
    cfg.unlink()
    with pytest.raises(CheckpointError, match="config.json"):
        load_model_dir(tmp_path)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "header"])
def test_corrupt_safetensors(tmp_path, model, damage):
    save_model_dir(tmp_path, model)
    w = tmp_path / "model.safetensors"
    data = w.read_bytes()
    if damage == "truncate":
        w.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        w.write_bytes(os.urandom(len(data)))
    elif damage == "empty":
        w.write_bytes(b"")
    else:  # a plausible header length followed by nonsense
        w.write_bytes((40).to_bytes(8, "little") + b"{" * 40 + data[48:])
    with pytest.raises(CheckpointError, match="model.safetensors: damaged"):
        load_model_dir(tmp_path)


def test_required_tokenizer_missing(tmp_path, model, fake_tokenizer_module):
    save_model_dir(tmp_path, model, FakeTokenizer(["<pad>", "<unk>", "<s>", "</s>"]))
    (tmp_path / "tokenizer.json").write_text("nonsense")
    with pytest.raises(CheckpointError, match="tokenizer"):
        load_model_dir(tmp_path)
    save_model_dir(tmp_path, model, FakeTokenizer([str(i) for i in range(100)]))  # > vocab_size 64
    with pytest.raises(CheckpointError, match="vocab_size"):
        load_model_dir(tmp_path)


def make_training(seed=0):
    torch.manual_seed(seed)
    m = Transformer(PRESETS["tiny"])
    opt = torch.optim.Adam(m.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
    return m, opt, sched


def train_step(m, opt, sched):
    src, tgt = torch.tensor([[5, 6, 7, 3]]), torch.tensor([[2, 5, 6, 7, 3]])
    loss = m.loss(m(src, tgt[:, :-1]).logits, tgt[:, 1:])
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    return loss.item()


def test_training_state_round_trip(tmp_path):
    m, opt, sched = make_training(0)
    for _ in range(3):
        train_step(m, opt, sched)
    path = tmp_path / "ckpt" / "train.pt"
    save_training_state(path, m, opt, sched, step=3, extra={"losses": [1.0, 0.5], "task": "copy",
                                                               "rng": torch.get_rng_state()})
    m2, opt2, sched2 = make_training(1)  # different starting weights
    info = load_training_state(path, m2, opt2, sched2)
    assert info["step"] == 3 and info["extra"]["losses"] == [1.0, 0.5] and info["extra"]["task"] == "copy"
    assert info["config"] == m.config.to_dict()
    for a, b in zip(m.state_dict().values(), m2.state_dict().values()):
        torch.testing.assert_close(a, b, atol=0, rtol=0)
    assert sched2.last_epoch == sched.last_epoch and opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    assert m2.src_embed.token.weight is m2.tgt_embed.token.weight
    # the next step is identical: optimizer moments came back too
    assert train_step(m, opt, sched) == pytest.approx(train_step(m2, opt2, sched2), abs=1e-6)
    for a, b in zip(m.parameters(), m2.parameters()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def test_training_state_rejects_non_plain_extra(tmp_path):
    m, opt, sched = make_training()
    with pytest.raises(TypeError):
        save_training_state(tmp_path / "x.pt", m, opt, sched, step=1, extra={"f": object()})
    assert not list(tmp_path.iterdir())  # nothing written


def test_damaged_training_state(tmp_path):
    m, opt, sched = make_training()
    path = tmp_path / "train.pt"
    with pytest.raises(CheckpointError, match="not found"):
        load_training_state(path, m)
    save_training_state(path, m, opt, sched, step=1, extra={})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="train.pt: damaged"):
        load_training_state(path, m, opt, sched)
    path.write_bytes(b"\x00garbage" * 50)
    with pytest.raises(CheckpointError, match="train.pt: damaged"):
        load_training_state(path, m)
    # a pickle that would execute code is refused by weights_only=True
    torch.save({"format": "attention-atlas-train/1", "model": {}, "evil": FakeTokenizer([])}, path)
    with pytest.raises(CheckpointError, match="could run code"):
        load_training_state(path, m)
    torch.save({"hello": 1}, path)
    with pytest.raises(CheckpointError, match="not an Attention Atlas"):
        load_training_state(path, m)
    save_training_state(path, Transformer(PRESETS["tiny"].replace(d_ff=256)), step=1)
    with pytest.raises(CheckpointError, match="do not fit"):
        load_training_state(path, m)


def test_atomic_write_never_leaves_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "data.json"
    atomic_write_text(target, "old")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)  # fail after the bytes went to the temp file
    with pytest.raises(OSError):
        atomic_write_bytes(target, b"new contents that never land")
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["data.json"]  # temp file cleaned up

    class Unserialisable:
        pass

    with pytest.raises(TypeError):
        atomic_write_json(target, {"x": Unserialisable()})
    assert target.read_text() == "old"
    atomic_write_json(target, {"ok": "한국어"})
    assert json.loads(target.read_text(encoding="utf-8")) == {"ok": "한국어"}
    assert [p.name for p in tmp_path.iterdir()] == ["data.json"]
