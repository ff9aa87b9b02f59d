"""Overview: the architecture, the paper's configurations and what each page teaches."""
import streamlit as st

from app.i18n import t
from app.pages_list import PAGES
from app.resources import pretrained_models, pretrained_sizes, preset_parameter_count
from app.ui import text
from model.config import PAPER_PARAMS, PRESETS

MODEL_NAMES = {"paper_base": "Transformer (base)", "paper_big": "Transformer (big)"}

st.title(t("common.app_title"))
text("overview.intro")

st.header(t("overview.architecture"))
left, right = st.columns([3, 2])
g = {name: t(f"overview.graph.{name}") for name in ("encoder", "decoder", "encoder_self", "decoder_self", "cross",
                                                     "ffn", "add_norm", "source", "target", "embedding", "output")}
dot = f"""
digraph G {{
  rankdir=BT; node [shape=box, style="rounded,filled", fontname="sans-serif", fontsize=11];
  src [label="{g['source']}", fillcolor="#eeeeee"];
  tgt [label="{g['target']}", fillcolor="#eeeeee"];
  semb [label="{g['embedding']}", fillcolor="#fff3cd"];
  temb [label="{g['embedding']}", fillcolor="#fff3cd"];
  subgraph cluster_enc {{ label="{g['encoder']}"; style=rounded; color="#1f77b4";
    esa [label="{g['encoder_self']}", fillcolor="#cfe2f3"]; en1 [label="{g['add_norm']}", fillcolor="#ffffff"];
    eff [label="{g['ffn']}", fillcolor="#d9ead3"]; en2 [label="{g['add_norm']}", fillcolor="#ffffff"];
    esa -> en1 -> eff -> en2; }}
  subgraph cluster_dec {{ label="{g['decoder']}"; style=rounded; color="#d62728";
    dsa [label="{g['decoder_self']}", fillcolor="#f4cccc"]; dn1 [label="{g['add_norm']}", fillcolor="#ffffff"];
    dca [label="{g['cross']}", fillcolor="#d9d2e9"]; dn2 [label="{g['add_norm']}", fillcolor="#ffffff"];
    dff [label="{g['ffn']}", fillcolor="#d9ead3"]; dn3 [label="{g['add_norm']}", fillcolor="#ffffff"];
    dsa -> dn1 -> dca -> dn2 -> dff -> dn3; }}
  out [label="{g['output']}", fillcolor="#eeeeee"];
  src -> semb -> esa; tgt -> temb -> dsa; en2 -> dca [label="K, V", color="#7f3fbf"]; dn3 -> out;
}}"""
with left:
    st.graphviz_chart(dot)
with right:
    text("overview.three_kinds")

st.header(t("overview.paper_models"))
text("overview.paper_models")
rows = []
for name, label in MODEL_NAMES.items():
    cfg = PRESETS[name]
    counted = preset_parameter_count(name)
    paper = PAPER_PARAMS[name]
    rows.append({
        t("overview.table.model"): label,
        "N": cfg.n_encoder_layers, "d_model": cfg.d_model, "d_ff": cfg.d_ff, "h": cfg.n_heads,
        "d_k = d_v": cfg.d_head, "P_drop": cfg.dropout, "ε_ls": cfg.label_smoothing,
        t("overview.table.computed"): f"{counted / 1e6:.1f}M",
        t("overview.table.paper"): f"{paper / 1e6:.0f}M",
        t("overview.table.difference"): f"{(counted - paper) / paper:+.1%}",
    })
found = pretrained_models()
imported = pretrained_sizes(tuple(str(p) for p in found.values()))
for name, size in zip(found, imported):
    if size is None:  # unreadable folders are explained in the inspector, where they are opened
        continue
    rows.append({
        t("overview.table.model"): t("overview.table.imported", name=name, family=size["family"]),
        "N": size["layers"], "d_model": size["d_model"], "d_ff": size["d_ff"], "h": size["heads"],
        "d_k = d_v": size["d_model"] // size["heads"] if size["d_model"] and size["heads"] else None,
        "P_drop": None, "ε_ls": None,
        t("overview.table.computed"): f"{size['parameters']:,}",  # exact: a small model would read 0.0M
        t("overview.table.paper"): "", t("overview.table.difference"): "",
    })
st.dataframe(rows, hide_index=True)
text("overview.difference")
if not imported:
    st.caption(t("overview.table.no_imported"))

st.header(t("overview.pages"))
for p in PAGES[1:]:
    st.page_link(f"../pages/{p.file}", label=p.title, icon=p.icon)
    st.caption(p.blurb)
