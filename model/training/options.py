"""The trainer's command line: its options, what each means for the model, and the checks that refuse
options that make no sense. No torch here: the job manager and the model card parse the same options.

    build_parser()          every option of `python -m model.training.train`
    parse_args(argv)        the options of a run (a --resume merged with the run's args.json), checked
    model_config(args, n)   the model the options ask for: --config as given, or a preset and the size flags
    command_line(args)      the command that recreates a run (written into the model card)
"""
from __future__ import annotations

import argparse
import json
import math
import shlex
from pathlib import Path

from model.data.corpus import TASKS
from model.family import FAMILY_TASKS, family_task, is_family_task
from model.messages import Message
from model.nn.config import PRESETS, TransformerConfig
from model.training.run_files import read_json

PROG = "python -m model.training.train"

# Flags that describe the model; --config replaces all of them.
MODEL_FLAGS = ("preset", "architecture", "d_model", "heads", "d_ff", "layers", "dropout", "label_smoothing",
               "positional", "norm_first", "max_len")

POSITIVE_INTS = ("steps", "eval_every", "log_every", "ckpt_every", "batch_size", "warmup", "max_len")
SIZE_FLAGS = ("d_model", "heads", "d_ff", "layers")  # None (the preset's) or positive
COUNTS = ("threads", "seed", "average_last", "fail_at_step", "batch_tokens")  # 0 or more
OPTIONAL_COUNTS = ("split_seed",)  # None or 0 or more
FRACTIONS = ("dropout", "label_smoothing", "cooldown")  # None (the preset's) or in [0, 1)


def build_parser(description: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=description, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=TASKS + ("tsv",) + tuple(FAMILY_TASKS), default="copy",
                   help="a translation/LM task, a TSV corpus, or a member of the Transformer family "
                        "(mlm: BERT-style masked LM, vit-digits: ViT on 8x8 digits, detr-shapes: DETR)")
    p.add_argument("--tsv", help="a UTF-8 TSV file of source<TAB>target lines (with --task tsv)")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--out", help="run directory")
    p.add_argument("--resume", help="continue the run in this directory from its checkpoint")
    p.add_argument("--config", help="the model: a TransformerConfig as JSON text or a JSON file (replaces "
                                    "--preset and the size flags)")
    p.add_argument("--preset", choices=sorted(PRESETS), default="teaching")
    p.add_argument("--architecture", choices=("encoder-decoder", "decoder-only"))
    p.add_argument("--d-model", type=int)
    p.add_argument("--heads", type=int)
    p.add_argument("--d-ff", type=int)
    p.add_argument("--layers", type=int, help="encoder and decoder layers each")
    p.add_argument("--dropout", type=float)
    p.add_argument("--label-smoothing", type=float)
    p.add_argument("--positional", choices=("sinusoidal", "learned"))
    p.add_argument("--norm-first", action="store_true", help="pre-LN instead of the paper's post-LN")
    p.add_argument("--max-len", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=64, help="sentences per step (per process)")
    p.add_argument("--batch-tokens", type=int, default=0, metavar="N",
                   help="batch by tokens instead: sentences of similar length together, at most N tokens of "
                        "padded source + target per step (per process); 0 = off, --batch-size decides")
    p.add_argument("--warmup", type=int, default=400)
    p.add_argument("--lr-factor", type=float, default=1.0, help="multiplies the warm-up schedule")
    p.add_argument("--cooldown", type=float, default=0.0, metavar="FRACTION",
                   help="the last FRACTION of --steps lowers the rate linearly towards 0 (0 = the paper's schedule)")
    p.add_argument("--seed", type=int, default=0, help="initialisation and batch order (and the split, unless --split-seed)")
    p.add_argument("--split-seed", type=int, default=None, metavar="N",
                   help="how the corpus is split into train/dev/test (default: --seed); a study gives every run "
                        "the same split so that seeds differ in initialisation and batch order only")
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--log-first", action="store_true",
                   help="also log the first step of the run (and of a resumed run): the page shows it at once")
    p.add_argument("--ckpt-every", type=int, default=200)
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, mps")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0 = torch's default)")
    p.add_argument("--average-last", type=int, default=0, metavar="K",
                   help="keep the weights of the last K checkpoints (avg/) and make the final model their "
                        "mean, as the paper does (section 6.1: the last 5 for base models, 20 for big); 0 = off")
    p.add_argument("--export", help="after training, score on the test split and write a shippable "
                                    "model directory with a model card here (e.g. assets/models/en-ko)")
    p.add_argument("--fail-at-step", type=int, default=0, help=argparse.SUPPRESS)  # tests: inject a NaN loss
    return p


def parse_args(argv: list[str], description: str | None = None) -> argparse.Namespace:
    """The options of a run, checked (argparse exits with status 2 and a sentence on a bad one).
    With --resume the run's args.json gives every option the command line does not give again."""
    parser = build_parser(description)
    args = parser.parse_args(argv)
    explicit = explicit_options(argv)
    if args.resume:
        saved = read_json(Path(args.resume) / "args.json")
        if not isinstance(saved, dict):
            parser.error(f"{args.resume}: no readable args.json (missing or damaged), nothing to resume")
        merged = {**saved, **{k: v for k, v in vars(args).items() if k in explicit}}
        args = argparse.Namespace(**{**vars(parser.parse_args([])), **merged, "resume": args.resume,
                                     "out": args.resume})
    elif not args.out:
        parser.error("--out DIR is required (or --resume DIR)")
    if args.config:
        clash = ["--" + name.replace("_", "-") for name in MODEL_FLAGS if name in explicit]
        if clash:
            parser.error(f"--config gives the whole model; leave out {', '.join(clash)}")
        try:
            cls = family_task(args.task).config_class if is_family_task(args.task) else TransformerConfig
            args.config = read_config(args.config, cls).to_dict()  # args.json keeps the config itself
        except ValueError as e:
            parser.error(f"--config: {e}")
    problem = option_problem(args)
    if problem:
        parser.error(problem)
    return args


def explicit_options(argv: list[str]) -> set[str]:
    """The options the command line really gives, however spelt (`--steps 4`, `--steps=4`): argv parsed
    again with every default suppressed, so only what was given lands in the namespace."""
    probe = build_parser()
    for action in probe._actions:
        action.default = argparse.SUPPRESS
    return set(vars(probe.parse_args(argv)))


def option_problem(args) -> str | None:
    """Why these options make no sense (a sentence naming the flag), or None."""
    def flag(name):
        return "--" + name.replace("_", "-")
    for name in POSITIVE_INTS:
        if getattr(args, name) <= 0:
            return f"{flag(name)} must be positive"
    for name in SIZE_FLAGS:
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            return f"{flag(name)} must be positive"
    for name in COUNTS:
        if getattr(args, name, 0) < 0:
            return f"{flag(name)} must be 0 or more"
    for name in OPTIONAL_COUNTS:
        if (getattr(args, name, None) or 0) < 0:
            return f"{flag(name)} must be 0 or more"
    if getattr(args, "batch_tokens", 0) and is_family_task(args.task):
        return f"--batch-tokens is for the translation and language-model tasks, not {args.task}"
    if not (math.isfinite(args.lr_factor) and args.lr_factor > 0):
        return f"--lr-factor must be a positive number, got {args.lr_factor}"
    for name in FRACTIONS:
        v = getattr(args, name)
        if v is not None and not (math.isfinite(v) and 0 <= v < 1):
            return f"{flag(name)} must be at least 0 and below 1, got {v}"
    return None


# -----------------------------------------------------------------------------
# the model the options ask for

def read_config_object(value) -> dict:
    """--config as a dict: a dict, JSON text ("{...}") or the path of a JSON file. ValueError says what is wrong."""
    if isinstance(value, str):
        text = value if value.lstrip().startswith("{") else None
        if text is None:
            try:
                text = Path(value).read_text(encoding="utf-8")
            except OSError as e:
                raise ValueError(f"cannot read {value}: {e.strerror or e}") from None
        try:
            value = json.loads(text)
        except ValueError as e:
            raise ValueError(f"not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def read_config(value, config_class=TransformerConfig):
    """--config as a config object (a TransformerConfig, or a family member's config class)."""
    try:
        return config_class.from_dict(read_config_object(value))
    except TypeError as e:
        raise ValueError(str(e)) from None


def model_config(args, vocab_size: int) -> TransformerConfig:
    """The model to train: --config exactly as given, else the preset with the size flags applied."""
    if args.config:
        return read_config(args.config)
    base = PRESETS[args.preset]
    arch = args.architecture or ("decoder-only" if args.task == "lm" else "encoder-decoder")
    changes = dict(vocab_size=vocab_size, architecture=arch, max_len=args.max_len)
    for name, attr in (("d_model", "d_model"), ("n_heads", "heads"), ("d_ff", "d_ff"),
                       ("dropout", "dropout"), ("label_smoothing", "label_smoothing"),
                       ("positional", "positional")):
        if getattr(args, attr) is not None:
            changes[name] = getattr(args, attr)
    if args.layers is not None:
        changes["n_encoder_layers"] = changes["n_decoder_layers"] = args.layers
    if args.norm_first:
        changes["norm_first"] = True
    return base.replace(**changes)


def config_problem(cfg: TransformerConfig, vocab_size: int, decoder_only: bool) -> Message | None:
    """Why this model cannot learn this task (a --config made for another one), or None."""
    if cfg.vocab_size < vocab_size:
        return Message("train.status.vocab_too_small", {"size": cfg.vocab_size, "needed": vocab_size})
    if (cfg.architecture == "decoder-only") != decoder_only or cfg.architecture == "encoder-only":
        return Message("train.status.wrong_architecture", {"architecture": cfg.architecture})
    return None


def command_line(args) -> str:
    """The command that recreates this run (for the model card)."""
    parts = [PROG]
    defaults = vars(build_parser().parse_args([]))
    for k, v in vars(args).items():
        if k in ("resume", "fail_at_step") or v == defaults.get(k) or v is None:
            continue
        flag = "--" + k.replace("_", "-")
        if isinstance(v, dict):
            v = json.dumps(v, separators=(",", ":"))
        parts.append(flag if v is True else f"{flag} {shlex.quote(str(v))}")
    return " ".join(parts)


def split_seed(args) -> int:
    """The seed that splits the corpus: --split-seed, or --seed when it is not given (a run's args.json
    written before the option existed has neither key and splits by its seed, as it did)."""
    given = getattr(args, "split_seed", None)
    return args.seed if given is None else given
