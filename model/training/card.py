"""A trained model's key facts, read from its files (config.json, meta.json, and for a training-page
run the run folder's args.json and status.json), as numbers a page can put into any language:
task, architecture, size, training recipe, training time and device, test-split scores.
The shipped CARD.md is the English text of the same facts (model/training/export.py writes both)."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from model.nn.differences import differences_in_words
from model.training.run_files import read_json_object
from model.training.schedule import ADAM_BETAS, ADAM_EPS

# The paper's best English→German result (Table 2: Transformer (big), newstest2014): word-level BLEU on
# real news text. Quoted so that a page can say why a score here is not comparable with it.
PAPER_BLEU_EN_DE = 28.4
_HANGUL = re.compile("[\uac00-\ud7a3]")  # score_test's test for Korean references


@dataclass(frozen=True)
class Recipe:
    """How the model was trained (the trainer's options; dropout and label smoothing are in the config)."""
    warmup: int
    lr_factor: float
    batch_size: int
    seed: int
    betas: tuple[float, float] = ADAM_BETAS
    eps: float = ADAM_EPS


@dataclass(frozen=True)
class CardFacts:
    task: str | None
    architecture: str
    norm_first: bool
    positional: str
    d_model: int
    n_heads: int
    d_ff: int
    n_encoder_layers: int  # 0 without an encoder
    n_decoder_layers: int  # 0 without a decoder
    vocab_size: int
    parameters: int
    dropout: float
    label_smoothing: float
    recipe: Recipe | None = None  # None when neither the run's options nor the recorded command are found
    steps: int | None = None
    train_seconds: float | None = None
    device: str | None = None  # as the trainer recorded it (model.nn.device.describe_device)
    scores: dict[str, float] = field(default_factory=dict)  # test-split scores (numbers only)
    character_bleu: bool = False  # BLEU by character, as model.inference.evaluate.score_test scores Korean references
    origin: str | None = None      # a pretrained model's name (Hugging Face id or folder) and family
    licence: str | None = None     # as the pretrained model's own files state it
    differences: dict = field(default_factory=dict)  # TransformerConfig.differences_from_paper()
    difference_words: list = field(default_factory=list)  # the same, one Message each (model.nn.differences)


def run_folder(loaded) -> Path | None:
    """The training-page run folder a LoadedModel came from (runs/<id>/, which holds model/, args.json,
    status.json and an uploaded corpus.tsv), or None for a shipped or copied model directory."""
    meta = loaded.meta or {}
    return Path(loaded.path).parent if loaded.path is not None and meta.get("run") else None


def trainer_options(loaded) -> dict:
    """The trainer's options of a LoadedModel: see _trainer_options."""
    return _trainer_options(loaded.meta or {}, run_folder(loaded))


def _trainer_options(meta: dict, run_dir: Path | None) -> dict:
    """The trainer's options: a run's args.json, else the recorded command parsed by the trainer's own
    parser (so that its defaults fill what the command left out); {} when neither is there."""
    args = read_json_object(run_dir / "args.json") if run_dir is not None else {}
    if args:
        return args
    command = meta.get("command")
    if not isinstance(command, str) or "model.training.train" not in command:
        return {}
    from model.training.options import build_parser
    try:
        words = shlex.split(command)
        parsed = build_parser().parse_args(words[words.index("model.training.train") + 1:])
    except (ValueError, SystemExit):
        return {}
    return vars(parsed)


def _recipe(options: dict) -> Recipe | None:
    try:
        return Recipe(int(options["warmup"]), float(options["lr_factor"]), int(options["batch_size"]),
                      int(options["seed"]))
    except (KeyError, TypeError, ValueError):
        return None


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def card_facts(loaded) -> CardFacts:
    """The key facts of a LoadedModel (see CardFacts); what its files do not record is None."""
    cfg, meta = loaded.config, loaded.meta or {}
    run_dir = run_folder(loaded)
    status = read_json_object(run_dir / "status.json") if run_dir is not None else {}
    options = _trainer_options(meta, run_dir)
    steps = _number(meta.get("steps", meta.get("step", status.get("step"))))
    seconds = _number(meta.get("train_seconds", status.get("elapsed_seconds")))
    device = meta.get("device", status.get("device"))
    recorded = meta.get("scores") if isinstance(meta.get("scores"), dict) else {}
    scores = {k: float(v) for k, v in recorded.items() if _number(v) is not None}
    references = [e.get("reference", "") for e in recorded.get("examples") or [] if isinstance(e, dict)]
    return CardFacts(
        task=meta.get("task") if isinstance(meta.get("task"), str) else None,
        architecture=cfg.architecture, norm_first=cfg.norm_first, positional=cfg.positional,
        d_model=cfg.d_model, n_heads=cfg.n_heads, d_ff=cfg.d_ff,
        n_encoder_layers=cfg.n_encoder_layers if cfg.has_encoder else 0,
        n_decoder_layers=cfg.n_decoder_layers if cfg.has_decoder else 0,
        vocab_size=cfg.vocab_size, parameters=loaded.model.num_parameters(),
        dropout=cfg.dropout, label_smoothing=cfg.label_smoothing, recipe=_recipe(options),
        steps=int(steps) if steps is not None else None, train_seconds=seconds,
        device=device if isinstance(device, str) else None, scores=scores,
        character_bleu=any(_HANGUL.search(str(r)) for r in references),
        origin=f"{meta.get('hf_name')} ({meta.get('family')})" if meta.get("source") == "pretrained" else None,
        licence=meta.get("licence") if isinstance(meta.get("licence"), str) else None,
        differences=cfg.differences_from_paper(), difference_words=differences_in_words(cfg))
