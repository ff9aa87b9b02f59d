"""Configurations: one frozen dataclass, plus the paper's presets (Table 3)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

ARCHITECTURES = ("encoder-decoder", "decoder-only", "encoder-only")
POSITIONALS = ("sinusoidal", "learned", "rotary", "alibi")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "swish")
PE_LAYOUTS = ("interleaved", "halves")
NORMS = ("layernorm", "rmsnorm")
ATTENTION_IMPLS = ("full", "blockwise", "linformer")  # full: the paper's; the others in model/nn/efficient.py

# The options after `pad_id` are the ways real pretrained Transformers differ from the paper's. Each
# default is the paper's choice, so a config that does not name them is the paper's Transformer.
PAPER_CHOICES = {"activation": "relu", "pe_layout": "interleaved", "embed_scale": True, "norm_eps": 1e-5,
                 "output_bias": False, "segment_vocab": 0, "embed_norm": False, "mlm_transform": False,
                 "norm": "layernorm", "ffn_gated": False, "ffn_bias": True, "qkv_bias": True, "attn_out_bias": True}


def from_known_dict(cls, d: dict):
    """A config dataclass from its to_dict(): ValueError naming any key the class does not have (a config
    written for another model), instead of a TypeError from the constructor."""
    if not isinstance(d, dict):
        raise ValueError(f"a configuration is a JSON object, got {type(d).__name__}")
    unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise ValueError(f"unknown config keys: {sorted(unknown)}")
    return cls(**d)


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
    positional: str = "sinusoidal"  # added sinusoids (paper), learned table, or inside attention: rotary, alibi
    tie_embeddings: bool = True  # section 3.4: one matrix for both embeddings and the softmax
    label_smoothing: float = 0.1
    pad_id: int = 0
    # --- where pretrained models differ from the paper (defaults: the paper) ---
    activation: str = "relu"        # FFN non-linearity: relu (paper), gelu (BERT), gelu_tanh (GPT-2), swish (Marian)
    pe_layout: str = "interleaved"  # sinusoids as sin,cos,sin,cos… (paper) or [all sin | all cos] halves (Marian)
    embed_scale: bool = True        # multiply token embeddings by sqrt(d_model) (paper 3.4); GPT-2 and BERT don't
    norm_eps: float = 1e-5          # LayerNorm epsilon (BERT: 1e-12)
    output_bias: bool = False       # a bias added to the output logits (Marian's final_logits_bias, BERT's MLM bias)
    segment_vocab: int = 0          # BERT's segment (token type) embeddings; 0 = none
    embed_norm: bool = False        # a LayerNorm right after embeddings + positions (BERT)
    mlm_transform: bool = False     # BERT's masked-LM head: dense -> activation -> LayerNorm before the output layer
    tie_output: bool = False        # with tie_embeddings=False: the output layer still reuses the TARGET embedding
                                    # (Marian models with separate source / target vocabularies, e.g. opus-mt-tc-big)
    # --- since the paper (defaults: the paper; model/nn/positions.py, attention.py, layers.py) ---
    norm: str = "layernorm"         # or "rmsnorm" (Llama): no mean subtracted, no bias; its eps is norm_eps
    ffn_gated: bool = False         # FFN = (act(x W_gate) * x W1) W2: SwiGLU with swish (Llama), GeGLU with gelu
    ffn_bias: bool = True           # biases of the FFN's matrices (Llama: none)
    qkv_bias: bool = True           # biases of W^Q, W^K, W^V (Llama: none; Qwen2: kept)
    attn_out_bias: bool = True      # bias of W^O (Llama, Qwen2: none)
    n_kv_heads: int | None = None   # key/value heads: None = n_heads (paper); fewer = grouped-query, 1 = multi-query
    window: int | None = None       # sliding window: a query sees keys fewer than `window` positions away
                                    # (decoder: its last `window` keys, itself included, as Mistral); None = all
    rope_theta: float = 10000.0     # rotary positions: the base of the frequencies 1 / theta^(2i/d)
    rotary_dim: int | None = None   # rotary positions: how many of each head's d_k coordinates turn; None = all
    global_tokens: int = 0          # with `window`: the first positions see and are seen by all (Longformer)
    attention_impl: str = "full"    # "full" (paper), "blockwise" (exact, attn_block keys at a time: FlashAttention's
                                    # idea), "linformer" (encoder keys/values projected to linformer_k rows)
    attn_block: int = 64            # blockwise: keys per block (the largest temporary is n x attn_block)
    linformer_k: int | None = None  # linformer: rows the n keys and values are projected to
    # --- per-head sizes (Table 3, rows A and B); None = d_model / n_heads, the paper's choice ---
    d_k: int | None = None          # size of each head's queries and keys
    d_v: int | None = None          # size of each head's values (the heads' outputs, concatenated: n_heads * d_v)

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {self.architecture!r}")
        if self.positional not in POSITIONALS:
            raise ValueError(f"positional must be one of {POSITIONALS}, got {self.positional!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.pe_layout not in PE_LAYOUTS:
            raise ValueError(f"pe_layout must be one of {PE_LAYOUTS}, got {self.pe_layout!r}")
        if not 0.0 < self.norm_eps < 1.0 or self.segment_vocab < 0:
            raise ValueError("norm_eps must be in (0, 1) and segment_vocab >= 0")
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        for name in ("d_k", "d_v"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                raise ValueError(f"{name} must be a positive integer or null (= d_model / n_heads), got {value!r}")
        if (self.d_k is None or self.d_v is None) and self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}) "
                             "unless d_k and d_v are both given")
        self._check_since_the_paper()
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError("dropout must be in [0, 1)")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError("label_smoothing must be in [0, 1)")

    def _check_since_the_paper(self) -> None:
        """The options real models added after the paper, each checked on its own with the value it got."""
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        for name in ("ffn_gated", "ffn_bias", "qkv_bias", "attn_out_bias"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        for name in ("n_kv_heads", "window", "rotary_dim"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{name} must be a positive integer or null, got {value!r}")
        if self.n_kv_heads is not None and self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must divide n_heads ({self.n_heads}): "
                             "each key/value head serves a whole group of query heads")
        theta = self.rope_theta
        if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not 1.0 < theta < float("inf"):
            raise ValueError(f"rope_theta must be a finite number above 1, got {theta!r}")
        if self.rotary_dim is not None:
            head_k = self.d_k if self.d_k is not None else self.d_model // self.n_heads
            if self.rotary_dim % 2 or self.rotary_dim > head_k:
                raise ValueError(f"rotary_dim must be even and at most the head size d_k ({head_k}), "
                                 f"got {self.rotary_dim}")
        self._check_attention_impl()
        if self.positional == "rotary" and self.head_k % 2:
            raise ValueError(f"rotary positions turn pairs of coordinates: d_k must be even, got {self.head_k}")

    def _check_attention_impl(self) -> None:
        """The answers to attention's quadratic cost (model/nn/efficient.py), each with the value it got."""
        if self.attention_impl not in ATTENTION_IMPLS:
            raise ValueError(f"attention_impl must be one of {ATTENTION_IMPLS}, got {self.attention_impl!r}")
        for name in ("attn_block", "global_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < (1 if name == "attn_block" else 0):
                raise ValueError(f"{name} must be a {'positive' if name == 'attn_block' else 'non-negative'} "
                                 f"integer, got {value!r}")
        if self.global_tokens and self.window is None:
            raise ValueError(f"global_tokens ({self.global_tokens}) need a sliding window: set window")
        if self.attention_impl == "linformer":
            k = self.linformer_k
            if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= self.max_len:
                raise ValueError(f"linformer_k must be an integer from 1 to max_len ({self.max_len}), got {k!r}")
            if not self.has_encoder:
                raise ValueError("linformer projects an encoder's keys and values (every position, the future too): "
                                 f"a {self.architecture} model has no encoder")
        elif self.linformer_k is not None:
            raise ValueError(f"linformer_k ({self.linformer_k}) is for attention_impl 'linformer', "
                             f"got {self.attention_impl!r}")

    @property
    def kv_heads(self) -> int:
        """The number of key/value heads (n_heads unless grouped-query attention)."""
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    @property
    def head_k(self) -> int:
        """d_k: each head's query and key size (d_model / n_heads unless set)."""
        return self.d_k if self.d_k is not None else self.d_model // self.n_heads

    @property
    def head_v(self) -> int:
        """d_v: each head's value size (d_model / n_heads unless set)."""
        return self.d_v if self.d_v is not None else self.d_model // self.n_heads

    @property
    def d_head(self) -> int:
        """The head size when d_k = d_v (the paper's models); d_k otherwise."""
        return self.head_k

    @property
    def has_encoder(self) -> bool:
        return self.architecture in ("encoder-decoder", "encoder-only")

    @property
    def has_decoder(self) -> bool:
        return self.architecture in ("encoder-decoder", "decoder-only")

    def differences_from_paper(self) -> dict:
        """{option: value} for every option where this model is not the paper's Transformer (besides sizes):
        norm placement, positions, activation, embedding scale, biases, segments, … ."""
        out = {name: getattr(self, name) for name, paper in PAPER_CHOICES.items() if getattr(self, name) != paper}
        if self.norm_first:
            out["norm_first"] = True
        if self.positional != "sinusoidal":
            out["positional"] = self.positional
        if self.positional == "rotary":
            out["rope_theta"] = self.rope_theta
            if self.rotary_dim is not None and self.rotary_dim != self.head_k:
                out["rotary_dim"] = self.rotary_dim
        if self.kv_heads != self.n_heads:
            out["n_kv_heads"] = self.n_kv_heads
        if self.window is not None:
            out["window"] = self.window
        if self.global_tokens:
            out["global_tokens"] = self.global_tokens
        if self.attention_impl != "full":
            out["attention_impl"] = self.attention_impl
            if self.attention_impl == "blockwise":
                out["attn_block"] = self.attn_block
            if self.attention_impl == "linformer":
                out["linformer_k"] = self.linformer_k
        for name in ("d_k", "d_v"):
            if getattr(self, name) is not None and getattr(self, name) != self.d_model // self.n_heads:
                out[name] = getattr(self, name)
        if not self.tie_embeddings:
            out["tie_embeddings"] = False
            if self.tie_output:
                out["tie_output"] = True
        return out

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TransformerConfig":
        return from_known_dict(cls, d)

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


def parameter_formula(cfg: TransformerConfig) -> int:
    """The parameter count of `Transformer(cfg)` written out term by term (no model is built and torch is
    not needed, so it is instant; tests/model/test_table3.py checks it against `count_parameters` for every row of Table 3).

    Per attention: W^Q (d_model x h d_k), W^K (d_model x h_kv d_k), W^V (d_model x h_kv d_v), W^O (h d_v x
    d_model), with biases (h_kv = h unless grouped-query). Per feed-forward: W1 (d_model x d_ff), W2 (d_ff x
    d_model), with biases, and a gate like W1 when gated. Per LayerNorm: 2 d_model (RMSNorm: d_model)."""
    D, h, dk, dv, ff, g = cfg.d_model, cfg.n_heads, cfg.head_k, cfg.head_v, cfg.d_ff, cfg.kv_heads
    ln = D if cfg.norm == "rmsnorm" else 2 * D
    q_k_v = D * (h * dk + g * dk + g * dv) + (h * dk + g * dk + g * dv) * cfg.qkv_bias
    attention = q_k_v + h * dv * D + D * cfg.attn_out_bias
    ffn = (3 if cfg.ffn_gated else 2) * D * ff + ((2 if cfg.ffn_gated else 1) * ff + D) * cfg.ffn_bias
    total = 0
    embeddings = 0  # token tables
    if cfg.has_encoder:
        embeddings += 1
        total += cfg.n_encoder_layers * (attention + ffn + 2 * ln) + (ln if cfg.norm_first else 0)
    if cfg.has_decoder:
        cross = cfg.architecture == "encoder-decoder"
        if not cfg.has_encoder or not cfg.tie_embeddings:
            embeddings += 1  # decoder-only: its one table; encoder-decoder untied: a separate target table
        total += cfg.n_decoder_layers * ((2 if cross else 1) * attention + ffn + (3 if cross else 2) * ln)
        total += ln if cfg.norm_first else 0
    tables = (1 if cfg.has_encoder else 0) + (1 if cfg.has_decoder else 0)
    total += embeddings * cfg.vocab_size * D
    if cfg.positional == "learned":
        total += tables * cfg.max_len * D
    if cfg.attention_impl == "linformer":
        total += cfg.n_encoder_layers * 2 * cfg.linformer_k * cfg.max_len  # E and F of each encoder layer
    if cfg.segment_vocab:
        total += tables * cfg.segment_vocab * D
    if cfg.embed_norm:
        total += tables * ln
    if not (cfg.tie_embeddings or cfg.tie_output):
        total += D * cfg.vocab_size  # the output layer (no bias)
    if cfg.mlm_transform:
        total += D * D + D + 2 * D  # its LayerNorm is always one
    if cfg.output_bias:
        total += cfg.vocab_size
    return total
