"""Attention Atlas model package: plain PyTorch, no Streamlit."""
from .attention import MultiHeadAttention, scaled_dot_product_attention
from .config import PAPER_PARAMS, PRESETS, TransformerConfig
from .layers import positional_encoding
from .masks import causal_mask, padding_mask
from .schedule import noam_lr
from .transformer import Intermediates, Transformer, TransformerOutput

__all__ = [
    "TransformerConfig", "PRESETS", "PAPER_PARAMS", "Transformer", "TransformerOutput", "Intermediates",
    "MultiHeadAttention", "scaled_dot_product_attention", "positional_encoding", "causal_mask",
    "padding_mask", "noam_lr",
]
