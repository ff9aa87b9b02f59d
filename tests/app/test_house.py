"""The shape of the house, checked on the source: folders that tell the architecture, files a reader can hold,
no import circles, public APIs only, and no lab notebook in the tree."""
import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE_DIRS = ("model", "app", "pages")
MAX_LINES = 450
MAX_MODEL_ENTRIES = 12


def python_files(*dirs):
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("path", python_files(*CODE_DIRS), ids=rel)
def test_no_file_is_too_long_to_hold(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{rel(path)} has {n} lines: split it by what its parts do"


def test_model_folder_names_its_parts():
    entries = sorted(p.name for p in (ROOT / "model").iterdir() if p.name != "__pycache__")
    assert len(entries) <= MAX_MODEL_ENTRIES, entries


def project_imports(path: Path, known: set[str]) -> set[str]:
    """Every project module `path` imports, at the top or inside a function."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != me:
                out.add(name)
    return out


def test_no_import_circles():
    files = python_files(*CODE_DIRS)
    known = {module_name(p) for p in files}
    graph = {module_name(p): project_imports(p, known) for p in files}
    # a package's __init__ runs before its modules: importing model.nn.layers imports model.nn too
    for mod in list(graph):
        parts = mod.split(".")
        graph[mod] |= {".".join(parts[:i]) for i in range(1, len(parts))} & known - {mod}
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for mod in sorted(graph):
        if mod not in state:
            visit(mod, [])
    # a package importing its own submodules is how packages work, not a circle
    real = [c for c in cycles if not all(c[0].startswith(m) or m.startswith(c[0]) for m in c)]
    assert real == [], "\n".join(" -> ".join(c) for c in real)


@pytest.mark.parametrize("path", python_files("app"), ids=rel)
def test_app_uses_public_apis_only(path):
    text = path.read_text(encoding="utf-8")
    mods = {n.module for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ImportFrom) and n.module}
    mods |= {a.name for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m == "torch" or m.startswith("torch.") for m in mods), "torch work belongs in model/"
    assert "_getframe" not in text, "no stack-frame tricks"
    assert not any(m.startswith("_plotly_utils") or "._" in m for m in mods), f"private module: {mods}"
    assert not re.search(r"streamlit\.__file__|static[\"'/ ,]+static[\"'/ ,]+js", text), \
        "Streamlit's installed front-end files are not an API"


def code_comments_and_docstrings(path: Path):
    """(line, text) of every string and every block of comments on consecutive lines, each block as one text (a
    reference split over two lines, "(issue" and "# 13", is read whole)."""
    text = path.read_text(encoding="utf-8")
    block, start, last = [], 0, -2
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            if tok.start[0] != last + 1 and block:
                yield start, " ".join(block)
                block = []
            if not block:
                start = tok.start[0]
            block.append(tok.string.lstrip("#").strip())
            last = tok.start[0]
        elif tok.type == tokenize.STRING:
            yield tok.start[0], tok.string
    if block:
        yield start, " ".join(block)


# an issue's number, or the number of an earlier session's stop (a tour's stop is numbered by its section, "3.2.3")
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+|\b[Ss]tops? \d+\b(?!\.\d)")


@pytest.mark.parametrize("path", python_files(*CODE_DIRS, "tests", "bench", "tools"), ids=rel)
def test_comments_say_what_and_why_not_which_issue(path):
    found = [f"{line}: {m.group(0)}" for line, s in code_comments_and_docstrings(path) for m in ISSUE.finditer(s)]
    assert found == [], found


def test_benchmark_results_are_not_tracked():
    tracked = subprocess.run(["git", "ls-files", "bench/results"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    assert tracked.stdout.strip() == "", "bench/ writes its results to an ignored folder"


# A measured timing in a comment goes stale with the next machine or the next change: the current numbers live in
# docs/benchmarks.md (with their date and machine), comments say what and why.
TIMING = re.compile(r"(?<![\w.])~?\d+(\.\d+)?\s?(ms|µs)\b|~\d+(\.\d+)?\s?s\b|\(\d+(\.\d+)?\s?s\b"
                    r"|\b\d+(\.\d+)?\s?[×x]\s(faster|slower)")


def comment_timings(path: Path) -> list[str]:
    if path.suffix == ".py":
        texts = [(line, s) for line, s in code_comments_and_docstrings(path)
                 if s.startswith(('"""', "'''", "#")) or not s.startswith(("'", '"', "f", "r", "b"))]
    else:  # JavaScript and TOML: line comments
        texts = [(i, line.split(marker, 1)[1]) for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 for marker in ("//" if path.suffix == ".js" else "#",) if marker in line]
    return [f"{line}: {m.group(0)}" for line, s in texts for m in TIMING.finditer(s)]


def commented_files():
    own_js = [p for p in (ROOT / "app").rglob("*.js") if not p.name.endswith(".min.js")]
    return python_files(*CODE_DIRS) + sorted(own_js) + [ROOT / ".streamlit" / "config.toml"]


@pytest.mark.parametrize("path", commented_files(), ids=rel)
def test_comments_carry_no_timings(path):
    assert comment_timings(path) == [], "a measured time goes stale: put it in docs/benchmarks.md"


def test_the_timing_rule_sees_a_timing():
    assert TIMING.search("(0.16 s of the first page)") and TIMING.search("were ~80 ms of it")
    assert not TIMING.search("model.nn v2, step 10 of 300")


def test_every_top_level_definition_is_used():
    """A function or class in model/, app/ or pages/ that no code, test, benchmark or script names is dead code."""
    everything = "\n".join(p.read_text(encoding="utf-8") for p in python_files(*CODE_DIRS, "tests", "bench", "tools"))
    everything += "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "app").rglob("*.js"))
    unused = []
    for path in python_files(*CODE_DIRS):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and not node.name.startswith("__") \
                    and len(re.findall(rf"\b{re.escape(node.name)}\b", everything)) <= 1:
                unused.append(f"{rel(path)}:{node.name}")
    assert unused == [], unused
