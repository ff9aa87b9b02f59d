"""Cached, server-wide resources (one copy per Streamlit server, not per rerun)."""
from __future__ import annotations

import streamlit as st
import torch

from model.config import PRESETS, TransformerConfig
from model.device import best_device, describe_device


@st.cache_resource(show_spinner=False)
def device_description() -> str:
    return describe_device(best_device())


@st.cache_data(show_spinner=False)
def parameter_count(config_dict: dict) -> int:
    """Count parameters on the meta device: no memory is allocated, the count is exact."""
    from model.transformer import Transformer
    with torch.device("meta"):
        return Transformer(TransformerConfig.from_dict(config_dict)).num_parameters()


def preset_parameter_count(name: str) -> int:
    return parameter_count(PRESETS[name].to_dict())
