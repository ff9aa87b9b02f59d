"""One encoder layer, end to end (section 3.1 and 3.3 of the paper), step by step.

A sentence's vectors x go through the project's own EncoderLayer (model/nn/layers.py), post-LN as in
the paper:

    a  = MultiHead(x, x, x)          attention: every token mixes in the others
    s1 = x + a                       residual connection (dropout is off at inference)
    n1 = LayerNorm(s1)               every token rescaled to mean 0, standard deviation 1
    h  = ReLU(n1 W1 + b1)            the feed-forward network widens each token to d_ff ...
    f  = h W2 + b2                   ... and narrows it back to d_model, each token on its own
    s2 = n1 + f                      residual connection
    y  = LayerNorm(s2)               the layer's output, the next layer's input

Each step runs the layer's own sub-modules, and the result is checked against the layer's own
forward output. The attention weights are those of model.lessons.multihead.seeded_mha, the module the
multi-head page shows head by head. Plain PyTorch and numpy, no streamlit."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from model.nn.config import TransformerConfig
from model.lessons.multihead import seeded_weights, sentence_input
from model.nn.layers import EncoderLayer
from model.messages import UserError

STEP_IDS = ("input", "attention", "sum1", "norm1", "hidden", "ffn", "sum2", "output")
FF_RATIO = 4  # d_ff = 4 · d_model, as in the paper (2048 = 4 × 512)
TOLERANCE = 1e-6  # the step-by-step output must equal the layer's own output within this


def seeded_encoder_layer(d_model: int, n_heads: int, d_ff: int, seed: int = 0) -> EncoderLayer:
    """An untrained EncoderLayer (post-LN, no dropout) in eval mode, with seeded weights; its
    self-attention has the weights of seeded_mha(d_model, n_heads, seed). The global random state
    is left as it was."""
    cfg = TransformerConfig(vocab_size=1, d_model=d_model, n_heads=n_heads, d_ff=d_ff, dropout=0.0,
                            norm_first=False)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = EncoderLayer(cfg)
    layer.self_attn.load_state_dict(seeded_weights(d_model, seed))  # copied in: the shared weights stay as drawn
    return layer.eval()


@dataclass
class WalkStep:
    """One step's tensor (1, L, width) and, per token, its vector's length, mean and standard deviation."""
    name: str  # one of STEP_IDS
    tensor: torch.Tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.tensor.shape)

    @property
    def norms(self) -> np.ndarray:
        """(L,) the length ‖v‖ of every token's vector."""
        return torch.linalg.vector_norm(self.tensor[0], dim=-1).numpy()

    @property
    def means(self) -> np.ndarray:
        """(L,) the mean of every token's entries."""
        return self.tensor[0].mean(-1).numpy()

    @property
    def stds(self) -> np.ndarray:
        """(L,) the standard deviation of every token's entries (over the entries, as LayerNorm takes it)."""
        return self.tensor[0].std(-1, unbiased=False).numpy()


def _share(residual: torch.Tensor, total: torch.Tensor) -> np.ndarray:
    """(L,) how much of each token's sum s = r + f lies along r: r·s / ‖s‖² (the sub-layer's part,
    f·s / ‖s‖², makes up the rest, so the two add to 1)."""
    return ((residual * total).sum(-1) / (total * total).sum(-1)).numpy()


@dataclass
class LayerWalk:
    d_model: int
    n_heads: int
    d_ff: int
    length: int
    steps: list[WalkStep]
    layer_gap: float  # max |step-by-step output - the layer's own forward output|
    residual_share: dict[str, np.ndarray]  # {"attention" | "ffn": (L,) the residual's share of the sum}
    relu_zero_share: np.ndarray  # (L,) share of the d_ff hidden units ReLU set to exactly 0

    @property
    def matches(self) -> bool:
        return self.layer_gap <= TOLERANCE

    @property
    def normed_length(self) -> float:
        """‖v‖ of any token right after a LayerNorm with γ = 1, β = 0: mean 0 and standard deviation 1
        over d_model entries make the squared length d_model."""
        return math.sqrt(self.d_model)

    @property
    def relu_zero_total(self) -> float:
        return float(self.relu_zero_share.mean())

    def step(self, name: str) -> WalkStep:
        return next(s for s in self.steps if s.name == name)


@torch.no_grad()
def layer_walk(words: list[str], d_model: int, n_heads: int, seed: int = 0, positions: bool = True,
               d_ff: int | None = None) -> LayerWalk:
    """The words' vectors (model.lessons.multihead.sentence_input) through one seeded encoder layer, step by step.
    No words raises UserError."""
    if not words:
        raise UserError("multihead.errors.no_words")
    d_ff = FF_RATIO * d_model if d_ff is None else d_ff
    layer = seeded_encoder_layer(d_model, n_heads, d_ff, seed)
    x = sentence_input(words, d_model, positions)  # (1, L, D)
    a, _, _ = layer.self_attn(x)  # (1, L, D)
    s1 = x + layer.res1.drop(a)  # dropout: identity in eval mode
    n1 = layer.res1.norm(s1)
    h = torch.relu(layer.ffn.w1(n1))  # (1, L, d_ff)
    f = layer.ffn.w2(h)  # (1, L, D)
    s2 = n1 + layer.res2.drop(f)
    y = layer.res2.norm(s2)
    own = layer(x)[0]  # the layer's own forward
    tensors = dict(zip(STEP_IDS, (x, a, s1, n1, h, f, s2, y)))
    return LayerWalk(
        d_model=d_model, n_heads=n_heads, d_ff=d_ff, length=len(words),
        steps=[WalkStep(name, tensors[name]) for name in STEP_IDS],
        layer_gap=float((y - own).abs().max()),
        residual_share={"attention": _share(x[0], s1[0]), "ffn": _share(n1[0], s2[0])},
        relu_zero_share=(h[0] == 0).float().mean(-1).numpy(),
    )
