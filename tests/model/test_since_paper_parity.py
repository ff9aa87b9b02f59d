"""The since-the-paper options against transformers' own Llama, Mistral and Qwen2 (test-only oracle, offline):
a tiny random model of each is built from a config, its state dict mapped onto ours BY HAND here (no importer
involved), and our logits held within 1e-4 and every attention map within 1e-5. Grouped-query attention
(8 query heads on 2 key/value heads), RoPE with Llama 3's theta, RMSNorm, SwiGLU, a sliding window shorter than
the sentence (Mistral), q/k/v biases without an output bias and tied embeddings (Qwen2), untied output (Llama)."""
import pytest
import torch

from model import Transformer, TransformerConfig

transformers = pytest.importorskip("transformers")

D, HEADS, KV_HEADS, FF, LAYERS, VOCAB, LENGTH = 64, 8, 2, 96, 2, 120, 13


def _hf_model(family: str):
    common = dict(vocab_size=VOCAB, hidden_size=D, intermediate_size=FF, num_hidden_layers=LAYERS,
                  num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=64,
                  rms_norm_eps=1e-6, hidden_act="silu", attn_implementation="eager")
    if family == "llama":
        cfg = transformers.LlamaConfig(rope_theta=500000.0, tie_word_embeddings=False, **common)
        cls = transformers.LlamaForCausalLM
    elif family == "mistral":
        cfg = transformers.MistralConfig(rope_theta=10000.0, sliding_window=5, tie_word_embeddings=False, **common)
        cls = transformers.MistralForCausalLM
    else:
        cfg = transformers.Qwen2Config(rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False,
                                       **common)
        cls = transformers.Qwen2ForCausalLM
    torch.manual_seed(0)
    model = cls(cfg).eval()
    with torch.no_grad():  # large weights, so attention is far from uniform and every map is a real test
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.5 * torch.randn_like(p))
            elif any(k in name for k in ("q_proj", "k_proj")):
                p.copy_(0.4 * torch.randn_like(p))
    return model, cfg


def _ours(family: str, hf_cfg) -> TransformerConfig:
    """Llama-family config -> ours: every difference from the paper a named option."""
    return TransformerConfig(
        vocab_size=VOCAB, d_model=D, n_heads=HEADS, d_ff=FF, n_encoder_layers=0, n_decoder_layers=LAYERS,
        dropout=0.0, max_len=64, architecture="decoder-only", norm_first=True, label_smoothing=0.0,
        norm="rmsnorm", norm_eps=hf_cfg.rms_norm_eps, activation="swish", ffn_gated=True, ffn_bias=False,
        qkv_bias=family == "qwen2", attn_out_bias=False, positional="rotary", rope_theta=hf_cfg.rope_parameters["rope_theta"],
        n_kv_heads=KV_HEADS, embed_scale=False, tie_embeddings=family == "qwen2",
        window=hf_cfg.sliding_window if family == "mistral" else None)


def _map_weights(hf_state: dict, cfg: TransformerConfig) -> dict:
    out = {"tgt_embed.token.weight": hf_state["model.embed_tokens.weight"],
           "decoder_norm.weight": hf_state["model.norm.weight"]}
    if not cfg.tie_embeddings:
        out["generator.weight"] = hf_state["lm_head.weight"]
    for i in range(cfg.n_decoder_layers):
        hf, me = f"model.layers.{i}", f"decoder.{i}"
        for kind in ("weight", "bias") if cfg.qkv_bias else ("weight",):
            out[f"{me}.self_attn.qkv.{kind}"] = torch.cat([hf_state[f"{hf}.self_attn.{p}_proj.{kind}"] for p in "qkv"])
        out[f"{me}.self_attn.out.weight"] = hf_state[f"{hf}.self_attn.o_proj.weight"]
        out[f"{me}.res1.norm.weight"] = hf_state[f"{hf}.input_layernorm.weight"]
        out[f"{me}.res3.norm.weight"] = hf_state[f"{hf}.post_attention_layernorm.weight"]
        out[f"{me}.ffn.gate.weight"] = hf_state[f"{hf}.mlp.gate_proj.weight"]
        out[f"{me}.ffn.w1.weight"] = hf_state[f"{hf}.mlp.up_proj.weight"]
        out[f"{me}.ffn.w2.weight"] = hf_state[f"{hf}.mlp.down_proj.weight"]
    return out


@pytest.mark.parametrize("family", ["llama", "mistral", "qwen2"])
def test_llama_family_through_our_options_equals_transformers(family):
    hf_model, hf_cfg = _hf_model(family)
    cfg = _ours(family, hf_cfg)
    ours = Transformer(cfg).eval()
    ours.load_state_dict(_map_weights(hf_model.state_dict(), cfg), strict=True)
    assert ours.num_parameters() == hf_model.num_parameters()
    ids = torch.randint(0, VOCAB, (2, LENGTH), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = hf_model(ids, output_attentions=True)
        plain = ours(ids, return_attention=True)
        fused = ours(ids).logits
    torch.testing.assert_close(plain.logits, ref.logits, atol=1e-4, rtol=0)
    torch.testing.assert_close(fused, ref.logits, atol=1e-4, rtol=0)
    assert len(ref.attentions) == len(plain.attention.decoder_self) == LAYERS
    for theirs, mine in zip(ref.attentions, plain.attention.decoder_self):
        assert mine.shape == (2, HEADS, LENGTH, LENGTH)
        torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=0)
        assert mine.max() > 0.5  # far from uniform: the maps test something
    if family == "mistral":  # the window is shorter than the sentence: keys further back get nothing
        assert torch.all(plain.attention.decoder_self[0][..., LENGTH - 1, : LENGTH - 5] == 0)


@pytest.mark.parametrize("family", ["llama", "mistral"])
def test_cached_greedy_decoding_equals_transformers(family):
    """Token by token with our KV cache (RoPE at each new position, the window over cached keys) against
    transformers' logits of the whole sequence."""
    hf_model, hf_cfg = _hf_model(family)
    cfg = _ours(family, hf_cfg)
    ours = Transformer(cfg).eval()
    ours.load_state_dict(_map_weights(hf_model.state_dict(), cfg))
    ids = torch.randint(0, VOCAB, (1, 11), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = hf_model(ids).logits
        cache, steps = [], []
        for t in range(ids.size(1)):
            steps.append(ours.project(ours.decode(ids[:, t:t + 1], cache=cache, offset=t)))
    torch.testing.assert_close(torch.cat(steps, 1), ref, atol=1e-4, rtol=0)
