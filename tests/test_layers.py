"""Import direction of the ``ocr_hook`` package (STYLE.md §2), read from the source with ``ast``.

Every module of the package is parsed; every import of an ``ocr_hook`` module counts, whether it
is absolute (``import ocr_hook.llm``, ``from ocr_hook import cli``) or relative (``from ..cli
import main``), at module level, inside a function or under ``if TYPE_CHECKING:``. Each module
has a tier in :data:`TIERS` (0 = top); an import may only go to the same or a lower tier, the
named rules of STYLE §2 hold on top of that, and no import cycle may exist. A module missing
from :data:`TIERS` fails the test, so a new module gets placed deliberately.

Real: the package's source files. Synthetic: the sources fed to the checker in the self-tests,
which prove that a forbidden import is reported (module, line and edge).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "ocr_hook"

# Module -> tier; an import may go to the same tier (without a cycle) or a higher number.
# ``ocr_hook.cli`` and every ``ocr_hook.cli.*`` module are tier 0 without being listed.
TIERS: dict[str, int] = {
    # 0  entry points: commands, hook modes, error boundary
    "ocr_hook.cli": 0,
    "ocr_hook.runservices": 0,  # the run's services around review.run (session, cache, MCP)
    # 1  wiring: the review run, native hook installation
    "ocr_hook.review": 1,
    "ocr_hook.review_llm": 1,  # the LLM part of a run: groups, pools, deadline, merge, gate
    "ocr_hook.install": 1,
    "ocr_hook.group_review": 1,  # one group's review on its thread -> GroupOutcome
    "ocr_hook.ranges": 1,  # push mode with several ranges: one run per range, merged
    "ocr_hook.run_state": 1,  # one run up to its first LLM call: input, selection, cache hit
    # 2  stages run by review, and the run's own machinery
    "ocr_hook.agent": 2,
    "ocr_hook.agent.loop": 2,
    "ocr_hook.agent.compress": 2,
    "ocr_hook.agent.textcalls": 2,
    "ocr_hook.agent.stops": 2,  # output-limit stops and their one retry (issue 15)
    "ocr_hook.agent.tasks": 2,
    "ocr_hook.agent.comment_tasks": 2,
    "ocr_hook.agent.meter": 2,
    "ocr_hook.agent.redaction": 2,
    "ocr_hook.agent.budget": 2,  # reserves each request's worst case against the token budget
    "ocr_hook.anchor": 2,
    "ocr_hook.comments": 2,  # comment pipeline runtime: anchors comments during the loop
    "ocr_hook.gate": 2,
    "ocr_hook.results": 2,  # what a run returns: result types, RunWarning, NOT REVIEWED wording
    "ocr_hook.request": 2,  # ReviewRequest and the settings derived from it
    "ocr_hook.cache_policy": 2,  # run/grouping/group cache lookups and stores
    "ocr_hook.cache": 2,
    "ocr_hook.cache_entries": 2,  # the cache's stored shapes
    "ocr_hook.session": 2,
    "ocr_hook.session_read": 2,  # reading session logs: session list/show, dismiss
    "ocr_hook.output": 2,
    "ocr_hook.output_text": 2,
    "ocr_hook.html_report": 2,  # the self-contained review page (--format html)  # the text output: findings ordered, code shown, verdict in words
    "ocr_hook.progress": 2,  # progress / heartbeat lines on stderr
    "ocr_hook.workers": 2,  # the thread pool review creates
    "ocr_hook.input_notes": 2,  # warnings about the run's input, logged as they are made
    "ocr_hook.change_load": 2,  # every target's change set joined, bound wording (issue 20)
    "ocr_hook.runlock": 2,  # one review per input at a time (flock under the common dir)
    # 3  tools, LLM clients, pure policy over diffs
    "ocr_hook.tools": 3,
    "ocr_hook.tools.registry": 3,
    "ocr_hook.tools.tools_file": 3,  # a user tools file's shape and validation
    "ocr_hook.tools.context": 3,
    "ocr_hook.tools.snapshot": 3,  # the snapshot the tools read, redacted in file context
    "ocr_hook.tools.comment": 3,
    "ocr_hook.tools.mcp_bridge": 3,
    "ocr_hook.tools.mcp_config": 3,
    "ocr_hook.tools.mcp_text": 3,  # MCP results and failures as text
    "ocr_hook.llm": 3,
    "ocr_hook.llm.types": 3,
    "ocr_hook.llm.http": 3,
    "ocr_hook.llm.prefetch": 3,  # the HTTP stack imported on a background thread
    "ocr_hook.llm.openai": 3,
    "ocr_hook.llm.anthropic": 3,
    "ocr_hook.selection": 3,
    "ocr_hook.rules": 3,
    "ocr_hook.rule_regexes": 3,  # the built-in rule map's globs as shipped regexes
    "ocr_hook.rulesources": 3,  # the I/O edge of rules: reads rule layers (files, HEAD)
    "ocr_hook.target": 3,
    "ocr_hook.push_scope": 3,  # pushed ranges cut to their newest commits, the rest counted
    "ocr_hook.hookinput": 3,  # hook file-name arguments as a filter; the changes-only notice
    "ocr_hook.redact": 3,
    "ocr_hook.secret_values": 3,  # is a matched value a secret: placeholder, code, entropy
    "ocr_hook.secret_rules": 3,  # the secret rule data: pre-filters, each regex compiled on need
    "ocr_hook.secret_chunks": 3,  # secret scan of a text given in pieces
    "ocr_hook.secret_scan": 3,  # deterministic findings from the diff, built on redact
    "ocr_hook.grouping": 3,
    "ocr_hook.group_prompts": 3,  # one group's main-task prompt
    "ocr_hook.dismiss": 3,  # dismissal keys, inline marker, which findings a dismissal takes out
    "ocr_hook.dismiss_store": 3,  # personal and shared (HEAD) dismissal files
    "ocr_hook.change_scan": 3,  # findings made without the LLM (secrets, injection, protected paths)
    "ocr_hook.detect_secrets_scan": 3,  # optional detect-secrets pass over the added lines
    "ocr_hook.textattr": 3,  # files binary only by .gitattributes: sniffed, named
    "ocr_hook.deleted_refs": 3,  # deleted files the snapshot still refers to (git grep)
    "ocr_hook.changeset": 3,  # change set loaded with bounded time and memory (issue 20)
    "ocr_hook.bigscan": 3,  # bounded secret scan of blobs too large to load
    # 4  parsing, process, tokens, templates, resource and settings files
    "ocr_hook.diff": 4,
    "ocr_hook.patchstream": 4,  # the patch read as a stream, one file section at a time
    "ocr_hook.gitio": 4,
    "ocr_hook.gitstream": 4,  # git output read as a stream (bounded memory, early stop)
    "ocr_hook.indexcopy": 4,  # the private index copy write-tree may rewrite (memory folder)
    "ocr_hook.tokens": 4,
    "ocr_hook.prompts": 4,
    "ocr_hook.resources": 4,
    "ocr_hook.config": 4,
    "ocr_hook.config_models": 4,  # section dataclasses (validated by pydantic at the edge)
    "ocr_hook.shapes": 5,  # exact shape checks of data against typed dataclasses
    "ocr_hook.config_endpoint": 4,  # provider presets, endpoint resolution, api_key_cmd
    "ocr_hook.config_load": 4,  # user file, .ocr-hook.toml at HEAD, env, flags -> layers
    "ocr_hook.config_repo": 4,  # what .ocr-hook.toml may name: paths at HEAD, endpoint consent
    "ocr_hook.config_toml": 4,  # TOML display and tomlkit editing
    "ocr_hook.consent": 4,  # the user's MCP consent records (a settings file outside the repo)
    # 5  leaves: plain data, errors, atomic writes, the package's version
    "ocr_hook.findings": 5,
    "ocr_hook.errors": 5,
    "ocr_hook.atomicfile": 5,
    "ocr_hook.pathtext": 5,  # non-UTF-8 paths shown as \\xNN and mapped back
    "ocr_hook.exitcodes": 5,  # the one exit-code table
    "ocr_hook": 5,  # ocr_hook/__init__.py: __version__ only, imports nothing
}
CLI_TIER = 0

# Known edges against the rules, each with why it is tolerated. Keep this short.
EXCEPTIONS: dict[tuple[str, str], str] = {
    # config builds the resolved llm.types.Endpoint (a NamedTuple; llm.types imports nothing)
    ("ocr_hook.config_endpoint", "ocr_hook.llm.types"): "config resolves options into llm.types.Endpoint",
}


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
    return [e for e in dict.fromkeys(edges) if e.dst != module]  # one edge per line and target


def tier_of(module: str) -> int | None:
    """The module's tier; ``ocr_hook.cli.*`` is the cli tier; None when not placed."""
    if module == "ocr_hook.cli" or module.startswith("ocr_hook.cli."):
        return CLI_TIER
    return TIERS.get(module)


def _target_tier(module: str) -> int | None:
    """Tier of an import target, falling back to its nearest placed package."""
    while module:
        tier = tier_of(module)
        if tier is not None:
            return tier
        module = module.rpartition(".")[0]
    return None


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def edge_problem(src: str, dst: str) -> str | None:
    """Why ``src`` must not import ``dst`` (STYLE §2), or None when the edge is allowed."""
    src_tier, dst_tier = tier_of(src), _target_tier(dst)
    if dst_tier is None:
        return "import of a module not in TIERS"
    if dst_tier == CLI_TIER and src_tier != CLI_TIER:
        return "nothing imports cli"
    if dst == "ocr_hook.review" and src_tier != CLI_TIER:
        return "nothing imports review except cli"
    if src == "ocr_hook.diff" and any(
        _within(dst, p) for p in ("ocr_hook.gitio", "ocr_hook.llm", "ocr_hook.findings")
    ):
        return "diff never imports gitio, llm or findings"
    if _within(src, "ocr_hook.llm") and not (
        _within(dst, "ocr_hook.llm") or dst == "ocr_hook.errors"
    ):
        return "llm/* imports only errors and llm/* modules"
    if src == "ocr_hook.anchor" and (_within(dst, "ocr_hook.llm") or _within(dst, "ocr_hook.agent")):
        return "anchor never imports llm or agent"
    if src_tier is not None and dst_tier < src_tier:
        return f"import goes up the layers (tier {src_tier} -> tier {dst_tier})"
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
    not in TIERS, forbidden edges (``path:line: src -> dst: why``), cycles of allowed edges."""
    known = set(sources) | set(TIERS)
    problems = [f"{path}: module {m} is not in TIERS (place it in tests/test_layers.py)"
                for m, (path, _, _) in sorted(sources.items()) if tier_of(m) is None]
    edges: list[Edge] = []
    for m, (path, source, is_package) in sorted(sources.items()):
        for e in imports_of(m, source, is_package, known):
            if (e.src, e.dst) in EXCEPTIONS:
                continue
            why = edge_problem(e.src, e.dst)
            if why is None:
                edges.append(e)
            else:
                problems.append(f"{path}:{e.line}: {e.src} -> {e.dst}: {why}")
    # a cycle through a forbidden edge is reported by that edge; allowed edges must not cycle
    problems.extend(f"import cycle: {' <-> '.join(c)}" for c in _cycles(edges))
    return problems


def package_sources(package_dir: Path = PACKAGE_DIR) -> dict[str, tuple[str, str, bool]]:
    """module -> (path relative to the repository, source, is_package) for every .py file."""
    root = package_dir.parent
    return {
        module_name(p, package_dir): (str(p.relative_to(root)), p.read_text("utf-8"),
                                      p.name == "__init__.py")
        for p in sorted(package_dir.rglob("*.py"))
    }


def test_package_imports_follow_the_layers() -> None:
    problems = check(package_sources())
    assert not problems, "forbidden imports:\n" + "\n".join(problems)


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
    assert {"ocr_hook", "ocr_hook.diff", "ocr_hook.llm", "ocr_hook.llm.http",
            "ocr_hook.agent.loop"} <= set(sources)
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
        "    from ..tools.registry import Registry\n"
        "if TYPE_CHECKING:\n"
        "    from ..diff import FileDiff\n"
    )
    known = set(package_sources())
    assert imports_of("ocr_hook.llm.openai", src, False, known) == [
        Edge("ocr_hook.llm.openai", "ocr_hook.errors", 3),
        Edge("ocr_hook.llm.openai", "ocr_hook.llm.types", 4),
        Edge("ocr_hook.llm.openai", "ocr_hook.llm.http", 5),
        Edge("ocr_hook.llm.openai", "ocr_hook", 6),
        Edge("ocr_hook.llm.openai", "ocr_hook.findings", 7),
        Edge("ocr_hook.llm.openai", "ocr_hook.tools.registry", 9),
        Edge("ocr_hook.llm.openai", "ocr_hook.diff", 11),
    ]
    # in a package's __init__, "." is the package itself
    assert imports_of("ocr_hook.llm", "from .openai import OpenAIClient\n", True, known) == [
        Edge("ocr_hook.llm", "ocr_hook.llm.openai", 1)]


def test_forbidden_import_inside_a_function_is_reported() -> None:
    diff_py = (PACKAGE_DIR / "diff.py").read_text("utf-8")
    bad = diff_py + "\n\ndef _oops() -> None:\n    from .cli import main\n"
    line = bad.count("\n")
    problems = new_problems(with_source("ocr_hook.diff", bad, "ocr_hook/diff.py"))
    assert problems == [
        f"ocr_hook/diff.py:{line}: ocr_hook.diff -> ocr_hook.cli.main: nothing imports cli"]


def test_named_rules_are_reported() -> None:
    cases = [
        ("ocr_hook.diff", "ocr_hook/diff.py", "import ocr_hook.llm\n",
         "ocr_hook.diff -> ocr_hook.llm: diff never imports gitio, llm or findings"),
        ("ocr_hook.diff", "ocr_hook/diff.py", "from .gitio import run_git\n",
         "ocr_hook.diff -> ocr_hook.gitio: diff never imports gitio, llm or findings"),
        ("ocr_hook.diff", "ocr_hook/diff.py", "from .findings import Finding\n",
         "ocr_hook.diff -> ocr_hook.findings: diff never imports gitio, llm or findings"),
        ("ocr_hook.llm.openai", "ocr_hook/llm/openai.py", "from ..resources import x\n",
         "ocr_hook.llm.openai -> ocr_hook.resources: llm/* imports only errors and llm/* modules"),
        ("ocr_hook.anchor", "ocr_hook/anchor.py", "from .agent import tasks\n",
         "ocr_hook.anchor -> ocr_hook.agent.tasks: anchor never imports llm or agent"),
        ("ocr_hook.install", "ocr_hook/install.py", "from . import review\n",
         "ocr_hook.install -> ocr_hook.review: nothing imports review except cli"),
        ("ocr_hook.gitio", "ocr_hook/gitio.py", "from .target import Target\n",
         "ocr_hook.gitio -> ocr_hook.target: import goes up the layers (tier 4 -> tier 3)"),
        ("ocr_hook.session", "ocr_hook/session.py", "from .cli.common import x\n",
         "ocr_hook.session -> ocr_hook.cli.common: nothing imports cli"),
    ]
    for module, path, source, expected in cases:
        assert new_problems(with_source(module, source, path)) == [f"{path}:1: {expected}"]


def test_cli_package_modules_are_the_cli_tier() -> None:
    src = "from ..review import run\nfrom . import common\n"
    sources = with_source("ocr_hook.cli.review_cmd", src, "ocr_hook/cli/review_cmd.py")
    sources["ocr_hook.cli.common"] = ("ocr_hook/cli/common.py", "", False)
    assert new_problems(sources) == []


def test_unplaced_module_and_cycle_are_reported() -> None:
    sources = with_source("ocr_hook.newthing", "from .diff import parse\n",
                          "ocr_hook/newthing.py")
    assert new_problems(sources) == [
        "ocr_hook/newthing.py: module ocr_hook.newthing is not in TIERS"
        " (place it in tests/test_layers.py)"]
    sources = with_source("ocr_hook.grouping", "from .selection import select\n",
                          "ocr_hook/grouping.py")
    sources["ocr_hook.selection"] = ("ocr_hook/selection.py", "from . import grouping\n", False)
    assert new_problems(sources) == ["import cycle: ocr_hook.grouping <-> ocr_hook.selection"]


MAX_MODULE_LINES = 500  # issue 14: a newcomer reads a module in one sitting
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


WIRING_MAX_LINES = 450  # issue 14: review.py only wires the stages, pools and deadline


def test_no_module_or_function_is_too_long() -> None:
    assert size_problems() == []
    wiring = (PACKAGE_DIR / "review.py").read_text("utf-8").count("\n")
    assert wiring <= WIRING_MAX_LINES, f"review.py: {wiring} lines"


def test_size_check_reports_a_long_function(tmp_path: Path) -> None:
    pkg = tmp_path / "ocr_hook"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (pkg / "long.py").write_text(f"def f() -> None:\n{body}", "utf-8")
    assert size_problems(pkg) == [f"ocr_hook/long.py:1: f is {MAX_FUNCTION_LINES + 1} lines"]
