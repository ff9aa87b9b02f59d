"""model/lessons/paper_numbers.py: Table 2 as printed, the paper's training-cost estimate, and what our counts of
Table 3 say about the vocabulary (computed on the meta device, no memory used)."""
import pytest

from model.lessons.paper_numbers import (
    PAPER_TABLE2, PAPER_TRAINING, common_vocabulary, flops_text, table3_counts, training_flops, vocabulary_free_gap,
)
from model.lessons.table3 import PAPER_TABLE3


@pytest.fixture(scope="module")
def counts():
    return table3_counts()


def test_table2_as_printed():
    rows = {r.model: r for r in PAPER_TABLE2}
    assert list(rows) == ["ByteNet", "Deep-Att + PosUnk", "GNMT + RL", "ConvS2S", "MoE",
                          "Deep-Att + PosUnk Ensemble", "GNMT + RL Ensemble", "ConvS2S Ensemble",
                          "Transformer (base model)", "Transformer (big)"]
    assert (rows["ByteNet"].bleu_en_de, rows["ByteNet"].bleu_en_fr, rows["ByteNet"].flops_en_de) == ("23.75", None, None)
    assert rows["Deep-Att + PosUnk"].bleu_en_de is None and rows["Deep-Att + PosUnk"].flops_en_fr == 1.0e20
    assert (rows["MoE"].bleu_en_de, rows["MoE"].bleu_en_fr, rows["MoE"].flops_en_de) == ("26.03", "40.56", 2.0e19)
    assert rows["GNMT + RL Ensemble"].bleu_en_de == "26.30"  # printed with two decimals
    assert rows["ConvS2S Ensemble"].flops_en_fr == 1.2e21 and rows["GNMT + RL Ensemble"].flops_en_fr == 1.1e21
    assert [r.model for r in PAPER_TABLE2 if r.ensemble] == ["Deep-Att + PosUnk Ensemble", "GNMT + RL Ensemble",
                                                             "ConvS2S Ensemble"]
    base, big = rows["Transformer (base model)"], rows["Transformer (big)"]
    assert (base.bleu_en_de, base.bleu_en_fr, base.flops_en_de) == ("27.3", "38.1", 3.3e18) and base.shared_cost
    assert (big.bleu_en_de, big.bleu_en_fr, big.flops_en_de) == ("28.4", "41.8", 2.3e19) and big.shared_cost
    assert [flops_text(r.flops_en_fr) for r in PAPER_TABLE2][:2] == ["", "1.0·10²⁰"]
    assert flops_text(base.flops_en_de) == "3.3·10¹⁸" and flops_text(7.7e19) == "7.7·10¹⁹"


def test_training_cost_follows_the_papers_estimate():
    """Footnote 5: time x 8 GPUs x 9.5 TFLOPS reproduces Table 2's two Transformer costs."""
    base, big = PAPER_TRAINING["paper_base"], PAPER_TRAINING["paper_big"]
    assert (base.steps, base.hours, big.steps, big.hours) == (100_000, 12, 300_000, 84)
    assert base.steps * base.step_seconds / 3600 == pytest.approx(base.hours, rel=0.08)  # 0.4 s/step ~ 11.1 h
    assert big.steps * big.step_seconds / 3600 == pytest.approx(big.hours, rel=0.01)
    assert flops_text(training_flops(base.hours)) == "3.3·10¹⁸"
    assert flops_text(training_flops(big.hours)) == "2.3·10¹⁹"


def test_every_row_counted(counts):
    assert [c.row.key for c in counts] == [r.key for r in PAPER_TABLE3]
    by = {c.row.key: c for c in counts}
    assert by["base"].counted == 63_082_496 and by["big"].counted == 214_245_376
    assert by["C-N2"].difference == pytest.approx(-0.065, abs=0.001)
    assert by["big"].difference == pytest.approx(0.006, abs=0.001)
    assert all(c.per_entry == c.config.d_model for c in counts)  # one shared matrix, no output bias
    assert [c.row.key for c in counts if c.paper is None] == [r.key for r in PAPER_TABLE3 if r.group in "ADE"]


def test_no_single_vocabulary_explains_base_and_big(counts):
    by = {c.row.key: c for c in counts}
    base, big = by["base"], by["big"]
    lo, hi = base.vocab_range
    assert lo <= base.vocab_exact <= hi and round(base.at_vocabulary(lo) / 1e6) == 65
    assert round(base.at_vocabulary(lo - 1) / 1e6) == 64 and round(base.at_vocabulary(hi + 1) / 1e6) == 66
    assert big.vocab_range[1] < lo  # big needs a smaller vocabulary than any that fits base
    assert round(big.at_vocabulary(round(base.vocab_exact)) / 1e6) > 213
    assert common_vocabulary([base, big]) is None
    base_family = [c for c in counts if c.row.key != "big"]
    assert common_vocabulary(base_family) == (40_932, 41_160)  # the eleven base-family rows agree


def test_a_gap_no_vocabulary_can_close(counts):
    gap = vocabulary_free_gap(counts)
    assert gap.paper == 45_000_000  # 213M - 168M as printed
    assert gap.ours == 12 * (2 * 1024 * 2048 + 2048)  # 12 feed-forward layers with d_ff 4096 instead of 2048
    assert gap.ours - gap.paper > 1_000_000  # more than the printed numbers' rounding can hide
