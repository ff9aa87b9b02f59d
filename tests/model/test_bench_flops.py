"""The throughput bench credits a training step with the FLOPs it does. torch's FlopCounterMode has no formula
for the CPU's fused attention kernel, so without bench.common's registration the fused path (the trainer's)
was credited ~4% fewer FLOPs than the same step on the explicit path — and the share of the matmul peak with it."""
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

import bench.common  # noqa: F401  (registers the CPU flash-attention formulas)
from model import Transformer, TransformerConfig


def _step_flops(explicit: bool) -> int:
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=50, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=1, n_decoder_layers=1,
                            dropout=0.0, max_len=32)
    m = Transformer(cfg).train()
    src, tgt = torch.randint(4, 50, (2, 7)), torch.randint(4, 50, (2, 6))
    with FlopCounterMode(display=False) as fc:
        logits = m(src, tgt, return_attention=explicit).logits
        F.cross_entropy(logits.reshape(-1, 50), tgt.reshape(-1)).backward()
    return fc.get_total_flops()


def test_fused_attention_counts_the_same_flops_as_the_explicit_path():
    fused, explicit = _step_flops(False), _step_flops(True)
    assert fused == explicit > 0


def test_cpu_flash_attention_forward_and_backward_are_counted():
    q, k, v = (torch.randn(2, 3, 5, 8, requires_grad=True) for _ in range(3))
    with FlopCounterMode(display=False) as fc:
        F.scaled_dot_product_attention(q, k, v).sum().backward()
    # forward: QKᵀ and ×V, 2·(2·3)·5·5·8 each; backward: dV, dP, dQ and dK, twice that again
    assert fc.get_total_flops() == 3 * 2 * (2 * 2 * 3 * 5 * 5 * 8)
