"""model/nn/linear.py: Linear is nn.Linear (x Wᵀ + b) in values, gradients and state dict, for batched, flat and
single inputs, both with the CPU's fast path (model/nn/fast/linear.py: the product first, the bias added in
place; the same to float64 rounding) and with the plain formula."""
import pytest
import torch
import torch.nn as nn

from model.nn import fast
from model.nn.linear import Linear


@pytest.mark.parametrize("fast_paths", [True, False])
@pytest.mark.parametrize("shape", [(5,), (7, 5), (3, 4, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_same_as_nn_linear(shape, bias, fast_paths):
    torch.manual_seed(0)
    ours = Linear(5, 6, bias=bias).double()
    ref = nn.Linear(5, 6, bias=bias).double()
    ref.load_state_dict(ours.state_dict())
    assert list(ours.state_dict()) == list(ref.state_dict())
    x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    with fast.switched(fast_paths):
        a, r = ours(x), ref(x)
    assert a.shape == r.shape and torch.allclose(a, r, rtol=0, atol=1e-14)
    up = torch.randn_like(r)
    ga = torch.autograd.grad(a, [x, *ours.parameters()], up)
    gr = torch.autograd.grad(r, [x, *ref.parameters()], up)
    for g, h in zip(ga, gr):
        assert torch.allclose(g, h, rtol=0, atol=1e-14)


def test_the_fast_path_runs_on_the_cpu_only_and_the_switch_turns_it_off(monkeypatch):
    """The CPU's fast path is the one that runs there by default; F.linear with the switch off and on CUDA."""
    calls = []
    monkeypatch.setattr(fast, "linear", lambda x, w, b: calls.append(1) or nn.functional.linear(x, w, b))
    lin, x = Linear(4, 3), torch.randn(2, 4)
    lin(x)
    assert calls == [1]
    with fast.switched(False):
        lin(x)
    assert calls == [1]
    assert fast.use("linear", torch.device("cpu")) and not fast.use("linear", torch.device("cuda"))


def test_non_contiguous_input_and_no_grad():
    torch.manual_seed(1)
    lin = Linear(4, 3)
    x = torch.randn(6, 2, 4).transpose(0, 1)  # (2, 6, 4), not contiguous
    with torch.no_grad():
        assert torch.allclose(lin(x), nn.functional.linear(x, lin.weight, lin.bias), atol=1e-6)
