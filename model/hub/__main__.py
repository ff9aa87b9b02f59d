"""python -m model.hub list                      models we can run: the local hub cache and installed packages
python -m model.hub fetch Helsinki-NLP/opus-mt-en-de   download only the files a model needs (online only); a bare
                                              id as the Hub takes it works too: fetch gpt2
python -m model.hub check FOLDER [--verbose] [--lang ko]  load a folder and print its card facts and each
                                              difference from the paper in words (a refusal is one line; --verbose
                                              adds the original error behind it)"""
from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

from model.hub import HubError, cached_models, load_pretrained
from model.hub.fetch import FetchError, fetch


LOCALES = Path(__file__).resolve().parents[2] / "app" / "locales"


def difference_languages() -> list[str]:
    """The languages whose catalogue says the differences from the paper (app/locales/<lang>/differences.toml)."""
    return sorted(p.parent.name for p in LOCALES.glob("*/differences.toml"))


# a count's two words, `{name:one|other}`, as the app's catalogue writes them (app.i18n.fill)
PLURAL = re.compile(r"\{(\w+):([^{}|]*)\|([^{}]*)\}")


def said(text: str, args: dict) -> str:
    """A catalogue sentence filled with its values: a count's word chosen by the count, then str.format."""
    text = PLURAL.sub(lambda m: m.group(2) if args.get(m.group(1)) == 1 else m.group(3), text)
    return text.format(**args)


def differences_said(cfg, lang: str) -> list[str]:
    """Each difference from the paper as a sentence in `lang` (model.nn.differences), read from the app's
    catalogue as data: the command line runs without the app, and the words stay in one place."""
    from model.nn.differences import differences_in_words
    table = tomllib.loads((LOCALES / lang / "differences.toml").read_text(encoding="utf-8"))
    return [said(table[m.code.split(".", 1)[1]], m.args) for m in differences_in_words(cfg)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model.hub", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list")
    f = sub.add_parser("fetch")
    f.add_argument("repo_id")
    c = sub.add_parser("check")
    c.add_argument("folder")
    c.add_argument("--verbose", action="store_true", help="on a refusal, also the original error behind it")
    c.add_argument("--lang", default="en", choices=difference_languages(),
                   help="the language of the differences from the paper, one sentence each")
    args = parser.parse_args(argv)
    if args.command == "list":
        for name, path in cached_models().items():
            print(f"{name}\t{path}")
        from model.hub.packages import package_models
        for name, path in package_models().items():  # models installed Python packages carry
            print(f"package: {name}\t{path}")
        return 0
    if args.command == "fetch":
        try:
            path = fetch(args.repo_id, progress=True)
        except FetchError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(path)
        return 0
    try:
        loaded = load_pretrained(args.folder)
    except HubError as e:  # any failure of a checkpoint arrives as one sentence
        print(f"error: {e}", file=sys.stderr)
        if args.verbose and getattr(e, "detail", None):
            print(e.detail.rstrip(), file=sys.stderr)
        return 2
    for dtype, n in loaded.meta.get("converted", {}).items():  # what was converted on the way (float16 read as float32)
        print(f"note: {n} tensors stored as {dtype} were converted to float32")
    cfg = loaded.config
    if loaded.meta.get("task") == "image":  # a ViT: the family's own model and config (model.family.vit)
        print(f"{loaded.meta['family']} image encoder: {loaded.model.num_parameters():,} parameters, "
              f"d_model={cfg.d_model} heads={cfg.n_heads} layers={cfg.n_layers}")
        head = f"a classifier of {cfg.n_classes} classes" if cfg.n_classes else "no classifier (attention only)"
        print(f"reads {cfg.image_size}×{cfg.image_size}-pixel images of {cfg.channels} colour "
              f"{'channel' if cfg.channels == 1 else 'channels'} in {cfg.patch_size}×{cfg.patch_size}-pixel "
              f"patches; {head}")
        return 0
    kind = loaded.meta.get("model_type", loaded.meta["family"])  # mistral, not the family module's name (llama)
    print(f"{kind} {cfg.architecture}: {loaded.model.num_parameters():,} parameters, "
          f"d_model={cfg.d_model} heads={cfg.n_heads} layers={cfg.n_encoder_layers}+{cfg.n_decoder_layers}")
    print("differs from the paper in:", cfg.differences_from_paper())
    for sentence in differences_said(cfg, args.lang):
        print(f"  - {sentence}")
    if loaded.meta.get("task") == "features":  # GPT2Model, RobertaModel: loaded, and nothing to predict with
        print("no head: attention and hidden states only (no next-token list, no filled mask)")
    elif loaded.meta.get("task") in ("classify", "tag"):  # a BERT-family classifier: what it names
        kind = "one label per text" if loaded.meta["task"] == "classify" else "one label per token"
        print(f"classifier ({kind}): {', '.join(loaded.meta.get('labels') or [])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
