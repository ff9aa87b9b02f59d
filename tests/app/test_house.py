"""The shape of the house, checked on the source: folders that tell the architecture, files a reader can hold,
no import circles, public APIs only, and no lab notebook in the tree."""
import ast
from collections import Counter
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
    everything += "\n".join(p.read_text(encoding="utf-8") for p in own_js())  # not the vendored plotly.min.js
    names = Counter(re.findall(r"\w+", everything))  # every word counted once: a search per definition took minutes
    unused = []
    for path in python_files(*CODE_DIRS):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and not node.name.startswith("__") and names[node.name] <= 1:
                unused.append(f"{rel(path)}:{node.name}")
    assert unused == [], unused


# Public APIs only, in the app's own code (app/ and pages/; tests may read Streamlit's page as they like): Streamlit
# through `streamlit` and its components modules, and the exceptions its documented calls raise (st.rerun's
# StreamlitAPIException); no stack-frame tricks; in our JavaScript and in the JS and CSS a .py file writes, no
# Streamlit test ids (data-testid, stApp...) and no Plotly class names (its drawing's inner layers: a new Plotly
# draws them otherwise). Our hooks are our own: st-key-* classes of keyed containers, our own elements and classes.
PUBLIC_STREAMLIT = {"streamlit", "streamlit.components.v1", "streamlit.components.v2", "streamlit.errors"}
PUBLIC_ST_MODULES = {"components", "column_config", "connections"}  # st.components.v1.html, st.column_config.*
IMPORTERS = {"import_module", "__import__"}
FRAME_TRICKS = re.compile(r"_getframe|\bcurrentframe\b")
PAGE_INTERNALS = re.compile(
    r"data-testid|\bst[A-Z][A-Za-z]+\b"  # Streamlit's element ids (stApp, stMain, stMarkdownContainer...)
    r"|\b(nsewdrag|[a-z]*draglayer|cartesianlayer|main-svg|svg-container|plot-container|js-plotly-plot|hoverlayer"
    r"|infolayer|bglayer|gtitle|legendtoggle|modebar-(btn|group|container))\b|\.(modebar|xtick|ytick|subplot)\b")


def own_js():
    return sorted(p for p in (ROOT / "app").rglob("*.js") if not p.name.endswith(".min.js"))


def code_strings(tree: ast.AST):
    """(line, text) of every string literal of a module but its docstrings (f-strings' literal parts too)."""
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def streamlit_modules(tree: ast.AST, st_names: set[str]):
    """(line, module) of every streamlit module a file reaches: by import (`from streamlit import runtime` is
    streamlit.runtime), by an attribute of the imported package that is a module (st.runtime), by an import
    call with the module's name written in it (importlib.import_module("streamlit.runtime...")). The server's
    warm-up importing Streamlit's emoji catalogue ahead of the pages (app.fast.warmup, a list of names that may
    fail to import) uses nothing of it."""
    import importlib.util
    import types

    import streamlit

    def submodule(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            return False

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "streamlit")
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "streamlit":
            for a in node.names:
                full = f"{node.module}.{a.name}"
                yield node.lineno, full if submodule(full) else node.module
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in st_names:
            if isinstance(getattr(streamlit, node.attr, None), types.ModuleType) and node.attr not in PUBLIC_ST_MODULES:
                yield node.lineno, f"streamlit.{node.attr}"
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in IMPORTERS \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and node.args[0].value.split(".")[0] == "streamlit":
            yield node.lineno, node.args[0].value


def private_uses(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".js":
        return [f"{i}: {m.group(0)}" for i, line in enumerate(text.splitlines(), 1)
                for m in PAGE_INTERNALS.finditer(line)]
    tree = ast.parse(text)
    st_names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names if a.name == "streamlit"}
    found = [f"{line}: {m}" for line, m in streamlit_modules(tree, st_names) if m not in PUBLIC_STREAMLIT]
    found += [f"{i}: {m.group(0)}" for i, line in enumerate(text.splitlines(), 1) for m in FRAME_TRICKS.finditer(line)]
    found += [f"{line + s[:m.start()].count(chr(10))}: {m.group(0)}" for line, s in code_strings(tree)
              for m in PAGE_INTERNALS.finditer(s)]
    return found


@pytest.mark.parametrize("path", python_files("app", "pages") + own_js(), ids=rel)
def test_the_app_reaches_streamlit_and_plotly_through_their_public_apis(path):
    assert private_uses(path) == [], "public APIs only: Streamlit's and Plotly's insides change without notice"


def test_the_public_api_rule_sees_private_uses(tmp_path):
    cases = {
        "a.py": "from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx\n",
        "b.py": "import streamlit as st\nctx = st.runtime.exists()\n",
        "c.py": "from streamlit import runtime\n",
        "d.py": "import importlib\nimportlib.import_module('streamlit.testing.v1')\n",
        "e.py": "import sys\nf = sys._getframe(1)\n",
        "f.py": "CSS = \"<style>[data-testid='stMarkdownContainer'] {overflow: auto}</style>\"\n",
        "g.py": "JS = f\"document.querySelector('.stApp {{}}')\"\n",
        "h.js": "const s = '.atlas-chart-clickable .nsewdrag {cursor: pointer}';\n",
        "i.js": "gd.querySelector('.draglayer');\n",
    }
    for name, source in cases.items():
        (tmp_path / name).write_text(source, encoding="utf-8")
        assert private_uses(tmp_path / name), name
    fine = tmp_path / "fine.py"
    fine.write_text('"""Not [data-testid] in a docstring."""\nimport streamlit as st\n'
                    "import streamlit.components.v1 as components\nfrom streamlit.errors import StreamlitAPIException\n"
                    "st.components.v1.html('x')\nst.column_config.NumberColumn('n')\nst.dataframe([])\n"
                    "CSS = '.st-key-atlas-table table {overflow-x: auto}'  # not stApp in a comment\n", encoding="utf-8")
    assert private_uses(fine) == []


# One caching idiom (docs/architecture.md, "caches in one way"): Streamlit's caches are made in app/resources.py only
# (and app/jobs/manager.py's server-wide JobManager), so every cached result has its key, its bound and its language
# said there; a page asks app.resources. A functools cache in pages/ would keep a result for the whole server with
# none of that (no language, no weights version, no bound), so pages have none.
STREAMLIT_CACHES = {"cache_data", "cache_resource", "cache", "experimental_memo", "experimental_singleton"}
FUNCTOOLS_CACHES = {"cache", "lru_cache", "cached_property"}
CACHE_HOMES = {"app/resources.py", "app/jobs/manager.py"}


def cache_uses(path: Path, pages: bool) -> list[str]:
    """(line: what) of every Streamlit cache the file makes (st.cache_data, `from streamlit import cache_data`,
    through any name streamlit is imported as) and, with `pages`, every functools cache it imports or decorates
    with."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    st_names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names if a.name == "streamlit"}
    ft_names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names if a.name == "functools"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "streamlit":
            found += [f"{node.lineno}: streamlit.{a.name}" for a in node.names if a.name in STREAMLIT_CACHES]
        elif isinstance(node, ast.ImportFrom) and node.module == "functools" and pages:
            found += [f"{node.lineno}: functools.{a.name}" for a in node.names if a.name in FUNCTOOLS_CACHES]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in st_names and node.attr in STREAMLIT_CACHES:
                found.append(f"{node.lineno}: streamlit.{node.attr}")
            elif pages and node.value.id in ft_names and node.attr in FUNCTOOLS_CACHES:
                found.append(f"{node.lineno}: functools.{node.attr}")
    return found


@pytest.mark.parametrize("path", [p for p in python_files("app", "pages") if rel(p) not in CACHE_HOMES], ids=rel)
def test_results_are_cached_in_app_resources_only(path):
    found = cache_uses(path, pages=rel(path).startswith("pages/"))
    assert found == [], "cache through app.resources (docs/architecture.md says which function for what)"


def test_the_cache_rule_sees_caches(tmp_path):
    cases = {
        "a.py": "import streamlit as st\n@st.cache_data(ttl=3)\ndef f(x):\n    return x\n",
        "b.py": "import streamlit\nf = streamlit.cache_resource(lambda: 1)\n",
        "c.py": "from streamlit import cache_data\n",
        "d.py": "def f():\n    import streamlit as _st\n    return _st.cache_resource\n",
        "e.py": "import functools\n@functools.lru_cache(maxsize=1)\ndef f():\n    return 1\n",
        "f.py": "from functools import cache\n@cache\ndef f():\n    return 1\n",
        "g.py": "import functools as ft\n@ft.cache\ndef f():\n    return 1\n",
    }
    for name, source in cases.items():
        (tmp_path / name).write_text(source, encoding="utf-8")
        assert cache_uses(tmp_path / name, pages=True), name
    for name in "abcd":
        assert cache_uses(tmp_path / f"{name}.py", pages=False), name
    assert cache_uses(tmp_path / "e.py", pages=False) == []  # app/'s constants (a file's hash) may use functools
    fine = tmp_path / "fine.py"
    fine.write_text('"""Not st.cache_data in a docstring."""\nimport functools\nimport streamlit as st\n'
                    "from app.resources import computed\nf = functools.partial(int, base=2)\nst.write('cache')\n",
                    encoding="utf-8")
    assert cache_uses(fine, pages=True) == []


# A page is a script: a name it assigns at its top level (`model_key = ...`, a for or with target, also inside an
# if or with block) holds what the last full run left there. A function that reads such a name works only because
# of the order of execution, and an @st.fragment rerun reads the value of the last full run, not of its own call.
# So a function takes what it reads as a parameter; a true constant (computed once from constants) is ALL_CAPS.
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)


def flow_names(tree: ast.Module) -> set[str]:
    """Names the script's flow assigns at the module's top level, not ALL_CAPS and not _private."""
    targets, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Assign):
            targets += node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets.append(node.target)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            targets.append(node.target)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets += [i.optional_vars for i in node.items if i.optional_vars is not None]
        if isinstance(node, BLOCKS):  # a block's body runs in the module's scope too
            todo += [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]
            todo += [s for h in getattr(node, "handlers", []) + getattr(node, "cases", []) for s in h.body]
        if not isinstance(node, SCOPES):  # a walrus anywhere in the flow's own expressions
            targets += [n.target for n in walk_scope(node) if isinstance(n, ast.NamedExpr)]
    return {n.id for t in targets for n in ast.walk(t)  # `st.session_state[k] = ...` binds no name
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            and not n.id.isupper() and not n.id.startswith("_")}


def walk_scope(node: ast.AST):
    """Every node under `node` that runs in its scope: not the bodies of the functions and classes it defines
    (their decorators, defaults and bases do run here)."""
    for child in ast.iter_child_nodes(node):
        yield child
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in child.decorator_list + child.args.defaults + [d for d in child.args.kw_defaults if d]:
                yield sub
                yield from walk_scope(sub)
        elif isinstance(child, ast.Lambda):
            for sub in child.args.defaults + [d for d in child.args.kw_defaults if d]:
                yield sub
                yield from walk_scope(sub)
        elif isinstance(child, ast.ClassDef):
            for sub in child.decorator_list + child.bases + [k.value for k in child.keywords]:
                yield sub
                yield from walk_scope(sub)
        else:
            yield from walk_scope(child)


def own_bindings(fn) -> set[str]:
    """Names a function binds in its own scope: parameters, assignments, imports, the functions and classes it
    defines, except and match names; less the ones it declares global."""
    args = fn.args
    bound = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a}
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    declared_global = set()
    for n in scope_nodes(body):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            bound.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).partition(".")[0] for a in n.names}
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            bound.add(n.name)
        elif isinstance(n, ast.Global):
            declared_global |= set(n.names)
    return bound - declared_global


def scope_nodes(body: list[ast.stmt]):
    """The statements of a scope and every node under them that runs in it."""
    yield from walk_scope(ast.Module(body=body, type_ignores=[]))


def flow_reads(path: Path, root: Path = ROOT) -> list[str]:
    """'file:line function reads name' for every read, inside a def (nested ones and the lambdas in it included),
    of a name the page's flow assigns that neither the function nor a function around it binds. A lambda of the
    flow itself (a figure's builder, called there and then) reads the flow's own names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    flow, found = flow_names(tree), []

    def visit(body, enclosing: set[str], owner: str | None):
        for n in scope_nodes(body):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                check(n, enclosing, n.name)
            elif isinstance(n, ast.Lambda) and owner:
                check(n, enclosing, owner)  # named by the def it is in
            elif isinstance(n, ast.ClassDef):
                visit(n.body, enclosing, owner)  # a method sees the functions around its class, not its class

    def check(fn, enclosing: set[str], name: str):
        bound = enclosing | own_bindings(fn)
        body = fn.body if isinstance(fn.body, list) else [fn.body]
        for n in scope_nodes(body):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in flow and n.id not in bound:
                found.append((n.lineno, name, n.id))
        visit(body, bound, name)

    visit(tree.body, set(), None)
    where = path.relative_to(root).as_posix()
    return [f"{where}:{line} {name} reads {var}" for line, name, var in sorted(set(found))]


def test_functions_of_pages_take_what_they_read_as_parameters():
    found = [f for path in python_files("pages") for f in flow_reads(path)]
    assert not found, "a function reads a name the page's flow assigns (a fragment rerun reads the last full " \
        "run's value): pass it as a parameter, or make a true constant ALL_CAPS\n" + "\n".join(found)


def test_the_flow_read_rule_sees_flow_reads(tmp_path):
    page = tmp_path / "p.py"
    page.write_text(
        "import streamlit as st\nLIMIT = 3\n_seen = 0\n"
        "@st.fragment\ndef shown(k):\n    st.write(model_key, k, LIMIT, _seen)\n"
        "def fine(model_key):\n    return model_key\n"
        "def outer():\n    col = 1\n    def inner():\n        return col, tab\n    return inner\n"
        "model_key = st.selectbox('model', ['a'])\n"
        "with st.sidebar as bar:\n    if model_key:\n        tab = st.tabs(['x'])\n"
        "for i in range(3):\n    st.session_state[i] = lambda: i\n"
        "class C:\n    model_key = 2\n    def m(self):\n        return model_key\n"
        "def own():\n    global bar\n    return bar\n"
        "def shadow(n=model_key):\n    i = 0\n    return [tab for tab in (i, n)]\n"
        "def later():\n    return lambda: i + 1\n",
        encoding="utf-8")
    reads = [r.split(":", 1)[1] for r in flow_reads(page, tmp_path)]
    assert reads == ["6 shown reads model_key", "12 inner reads tab", "23 m reads model_key", "26 own reads bar",
                     "31 later reads i"], reads
    assert "st" not in flow_names(ast.parse(page.read_text(encoding="utf-8")))
