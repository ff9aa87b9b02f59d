"""What a training run may be asked to do: the page's choices (TrainOptions), the limits that protect
a shared machine, the uploaded corpus, and the one place where the choices become a
TransformerConfig (`model_config`) and the trainer's command-line options (`train_arguments`).

Every refusal is a UserError with a code "jobs.errors.<name>" (or "train.corpus.<name>" for a bad corpus),
translated only when the page shows it. No Streamlit, no torch."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from model.nn.config import PRESETS, TransformerConfig
from model.data.corpus import ASSETS, TASKS, read_tsv_corpus, split_pairs
from model.family import FAMILY_TASKS
from model.messages import Message, UserError

ALL_TASKS = TASKS + ("tsv",) + tuple(FAMILY_TASKS)  # the family members train their own architecture
DEFAULT_TASK = "copy"  # what the training page offers first
SIZES = ("tiny", "small", "custom")
SIZE_PRESET = {"tiny": "tiny", "small": "teaching", "custom": "teaching"}  # model.nn.config.PRESETS names
# A recipe per size that works on a CPU (the tiny one learns the copy task in ~300 steps).
RECIPES = {"tiny": dict(steps=300, batch_size=32, warmup=100, lr_factor=0.5),
           "small": dict(steps=1000, batch_size=64, warmup=400, lr_factor=1.0),
           "custom": dict(steps=500, batch_size=32, warmup=200, lr_factor=0.5)}
# A task's own recipe for a size, where one was measured (docs/benchmarks.md "Training recipe"):
# en-ko at the small size batches by tokens (sentences of similar length together, so little padding) with a
# shorter warm-up and a lower peak rate, which leaves the loss plateau sooner, and ends with a cool-down (the last
# half of the steps lowers the rate linearly towards 0) and no dropout (this corpus is regular enough to need no
# regularisation in so few steps): a better test score than the paper's schedule and dropout in the same time.
# The measurements are in docs/benchmarks.md ("Training recipe", "a cool-down").
TASK_RECIPES = {("en-ko", "small"): dict(steps=800, batch_size=64, warmup=200, lr_factor=0.7, batch_tokens=1024,
                                         cooldown=0.5, dropout=0.0)}
POSITIONALS = ("sinusoidal", "learned")

# Limits that protect a shared machine (the page shows them). Each name has a label `jobs.field.<name>`.
LIMITS = {
    "d_model": (8, 512), "heads": (1, 16), "d_ff": (8, 2048), "layers": (1, 6), "steps": (1, 20000),
    "batch_size": (1, 256), "warmup": (1, 20000), "lr_factor": (0.01, 10.0), "dropout": (0.0, 0.5),
    "label_smoothing": (0.0, 0.5), "batch_tokens": (256, 16384), "cooldown": (0.0, 0.9),
}
WHOLE_NUMBERS = ("steps", "batch_size", "warmup", "seed", "batch_tokens")
MAX_PARAMETERS = 20_000_000
MAX_UPLOAD_BYTES = 5_000_000
MIN_PAIRS = 20  # a corpus must leave at least one validation pair (5 % split)
MAX_LEN = 64    # tokens per sentence the trainer keeps (the config's max_len)
UPLOAD_SAMPLE = 400  # pairs of an upload the estimate reads


# The page's own model sizes (size "custom"), by the names of its widgets; model_config turns them into
# TransformerConfig fields ("heads" -> n_heads, "layers" -> both layer counts).
CUSTOM_DEFAULTS = {"d_model": 64, "heads": 4, "d_ff": 128, "layers": 2, "dropout": 0.0, "label_smoothing": 0.1,
                   "positional": "sinusoidal", "norm_first": False}


@dataclass
class TrainOptions:
    """What the page asks for: the task, a model size (a preset, or "custom" with the sizes in
    `custom`, see CUSTOM_DEFAULTS), the recipe, and an uploaded corpus for the task "tsv"."""
    task: str = "copy"
    size: str = "tiny"
    steps: int = 300
    batch_size: int = 32
    warmup: int = 100
    lr_factor: float = 0.5
    seed: int = 0
    batch_tokens: int = 0  # > 0: batches of at most this many padded tokens instead of batch_size sentences
    cooldown: float = 0.0  # > 0: this share of the steps at the end lowers the rate linearly towards 0
    dropout: float | None = None  # a preset size's dropout instead of the preset's (custom sizes carry their own)
    custom: dict = field(default_factory=dict)
    tsv_bytes: bytes | None = field(default=None, repr=False)
    tsv_name: str = ""

    def public(self) -> dict:
        """JSON-friendly, without the uploaded bytes."""
        d = asdict(self)
        d.pop("tsv_bytes")
        return d


# -----------------------------------------------------------------------------
# the uploaded corpus

def validate_upload(data: bytes | None, name: str = "", seed: int = 0) -> list[tuple[str, str]]:
    """An uploaded TSV's pairs, or UserError naming the problem (and the bad line); with a file
    name the error is "jobs.errors.in_file" around the problem."""
    if data is None:
        raise UserError("jobs.errors.need_upload")
    try:
        return _upload_pairs(data, seed)
    except UserError as e:
        if name:
            raise UserError("jobs.errors.in_file", file=name, problem=e.message) from None
        raise


def _upload_pairs(data: bytes, seed: int) -> list[tuple[str, str]]:
    if len(data) > MAX_UPLOAD_BYTES:
        raise UserError("jobs.errors.upload_too_big", size=len(data), limit=MAX_UPLOAD_BYTES)
    pairs = read_tsv_corpus(bytes(data), max_bytes=MAX_UPLOAD_BYTES)
    if len(pairs) < MIN_PAIRS:
        raise UserError("jobs.errors.too_few_pairs", count=len(pairs), least=MIN_PAIRS)
    # The trainer's own split: sentences of the app's grammar from held-out combinations all go to test.
    splits = split_pairs(pairs, seed=seed)
    if not splits["train"] or not splits["valid"]:
        raise UserError("jobs.errors.no_split", train=len(splits["train"]), valid=len(splits["valid"]))
    return pairs


def check_upload(data: bytes, name: str) -> dict:
    """What the page needs of an upload: {"count", "sample"} (the first UPLOAD_SAMPLE pairs, all the
    estimate reads) or {"error": Message}. Never raises, so the page can cache the answer."""
    try:
        pairs = validate_upload(data, name)
    except UserError as e:
        return {"error": e.message}
    return {"count": len(pairs), "sample": pairs[:UPLOAD_SAMPLE]}


# -----------------------------------------------------------------------------
# choices -> TransformerConfig and the trainer's options

def _check_range(name: str, value) -> None:
    lo, hi = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or not lo <= value <= hi:
        raise UserError("jobs.errors.out_of_range", name=Message(f"jobs.field.{name}"), lo=lo, hi=hi, value=value)


def is_family(task: str) -> bool:
    """A member of the Transformer family (model/family): its own model, not a size of the form."""
    return task in FAMILY_TASKS


def shipped_meta(task: str) -> dict:
    """meta.json of the shipped model of a task (assets/models/<task>/), {} when there is none."""
    import json
    try:
        meta = json.loads((ASSETS / "models" / task / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def family_recipe(task: str) -> dict:
    """The recipe the shipped model of a family task was trained with (read from the command recorded in
    its meta.json), within the page's limits; a general recipe when nothing is shipped."""
    import shlex
    recipe = dict(RECIPES["small"])
    try:
        words = shlex.split(str(shipped_meta(task).get("command", "")))
    except ValueError:
        words = []
    for flag, name, kind in (("--steps", "steps", int), ("--batch-size", "batch_size", int),
                             ("--warmup", "warmup", int), ("--lr-factor", "lr_factor", float)):
        if flag in words[:-1]:
            try:
                value = kind(words[words.index(flag) + 1])
            except ValueError:
                continue
            lo, hi = LIMITS[name]
            recipe[name] = min(max(value, lo), hi)
    return recipe


def task_recipe(task: str, size: str) -> dict:
    """The recipe the page starts from for this task and size: a family task's own (family_recipe), a
    measured task-specific one (TASK_RECIPES), else the size's (RECIPES). Every key is a TrainOptions field;
    batch_tokens 0 means batches of batch_size sentences."""
    if is_family(task):
        recipe = family_recipe(task)
    else:
        recipe = TASK_RECIPES.get((task, size), RECIPES.get(size, RECIPES["small"]))
    return {"batch_tokens": 0, "cooldown": 0.0, "dropout": None, **recipe}


def recipe_dropout(recipe: dict, size: str) -> float:
    """The dropout a preset size trains with under this recipe: the recipe's own, else the preset's."""
    return float(recipe["dropout"] if recipe["dropout"] is not None else PRESETS[SIZE_PRESET[size]].dropout)


def model_config(o: TrainOptions, vocab_size: int) -> TransformerConfig:
    """The exact TransformerConfig the trainer builds for these choices (it gets it as --config).
    TransformerConfig's own checks have the last word; what they refuse is a UserError too.
    A family task's model is its own default configuration (model.family), whatever the size says."""
    if is_family(o.task):

        from model.family import family_task
        from model.training.train import build_parser
        args = build_parser().parse_args(["--task", o.task, "--seed", str(int(o.seed))])
        return family_task(o.task, o.seed).default_config(args)
    if o.size not in SIZES:
        raise UserError("jobs.errors.unknown_size", size=str(o.size))
    changes = dict(vocab_size=vocab_size, max_len=MAX_LEN,
                   architecture="decoder-only" if o.task == "lm" else "encoder-decoder")
    if o.size == "custom":
        c = {**CUSTOM_DEFAULTS, **o.custom}
        if set(c) != set(CUSTOM_DEFAULTS):
            raise UserError("jobs.errors.bad_config", detail=f"unknown sizes: {sorted(set(c) - set(CUSTOM_DEFAULTS))}")
        for name in ("d_model", "heads", "d_ff", "layers", "dropout", "label_smoothing"):
            _check_range(name, c[name])
        if c["d_model"] % c["heads"]:
            raise UserError("jobs.errors.heads_divide", heads=c["heads"], width=c["d_model"])
        if c["positional"] not in POSITIONALS:
            raise UserError("jobs.errors.unknown_positional", name=str(c["positional"]))
        changes.update(d_model=c["d_model"], n_heads=c["heads"], d_ff=c["d_ff"], n_encoder_layers=c["layers"],
                       n_decoder_layers=c["layers"], dropout=float(c["dropout"]),
                       label_smoothing=float(c["label_smoothing"]), positional=c["positional"],
                       norm_first=bool(c["norm_first"]))
    elif o.dropout is not None:
        _check_range("dropout", o.dropout)
        changes["dropout"] = float(o.dropout)
    try:
        return PRESETS[SIZE_PRESET[o.size]].replace(**changes)
    except (TypeError, ValueError) as e:
        raise UserError("jobs.errors.bad_config", detail=str(e)) from None


def validate_options(o: TrainOptions) -> None:
    """UserError for anything the trainer should not be asked to do: the task, the recipe's
    numbers and limits, the upload. The model's sizes are checked where they become a
    TransformerConfig (model_config; the estimate and JobManager.start build it)."""
    if o.task not in ALL_TASKS:
        raise UserError("jobs.errors.unknown_task", task=str(o.task))
    if o.size not in SIZES and not is_family(o.task):
        raise UserError("jobs.errors.unknown_size", size=str(o.size))
    for name in WHOLE_NUMBERS:
        value = getattr(o, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise UserError("jobs.errors.whole_number", name=Message(f"jobs.field.{name}"))
    for name in ("steps", "batch_size", "warmup", "lr_factor", "cooldown"):
        _check_range(name, getattr(o, name))
    if o.dropout is not None:
        _check_range("dropout", o.dropout)
    if o.cooldown and is_family(o.task):
        raise UserError("jobs.errors.bad_config", detail="cooldown is for the translation and LM tasks")
    if o.batch_tokens:
        if is_family(o.task):
            raise UserError("jobs.errors.bad_config", detail="batch_tokens is for the translation and LM tasks")
        _check_range("batch_tokens", o.batch_tokens)
    if o.task == "tsv":
        validate_upload(o.tsv_bytes, o.tsv_name, o.seed)


def checks_every(steps: int) -> int:
    """Steps between evaluations (and checkpoints): about ten per run."""
    return max(10, round(steps / 10))


def train_arguments(o: TrainOptions) -> list[str]:
    """The trainer's options for these (validated) choices, without the model (--config), --out,
    --tsv and --threads."""
    every = checks_every(o.steps)
    by_tokens = ["--batch-tokens", str(int(o.batch_tokens))] if o.batch_tokens else []
    cooldown = ["--cooldown", repr(float(o.cooldown))] if o.cooldown else []
    return ["--task", o.task, "--steps", str(int(o.steps)), "--batch-size", str(int(o.batch_size)), *by_tokens,
            "--warmup", str(int(o.warmup)), "--lr-factor", repr(float(o.lr_factor)), *cooldown, "--seed", str(int(o.seed)),
            "--eval-every", str(every), "--ckpt-every", str(every),
            "--log-every", str(max(1, min(20, o.steps // 50))), "--log-first"]
