"""Export a trained model: test-split scores, a shippable model directory and its model card (CARD.md)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from model.training.checkpoint import save_model_dir
from model.nn.config import TransformerConfig
from model.nn.device import describe_device
from model.inference.evaluate import score_test
from model.data.train_data import TaskData


def layer_text(cfg: TransformerConfig) -> str:
    if cfg.architecture == "encoder-decoder":
        return f"layers={cfg.n_encoder_layers} encoder + {cfg.n_decoder_layers} decoder"
    if cfg.architecture == "decoder-only":
        return f"layers={cfg.n_decoder_layers} decoder"
    return f"layers={cfg.n_encoder_layers} encoder"


def averaged_line(steps) -> list[str]:
    """The card's line for a model averaged over checkpoints (model.training.train --average-last)."""
    if not steps:
        return []
    return [f"- Weights: the mean of the last {len(steps)} checkpoints (steps {', '.join(map(str, steps))}), "
            f"as the paper averages its last 5 or 20 (section 6.1)"]


def model_card(name: str, cfg: TransformerConfig, args, scores: dict, *, parameters: int, seconds: float,
               device: str, command: str, averaged_steps=None) -> str:
    """CARD.md: what the model is, how to recreate it, how it scores on the test split."""
    lines = [f"# Model card: {name}", "",
             f"- Task: `{args.task}`; architecture: {cfg.architecture}, {'pre-LN' if cfg.norm_first else 'post-LN (as in the paper)'}",
             f"- Size: d_model={cfg.d_model}, heads={cfg.n_heads}, d_ff={cfg.d_ff}, {layer_text(cfg)}, "
             f"vocab={cfg.vocab_size} (shared sentencepiece), {parameters:,} parameters",
             f"- Recipe: Adam(0.9, 0.98, 1e-9), warm-up schedule (warmup={args.warmup}, factor={args.lr_factor}), "
             f"label smoothing {cfg.label_smoothing}, dropout {cfg.dropout}, batch {args.batch_size} sentences, seed {args.seed}",
             f"- Trained for {args.steps} steps in {seconds / 60:.1f} min on {device} (torch {torch.__version__})",
             *averaged_line(averaged_steps),
             "", "## Recreate", "", "```bash", command, "```", "", "## Test-split scores", ""]
    for k, v in scores.items():
        if not isinstance(v, list):
            lines.append(f"- {k}: {v:.4f}" if isinstance(v, float) else f"- {k}: {v}")
    if "bleu_greedy" in scores:
        lines += ["", "BLEU is sacrebleu corpus BLEU. `bleu_*` uses character tokenisation for Korean "
                  "(one token per Hangul syllable; sacrebleu's ko-mecab needs MeCab, not available offline); "
                  "`bleu_words_*` uses 13a on space-separated words (eojeol), a harsher measure.",
                  "These scores are on this task's own synthetic test split: character-level BLEU on sentences "
                  "of a small, exact grammar. They are not comparable with the paper's BLEU "
                  "(28.4 for the big Transformer on WMT 2014 English–German, newstest2014, word-level, real news text).",
                  "The test split holds subject–verb combinations never seen in training "
                  "(see `model.data.corpus.held_out_combinations`)."]
    if scores.get("errors"):
        lines += ["", "## Errors on the test split (first 10)", ""]
        lines += [f"- {e['source']} → `{e['beam']}` (reference `{e['reference']}`)" for e in scores["errors"]]
    return "\n".join(lines) + "\n"


def export_model(model, data: TaskData, args, dest: Path, seconds: float, command: str,
                 averaged_steps=None) -> dict:
    """Write a shippable model directory: weights, config, tokenizer, meta.json with test scores,
    and a human-readable card (CARD.md). `command` recreates the run (model.training.train.command_line)."""
    t0 = time.time()
    scores = score_test(model, data)
    device = describe_device(model.device)
    meta = {"task": args.task, "steps": args.steps, "seed": args.seed, "train_seconds": round(seconds, 1),
            "score_seconds": round(time.time() - t0, 1), "command": command,
            "parameters": model.num_parameters(), "device": device,
            "torch": torch.__version__, "scores": scores, "source": "shipped"}
    if averaged_steps:
        meta["averaged_steps"] = list(averaged_steps)
    dest = Path(dest)
    save_model_dir(dest, model, data.tokenizer, meta)
    card = model_card(dest.name, model.config, args, scores, parameters=model.num_parameters(), seconds=seconds,
                      device=device, command=command, averaged_steps=averaged_steps)
    (dest / "CARD.md").write_text(card, encoding="utf-8")
    from model.training.checkpoint import load_model_dir
    from model.data.vocabulary import write_vocabulary
    write_vocabulary(load_model_dir(dest), dest)  # what the inspector checks typed words against
    print(json.dumps({k: v for k, v in scores.items() if not isinstance(v, list)}, indent=1))
    return scores


def export_family(task, model, args, dest: Path, seconds: float, command: str, averaged_steps=None) -> dict:
    """A shippable family model directory (model/family): weights, config, extras, meta.json with the
    test-split scores, and CARD.md."""
    from model.family import save_family_dir
    t0 = time.time()
    raw = model.module if hasattr(model, "module") else model
    raw.eval()
    with torch.no_grad():
        scores = task.score_test(raw, raw_device(raw))
    device = describe_device(raw_device(raw))
    params = sum(p.numel() for p in raw.parameters())
    meta = {"task": task.name, "steps": args.steps, "seed": args.seed, "train_seconds": round(seconds, 1),
            "score_seconds": round(time.time() - t0, 1), "command": command, "parameters": params,
            "device": device, "torch": torch.__version__, "scores": scores, "source": "shipped",
            "recipe": {"batch_size": args.batch_size, "warmup": args.warmup, "lr_factor": args.lr_factor}}
    if averaged_steps:
        meta["averaged_steps"] = list(averaged_steps)
    dest = Path(dest)
    save_family_dir(dest, task, raw, meta)
    (dest / "CARD.md").write_text(family_card(dest.name, task, raw.config.to_dict(), meta), encoding="utf-8")
    print(json.dumps({k: v for k, v in scores.items() if isinstance(v, (int, float))}, indent=1))
    return scores


def family_card(name: str, task, config: dict, meta: dict) -> str:
    """CARD.md of a family model, from its config and meta.json (so a card can be rewritten later)."""
    recipe = meta.get("recipe") or {}
    lines = [f"# Model card: {name}", "", f"- Task: `{task.name}` (the Transformer family, model/family)",
             f"- Configuration: `{json.dumps(config, separators=(', ', ': '))}`",
             f"- {meta['parameters']:,} parameters; batch {recipe.get('batch_size', '?')}, warm-up "
             f"{recipe.get('warmup', '?')}, learning-rate factor {recipe.get('lr_factor', '?')}, seed {meta.get('seed')}",
             f"- Trained for {meta['steps']} steps in {meta['train_seconds'] / 60:.1f} min on {meta['device']} "
             f"(torch {meta['torch']})", *averaged_line(meta.get("averaged_steps"))]
    notes = task.card_notes()
    if notes:
        lines += ["", "## Where the recipe differs from the paper", ""] + [f"- {n}" for n in notes]
    lines += ["", "## Recreate", "", "```bash", meta["command"], "```", "", "## Test-split scores", ""]
    for k, v in meta["scores"].items():
        if isinstance(v, (int, float)):
            lines.append(f"- {k}: {v:.4f}" if isinstance(v, float) else f"- {k}: {v}")
    return "\n".join(lines) + "\n"


def raw_device(model) -> torch.device:
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")
