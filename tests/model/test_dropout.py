"""model/nn/dropout.py: the one dropout of every model here, with its plain Bernoulli mask and with the CPU's fast
path (model/nn/fast/dropout_mask.py: a cheaper mask than nn.Dropout's, the same dropout). Both are checked against
what dropout promises: the drop rate, the scale of the kept entries, the expectation, the gradient, the identity
in evaluation mode, seeded repeats; and against nn.Dropout in law."""
import math

import pytest
import torch
import torch.nn as nn

from model import Transformer, TransformerConfig
from model.nn import fast
from model.nn.dropout import Dropout, dropout
from model.nn.fast.dropout_mask import drop_threshold, keep_mask, scaled_keep_mask

BOTH = pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "plain"])


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.9])
def test_the_drop_rate_is_p(p):
    torch.manual_seed(0)
    n = 2_000_000
    share = 1 - keep_mask((n,), p).float().mean().item()
    assert abs(share - p) < 5 * math.sqrt(p * (1 - p) / n), share  # five standard errors


@BOTH
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_drops_a_share_p(p, fast_paths):
    torch.manual_seed(0)
    n = 1_000_000
    with fast.switched(fast_paths):
        share = (dropout(torch.ones(n), p) == 0).float().mean().item()
    assert abs(share - p) < 5 * math.sqrt(p * (1 - p) / n), share


def test_the_threshold_puts_p_of_the_int32_values_below_it():
    for p in (0.0, 0.1, 0.3, 0.5, 1.0):
        below = drop_threshold(p) + 2 ** 31  # int32 values below the threshold
        assert abs(below / 2 ** 32 - p) <= 2 ** -33


def test_every_lane_and_position_is_fair():
    """Each 64-bit word holds two entries: both lanes, and an odd length's last entry, drop at rate p."""
    torch.manual_seed(1)
    m = keep_mask((1001, 999), 0.25).reshape(-1)
    for lane in (m[0::2], m[1::2]):
        assert abs(1 - lane.float().mean().item() - 0.25) < 0.005
    cols = keep_mask((4000, 3), 0.25).float().mean(0)
    assert torch.all((1 - cols - 0.25).abs() < 0.03), cols


@BOTH
def test_kept_entries_are_scaled_and_the_gradient_is_the_mask(fast_paths):
    torch.manual_seed(2)
    x = torch.randn(64, 128, requires_grad=True)
    with fast.switched(fast_paths):
        y = dropout(x, 0.2)
    kept = y != 0
    assert torch.allclose(y[kept], x[kept] / 0.8)
    y.sum().backward()
    assert torch.allclose(x.grad, kept.float() / 0.8)


@BOTH
def test_the_expectation_is_kept(fast_paths):
    torch.manual_seed(3)
    x = torch.randn(50)
    with fast.switched(fast_paths):
        mean = torch.stack([dropout(x, 0.3) for _ in range(20_000)]).mean(0)
    assert (mean - x).abs().max() < 0.05


@BOTH
def test_identity_outside_training_and_at_p_zero_zeros_at_one(fast_paths):
    x = torch.randn(10, 20)
    with fast.switched(fast_paths):
        _identity_and_zeros(x)


def _identity_and_zeros(x):
    assert dropout(x, 0.5, training=False) is x
    assert dropout(x, 0.0) is x
    assert torch.equal(dropout(x, 1.0), torch.zeros_like(x))
    d = Dropout(0.5).eval()
    assert torch.equal(d(x), x)
    with pytest.raises(ValueError):
        Dropout(1.5)
    with pytest.raises(ValueError):
        dropout(x, -0.1)


@BOTH
def test_a_seed_repeats_dropout(fast_paths):
    x = torch.randn(100, 100)
    with fast.switched(fast_paths):
        torch.manual_seed(7)
        a, b = dropout(x, 0.1), dropout(x, 0.1)
        torch.manual_seed(7)
        assert torch.equal(dropout(x, 0.1), a) and torch.equal(dropout(x, 0.1), b)
    assert not torch.equal(a, b)


def test_a_seed_repeats_the_mask_and_advances_torchs_generator():
    torch.manual_seed(7)
    a = keep_mask((100, 100), 0.1)
    b = keep_mask((100, 100), 0.1)
    torch.manual_seed(7)
    assert torch.equal(keep_mask((100, 100), 0.1), a)
    assert torch.equal(keep_mask((100, 100), 0.1), b)
    assert not torch.equal(a, b)


@BOTH
def test_dtype_and_shape_follow_the_input(fast_paths):
    torch.manual_seed(4)
    with fast.switched(fast_paths):
        for dtype in (torch.float32, torch.float64, torch.bfloat16):
            x = torch.ones(3, 5, 7, dtype=dtype)
            y = dropout(x, 0.1)
            assert y.dtype == dtype and y.shape == x.shape
        assert dropout(torch.ones(0, 4), 0.1).shape == (0, 4)


@BOTH
def test_same_law_as_nn_dropout(fast_paths):
    """The mask's law is nn.Dropout's: the zero share of many masks agrees with nn.Dropout's within sampling
    error, and both keep entries at x / (1 - p) (the plain formula's division may round it one step away)."""
    torch.manual_seed(5)
    x = torch.ones(400, 500)
    with fast.switched(fast_paths):
        ours = Dropout(0.1).train()(x)
    theirs = nn.Dropout(0.1).train()(x)
    assert set(theirs.unique().tolist()) == {0.0, torch.tensor(1 / 0.9).item()}
    kept = ours.unique()
    assert len(kept) == 2 and kept[0] == 0 and torch.allclose(kept[1], torch.tensor(1 / 0.9), rtol=2 ** -23, atol=0)
    z_ours, z_theirs = (ours == 0).float().mean().item(), (theirs == 0).float().mean().item()
    assert abs(z_ours - z_theirs) < 5 * math.sqrt(2 * 0.09 / x.numel())


def test_every_dropout_of_the_models_is_this_one():
    """No nn.Dropout left in a model we train (model.nn.layers, the family): the speed-up reaches every run, and
    the recipe page's live mask (model.lessons.dropout_demo) is the one the models use."""
    from model.family.detr import DETR, DetrConfig
    from model.family.vit import ViT, ViTConfig
    models = [Transformer(TransformerConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
                                            n_decoder_layers=1, dropout=0.1)),
              ViT(ViTConfig()), DETR(DetrConfig())]
    for m in models:
        kinds = {type(x) for x in m.modules()}
        assert nn.Dropout not in kinds, type(m).__name__
        assert Dropout in kinds, type(m).__name__


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_scaled_mask_is_the_bool_mask_times_the_scale(dtype):
    """The fast path's numeric mask (written by one comparison into a float tensor) drops the same entries as
    keep_mask for the same seed and scales the kept ones by 1 / (1 - p) in the input's dtype; it is the mask the
    models' dropout multiplies by on the CPU."""
    torch.manual_seed(7)
    kept = keep_mask((64, 33), 0.3)
    torch.manual_seed(7)
    scaled = scaled_keep_mask((64, 33), 0.3, dtype)
    assert scaled.dtype == dtype
    assert torch.equal(scaled, kept.to(dtype) * torch.tensor(1 / 0.7, dtype=dtype))
    torch.manual_seed(7)
    x = torch.randn(64, 33, dtype=dtype)
    torch.manual_seed(7)
    y = dropout(x, 0.3)
    assert torch.equal(y, x * scaled)
