"""model/nn/linear.py: Linear is nn.Linear (x Wᵀ + b) in values, gradients and state dict, for batched, flat and
single inputs."""
import pytest
import torch
import torch.nn as nn

from model.nn.linear import Linear


@pytest.mark.parametrize("shape", [(5,), (7, 5), (3, 4, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_same_as_nn_linear(shape, bias):
    torch.manual_seed(0)
    ours = Linear(5, 6, bias=bias).double()
    ref = nn.Linear(5, 6, bias=bias).double()
    ref.load_state_dict(ours.state_dict())
    assert list(ours.state_dict()) == list(ref.state_dict())
    x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    a, r = ours(x), ref(x)
    assert a.shape == r.shape and torch.allclose(a, r, rtol=0, atol=1e-14)
    up = torch.randn_like(r)
    ga = torch.autograd.grad(a, [x, *ours.parameters()], up)
    gr = torch.autograd.grad(r, [x, *ref.parameters()], up)
    for g, h in zip(ga, gr):
        assert torch.allclose(g, h, rtol=0, atol=1e-14)


def test_non_contiguous_input_and_no_grad():
    torch.manual_seed(1)
    lin = Linear(4, 3)
    x = torch.randn(6, 2, 4).transpose(0, 1)  # (2, 6, 4), not contiguous
    with torch.no_grad():
        assert torch.allclose(lin(x), nn.functional.linear(x, lin.weight, lin.bias), atol=1e-6)
