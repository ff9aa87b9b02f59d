"""Translate English to Korean with the shipped model.

    python -m model.inference.translate "I go to school."
    printf 'I go to school.\\nShe drank cold water yesterday.\\n' | python -m model.inference.translate
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from model.training.checkpoint import CheckpointError, load_model_dir
from model.inference.decode import translate

DEFAULT_MODEL = Path(__file__).resolve().parents[2] / "assets" / "models" / "en-ko"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m model.inference.translate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", nargs="*", help="the English sentence (default: one per line on stdin)")
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="model directory")
    p.add_argument("--beam", type=int, default=4, help="beam size (default 4, as in the paper)")
    p.add_argument("--alpha", type=float, default=0.6, help="length penalty α (default 0.6)")
    p.add_argument("--greedy", action="store_true", help="greedy decoding instead of beam search")
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    try:
        loaded = load_model_dir(args.model, device=args.device)
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if loaded.config.architecture != "encoder-decoder" or loaded.tokenizer is None:
        print(f"error: {args.model} is not a translation model with a tokenizer", file=sys.stderr)
        return 2

    def one(line: str) -> str:
        if not line.strip():
            return ""
        return translate(loaded, line.strip(), beam_size=args.beam, alpha=args.alpha, greedy=args.greedy).text

    if args.text:
        print(one(" ".join(args.text)))
    else:
        for line in sys.stdin:
            print(one(line.rstrip("\n")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
