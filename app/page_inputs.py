"""The inputs of the pages that others read (the guided tour, links into a page), declared once: each input's
session key, its name in the page's link and how the link writes its value. A page draws such an input with
`**ATTENTION.dk.keep(64, valid=...)` (app.state.keep with the declared key, link name and codec); the tour sets
and reads the same declaration, so renaming a key or a link name is one edit here. `SECTIONS` are the anchors of
the page sections the tour opens a page at (st.header(..., anchor=...))."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.state import OneBased, between, decode, encode


class Positions:
    """Token positions in a link: `mlm_masked=4,11` (0 is [CLS], so the first word is 1)."""

    @staticmethod
    def encode(value) -> str:
        return ",".join(str(int(v)) for v in value)

    @staticmethod
    def decode(text: str, default) -> list[int]:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if len(parts) > 64 or not all(p.isdigit() and len(p) < 4 for p in parts):
            raise ValueError(text)
        return sorted({int(p) for p in parts})


@dataclass(frozen=True)
class Input:
    """One input of a page: `key` in st.session_state, `url` its name in the page's link, `codec` how the link
    writes it (None: by the value's type, app.state.encode); `valid` what it may hold where that never changes
    (keep's `valid=`; a page passes its own where it depends on what the page shows). `tab`: an open_tabs group
    (its value a tab's name)."""
    key: str
    url: str
    codec: Any = None
    valid: Any = None
    tab: bool = False

    def keep(self, default: Any, **kwargs) -> dict:
        """app.state.keep for this input: the widget's keyword arguments."""
        from app.state import keep
        kwargs.setdefault("valid", self.valid)
        return keep(self.key, default, url=self.url, codec=self.codec, **kwargs)

    def encode(self, value: Any) -> str:
        return self.codec.encode(value) if self.codec else encode(value)

    def decode(self, text: str, like: Any) -> Any:
        """A link's text as a value shaped like `like` (ValueError when it is not one)."""
        return self.codec.decode(text, like) if self.codec else decode(text, like)


class ATTENTION:
    q, k, v = Input("att_q", "q"), Input("att_k", "k"), Input("att_v", "v")
    tokens_q, tokens_k = Input("att_tokens_q", "tokens_q"), Input("att_tokens_k", "tokens_k")
    causal = Input("att_causal", "causal")
    row, col = Input("att_row", "row", OneBased), Input("att_col", "col", OneBased)
    dk, dk_seed = Input("att_dk", "dk", valid=range(1, 513)), Input("att_dk_seed", "dk_seed", valid=range(10_001))


def _d_choices():
    from model.lessons.multihead import D_CHOICES  # torch: imported when a link is read, not with this module
    return D_CHOICES


class MULTIHEAD:
    sentence, heads = Input("mh_sentence", "sentence"), Input("mh_h", "heads")
    d_model = Input("mh_d", "d_model", valid=lambda v: v in _d_choices())  # the page passes the choices themselves
    seed, positions = Input("mh_seed", "seed", valid=range(10_001)), Input("mh_pe", "positions")


class MASKS:
    model, src, tgt = Input("mask_model", "model"), Input("kind_src", "src"), Input("kind_tgt", "tgt")
    kind, layer, head = Input("kind", "kind"), Input("kind_layer", "layer"), Input("kind_head", "kind_head")


class POSITIONAL:
    length, d_model = Input("pe_len", "length", valid=range(8, 513)), Input("pe_d", "d_model", valid=range(4, 513, 4))
    anchor = Input("pe_anchor", "anchor")


class RECIPE:
    d_model = Input("sch_d", "d_model", valid=range(64, 2049, 64))
    warmup = Input("sch_w", "warmup", valid=range(100, 20_001, 100))
    eps, vocab = Input("ls_eps", "eps", valid=between(0.0, 0.5)), Input("ls_V", "vocab", valid=range(2, 50_001))


class INSPECTOR:
    model, text = Input("insp_model", "model"), Input("insp_text", "text")
    method, beam = Input("insp_method", "decoding"), Input("insp_beam", "beam", valid=range(2, 9))
    tab = Input("insp_tab", "tab", tab=True)
    step, step_layer = Input("insp_step", "step"), Input("insp_step_layer", "step_layer", OneBased)


class STUDY:
    source, group = Input("study_source", "source"), Input("study_group", "factor")
    metric = Input("study_metric", "metric", valid=("perplexity", "exact_match"))


class FAMILY:
    member = Input("fam_member", "member")
    mlm_text, mlm_pair = Input("fam_mlm_text", "mlm_text"), Input("fam_mlm_pair", "mlm_pair")
    mlm_masked = Input("fam_mlm_masked", "mlm_masked", Positions)


class LIMITS:
    n, d, heads = Input("lim_n", "n"), Input("lim_d", "d"), Input("lim_heads", "heads")
    block, window = Input("lim_block", "block", valid=range(16, 513, 16)), Input("lim_window", "window", valid=range(2, 257))
    global_tokens, k = Input("lim_global", "global", valid=range(9)), Input("lim_k", "k", valid=range(8, 257, 8))
    sentence, steps = Input("lim_sentence", "sentence"), Input("lim_steps", "steps", valid=range(4, 64))


# the sections a tour stop opens its page at: {name: the header's anchor}
SECTIONS = {"attention.stages": "attention-stages", "attention.scaling": "attention-scaling",
            "multihead.maps": "multihead-maps", "multihead.layer": "multihead-layer",
            "masks.kinds": "masks-kinds", "positional.dot": "positional-dot",
            "recipe.schedule": "recipe-schedule", "recipe.smoothing": "recipe-smoothing",
            "inspector.attention": "inspector-attention", "study.factor": "study-factor",
            "family.mlm": "family-mlm", "limits.cost": "limits-cost", "limits.decode": "limits-decode",
            "limits.lengths": "limits-lengths"}
