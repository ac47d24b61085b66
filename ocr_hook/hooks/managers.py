"""Hook managers of a repository (lefthook, husky, the pre-commit framework), detected from the
repository's own files, and the lines to add to each one's configuration instead of a native
hook.

A native hook in ``.git/hooks`` does not survive these tools: ``lefthook install`` (run by
lefthook's npm ``postinstall``) renames an existing hook to ``<hook>.old`` and never runs it,
husky's ``prepare`` script sets ``core.hooksPath`` to ``.husky/_`` so ``.git/hooks`` is no
longer read, and ``pre-commit install`` keeps it as ``<hook>.legacy``. So a repository that
uses one is detected before the tool has written anything:

- lefthook: any of the config files lefthook 2.x reads (``LEFTHOOK_FILES``: ``lefthook``,
  ``.lefthook`` or ``.config/lefthook`` with ``.yml``, ``.yaml``, ``.toml``, ``.json`` or
  ``.jsonc``; checked against lefthook 2.2.1);
- husky: a ``.husky/`` folder, or a ``package.json`` naming ``husky`` as a dependency or in its
  ``prepare`` script;
- the pre-commit framework: ``.pre-commit-config.yaml``.

The advice is in the tool's own form and valid when merged into the existing file: for a YAML
lefthook config, a ``jobs:`` item when the hook uses ``jobs``, a ``commands:`` entry when it
uses ``commands``, indented like the file and placed after a named line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

LEFTHOOK_FILES = tuple(f"{d}{n}.{e}" for d in ("", ".config/") for n in ("lefthook", ".lefthook")
                       for e in ("yml", "yaml", "toml", "json", "jsonc")
                       if not (d and n.startswith(".")))
PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
# the pre-commit framework hook id that runs each hook type (.pre-commit-hooks.yaml)
FRAMEWORK_IDS = {"pre-commit": "ocr-review", "pre-merge-commit": "ocr-review-merge",
                 "pre-push": "ocr-review-push"}
_OCR_ID = re.compile(r"""^[\s-]*id:\s*["']?(ocr-review[\w-]*)""", re.MULTILINE)
_RUNS_US = re.compile(r"git[ -]ocr\s+hook\s+([\w-]+)")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a hook is not written: ``reason`` (one line, after ``not installed: ``) and
    ``advice``, the lines to print after it verbatim (a heading line, then the lines to add).
    ``at`` is the line of the manager's file the lines go after (1-based; ``END`` for the end
    of the file, 0 when they go nowhere in particular): advice for several hooks is printed
    bottom-up (:func:`paste_order`), so pasting in the printed order keeps each line number
    right."""

    reason: str
    advice: tuple[str, ...] = ()
    at: int = 0


END = 1 << 30  # Refusal.at for lines that go at the end of the file


def paste_order(refusals: Sequence[Refusal]) -> list[Refusal]:
    """``refusals`` with the advice that goes furthest down a file first (stable otherwise)."""
    return sorted(refusals, key=lambda r: -r.at)


def hook_line(hook: str) -> str:
    """The command a hook manager's config runs for ``hook`` (``git ocr`` from ``PATH``, never
    a path into one user's virtualenv): pre-push passes git's two arguments on."""
    return f'git ocr hook {hook} "$@"' if hook == "pre-push" else f"git ocr hook {hook}"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _runs_us(text: str, hook: str) -> bool:
    return any(m.group(1) == hook for m in _RUNS_US.finditer(text))


def lefthook_config(top: Path) -> str:
    """The first lefthook config file of the work tree ``top`` (relative POSIX path), or ""."""
    return next((n for n in LEFTHOOK_FILES if (top / n).is_file()), "")


def uses_husky(top: Path) -> bool:
    """True when the work tree ``top`` has a ``.husky`` folder or a ``package.json`` that lists
    ``husky`` among its dependencies or runs it in its ``prepare`` script."""
    if (top / ".husky").is_dir():
        return True
    try:
        package = json.loads(_read(top / "package.json") or "{}")
    except ValueError:
        return False
    if not isinstance(package, dict):
        return False
    for key in ("dependencies", "devDependencies", "optionalDependencies"):
        if isinstance(deps := package.get(key), dict) and "husky" in deps:
            return True
    scripts = package.get("scripts")
    return isinstance(scripts, dict) and "husky" in str(scripts.get("prepare", ""))


def framework_refusal(top: Path, hook: str) -> Refusal:
    """The refusal for a repository run by the pre-commit framework: its
    ``.pre-commit-config.yaml`` already runs an ``ocr-review*`` hook id, or the id to add."""
    if found := _OCR_ID.search(_read(top / PRE_COMMIT_CONFIG)):
        return Refusal(f"{hook} hooks here are run by the pre-commit framework, and "
                       f"{PRE_COMMIT_CONFIG} already lists {found.group(1)}: a native hook "
                       "would review every commit twice")
    return Refusal(f"{hook} hooks here are run by the pre-commit framework: add the hook id "
                   f"{FRAMEWORK_IDS[hook]} to {PRE_COMMIT_CONFIG} instead (see README)")


def husky_refusal(top: Path, hook: str, why: str) -> Refusal:
    """The refusal for a husky repository: the line for ``.husky/<hook>`` (or that it is there
    already); ``why`` says what would hide a native hook."""
    target = f".husky/{hook}"
    if _runs_us(_read(top / target), hook):
        return Refusal(f"{hook} hooks here are run by husky, and {target} already runs "
                       f"`git ocr hook {hook}`: nothing to install")
    return Refusal(
        f"{hook} hooks here are run by husky{why}",
        (f"add this line to {target} (create the file if there is none), then run `npm install`"
         " (husky's prepare script points core.hooksPath at .husky/_):", hook_line(hook)))


def lefthook_refusal(top: Path, config: str, hook: str, why: str) -> Refusal:
    """The refusal for a lefthook repository: the lines to merge into ``config`` (or that it
    runs ocr-hook already); ``why`` says what would happen to a native hook."""
    text, at = _read(top / config), END
    if _runs_us(text, hook):
        return Refusal(f"{hook} hooks here are run by lefthook, and {config} already runs "
                       f"`git ocr hook {hook}`: nothing to install")
    run = f"git ocr hook {hook} {{1}} {{2}}" if hook == "pre-push" else f"git ocr hook {hook}"
    if config.endswith(".toml"):
        commands = ".commands" in text and ".jobs" not in text
        lines = ([f"[{hook}.commands.ocr-review]"] if commands else [f"[[{hook}.jobs]]",
                                                                      'name = "ocr-review"'])
        lines += [f'run = "{run}"'] + (["use_stdin = true"] if hook == "pre-push" else [])
        advice = (f"add these lines at the end of {config}, then run `lefthook install`:",
                  *lines)
    elif config.endswith((".json", ".jsonc")):
        stdin = ', "use_stdin": true' if hook == "pre-push" else ""
        advice = (f'add to {config}, in "{hook}": the item {{"name": "ocr-review", "run": '
                  f'"{run}"{stdin}}} to its "jobs" list (or "ocr-review": {{"run": "{run}"'
                  f'{stdin}}} to its "commands"), then run `lefthook install`',)
    else:
        at, advice = yaml_advice(text, config, hook, run)
    return Refusal(f"{hook} hooks here are run by lefthook ({config}){why}", advice, at)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    """A line that carries YAML content (not blank, not only a comment)."""
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _value(line: str) -> str:
    """What follows the first ``key:`` of ``line``, comment removed ("" for a block value)."""
    rest = line.split(":", 1)[1] if ":" in line else ""
    return re.sub(r"(^|\s)#.*$", "", rest).strip()


def _block_end(lines: list[str], start: int, deeper_than: int, dash_at: int = -1) -> int:
    """Index of the last content line of the block that follows line ``start``: lines indented
    more than ``deeper_than`` (or list items at ``dash_at``, YAML's compact sequences)."""
    end = start
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if not _content(line):
            continue
        ind = _indent(line)
        if ind > deeper_than or (ind == dash_at and line.lstrip().startswith("-")):
            end = i
        else:
            break
    return end


def yaml_advice(text: str, config: str, hook: str, run: str) -> tuple[int, tuple[str, ...]]:
    """The heading and the lines that add a job or command running ``run`` to ``hook`` in the
    YAML lefthook config ``text`` (file ``config``): indented like the file, after the line the
    heading names (1-based, of the file as it is), or at the end when the hook is not there;
    with that line (:attr:`Refusal.at`: ``END``, or 0 for the one-line flow-style advice)."""
    lines = text.splitlines()
    unit = next((_indent(x) for x in lines if _content(x) and _indent(x)), 2)
    stdin = ["use_stdin: true"] if hook == "pre-push" else []
    key = re.compile(rf"""^["']?{re.escape(hook)}["']?\s*:""")
    at = next((i for i, x in enumerate(lines) if key.match(x)), -1)
    tail = ", then run `lefthook install`:"
    if at < 0:
        style = "commands" if re.search(r"^\s+commands\s*:", text, re.M) and not re.search(
            r"^\s+jobs\s*:", text, re.M) else "jobs"
        body = _entry(style, " " * unit * 2, " " if style == "jobs" else " " * unit, run, stdin)
        return END, (f"add these lines at the end of {config}{tail}", f"{hook}:",
                " " * unit + f"{style}:", *body)
    if _value(lines[at]):
        return 0, (f"`{hook}:` at line {at + 1} of {config} is in flow style: add to it the job "
                f"{{name: ocr-review, run: '{run}'}} (or the command ocr-review: {{run: "
                f"'{run}'}}), then run `lefthook install`",)
    end = _block_end(lines, at, 0)
    children = [i for i in range(at + 1, end + 1) if _content(lines[i])]
    child = _indent(lines[children[0]]) if children else unit
    found = next(((i, s) for i in children for s in ("jobs", "commands")
                  if _indent(lines[i]) == child and re.match(rf"\s*{s}\s*:", lines[i])), None)
    if found is None:
        body = _entry("jobs", " " * (child + unit), " ", run, stdin)
        return end + 1, (f"add these lines to {config} after line {end + 1} (the end of "
                         f"`{hook}:`){tail}", " " * child + "jobs:", *body)
    k, style = found
    if _value(lines[k]):
        item = (f"{{name: ocr-review, run: '{run}'}}" if style == "jobs"
                else f"ocr-review: {{run: '{run}'}}")
        return 0, (f"add {item} to `{style}: {_value(lines[k])}` at line {k + 1} of {config}, "
                "then run `lefthook install`",)
    last = _block_end(lines, k, child, dash_at=child)
    first = next((lines[i] for i in range(k + 1, last + 1) if _content(lines[i])), "")
    if style == "jobs":
        dash = re.match(r"^(\s*)-(\s+)", first)
        lead = dash.group(1) if dash else " " * (child + unit)
        gap = dash.group(2) if dash and dash.group(2).strip() == "" else " "
        body = _entry("jobs", lead, gap, run, stdin)
    else:
        lead = " " * (_indent(first) if first else child + unit)
        body = _entry("commands", lead, " " * unit, run, stdin)
    return last + 1, (f"add these lines to {config} after line {last + 1} (the end of the "
                      f"`{style}:` of `{hook}:`){tail}", *body)


def _entry(style: str, lead: str, step: str, run: str, extra: list[str]) -> list[str]:
    """A job item (``- name: ocr-review`` …) or a command entry (``ocr-review:`` …) starting at
    column ``lead``; ``step`` is the gap after the dash or the indentation of the keys below."""
    if style == "jobs":
        inner = lead + " " * (1 + len(step))
        return [f"{lead}-{step}name: ocr-review", f"{inner}run: {run}",
                *(inner + e for e in extra)]
    return [f"{lead}ocr-review:", f"{lead}{step}run: {run}", *(lead + step + e for e in extra)]
