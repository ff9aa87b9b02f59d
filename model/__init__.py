"""Attention Atlas model package: plain PyTorch, no Streamlit.

The names below load on first use (PEP 562), so `import model.config` and the other torch-free modules
(the corpus, the paper's numbers, the run files) do not import torch: a page that shows no tensor draws
before torch has loaded."""
from __future__ import annotations

import importlib

_WHERE = {
    "MultiHeadAttention": "attention", "scaled_dot_product_attention": "attention",
    "PAPER_PARAMS": "config", "PRESETS": "config", "TransformerConfig": "config",
    "positional_encoding": "layers", "causal_mask": "masks", "padding_mask": "masks", "noam_lr": "schedule",
    "Intermediates": "transformer", "Transformer": "transformer", "TransformerOutput": "transformer",
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
