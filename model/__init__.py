"""Attention Atlas model package: plain PyTorch, no Streamlit.

The names below load on first use (PEP 562), so `import model.nn.config` and the other torch-free modules
(the corpus, the paper's numbers, the run files) do not import torch: a page that shows no tensor draws
before torch has loaded."""
from __future__ import annotations

import importlib

_WHERE = {
    "MultiHeadAttention": "nn.attention", "scaled_dot_product_attention": "nn.attention",
    "PAPER_PARAMS": "nn.config", "PRESETS": "nn.config", "TransformerConfig": "nn.config",
    "positional_encoding": "nn.layers", "causal_mask": "nn.masks", "padding_mask": "nn.masks", "noam_lr": "training.schedule",
    "Intermediates": "nn.transformer", "Transformer": "nn.transformer", "TransformerOutput": "nn.transformer",
}

__all__ = [
    "TransformerConfig", "PRESETS", "PAPER_PARAMS", "Transformer", "TransformerOutput", "Intermediates",
    "MultiHeadAttention", "scaled_dot_product_attention", "positional_encoding", "causal_mask",
    "padding_mask", "noam_lr",
]


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
