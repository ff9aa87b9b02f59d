"""The decoder-only member (GPT-style): the shipped `lm` read as GPT reads text — a causal mask, and the
output head predicting the next token at every position. No new model: the family page shows the
existing Transformer(architecture="decoder-only") next to the encoder-only one."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.messages import UserError

MAX_TOKENS = 24  # the figure stays readable; the model itself takes up to its max_len


@dataclass
class NextTokenView:
    pieces: list[str]                 # the context, one label per token (the attention axes)
    top: list[tuple[str, float]]      # the most probable next pieces, best first
    attention: np.ndarray             # (layers, heads, T, T) causal self-attention of the context
    truncated: bool                   # the text had more than MAX_TOKENS tokens (the last ones are kept)


def next_token_view(loaded, text: str, k: int = 8) -> NextTokenView:
    """The next-token distribution of a decoder-only LoadedModel after `text`, and every head's map.
    UserError "family_gpt.errors.empty" for text with no tokens."""
    from model.inference.decode import lm_next_token, top_candidates
    tok, model = loaded.tokenizer, loaded.model
    ids = tok.encode((text or "").strip())
    if not ids:
        raise UserError("family_gpt.errors.empty")
    truncated = len(ids) > MAX_TOKENS
    ids = [tok.bos_id] + ids[-MAX_TOKENS:]
    probs, att = lm_next_token(model, ids)
    top = [(tok.id_to_piece(i), p) for i, p in top_candidates(probs, k)]
    weights = att.stack("decoder_self")[:, 0].float().cpu().numpy()  # (layers, heads, T, T)
    return NextTokenView([tok.id_to_piece(i) for i in ids], top, weights, truncated)


def future_weight(weights: np.ndarray) -> float:
    """The largest attention weight any query gives to a later position (0.0 under a causal mask)."""
    T = weights.shape[-1]
    return float(np.max(weights[..., np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]], initial=0.0))
