"""No bare string of a code vocabulary outside the module that defines its enum, read with ``ast``.

The vocabularies are enums (``vocabulary.AnchorMethod``, ``.Category``, ``.StopReason``,
``change.selection.SelectionReason``): code compares and sets members, so a renamed or removed
code fails where it is used, and the words for people stay beside the enum. A string literal
that spells a code elsewhere in ``ocr_hook`` would slip past that, so this test fails on one.

Only the codes that cannot be anything else are checked: ``hunk_new``, ``output_limit``,
``too_many_tool_calls``, ``over_max_files``… Codes that are also ordinary words or other
vocabularies' values are left out, because the same text legitimately means something else
elsewhere: ``file`` and ``none`` (a tool's parameter, a rule layer), ``timeout``, ``budget``,
``error``, ``cancelled`` and ``locked`` (settings, JSON keys, error kinds), ``task_done`` (a
tool's name), ``cache_hit`` (a session record), ``binary``, ``deleted`` and ``too_large`` (git
attributes, a file status, an LLM error kind), ``security``, ``test`` and the other plain
category names (a configuration section, a command).

Not counted: docstrings, and the first argument of a ``record(...)`` call, which names a session
record (spec §12), a vocabulary of its own: ``record("output_limit", …)`` logs that a reply hit
the output limit, retried or not.

Real: the package's source files. Synthetic: the small sources of the self-test, which prove
that a literal is found and that docstrings and record kinds are not.
"""

from __future__ import annotations

import ast

from ocr_hook.change import SelectionReason
from ocr_hook.vocabulary import AnchorMethod, Category, StopReason, Vocabulary
from tests.support.paths import ROOT

PACKAGE_DIR = ROOT / "ocr_hook"

# enum -> (the module that defines it, relative to ocr_hook/; its distinctive codes)
DISTINCTIVE: dict[type[Vocabulary], tuple[str, tuple[str, ...]]] = {
    AnchorMethod: ("vocabulary.py", ("hunk_new", "hunk_old", "refiled", "relocated")),
    Category: ("vocabulary.py", ("maintainability",)),
    StopReason: ("vocabulary.py", (
        "task_failed", "max_rounds", "no_tool_calls", "empty_rounds", "compression_failed",
        "llm_error", "output_limit", "too_many_tool_calls", "tool_args_too_large",
        "group_tokens", "token_threshold_exceeded", "round_incomplete", "no_endpoint")),
    SelectionReason: ("change/selection.py", (
        "symlink_outside", "secret_path", "provider_directory", "user_exclude",
        "unsupported_ext", "default_path", "rename_only", "mode_only", "no_content_change",
        "over_max_files", "over_max_total_bytes")),
}


def docstring_nodes(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (or other bare string statements)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def record_kinds(tree: ast.AST) -> set[int]:
    """The ids of the first arguments of ``record(...)`` / ``x.record(...)`` calls."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name == "record":
                out.add(id(node.args[0]))
    return out


def bare_literals(source: str, codes: frozenset[str]) -> list[tuple[int, str]]:
    """(line, code) of every string constant in ``source`` that is exactly one of ``codes``,
    docstrings and session record kinds excepted."""
    tree = ast.parse(source)
    skip = docstring_nodes(tree) | record_kinds(tree)
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value in codes and id(node) not in skip)


def test_the_distinctive_codes_are_codes_of_their_enum() -> None:
    for enum_cls, (module, codes) in DISTINCTIVE.items():
        assert set(codes) <= {m.value for m in enum_cls}, enum_cls
        assert enum_cls.__module__ == "ocr_hook." + module.removesuffix(".py").replace("/", ".")


def test_no_module_spells_a_code_outside_the_module_of_its_enum() -> None:
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(PACKAGE_DIR).as_posix()
        codes = frozenset(c for module, cs in DISTINCTIVE.values() if module != rel for c in cs)
        found += [f"ocr_hook/{rel}:{line}: {code!r}"
                  for line, code in bare_literals(path.read_text(encoding="utf-8"), codes)]
    assert found == [], "use the enum member instead:\n" + "\n".join(found)


def test_the_check_finds_a_literal_but_not_a_docstring_or_a_record_kind() -> None:
    source = '''
"""Module: hunk_new."""
def f(a, record, session):
    """output_limit"""
    "hunk_old"
    record("output_limit", {"stop": "max_rounds"})
    session.record("group_tokens", {})
    return a.anchor == "hunk_new" or a in {"over_max_files": 1} or f"{a}" == "refiled"
'''
    codes = frozenset({"hunk_new", "hunk_old", "output_limit", "max_rounds", "group_tokens",
                       "over_max_files", "refiled"})
    assert bare_literals(source, codes) == [
        (6, "max_rounds"), (8, "hunk_new"), (8, "over_max_files"), (8, "refiled")]
