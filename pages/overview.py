"""Overview: the architecture, the paper's configurations and what each page teaches."""
import streamlit as st

from app.charts.architecture import LABELS as ARCHITECTURE_LABELS
from app.charts.architecture import architecture_svg
from app.i18n import t
from app.pages_list import PAGES
from app.resources import parameter_count, pretrained_models, pretrained_sizes, shared_view
from app.ui import table, text
from model.lessons.paper_numbers import (
    P100_FLOPS, PAPER_GPUS, PAPER_TABLE2, PAPER_TRAINING, PAPER_VOCAB, common_vocabulary, flops_text, table3_counts,
    training_flops, vocabulary_free_gap,
)


def paper_row_name(row) -> str:
    """A row of Table 3 as the table names it: the two models by name, a variation by its group and change (a
    change of positions in words, the others in the paper's column names)."""
    if row.key in ("base", "big"):
        return t(f"overview.table.{row.key}_model")
    if row.changes.get("positional") == "learned":
        return f"({row.group}) {t('overview.table.learned_row')}"
    return f"({row.group}) {row.label}"


st.title(t("common.app_title"))
text("overview.intro")

st.header(t("overview.architecture"))
left, right = st.columns([3, 2])
with left:
    st.image(shared_view("overview-architecture", (), lambda: architecture_svg(
        {name: t(f"overview.graph.{name}") for name in ARCHITECTURE_LABELS}, title=t("overview.architecture"))))
with right:
    text("overview.three_kinds")

st.header(t("overview.paper_models"))
text("overview.paper_models", vocab=PAPER_VOCAB)
counts = table3_counts(count=parameter_count)  # every row of Table 3, cached per configuration
positions = {"sinusoidal": t("overview.table.sinusoidal"), "learned": t("overview.table.learned")}
rows = []
for c in counts:
    cfg, row = c.config, c.row
    rows.append({  # the comparison first: the table is wider than the page
        t("overview.table.model"): paper_row_name(row),
        t("overview.table.computed"): f"{c.counted / 1e6:.1f}M",
        t("overview.table.paper"): f"{row.params_m:.0f}M" if c.paper else t("overview.table.none_printed"),
        t("overview.table.difference"): f"{c.difference:+.1%}" if c.paper else "",
        "N": cfg.n_encoder_layers, "d_model": cfg.d_model, "d_ff": cfg.d_ff, "h": cfg.n_heads,
        "d_k": cfg.head_k, "d_v": cfg.head_v, "P_drop": cfg.dropout, "ε_ls": cfg.label_smoothing,
        t("overview.table.positions"): positions[cfg.positional],
        t("overview.table.ppl"): f"{row.perplexity:.2f}", t("overview.table.bleu"): f"{row.bleu:.1f}",
    })
found = pretrained_models()
imported = pretrained_sizes(tuple(str(p) for p in found.values()))
for name, size in zip(found, imported):
    if size is None:  # unreadable folders are explained in the inspector, where they are opened
        continue
    head = size["d_model"] // size["heads"] if size["d_model"] and size["heads"] else None
    rows.append({
        t("overview.table.model"): t("overview.table.imported", name=name.split(": ", 1)[-1], family=size["family"]),
        t("overview.table.computed"): f"{size['parameters']:,}",  # exact: a small model would read 0.0M
        t("overview.table.paper"): "", t("overview.table.difference"): "",
        "N": size["layers"], "d_model": size["d_model"], "d_ff": size["d_ff"], "h": size["heads"],
        "d_k": head, "d_v": head, "P_drop": None, "ε_ls": None, t("overview.table.positions"): "",
        t("overview.table.ppl"): "", t("overview.table.bleu"): "",
    })
table(rows, key="table3")
st.caption(t("overview.table.note"))
if not imported:
    st.caption(t("overview.table.no_imported"))

st.subheader(t("overview.counts.header"))
by_key = {c.row.key: c for c in counts}
base, big = by_key["base"], by_key["big"]
base_vocab = round(base.vocab_exact)
family = common_vocabulary([c for c in counts if c.row.group != "big"])
gap = vocabulary_free_gap(counts)
family_diffs = [c.difference for c in counts if c.paper and c.row.group != "big"]
text("overview.difference", vocab=PAPER_VOCAB, family_min=min(family_diffs), family_max=max(family_diffs), base=base.counted / 1e6, base_diff=base.difference,
     big=big.counted / 1e6, big_diff=big.difference, base_vocab=base_vocab, base_lo=base.vocab_range[0],
     base_hi=base.vocab_range[1], big_at=big.at_vocabulary(base_vocab) / 1e6,
     big_at_diff=(big.at_vocabulary(base_vocab) - big.paper) / big.paper, big_lo=big.vocab_range[0],
     big_hi=big.vocab_range[1], gap_ours=gap.ours / 1e6, gap_paper=gap.paper / 1e6, d_model=big.config.d_model)
if family:
    text("overview.family_vocabulary", lo=family[0], hi=family[1], n=len(family_diffs))
table([{
    t("overview.table.model"): paper_row_name(c.row),
    t("overview.counts.per_entry"): c.per_entry,
    t("overview.counts.vocab_exact"): f"{round(c.vocab_exact):,}",
    t("overview.counts.vocab_range"): f"{c.vocab_range[0]:,} – {c.vocab_range[1]:,}",
} for c in counts if c.paper], key="vocabulary")

st.header(t("overview.results.header"))
text("overview.results", base_bleu_de=PAPER_TRAINING["paper_base"].bleu_en_de,
     big_bleu_de=PAPER_TRAINING["paper_big"].bleu_en_de, base_bleu_fr=PAPER_TRAINING["paper_base"].bleu_en_fr,
     big_bleu_fr=PAPER_TRAINING["paper_big"].bleu_en_fr, base_hours=PAPER_TRAINING["paper_base"].hours,
     base_steps=PAPER_TRAINING["paper_base"].steps, big_days=PAPER_TRAINING["paper_big"].hours / 24,
     big_steps=PAPER_TRAINING["paper_big"].steps, gpus=PAPER_GPUS)
table([{
    t("overview.results.model"): t(f"overview.table.{r.key}_model") if r.key else r.model,
    t("overview.results.bleu_de"): r.bleu_en_de or "", t("overview.results.bleu_fr"): r.bleu_en_fr or "",
    t("overview.results.cost_de"): flops_text(r.flops_en_de), t("overview.results.cost_fr"): flops_text(r.flops_en_fr),
} for r in PAPER_TABLE2], key="table2")
st.caption(t("overview.results.table_note", base=flops_text(training_flops(PAPER_TRAINING["paper_base"].hours)),
             big=flops_text(training_flops(PAPER_TRAINING["paper_big"].hours)), gpus=PAPER_GPUS, tflops=P100_FLOPS / 1e12,
             base_hours=PAPER_TRAINING["paper_base"].hours, big_hours=PAPER_TRAINING["paper_big"].hours))

st.header(t("overview.pages"))
for p in PAGES[1:]:
    st.page_link(f"../pages/{p.file}", label=p.title, icon=p.icon)
    st.caption(p.blurb)
