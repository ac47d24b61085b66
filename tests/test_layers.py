"""The package layout of ``ocr_hook`` (docs/architecture.md), read from the source with ``ast``.

Every module of the package is parsed; every import of an ``ocr_hook`` module counts, whether it
is absolute (``import ocr_hook.llm``, ``from ocr_hook import cli``) or relative (``from ..git
import run_git``), at module level, inside a function or under ``if TYPE_CHECKING:``.

- Each module belongs to a stage package (``ocr_hook/<package>/``) or is one of the leaf modules
  directly in ``ocr_hook/``. A new package or top-level module fails until it is placed here.
- A package may import only the packages :data:`MAY_IMPORT` lists for it, and those only through
  their ``__init__.py`` (``from ..git import run_git``, ``from .. import git``), never an inner
  module (``from ..git.process import run_git``). Inside a package any module may import any
  other, without cycles.
- The leaves import only each other; ``diff`` and ``llm`` take only ``errors`` of them.
- The size rules: a module of at most 500 lines, a function of at most 80, at most 12 modules
  directly in ``ocr_hook/`` and at most 16 in any package.

Real: the package's source files. Synthetic: the sources fed to the checker in the self-tests,
which prove that a forbidden import is reported (module, line and edge).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

from tests.support.paths import ROOT

PACKAGE_DIR = ROOT / "ocr_hook"

# package -> the packages it may import. Read top to bottom, this is the pipeline's order:
# commands, the run, what it reports, the model's side and the comments, the tools, the
# change and its secrets, configuration, the LLM clients, git, the diff model, helpers.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "cli": frozenset({"pipeline", "hooks", "report", "agent", "comments", "tools", "change",
                      "config", "secrets", "llm", "git", "diff", "util"}),
    "pipeline": frozenset({"report", "agent", "comments", "tools", "change", "config",
                           "secrets", "llm", "git", "diff", "util"}),
    "hooks": frozenset({"git", "util"}),
    "report": frozenset({"agent", "comments", "change", "llm", "diff", "util"}),
    "agent": frozenset({"tools", "secrets", "llm", "diff", "util"}),
    "comments": frozenset({"git", "diff", "util"}),
    "tools": frozenset({"llm", "git", "diff", "util"}),
    "change": frozenset({"secrets", "git", "diff", "util"}),
    "config": frozenset({"llm", "git", "util"}),
    "secrets": frozenset({"git", "diff", "util"}),
    "llm": frozenset({"util"}),
    "git": frozenset({"diff", "util"}),
    "diff": frozenset({"util"}),
    "util": frozenset(),
}
# modules directly in ocr_hook/: the vocabulary every package shares
LEAVES = frozenset({"errors", "exitcodes", "vocabulary", "findings", "gate"})
# leaves a package may import when not all of them
LEAVES_ALLOWED: dict[str, frozenset[str]] = {
    "diff": frozenset({"errors"}),  # the diff model is pure: no findings, no gate
    "llm": frozenset({"errors"}),  # the LLM clients know no findings, git, diffs or tools
}
MAX_TOP_LEVEL_MODULES = 12
MAX_PACKAGE_MODULES = 16


class Edge(NamedTuple):
    src: str  # importing module
    dst: str  # imported ocr_hook module (or the package when the name is not a module)
    line: int  # 1-based line of the import statement


def module_name(path: Path, package_dir: Path = PACKAGE_DIR) -> str:
    """``ocr_hook/llm/http.py`` -> ``ocr_hook.llm.http``; ``ocr_hook/agent/__init__.py`` ->
    ``ocr_hook.agent``."""
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(module: str, source: str, is_package: bool, known: Collection[str]) -> list[Edge]:
    """Every import of an ``ocr_hook`` module in ``source`` (anywhere in the tree). ``from X
    import name`` is an edge to ``X.name`` when that is a module in ``known``, else to ``X``."""
    return list(_imports_of(module, source, is_package, frozenset(known)))


@functools.cache
def _imports_of(module: str, source: str, is_package: bool, known: frozenset[str]
                ) -> tuple[Edge, ...]:
    package = module if is_package else module.rpartition(".")[0]
    edges: list[Edge] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            edges.extend(Edge(module, a.name, node.lineno) for a in node.names
                         if a.name.split(".")[0] == "ocr_hook")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            if base.split(".")[0] != "ocr_hook":
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                edges.append(Edge(module, sub if sub in known else base, node.lineno))
    return tuple(e for e in dict.fromkeys(edges) if e.dst != module)  # one per line and target


def unit_of(module: str) -> str:
    """The package (``change``), the leaf (``errors``) or ``""`` for ``ocr_hook`` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def placement_problem(module: str) -> str | None:
    """Why ``module`` has no place in the layout, or None."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    if len(parts) == 2 and parts[1] in LEAVES | set(MAY_IMPORT):
        return None
    if len(parts) > 2 and parts[1] in MAY_IMPORT:
        return None
    return ("is neither a package of MAY_IMPORT nor a leaf module"
            " (place it in tests/test_layers.py)")


def edge_problem(src: str, dst: str) -> str | None:
    """Why ``src`` must not import ``dst``, or None when the edge is allowed."""
    a, b = unit_of(src), unit_of(dst)
    if a == b:
        return None
    if b == "":
        return None  # ocr_hook.__version__
    if a == "" and b:
        return "ocr_hook/__init__.py imports nothing"
    if b in LEAVES:
        if a in LEAVES or a in MAY_IMPORT:
            allowed = LEAVES_ALLOWED.get(a, LEAVES)
            return None if b in allowed else f"{a} may import only {', '.join(sorted(allowed))}"
        return None
    if a in LEAVES:
        return "a leaf module imports only other leaves"
    if b not in MAY_IMPORT.get(a, ()):
        return f"{a} may not import {b}"
    if dst != f"ocr_hook.{b}":
        return f"import it from ocr_hook.{b}, not from its inner module"
    return None


def _cycles(edges: Collection[Edge]) -> Iterator[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.src, set()).add(e.dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(v: str) -> Iterator[list[str]]:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                yield from visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                yield sorted(comp)

    for v in sorted(graph):
        if v not in index:
            yield from visit(v)


def check(sources: Mapping[str, tuple[str, str, bool]]) -> list[str]:
    """Problems of a package given as module -> (display path, source, is_package): modules
    without a place, forbidden edges (``path:line: src -> dst: why``), cycles of allowed
    edges."""
    known = set(sources)
    problems = [f"{path}: module {m} {why}" for m, (path, _, _) in sorted(sources.items())
                if (why := placement_problem(m))]
    edges: list[Edge] = []
    for m, (path, source, is_package) in sorted(sources.items()):
        for e in imports_of(m, source, is_package, known):
            why = edge_problem(e.src, e.dst)
            if why is None:
                edges.append(e)
            else:
                problems.append(f"{path}:{e.line}: {e.src} -> {e.dst}: {why}")
    # a cycle through a forbidden edge is reported by that edge; allowed edges must not cycle
    problems.extend(f"import cycle: {' <-> '.join(c)}" for c in _cycles(edges))
    return problems


@functools.cache
def _read_package(package_dir: Path) -> tuple[tuple[str, tuple[str, str, bool]], ...]:
    root = package_dir.parent
    return tuple(
        (module_name(p, package_dir), (str(p.relative_to(root)), p.read_text("utf-8"),
                                       p.name == "__init__.py"))
        for p in sorted(package_dir.rglob("*.py")))


def package_sources(package_dir: Path = PACKAGE_DIR) -> dict[str, tuple[str, str, bool]]:
    """module -> (path relative to the repository, source, is_package) for every .py file."""
    return dict(_read_package(package_dir))


def test_package_imports_follow_the_layers() -> None:
    problems = check(package_sources())
    assert not problems, "forbidden imports:\n" + "\n".join(problems)


def test_may_import_is_a_one_way_order() -> None:
    """The allowed package graph has no cycle: it is the order docs/architecture.md shows."""
    edges = [Edge(f"ocr_hook.{a}", f"ocr_hook.{b}", 0)
             for a, targets in MAY_IMPORT.items() for b in targets]
    assert all(b in MAY_IMPORT for a, targets in MAY_IMPORT.items() for b in targets)
    assert list(_cycles(edges)) == []
    assert not any(a in MAY_IMPORT for a in LEAVES)


def test_few_modules_at_the_top_and_in_each_package() -> None:
    top = sorted(p.name for p in PACKAGE_DIR.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top
    assert {p.removesuffix(".py") for p in top} <= LEAVES | {"__init__"}
    packages = sorted(p.parent for p in PACKAGE_DIR.rglob("__init__.py"))
    sizes = {str(p.relative_to(PACKAGE_DIR)): len(list(p.glob("*.py"))) - 1 for p in packages}
    assert max(sizes.values()) <= MAX_PACKAGE_MODULES, sizes
    assert {p.name for p in PACKAGE_DIR.iterdir() if p.is_dir() and p.name != "__pycache__"} \
        == set(MAY_IMPORT)


# -- self-tests: the checker reports what it must -----------------------------------------------


def with_source(module: str, source: str, path: str, is_package: bool = False
                ) -> dict[str, tuple[str, str, bool]]:
    """The real package's sources with ``module`` replaced (or added)."""
    sources = package_sources()
    sources[module] = (path, source, is_package)
    return sources


def new_problems(sources: Mapping[str, tuple[str, str, bool]]) -> list[str]:
    """Problems of ``sources`` that the real package does not have, so these self-tests
    check the checker whatever state the real package is in."""
    known = set(check(package_sources()))
    return [p for p in check(sources) if p not in known]


def test_every_module_is_read() -> None:
    sources = package_sources()
    assert {"ocr_hook", "ocr_hook.diff", "ocr_hook.diff.patch", "ocr_hook.llm",
            "ocr_hook.llm.http", "ocr_hook.agent.loop", "ocr_hook.tools.mcp.bridge"} <= set(sources)
    assert sources["ocr_hook.llm"][0] == "ocr_hook/llm/__init__.py"
    assert sources["ocr_hook.llm"][2] is True


def test_imports_of_reads_absolute_relative_and_nested_imports() -> None:
    src = (
        "from __future__ import annotations\n"
        "import json\n"
        "import ocr_hook.errors\n"
        "from . import types\n"
        "from .http import post_json\n"
        "from .. import __version__\n"
        "from ocr_hook import findings\n"
        "def f() -> None:\n"
        "    from ..tools import Registry\n"
        "if TYPE_CHECKING:\n"
        "    from ..diff.patch import FileDiff\n"
    )
    known = set(package_sources())
    assert imports_of("ocr_hook.llm.openai", src, False, known) == [
        Edge("ocr_hook.llm.openai", "ocr_hook.errors", 3),
        Edge("ocr_hook.llm.openai", "ocr_hook.llm.types", 4),
        Edge("ocr_hook.llm.openai", "ocr_hook.llm.http", 5),
        Edge("ocr_hook.llm.openai", "ocr_hook", 6),
        Edge("ocr_hook.llm.openai", "ocr_hook.findings", 7),
        Edge("ocr_hook.llm.openai", "ocr_hook.tools", 9),
        Edge("ocr_hook.llm.openai", "ocr_hook.diff.patch", 11),
    ]
    # in a package's __init__, "." is the package itself
    assert imports_of("ocr_hook.llm", "from .openai import OpenAIClient\n", True, known) == [
        Edge("ocr_hook.llm", "ocr_hook.llm.openai", 1)]


def test_forbidden_import_inside_a_function_is_reported() -> None:
    path = "ocr_hook/diff/patch.py"
    bad = (PACKAGE_DIR / "diff" / "patch.py").read_text("utf-8") + (
        "\n\ndef _oops() -> None:\n    from ..cli import main\n")
    line = bad.count("\n")
    problems = new_problems(with_source("ocr_hook.diff.patch", bad, path))
    assert problems == [
        f"{path}:{line}: ocr_hook.diff.patch -> ocr_hook.cli.main: diff may not import cli"]


def test_forbidden_package_edges_are_reported() -> None:
    cases = [
        ("ocr_hook.diff.patch", "ocr_hook/diff/patch.py", "import ocr_hook.llm\n",
         "ocr_hook.diff.patch -> ocr_hook.llm: diff may not import llm"),
        ("ocr_hook.diff.patch", "ocr_hook/diff/patch.py", "from ..git import run_git\n",
         "ocr_hook.diff.patch -> ocr_hook.git: diff may not import git"),
        ("ocr_hook.diff.patch", "ocr_hook/diff/patch.py", "from ..findings import Finding\n",
         "ocr_hook.diff.patch -> ocr_hook.findings: diff may import only errors"),
        ("ocr_hook.llm.openai", "ocr_hook/llm/openai.py", "from ..git import run_git\n",
         "ocr_hook.llm.openai -> ocr_hook.git: llm may not import git"),
        ("ocr_hook.llm.openai", "ocr_hook/llm/openai.py", "from ..findings import Finding\n",
         "ocr_hook.llm.openai -> ocr_hook.findings: llm may import only errors"),
        ("ocr_hook.comments.anchor", "ocr_hook/comments/anchor.py", "from ..agent import Meter\n",
         "ocr_hook.comments.anchor -> ocr_hook.agent: comments may not import agent"),
        ("ocr_hook.comments.anchor", "ocr_hook/comments/anchor.py", "from .. import llm\n",
         "ocr_hook.comments.anchor -> ocr_hook.llm: comments may not import llm"),
        ("ocr_hook.hooks.native", "ocr_hook/hooks/native.py", "from ..pipeline import run\n",
         "ocr_hook.hooks.native -> ocr_hook.pipeline: hooks may not import pipeline"),
        ("ocr_hook.git.process", "ocr_hook/git/process.py", "from ..change import load\n",
         "ocr_hook.git.process -> ocr_hook.change: git may not import change"),
        ("ocr_hook.report.session", "ocr_hook/report/session.py", "from ..cli import common\n",
         "ocr_hook.report.session -> ocr_hook.cli.common: report may not import cli"),
        ("ocr_hook.gate", "ocr_hook/gate.py", "from .util import one_line\n",
         "ocr_hook.gate -> ocr_hook.util: a leaf module imports only other leaves"),
    ]
    for module, path, source, expected in cases:
        assert new_problems(with_source(module, source, path)) == [f"{path}:1: {expected}"]


def test_an_inner_module_of_another_package_is_reported() -> None:
    src = "from ..git.process import run_git\nfrom ..git import run_git\nfrom . import rules\n"
    path = "ocr_hook/change/hookinput.py"
    assert new_problems(with_source("ocr_hook.change.hookinput", src, path)) == [
        f"{path}:1: ocr_hook.change.hookinput -> ocr_hook.git.process:"
        " import it from ocr_hook.git, not from its inner module"]


def test_cli_may_import_any_package_but_nothing_imports_cli() -> None:
    src = "from ..pipeline import run_with_services\nfrom . import common\n"
    assert new_problems(with_source("ocr_hook.cli.review_cmd", src,
                                    "ocr_hook/cli/review_cmd.py")) == []
    src = "from ..cli import main\n"
    assert new_problems(with_source("ocr_hook.pipeline.review", src,
                                    "ocr_hook/pipeline/review.py")) == [
        "ocr_hook/pipeline/review.py:1: ocr_hook.pipeline.review -> ocr_hook.cli.main:"
        " pipeline may not import cli"]


def test_unplaced_module_and_cycle_are_reported() -> None:
    sources = with_source("ocr_hook.newthing", "from .errors import OcrError\n",
                          "ocr_hook/newthing.py")
    assert new_problems(sources) == [
        "ocr_hook/newthing.py: module ocr_hook.newthing is neither a package of MAY_IMPORT"
        " nor a leaf module (place it in tests/test_layers.py)"]
    sources = with_source("ocr_hook.agent.grouping", "from .prompts import x\n",
                          "ocr_hook/agent/grouping.py")
    sources["ocr_hook.agent.prompts"] = ("ocr_hook/agent/prompts.py", "from . import grouping\n",
                                         False)
    assert new_problems(sources) == [
        "import cycle: ocr_hook.agent.grouping <-> ocr_hook.agent.prompts"]


MAX_MODULE_LINES = 500  # a newcomer reads a module in one sitting
MAX_FUNCTION_LINES = 80


def size_problems(package_dir: Path = PACKAGE_DIR) -> list[str]:
    """``path: N lines`` for each module over MAX_MODULE_LINES and ``path:line: name is N
    lines`` for each function (def or async def, nested ones included) over MAX_FUNCTION_LINES."""
    problems: list[str] = []
    for path in sorted(package_dir.rglob("*.py")):
        source = path.read_text("utf-8")
        rel = path.relative_to(package_dir.parent)
        if (n := source.count("\n")) > MAX_MODULE_LINES:
            problems.append(f"{rel}: {n} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    problems.append(f"{rel}:{node.lineno}: {node.name} is {length} lines")
    return problems


def test_no_module_or_function_is_too_long() -> None:
    assert size_problems() == []


def test_size_check_reports_a_long_function(tmp_path: Path) -> None:
    pkg = tmp_path / "ocr_hook"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (pkg / "long.py").write_text(f"def f() -> None:\n{body}", "utf-8")
    assert size_problems(pkg) == [f"ocr_hook/long.py:1: f is {MAX_FUNCTION_LINES + 1} lines"]


# -- package __init__.py: the public names ------------------------------------------------------


def declared_exports(source: str) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(names imported under ``if TYPE_CHECKING:`` per relative module, names of the
    ``lazy_exports(__name__, {...})`` table per module) of a package's ``__init__.py``."""
    typed: dict[str, set[str]] = {}
    lazy: dict[str, set[str]] = {}
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.level == 1 and imp.module:
                    typed.setdefault(imp.module, set()).update(a.name for a in imp.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "lazy_exports":
            table = node.args[1]
            assert isinstance(table, ast.Dict)
            for k, v in zip(table.keys, table.values, strict=True):
                assert isinstance(k, ast.Constant) and isinstance(v, ast.Tuple)
                lazy[str(k.value)] = {str(e.value) for e in v.elts if isinstance(e, ast.Constant)}
    return typed, lazy


def test_each_package_names_its_exports_twice_alike_and_every_name_exists() -> None:
    import importlib
    import pkgutil

    checked = 0
    for init in sorted(PACKAGE_DIR.glob("*/__init__.py")):
        package = f"ocr_hook.{init.parent.name}"
        typed, lazy = declared_exports(init.read_text("utf-8"))
        if not lazy:
            continue
        checked += 1
        # the TYPE_CHECKING block may also name what the __init__ itself defines or imports
        assert {m: n for m, n in typed.items() if m in lazy} == lazy, package
        module = importlib.import_module(package)
        submodules = {m.name for m in pkgutil.iter_modules(module.__path__)}
        for names in lazy.values():
            for name in names:
                assert name not in submodules, f"{package}.{name} is also a submodule"
                getattr(module, name)  # raises when the table names a missing attribute
    assert checked >= 12
