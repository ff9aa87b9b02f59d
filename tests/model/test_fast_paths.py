"""model/nn/fast: the fast paths beside the plain formulas of model/nn. With the one switch on (the default) or
off, the whole model gives the same loss and gradients, and the trainer's step runs, through the fast paths or
without touching them. Each fast path is also held to its plain formula in its own test file: test_dropout.py
and test_output_loss.py."""
from __future__ import annotations

import math

import pytest
import torch

from model.nn import fast
from model.nn.config import TransformerConfig
from model.nn.transformer import Transformer


def test_the_switch_and_the_table_decide_every_fast_path():
    cpu, cuda, mps = torch.device("cpu"), torch.device("cuda"), torch.device("mps")
    assert fast.FAST is True  # the default: the measured faster way
    assert set(fast.WHERE) == {"dropout", "loss"}
    assert all(fast.use(trick, cpu) for trick in fast.WHERE)
    assert fast.use("dropout", cuda) and fast.use("dropout", mps)  # torch's fused kernel there
    assert not fast.use("loss", cuda)
    with fast.switched(False):
        assert fast.FAST is False and not any(fast.use(t, d) for t in fast.WHERE for d in (cpu, cuda, mps))
    assert fast.FAST is True


@pytest.mark.parametrize("architecture", ["encoder-decoder", "decoder-only", "encoder-only"])
def test_the_model_gives_the_same_loss_and_gradients_either_way(architecture):
    """Without dropout (whose draws differ by design), the fast paths change nothing but float rounding."""
    cfg = TransformerConfig(vocab_size=29, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=2, n_decoder_layers=2,
                            dropout=0.0, max_len=16, label_smoothing=0.1, architecture=architecture)
    torch.manual_seed(0)
    m = Transformer(cfg).double()
    g = torch.Generator().manual_seed(1)
    src, tgt = torch.randint(4, 29, (3, 7), generator=g), torch.randint(4, 29, (3, 7), generator=g)
    tgt[1, 4:] = cfg.pad_id

    def run():
        out = m(src, tgt, labels=tgt) if architecture == "encoder-decoder" else m(tgt, labels=tgt)
        return out.loss, torch.autograd.grad(out.loss, list(m.parameters()))
    with fast.switched(True):
        fast_loss, fast_grads = run()
    with fast.switched(False):
        plain_loss, plain_grads = run()
    assert abs(fast_loss.item() - plain_loss.item()) < 1e-12
    for a, b in zip(fast_grads, plain_grads):
        assert torch.allclose(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "plain"])
def test_the_trainer_runs_a_step_either_way(tmp_path, monkeypatch, fast_paths):
    """The trainer (tiny preset, dropout on) trains through every fast path with the switch on and through none
    with it off."""
    from model.training import train as trainer
    from model.training.run_files import read_metrics
    calls = {name: 0 for name in ("dropout", "projected_cross_entropy")}
    for name in calls:
        real = getattr(fast, name)

        def counted(*a, _real=real, _name=name, **k):
            calls[_name] += 1
            return _real(*a, **k)
        monkeypatch.setattr(fast, name, counted)
    out = tmp_path / "run"
    with fast.switched(fast_paths):
        rc = trainer.main(["--task", "copy", "--preset", "tiny", "--dropout", "0.1", "--batch-size", "4",
                           "--warmup", "10", "--threads", "1", "--device", "cpu", "--eval-every", "1000",
                           "--log-every", "1", "--steps", "2", "--out", str(out)])
    assert rc == 0
    losses = [row["loss"] for row in read_metrics(out / "metrics.jsonl") if row["kind"] == "train"]
    assert len(losses) == 2 and all(math.isfinite(x) for x in losses)
    if fast_paths:
        assert all(n > 0 for n in calls.values()), calls
    else:
        assert all(n == 0 for n in calls.values()), calls
