"""How a model differs from the paper's Transformer, in words: one `Message` per difference that
`TransformerConfig.differences_from_paper()` names, in the paper's order (layers, attention, feed-forward,
embeddings and positions, output). The words live in the catalogue namespace `differences`
(app/locales/<lang>/differences.toml); the app shows them with `say`, `python -m model.hub check` prints them.

Placeholders in that namespace use Python format specs only ({theta:,.0f}, {eps:g}), so the catalogue reads the
same through the app's `fill` and through `str.format` (the command line runs without the app)."""
from __future__ import annotations

from model.messages import Message
from model.nn.config import TransformerConfig

ACTIVATION_NAMES = {"relu": "ReLU", "gelu": "GELU", "gelu_tanh": "GELU (tanh)", "swish": "Swish (SiLU)"}
GATED_NAMES = {"relu": "ReGLU", "gelu": "GeGLU", "gelu_tanh": "GeGLU (tanh)", "swish": "SwiGLU"}


def differences_in_words(cfg: TransformerConfig) -> list[Message]:
    """Every difference from the paper as a Message `differences.<what>`; [] for the paper's Transformer.
    Sizes (d_model, heads, layers, vocabulary) are not differences; per-head sizes other than d_model / h are."""
    diff = cfg.differences_from_paper()
    out: list[Message] = []

    def say(code: str, **args) -> None:
        out.append(Message(f"differences.{code}", args))

    # each sublayer: normalisation
    if "norm_first" in diff:
        say("norm_first")
    if "norm" in diff:
        say("rmsnorm")
    if "norm_eps" in diff:
        say("norm_eps", eps=cfg.norm_eps)
    # attention
    if "n_kv_heads" in diff:
        if cfg.kv_heads == 1:
            say("multi_query", heads=cfg.n_heads)
        else:
            say("grouped_query", heads=cfg.n_heads, kv=cfg.kv_heads, group=cfg.n_heads // cfg.kv_heads)
    for name in ("d_k", "d_v"):
        if name in diff:
            say(name, value=diff[name], paper=cfg.d_model // cfg.n_heads)
    if "window" in diff:
        say("window_causal" if cfg.has_decoder else "window", window=cfg.window)
    if "global_tokens" in diff:
        say("global_tokens", n=cfg.global_tokens)
    if cfg.attention_impl == "blockwise":
        say("blockwise", block=cfg.attn_block)
    elif cfg.attention_impl == "linformer":
        say("linformer", k=cfg.linformer_k)
    if "qkv_bias" in diff:
        say("no_qkv_bias")
    if "attn_out_bias" in diff:
        say("no_attn_out_bias")
    # feed-forward
    if "ffn_gated" in diff:
        say("gated", name=GATED_NAMES[cfg.activation])
    elif "activation" in diff:
        say("activation", name=ACTIVATION_NAMES[cfg.activation])
    if "ffn_bias" in diff:
        say("no_ffn_bias")
    # embeddings and positions
    if "embed_scale" in diff:
        say("no_embed_scale")
    if "segment_vocab" in diff:
        say("segments", n=cfg.segment_vocab)
    if "embed_norm" in diff:
        say("embed_norm")
    if cfg.positional == "learned":
        say("learned_positions")
    elif cfg.positional == "rotary":
        say("rotary", theta=cfg.rope_theta)
        if "rotary_dim" in diff:
            say("rotary_dim", dim=cfg.rotary_dim, head=cfg.head_k)
    elif cfg.positional == "alibi":
        say("alibi")
    elif "pe_layout" in diff:
        say("pe_halves")
    # output
    if "mlm_transform" in diff:
        say("mlm_transform")
    if "output_bias" in diff:
        say("output_bias")
    if "tie_embeddings" in diff:
        if not cfg.has_encoder:
            say("untied_output")
        else:
            say("tie_output" if cfg.tie_output else "untied")
    return out
