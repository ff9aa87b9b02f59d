"""The Transformer (Vaswani et al., 2017): encoder-decoder, decoder-only or encoder-only.

Attention leaves the model by return value, never by state kept on modules:
`model(src, tgt, return_attention=True).attention` is an `Intermediates` object."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from model.nn import fast
from model.nn.attention import HeadDetails
from model.nn.config import TransformerConfig, parameter_formula  # noqa: F401 (the count lives beside the config: no torch)
from model.nn.layers import DecoderLayer, Embedding, EncoderLayer, activation, make_norm
from model.nn.masks import as_key_mask

KINDS = ("encoder_self", "decoder_self", "cross")


@dataclass
class Intermediates:
    """Per layer, per kind: attention weights (B, H, L_query, L_key); rows are queries, columns
    keys. `details[kind][layer]` holds per-head q, k, v and pre-softmax scores when asked for."""
    encoder_self: list[torch.Tensor] = field(default_factory=list)
    decoder_self: list[torch.Tensor] = field(default_factory=list)
    cross: list[torch.Tensor] = field(default_factory=list)
    details: dict[str, list[HeadDetails]] = field(default_factory=dict)

    def kinds(self) -> list[str]:
        return [k for k in KINDS if getattr(self, k)]

    def stack(self, kind: str) -> torch.Tensor:
        """(layers, B, H, Lq, Lk) for one kind."""
        return torch.stack(getattr(self, kind))


class ActivationModule(nn.Module):
    def __init__(self, name: str):
        super().__init__()
        self.name, self.fn = name, activation(name)

    def forward(self, x):
        return self.fn(x)


@dataclass
class TransformerOutput:
    logits: torch.Tensor | None  # (B, L_out, vocab); None when forward() was given labels (training)
    attention: Intermediates | None = None
    memory: torch.Tensor | None = None  # encoder output (B, L_src, D)
    loss: torch.Tensor | None = None  # the training loss, when forward() was given labels


class Transformer(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = cfg = config
        token = nn.Embedding(cfg.vocab_size, cfg.d_model)
        nn.init.normal_(token.weight, std=cfg.d_model ** -0.5)
        emb = lambda tok=None: Embedding(cfg.vocab_size, cfg.d_model, cfg.max_len, cfg.positional, cfg.dropout, tok,
                                         cfg=cfg)
        self.src_embed = self.tgt_embed = None
        self.encoder = self.decoder = None
        if cfg.has_encoder:
            self.src_embed = emb(token)
            self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
            self.encoder_norm = make_norm(cfg, cfg.d_model) if cfg.norm_first else nn.Identity()
        if cfg.has_decoder:
            shared = token if (cfg.tie_embeddings or not cfg.has_encoder) else None
            self.tgt_embed = emb(shared)
            if shared is None:
                nn.init.normal_(self.tgt_embed.token.weight, std=cfg.d_model ** -0.5)
            cross = cfg.architecture == "encoder-decoder"
            self.decoder = nn.ModuleList(DecoderLayer(cfg, cross=cross) for _ in range(cfg.n_decoder_layers))
            self.decoder_norm = make_norm(cfg, cfg.d_model) if cfg.norm_first else nn.Identity()
        # Output softmax projection: the shared embedding matrix when tied (section 3.4).
        self.generator = None if (cfg.tie_embeddings or cfg.tie_output) else nn.Linear(cfg.d_model, cfg.vocab_size,
                                                                                        bias=False)
        # Pretrained variants: BERT's masked-LM transform before the output layer; a bias on the logits.
        self.mlm = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_model), ActivationModule(cfg.activation),
                                 nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps)) if cfg.mlm_transform else None
        self.logits_bias = nn.Parameter(torch.zeros(cfg.vocab_size)) if cfg.output_bias else None

    # ------------------------------------------------------------------ helpers
    def num_parameters(self, trainable_only: bool = False) -> int:
        """Counts each tensor once, so a tied embedding is counted once."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def output_weight(self) -> torch.Tensor:
        """(vocab, D): the output projection, the shared embedding matrix when tied (section 3.4)."""
        if self.generator is not None:
            return self.generator.weight
        embed = self.tgt_embed if self.tgt_embed is not None else self.src_embed
        return embed.token.weight

    def project(self, x: torch.Tensor) -> torch.Tensor:
        if self.mlm is not None:
            x = self.mlm(x)
        logits = F.linear(x, self.output_weight())  # (B, L, vocab)
        return logits + self.logits_bias if self.logits_bias is not None else logits

    def output_loss(self, h: torch.Tensor, labels: torch.Tensor, label_smoothing: float | None = None):
        """The training loss of hidden states h (B, L, D): self.loss(self.project(h), labels). Where the fast path
        runs (the CPU), the same value and gradients a block of rows at a time, without the whole logits tensor
        (model/nn/fast/output_loss.py)."""
        if not fast.use("loss", h.device):
            return self.loss(self.project(h), labels, label_smoothing)
        if self.mlm is not None:
            h = self.mlm(h)
        return fast.projected_cross_entropy(h, self.output_weight(), labels, bias=self.logits_bias,
                                            label_smoothing=self._smoothing(label_smoothing),
                                            ignore_index=self.config.pad_id)

    def set_positional(self, enabled: bool) -> None:
        """Turn positional encoding on or off (for the permutation experiment)."""
        for e in (self.src_embed, self.tgt_embed):
            if e is not None:
                e.use_positions = enabled
        for layer in [*(self.encoder or []), *(self.decoder or [])]:  # rotary and ALiBi act inside attention
            layer.self_attn.use_positions = enabled

    # ------------------------------------------------------------------ stacks
    def encode(self, src, src_pad_mask=None, record: Intermediates | None = None, details: bool = False,
               segments=None):
        """src: (B, Ls) ids -> memory (B, Ls, D). src_pad_mask: (B, Ls), True = real token.
        segments: (B, Ls) segment ids (BERT's sentence A = 0 / B = 1; config.segment_vocab > 0)."""
        mask = as_key_mask(src_pad_mask)  # (B, 1, 1, Ls)
        x = self.src_embed(src, segments=segments)  # (B, Ls, D)
        want = record is not None
        for layer in self.encoder:
            x, w, d = layer(x, mask, need_weights=want, need_details=details)
            if want:
                record.encoder_self.append(w)
                if details:
                    record.details.setdefault("encoder_self", []).append(d)
        return self.encoder_norm(x)

    def decode(self, tgt, memory=None, src_pad_mask=None, tgt_pad_mask=None,
               record: Intermediates | None = None, details: bool = False,
               cache: list | None = None, offset: int = 0):
        """tgt: (B, Lt) ids -> hidden states (B, Lt, D). Causal self-attention always; with a
        cache (a list, one dict per layer), tgt holds only the new tokens starting at `offset`."""
        cross_mask = as_key_mask(src_pad_mask)  # (B, 1, 1, Ls)
        self_mask = as_key_mask(tgt_pad_mask)  # (B, 1, 1, Lt) combined with causal inside
        x = self.tgt_embed(tgt, offset)  # (B, Lt, D)
        want = record is not None
        if cache is not None and not cache:
            cache.extend({} for _ in self.decoder)
        for i, layer in enumerate(self.decoder):
            x, (ws, ds), (wc, dc) = layer(x, memory, self_mask, cross_mask, need_weights=want,
                                          need_details=details, cache=cache[i] if cache is not None else None)
            if want:
                record.decoder_self.append(ws)
                if wc is not None:
                    record.cross.append(wc)
                if details:
                    record.details.setdefault("decoder_self", []).append(ds)
                    if dc is not None:
                        record.details.setdefault("cross", []).append(dc)
        return self.decoder_norm(x)

    def forward(self, src, tgt=None, *, src_pad_mask=None, tgt_pad_mask=None,
                return_attention: bool = False, return_details: bool = False, segments=None,
                labels=None, label_smoothing: float | None = None) -> TransformerOutput:
        """encoder-decoder: src (B, Ls), tgt (B, Lt) -> logits (B, Lt, vocab).
        decoder-only: the sequence is `tgt` if given, else `src`; its mask likewise.
        encoder-only: src (B, Ls) -> logits (B, Ls, vocab).
        segments: (B, Ls) segment ids of the encoder's input, for models with segment embeddings (BERT).
        labels: the targets of the output positions (B, L_out): the output then holds the training loss,
        self.loss(logits, labels, label_smoothing) (self.output_loss), and no logits."""
        if segments is not None and (self.src_embed is None or self.src_embed.segment is None):
            raise ValueError("segments given, but this model has no segment embeddings (config.segment_vocab = 0)")
        record = Intermediates() if (return_attention or return_details) else None
        arch = self.config.architecture
        memory = None
        if arch == "encoder-decoder":
            if tgt is None:
                raise ValueError("an encoder-decoder model needs tgt")
            memory = self.encode(src, src_pad_mask, record, return_details, segments)
            h = self.decode(tgt, memory, src_pad_mask, tgt_pad_mask, record, return_details)
        elif arch == "decoder-only":
            seq = tgt if tgt is not None else src
            mask = tgt_pad_mask if tgt is not None else src_pad_mask
            h = self.decode(seq, None, None, mask, record, return_details)
        else:
            h = memory = self.encode(src, src_pad_mask, record, return_details, segments)
        if labels is not None:
            return TransformerOutput(None, record, memory, self.output_loss(h, labels, label_smoothing))
        return TransformerOutput(self.project(h), record, memory)

    def loss(self, logits: torch.Tensor, target: torch.Tensor, label_smoothing: float | None = None):
        """Cross-entropy with label smoothing (section 5.4), ignoring padding."""
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1),
                               ignore_index=self.config.pad_id, label_smoothing=self._smoothing(label_smoothing))

    def _smoothing(self, label_smoothing: float | None) -> float:
        return self.config.label_smoothing if label_smoothing is None else label_smoothing


def count_parameters(config: TransformerConfig) -> int:
    """Parameters of the model a config describes, counted on PyTorch's meta device: exact, and no
    memory is allocated (even the paper's big model counts instantly)."""
    with torch.device("meta"):
        return Transformer(config).num_parameters()
