"""The paper's published numbers beside ours, for the overview page: its headline results and Table 2
(BLEU and training cost), and what our parameter counts of every Table 3 row (model.lessons.table3) can and
cannot say about how the paper counted.

Our count is exact for the architecture as the paper describes it (one shared 37,000-entry vocabulary
matrix for both embeddings and the output layer, no output bias). The paper does not say how it
counted. What is computed here: for each row with a printed count, the vocabulary size that would make
our count round to the printed number, and one comparison in which the vocabulary plays no part."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from model.nn.config import TransformerConfig
from model.lessons.table3 import PAPER_TABLE3, PaperRow, paper_config

PAPER_VOCAB = 37_000  # section 5.1: shared source-target BPE vocabulary of about 37,000 tokens (EN-DE)

# ----------------------------------------------------------------------------- Table 2 and section 5.2


@dataclass(frozen=True)
class Table2Row:
    """One line of Table 2 (newstest2014). None where the paper leaves the cell empty. The paper prints a
    single training cost for each Transformer, across both language pairs (`shared_cost`)."""
    model: str
    bleu_en_de: str | None  # as printed ("26.30" keeps its digits)
    bleu_en_fr: str | None
    flops_en_de: float | None
    flops_en_fr: float | None
    ensemble: bool = False
    shared_cost: bool = False
    key: str | None = None  # the paper's own models ("base", "big"): named as Table 3 names them


PAPER_TABLE2: tuple[Table2Row, ...] = (
    Table2Row("ByteNet", "23.75", None, None, None),
    Table2Row("Deep-Att + PosUnk", None, "39.2", None, 1.0e20),
    Table2Row("GNMT + RL", "24.6", "39.92", 2.3e19, 1.4e20),
    Table2Row("ConvS2S", "25.16", "40.46", 9.6e18, 1.5e20),
    Table2Row("MoE", "26.03", "40.56", 2.0e19, 1.2e20),
    Table2Row("Deep-Att + PosUnk Ensemble", None, "40.4", None, 8.0e20, ensemble=True),
    Table2Row("GNMT + RL Ensemble", "26.30", "41.16", 1.8e20, 1.1e21, ensemble=True),
    Table2Row("ConvS2S Ensemble", "26.36", "41.29", 7.7e19, 1.2e21, ensemble=True),
    Table2Row("Transformer (base model)", "27.3", "38.1", 3.3e18, 3.3e18, shared_cost=True, key="base"),
    Table2Row("Transformer (big)", "28.4", "41.8", 2.3e19, 2.3e19, shared_cost=True, key="big"),
)

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def flops_text(x: float | None) -> str:
    """A training cost as the paper prints it: 3.3·10¹⁸ ("" for an empty cell)."""
    if x is None:
        return ""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}·10{str(int(exponent)).translate(_SUPERSCRIPT)}"


@dataclass(frozen=True)
class PaperTraining:
    """Section 5.2: one machine with 8 NVIDIA P100 GPUs."""
    steps: int
    step_seconds: float
    hours: float
    bleu_en_de: float
    bleu_en_fr: float


PAPER_GPUS = 8
P100_FLOPS = 9.5e12  # footnote 5: sustained single-precision capacity assumed for a P100 (TFLOPS 9.5)
PAPER_TRAINING = {
    "paper_base": PaperTraining(steps=100_000, step_seconds=0.4, hours=12.0, bleu_en_de=27.3, bleu_en_fr=38.1),
    "paper_big": PaperTraining(steps=300_000, step_seconds=1.0, hours=3.5 * 24, bleu_en_de=28.4, bleu_en_fr=41.8),
}


def training_flops(hours: float, gpus: int = PAPER_GPUS, flops_per_gpu: float = P100_FLOPS) -> float:
    """The paper's estimate of a training cost (footnote 5): training time x number of GPUs x the GPU's
    sustained single-precision capacity. 12 h on 8 P100s gives Table 2's 3.3e18 for the base model."""
    return hours * 3600.0 * gpus * flops_per_gpu


# ----------------------------------------------------------------------------- Table 3's parameter counts


def _count_config(config: dict) -> int:
    from model.nn.transformer import count_parameters
    return count_parameters(TransformerConfig.from_dict(config))


@dataclass(frozen=True)
class RowCount:
    """One Table 3 row counted with our Transformer at the paper's sizes."""
    row: PaperRow
    config: TransformerConfig
    counted: int      # at the paper's vocabulary
    per_entry: int    # parameters one more vocabulary entry adds (d_model: one shared matrix)
    vocab_size: int = PAPER_VOCAB

    @property
    def paper(self) -> int | None:
        """The printed count in parameters (None where the paper prints none: rows A, D, E)."""
        return None if self.row.params_m is None else round(self.row.params_m * 1e6)

    @property
    def difference(self) -> float | None:
        """(ours - paper) / paper."""
        return None if self.paper is None else (self.counted - self.paper) / self.paper

    def at_vocabulary(self, vocab_size: int) -> int:
        """Our count with another vocabulary size (the count is linear in it)."""
        return self.counted + (vocab_size - self.vocab_size) * self.per_entry

    @property
    def vocab_exact(self) -> float | None:
        """The vocabulary size at which our count equals the printed number."""
        return None if self.paper is None else self.vocab_size + (self.paper - self.counted) / self.per_entry

    @property
    def vocab_range(self) -> tuple[int, int] | None:
        """The vocabulary sizes at which our count rounds to the printed number (printed in millions, so
        anything in [printed - 0.5M, printed + 0.5M) prints the same)."""
        if self.paper is None:
            return None
        lo = math.ceil(self.vocab_size + (self.paper - 500_000 - self.counted) / self.per_entry)
        hi = math.ceil(self.vocab_size + (self.paper + 500_000 - self.counted) / self.per_entry) - 1
        return lo, hi


def table3_counts(count: Callable[[dict], int] = _count_config, vocab_size: int = PAPER_VOCAB) -> list[RowCount]:
    """Every row of Table 3 counted at `vocab_size` and at one entry more (which gives the cost of one
    vocabulary entry, measured rather than assumed). `count` maps a config's to_dict() to its parameter
    count; the app passes its cached counter."""
    out = []
    for row in PAPER_TABLE3:
        cfg = paper_config(row).replace(vocab_size=vocab_size)
        counted = count(cfg.to_dict())
        per_entry = count(cfg.replace(vocab_size=vocab_size + 1).to_dict()) - counted
        out.append(RowCount(row, cfg, counted, per_entry, vocab_size))
    return out


def common_vocabulary(counts: list[RowCount]) -> tuple[int, int] | None:
    """The vocabulary sizes that make every given row with a printed count match it (None: no size does)."""
    ranges = [c.vocab_range for c in counts if c.vocab_range is not None]
    if not ranges:
        return None
    lo, hi = max(r[0] for r in ranges), min(r[1] for r in ranges)
    return (lo, hi) if lo <= hi else None


@dataclass(frozen=True)
class VocabularyFreeGap:
    """Two rows of the same width (so the same vocabulary matrix, whatever its size): the difference of
    our counts against the difference of the printed ones (each printed number rounded to 1M, so the
    printed difference is known to +-1M)."""
    first: str
    second: str
    ours: int
    paper: int


def vocabulary_free_gap(counts: list[RowCount], first: str = "C-d1024", second: str = "big") -> VocabularyFreeGap:
    """Rows C (d_model = 1024) and big share d_model, N and the vocabulary; they differ in d_ff (2048 vs
    4096), h (8 vs 16 heads at the same h * d_k, so no parameters change) and dropout. No vocabulary size
    changes the difference of their counts."""
    by_key = {c.row.key: c for c in counts}
    a, b = by_key[first], by_key[second]
    if a.config.d_model != b.config.d_model or a.paper is None or b.paper is None:
        raise ValueError(f"rows {first} and {second} need the same d_model and printed counts")
    return VocabularyFreeGap(first, second, b.counted - a.counted, b.paper - a.paper)


__all__ = ["PAPER_TABLE2", "PAPER_TRAINING", "PAPER_VOCAB", "PaperTraining", "RowCount", "Table2Row",
           "VocabularyFreeGap", "common_vocabulary", "flops_text", "table3_counts", "training_flops",
           "vocabulary_free_gap"]
