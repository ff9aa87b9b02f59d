"""Configurations: one frozen dataclass, plus the paper's presets (Table 3)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

ARCHITECTURES = ("encoder-decoder", "decoder-only", "encoder-only")
POSITIONALS = ("sinusoidal", "learned")


@dataclass(frozen=True)
class TransformerConfig:
    vocab_size: int = 37000
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    dropout: float = 0.1
    max_len: int = 512
    architecture: str = "encoder-decoder"
    norm_first: bool = False  # False = post-LN, as in the paper: x = LN(x + Sublayer(x))
    positional: str = "sinusoidal"
    tie_embeddings: bool = True  # section 3.4: one matrix for both embeddings and the softmax
    label_smoothing: float = 0.1
    pad_id: int = 0

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {self.architecture!r}")
        if self.positional not in POSITIONALS:
            raise ValueError(f"positional must be one of {POSITIONALS}, got {self.positional!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError("dropout must be in [0, 1)")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError("label_smoothing must be in [0, 1)")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def has_encoder(self) -> bool:
        return self.architecture in ("encoder-decoder", "encoder-only")

    @property
    def has_decoder(self) -> bool:
        return self.architecture in ("encoder-decoder", "decoder-only")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TransformerConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown config keys: {sorted(unknown)}")
        return cls(**d)

    def replace(self, **changes) -> "TransformerConfig":
        return dataclasses.replace(self, **changes)


# The paper's two models (Table 3), with the shared 37,000-token BPE vocabulary of WMT14 En-De.
PRESETS: dict[str, TransformerConfig] = {
    "paper_base": TransformerConfig(
        vocab_size=37000, d_model=512, n_heads=8, d_ff=2048,
        n_encoder_layers=6, n_decoder_layers=6, dropout=0.1, label_smoothing=0.1,
    ),
    "paper_big": TransformerConfig(
        vocab_size=37000, d_model=1024, n_heads=16, d_ff=4096,
        n_encoder_layers=6, n_decoder_layers=6, dropout=0.3, label_smoothing=0.1,
    ),
    # Small enough to train on a 2-core CPU in minutes; the shipped teaching models use it.
    "teaching": TransformerConfig(
        vocab_size=1000, d_model=128, n_heads=4, d_ff=512,
        n_encoder_layers=2, n_decoder_layers=2, dropout=0.1, max_len=128,
    ),
    "tiny": TransformerConfig(
        vocab_size=64, d_model=64, n_heads=4, d_ff=128,
        n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, max_len=64,
    ),
}

# Parameter counts printed in Table 3 of the paper, for comparison in the app.
PAPER_PARAMS = {"paper_base": 65_000_000, "paper_big": 213_000_000}
