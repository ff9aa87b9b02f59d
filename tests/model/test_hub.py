"""model/hub's shared part: finding pretrained models (./pretrained and a fake Hugging Face cache), refusing
what cannot be run (unknown architecture, no config, no weights, too large for this machine's memory),
and the offline download message. The per-family numbers are in tests/test_hub_{marian,gpt2,bert}.py."""
import json
import shutil

import pytest

from model.hub import (HubError, cached_models, check_memory, hub_cache_dir, is_hf_folder, load_pretrained,
                       memory_needed)
from model.hub.fetch import FetchError, fetch

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    from tests.hub_fixtures_marian import build_marian_folder
    return build_marian_folder(tmp_path_factory.mktemp("hub") / "opus-mt-tiny")


def test_discovery_in_a_fake_hub_cache(marian, tmp_path, monkeypatch):
    cache = tmp_path / "hf" / "hub"
    old = cache / "models--Helsinki-NLP--opus-mt-tiny" / "snapshots" / "aaaa"
    new = cache / "models--Helsinki-NLP--opus-mt-tiny" / "snapshots" / "bbbb"
    shutil.copytree(marian, old)
    shutil.copytree(marian, new)
    (cache / "models--google--t5-small" / "snapshots" / "cccc").mkdir(parents=True)  # not a family we run
    t5 = cache / "models--google--t5-small" / "snapshots" / "cccc"
    (t5 / "config.json").write_text(json.dumps({"model_type": "t5"}))
    (t5 / "model.safetensors").write_bytes(b"")
    (cache / "models--empty--repo").mkdir()
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert hub_cache_dir() == cache
    found = cached_models()
    assert list(found) == ["Helsinki-NLP/opus-mt-tiny"]
    assert found["Helsinki-NLP/opus-mt-tiny"].parent.name == "snapshots"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    assert cached_models() == {}


def test_the_app_lists_pretrained_folders(marian, tmp_path, monkeypatch):
    from app.resources import available_models
    base = tmp_path / "pretrained"
    shutil.copytree(marian, base / "opus-mt-tiny")
    (base / "half-copied").mkdir()
    (base / "half-copied" / "config.json").write_text("{")  # damaged: not offered, no crash
    monkeypatch.setenv("ATLAS_PRETRAINED_DIR", str(base))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "none"))
    models = available_models()
    assert models["pretrained: opus-mt-tiny"] == base / "opus-mt-tiny"
    assert not any("half-copied" in name for name in models)


def test_too_large_for_this_machine_is_refused_with_an_estimate(marian):
    need = memory_needed(marian / "model.safetensors")
    with pytest.raises(HubError, match=r"needs about .* GiB .* has [0-9.]+ GiB available"):
        check_memory(marian / "model.safetensors", available=need // 2)
    with pytest.raises(HubError, match="needs about"):
        load_pretrained(marian, available=1000)
    check_memory(marian / "model.safetensors", available=need * 2)  # enough: no error


@pytest.mark.parametrize("damage, words", [
    (lambda d: (d / "config.json").unlink(), "config.json"),
    (lambda d: (d / "config.json").write_text(json.dumps({"model_type": "t5"})), "unsupported architecture"),
    (lambda d: (d / "config.json").write_text("not json"), "config.json"),
    (lambda d: (d / "model.safetensors").unlink(), "no model.safetensors"),
    (lambda d: (d / "model.safetensors").write_bytes(b"\x00" * 64), "cannot be read safely"),
])
def test_a_folder_that_cannot_be_run_says_why(marian, tmp_path, damage, words):
    folder = tmp_path / "m"
    shutil.copytree(marian, folder)
    damage(folder)
    with pytest.raises(HubError, match=words):
        load_pretrained(folder)


def test_our_own_model_folders_are_not_taken_for_hugging_face_ones():
    from app.resources import SHIPPED
    assert not is_hf_folder(SHIPPED["en-ko"])


def test_downloads_say_clearly_when_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FetchError) as e:
        fetch("Helsinki-NLP/opus-mt-en-de")
    assert e.value.code == "offline" and "pretrained" in str(e.value)
    with pytest.raises(FetchError) as e:
        fetch("../../etc/passwd")
    assert e.value.code == "bad_name"


BARE_IDS = ["gpt2", "bert-base-uncased", "distilbert-base-uncased", "roberta-base", "t5-small", "xlm-roberta-base"]
OWNED_IDS = ["Helsinki-NLP/opus-mt-en-de", "openai-community/gpt2", "google-bert/bert-base-uncased", "a/b",
             "sentence-transformers/all-MiniLM-L6-v2", "FacebookAI/roberta-base", "x_y/z.v2"]
NOT_IDS = ["", " ", "../../etc/passwd", "/gpt2", "gpt2/", "a/b/c", "-gpt2", "gpt2-", ".gpt2", "gpt2.", "gp..t2",
           "gp--t2", "gpt2.git", "owner/gpt2.git", "gpt 2", "not a name <b>", "gpt2\n", "ö/x", "a" * 97, None, 7]


@pytest.mark.parametrize("repo_id", BARE_IDS + OWNED_IDS)
def test_repo_ids_people_type_are_accepted(repo_id):
    """The Hub takes a bare id (a repository without an owner, as gpt2 or bert-base-uncased) as well as
    owner/name: both reach the download (offline here, so the answer is "offline", never "bad_name")."""
    from model.hub.fetch import valid_repo_id
    assert valid_repo_id(repo_id)
    with pytest.MonkeyPatch.context() as m:
        m.setenv("HF_HUB_OFFLINE", "1")
        with pytest.raises(FetchError) as e:
            fetch(repo_id)
    assert e.value.code == "offline"


@pytest.mark.parametrize("repo_id", NOT_IDS)
def test_names_the_hub_refuses_are_refused_before_any_connection(monkeypatch, repo_id):
    from model.hub import fetch as fetch_module
    monkeypatch.setattr(fetch_module, "online", lambda *a, **k: pytest.fail("no connection for a bad name"))
    assert not fetch_module.valid_repo_id(repo_id)
    with pytest.raises(FetchError) as e:
        fetch(repo_id)
    assert e.value.code == "bad_name"


def test_our_names_agree_with_the_hub_clients_own_check():
    """Our check (made before any connection) accepts exactly what huggingface_hub's validator accepts."""
    validators = pytest.importorskip("huggingface_hub.utils")
    from model.hub.fetch import valid_repo_id
    for repo_id in BARE_IDS + OWNED_IDS + [n for n in NOT_IDS if isinstance(n, str) and n.strip()]:
        try:
            validators.validate_repo_id(repo_id)
            theirs = True
        except validators.HFValidationError:
            theirs = False
        if repo_id.isascii() and "\n" not in repo_id:  # theirs allows any Unicode letter; the Hub's names are ASCII
            assert valid_repo_id(repo_id) == theirs, repo_id


def test_a_bare_id_is_downloaded_as_typed(monkeypatch, tmp_path):
    """fetch("gpt2") asks the hub client for "gpt2" itself (the Hub redirects it to its owner), offline here:
    the client's functions are stand-ins that record what they were asked."""
    import huggingface_hub
    from model.hub import fetch as fetch_module
    asked = []
    monkeypatch.setattr(fetch_module, "online", lambda *a, **k: True)
    monkeypatch.setattr(huggingface_hub, "list_repo_files", lambda repo: asked.append(repo) or
                        ["config.json", "model.safetensors", "vocab.json", "merges.txt", "pytorch_model.bin"])

    def download(repo, allow_patterns, cache_dir):
        asked.append((repo, tuple(allow_patterns), cache_dir))
        return str(tmp_path / "snap")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    assert fetch("gpt2", cache_dir=tmp_path) == tmp_path / "snap"
    assert asked[0] == "gpt2" and asked[1][0] == "gpt2" and asked[1][2] == str(tmp_path)
    assert "model.safetensors" in asked[1][1] and "pytorch_model.bin" not in asked[1][1]


def test_the_command_line_fetch_takes_a_bare_id(monkeypatch, capsys):
    from model.hub.__main__ import main
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["fetch", "gpt2"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Hugging Face hub" in err and "not a Hugging Face model name" not in err
    assert main(["fetch", "../gpt2"]) == 2
    assert "not a Hugging Face model name" in capsys.readouterr().err


def test_size_summary_counts_what_we_load(marian):
    from model.hub import load_pretrained, size_summary
    s = size_summary(marian)
    loaded = load_pretrained(marian)
    assert (s["family"], s["layers"], s["d_model"], s["d_ff"], s["heads"]) == (
        "marian", loaded.config.n_encoder_layers, loaded.config.d_model, loaded.config.d_ff, loaded.config.n_heads)
    assert s["parameters"] == loaded.model.num_parameters()


def test_size_summary_of_a_damaged_file_is_a_clear_error(marian, tmp_path):
    import shutil
    from model.hub import HubError, size_summary
    bad = tmp_path / "bad"
    shutil.copytree(marian, bad)
    (bad / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(HubError, match="cannot be read safely"):
        size_summary(bad)


def test_bfloat16_runs_the_whole_inspector_path(marian):
    """ATLAS_BF16 on a GPU loads imported models in bfloat16; the same code path on the CPU: translation,
    every attention map and the figures' arrays come back as float32 numbers close to the float32 model's."""
    import numpy as np
    import torch

    from app.charts.style import to_np
    from model.inference.decode import translate
    from model.hub import load_pretrained
    from model.lessons.probe import kind_weights
    full = load_pretrained(marian)
    half = load_pretrained(marian, dtype=torch.bfloat16)
    assert next(half.model.parameters()).dtype == torch.bfloat16 and half.meta["dtype"] == "bfloat16"
    a = translate(full, "the cat sat", greedy=True, max_len=8)
    b = translate(half, "the cat sat", greedy=True, max_len=8)
    assert b.out_ids and all(0 <= s.prob <= 1 for s in b.steps)
    w32 = to_np(kind_weights(a.attention, "encoder_self"))
    w16 = to_np(kind_weights(b.attention, "encoder_self"))
    assert w16.dtype == np.float64 and np.allclose(w32, w16, atol=0.05)


def test_bfloat16_only_on_cuda_and_only_when_asked(monkeypatch):
    import torch

    from model.hub import pretrained_dtype
    monkeypatch.setenv("ATLAS_BF16", "1")
    assert pretrained_dtype(torch.device("cuda")) == torch.bfloat16
    assert pretrained_dtype(torch.device("cpu")) is None
    monkeypatch.setenv("ATLAS_BF16", "0")
    assert pretrained_dtype(torch.device("cuda")) is None


def test_every_registered_family_is_complete():
    """A family is one module listed in FAMILIES (docs/architecture.md, "Add a pretrained architecture"): it
    provides convert, tokenizer and meta, declares its model types, its size keys for the overview and its title,
    which the refusal that lists what is supported names."""
    import importlib

    import model.hub as hub
    from model.hub.families import declaration
    for name in hub.FAMILIES:
        module = importlib.import_module(f"model.hub.{name}")
        declared = declaration(name)
        assert declared["MODEL_TYPES"] == module.MODEL_TYPES and len(declared["SIZES"]) == 4, name
        assert all(callable(getattr(module, f, None)) for f in ("convert", "tokenizer", "meta")), name
        for model_type in module.MODEL_TYPES:
            assert hub.known_family(model_type) == name
    with pytest.raises(hub.HubError) as refused:
        hub.known_family("no-such-type")
    assert "DistilBERT" in str(refused.value) and "BERT" in str(refused.value)
