"""Download a pretrained model's files into the standard Hugging Face cache (only what we need:
config, weights in safetensors when there are some, tokenizer files, licence and README). Needs the
network: offline, it says so and how to add a model from a folder instead. The app never calls this on
its own; the learner asks for it."""
from __future__ import annotations

import re
from pathlib import Path

from model.hub import hub_cache_dir

NEEDED = ["config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json",
          "vocab.json", "vocab.txt", "merges.txt", "source.spm", "target.spm", "preprocessor_config.json", "*.md",
          "LICENSE*", "tokenizer.json", "tokenizer.model"]  # the last two: Llama, Mistral, Qwen2 (model/hub/llama.py)
# A Hub repository id: "name" (a bare id, as the Hub still serves gpt2 or bert-base-uncased) or "owner/name";
# each part letters, digits, "-", "_", ".", starting and ending with a letter or digit, at most 96 characters.
PART = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9])?"
REPO_ID = re.compile(rf"(?:{PART}/)?{PART}")


def valid_repo_id(repo_id: str) -> bool:
    """Whether `repo_id` is a name the Hub accepts (its own rules: no "--" or "..", no ".git" ending), checked
    here so that a path such as ../../etc or a typo is refused before any connection."""
    return (isinstance(repo_id, str) and bool(REPO_ID.fullmatch(repo_id)) and "--" not in repo_id
            and ".." not in repo_id and not repo_id.endswith(".git"))


class FetchError(RuntimeError):
    """A download that cannot happen; `code` says which case (offline, bad_name, unreachable, no_weights,
    failed) for a page to explain in its language, the message is the English detail."""

    def __init__(self, code: str, message: str):
        self.code = code
        super().__init__(message)


def online(host: str = "huggingface.co", timeout: float = 3.0) -> bool:
    """Whether the hub can be reached at all (a quick connection, so that offline says so at once
    instead of after the hub client's retries); False when HF_HUB_OFFLINE is set."""
    import os
    import socket
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return False
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


OFFLINE = ("this machine cannot reach the Hugging Face hub. Put the model's folder (config.json, the weights, the "
           "tokenizer files) into ./pretrained/ instead, or copy it into the Hugging Face cache")


def fetch(repo_id: str, progress: bool = False, cache_dir: Path | None = None) -> Path:
    """The local snapshot folder of `repo_id` after downloading what is missing."""
    if not valid_repo_id(repo_id):
        raise FetchError("bad_name", f"{repo_id!r} is not a Hugging Face model name such as gpt2 or "
                         "Helsinki-NLP/opus-mt-en-de")
    if not online():
        raise FetchError("offline", OFFLINE)
    try:
        from huggingface_hub import list_repo_files, snapshot_download
        from huggingface_hub.utils import disable_progress_bars, enable_progress_bars
    except ImportError:
        raise FetchError("failed", "the huggingface_hub package is not installed (pip install huggingface_hub)") from None
    cache = str(cache_dir or hub_cache_dir())
    try:
        files = list_repo_files(repo_id)
    except Exception as e:  # offline (connection errors), unknown repository, gated model
        raise FetchError("unreachable", f"cannot reach the Hugging Face hub for {repo_id} ({type(e).__name__}). Offline, put the "
                         f"model's folder (config.json, weights, tokenizer files) into ./pretrained/ instead") from None
    weights = ["model.safetensors"] if "model.safetensors" in files else ["pytorch_model.bin"] if \
        "pytorch_model.bin" in files else []
    if not weights:
        raise FetchError("no_weights", f"{repo_id} has no model.safetensors or pytorch_model.bin")
    (enable_progress_bars if progress else disable_progress_bars)()
    try:
        return Path(snapshot_download(repo_id, allow_patterns=NEEDED + weights, cache_dir=cache))
    except Exception as e:
        raise FetchError("failed", f"download of {repo_id} failed ({type(e).__name__}: {str(e)[:200]})") from None
