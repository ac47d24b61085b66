"""The gate inside a coding agent: Claude Code's ``PreToolUse`` hook on its ``Bash`` tool.

Claude Code runs each command hook of ``.claude/settings.json`` (``{"hooks": {"PreToolUse":
[{"matcher": "Bash", "hooks": [{"type": "command", "command": …}]}]}}``) before a tool call,
with one JSON object on stdin (``hook_event_name``, ``tool_name``, ``tool_input.command``,
``cwd``, …). Exit 0 lets the call run; exit 2 stops it and hands stderr to the agent as the
reason; any other exit code is reported and the call runs anyway (Claude Code hooks reference).

This module reads the event (:func:`parse_event`), finds the ``git commit`` invocations of a
shell command line (:func:`commit_invocations`), prepares what such a commit would contain
without touching the index, work tree or refs (:func:`prepare_commit`), and merges our entry
into (or out of) a project's settings file (:func:`install_claude_code`,
:func:`uninstall_claude_code`). Codex CLI's hooks speak the same ``PreToolUse`` event and exit
codes from ``.codex/hooks.json`` (same layout): :func:`install_codex`, :func:`uninstall_codex`.
The review itself runs in ``cli.hooks_cmd``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import git, util
from ..errors import GitError, UsageError

CLAUDE_SETTINGS = Path(".claude") / "settings.json"
CLAUDE_COMMAND = "git ocr hook claude-code"  # on PATH: the settings file is shared
CODEX_HOOKS = Path(".codex") / "hooks.json"
CODEX_COMMAND = "git ocr hook codex"
CLAUDE_TIMEOUT_S = 360  # s: past review.timeout_s (300 s by default), so gate.on_error decides
SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "\n", "|&", ";;", "(", ")"})
# git options before the subcommand that take the next word as their value
GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                               "--config-env", "--exec-path", "--super-prefix"})
# `git commit` short options whose value is the rest of the word or the next word
COMMIT_VALUE_SHORT = "mFCctSu"  # S, u: an optional value, attached only
COMMIT_VALUE_LONG = frozenset({"--message", "--file", "--reuse-message", "--reedit-message",
                               "--fixup", "--squash", "--template", "--author", "--date",
                               "--cleanup", "--pathspec-from-file", "--trailer"})
SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
# `git add` options a review can replay on a private index (no prompt, nothing but the index)
ADD_OPTIONS = frozenset({"-A", "--all", "-u", "--update", "-f", "--force", "-N",
                         "--intent-to-add", "-v", "--verbose", "--ignore-removal", "--no-all",
                         "--ignore-errors", "--sparse", "--renormalize", "--chmod=+x",
                         "--chmod=-x"})
PREVIEW_IDENTITY = {"GIT_AUTHOR_NAME": "ocr-hook", "GIT_AUTHOR_EMAIL": "ocr-hook@localhost",
                    "GIT_COMMITTER_NAME": "ocr-hook", "GIT_COMMITTER_EMAIL": "ocr-hook@localhost"}


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """One ``PreToolUse`` event: ``tool`` (``Bash``), its shell ``command`` ("" for another
    tool or another event, which nothing can stop) and the ``cwd`` it runs in (absolute)."""

    tool: str
    command: str
    cwd: Path


@dataclass(frozen=True, slots=True)
class CommitCall:
    """One ``git commit`` in a command line: the directory git runs in (``cd`` and ``-C``
    applied), ``all`` for ``-a``/``--all``, ``amend``, the pathspecs (``git commit PATH…``),
    ``dry_run`` (nothing is committed), ``adds``: the ``git add`` runs before it on the line
    (since the previous commit), each as (directory, arguments), that the commit takes too
    (``git add f && git commit``); ``unseen``: the first command before it on the line that
    stages what a review cannot replay (``git add -p``, ``git rm``, …), "" when none."""

    cwd: Path
    all: bool = False
    amend: bool = False
    paths: tuple[str, ...] = ()
    dry_run: bool = False
    adds: tuple[tuple[Path, tuple[str, ...]], ...] = ()
    unseen: str = ""


# git commands that change the index in ways a review of a private index copy does not replay
# (a branch checkout or switch, `git checkout -b x && git commit`, keeps the index: not one)
INDEX_WRITERS = frozenset(("rm", "mv", "restore", "reset", "apply", "update-index", "read-tree",
                           "stash"))


def parse_event(data: bytes, default_cwd: Path) -> AgentEvent:
    """The event of Claude Code's hook input (UTF-8 JSON object). ``cwd`` defaults to
    ``default_cwd``; a relative one is taken from it. Raises UsageError for input that is not
    such an object, or a ``tool_input.command`` that is not a string."""
    try:
        event = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise UsageError(f"the hook input is not a JSON object: {util.one_line(str(e))}") from e
    if not isinstance(event, dict):
        raise UsageError("the hook input is not a JSON object")
    tool = event.get("tool_name", "")
    tool_input = event.get("tool_input") or {}
    if not isinstance(tool, str) or not isinstance(tool_input, dict):
        raise UsageError("the hook input has no tool_name/tool_input of the PreToolUse event")
    name = event.get("hook_event_name", "PreToolUse")
    command = tool_input.get("command", "") if tool == "Bash" and name == "PreToolUse" else ""
    if not isinstance(command, str):
        raise UsageError("tool_input.command of the Bash event is not a string")
    cwd = event.get("cwd") or ""
    where = default_cwd / cwd if isinstance(cwd, str) and cwd else default_cwd
    return AgentEvent(tool, command, where)


def split_commands(command: str) -> list[list[str]]:
    """The simple commands of a shell command line, each as its words: split on ``&&``,
    ``||``, ``;``, ``|``, ``&``, parentheses and newlines (quoted ones kept). A line shlex
    cannot split (an open quote) is split as far as it goes. Comments and redirections
    (``2>&1``, ``> FILE``, ``<<EOF``: the operator, its target and a file-descriptor number
    before it) are dropped."""
    lex = shlex.shlex(command, posix=True, punctuation_chars="();<>|&\n")
    lex.whitespace = " \t\r"
    lex.commenters = "#"
    lex.whitespace_split = True
    words: list[str] = []
    found: list[list[str]] = []
    heredocs: list[str] = []  # delimiters of here-documents whose body comes after this line
    body: str | None = None  # the delimiter of the here-document being skipped
    try:
        for token in lex:
            if body is not None:  # a here-document's lines are data, never commands
                if token == body:
                    body = heredocs.pop(0) if heredocs else None
                continue
            if token in SEPARATORS or set(token) <= set("();|&\n"):
                found.append(words)
                words = []
                if "\n" in token and heredocs:
                    body = heredocs.pop(0)
            else:
                if words and words[-1] in ("<<", "<<-"):
                    heredocs.append(token)
                words.append(token)
    except ValueError:  # no closing quotation: what was read still counts
        pass
    found.append(words)
    return [w for w in map(_without_redirections, found) if w]


def _without_redirections(words: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
        elif w and set(w) <= set("<>&|") and ("<" in w or ">" in w):
            if kept and kept[-1].isdigit():
                kept.pop()  # the descriptor of `2>`
            skip = True  # the target: a file, `&1`'s number, a here-document's word
        else:
            kept.append(w)
    return kept


def _strip_prefix(words: list[str]) -> list[str]:
    """The command without leading ``NAME=value`` assignments, ``env``/``command``/
    ``exec``/``time``/``nohup`` words and the shell's ``if``/``then``/``do``/… keywords."""
    i = 0
    while i < len(words):
        w = words[i]
        if "=" in w and not w.startswith("-") and w.split("=", 1)[0].isidentifier():
            i += 1
        elif w in ("env", "command", "exec", "time", "nohup", "builtin", "if", "then", "elif",
                   "else", "do", "while", "until", "!", "{"):
            i += 1
        else:
            break
    return words[i:]


def _git_subcommand(words: Sequence[str], cwd: Path) -> tuple[str, Path, list[str]]:
    """(subcommand, directory, its arguments) of ``git [options] SUB ARGS``; ``-C`` applied."""
    i = 1
    while i < len(words):
        w = words[i]
        if w == "-C" and i + 1 < len(words):
            cwd = cwd / words[i + 1]
            i += 2
        elif w in GIT_VALUE_OPTIONS:
            i += 2
        elif w.startswith("-"):
            i += 1
        else:
            return w, cwd, list(words[i + 1:])
    return "", cwd, []


def _commit_call(args: Sequence[str], cwd: Path) -> CommitCall:
    """The :class:`CommitCall` of ``git commit ARGS`` run in ``cwd``."""
    flags = {"all": False, "amend": False, "dry_run": False}
    paths: list[str] = []
    it = iter(args)
    for a in it:
        if a == "--":
            paths.extend(it)
        elif a.startswith("--"):
            name = a.split("=", 1)[0]
            if name in ("--all",):
                flags["all"] = True
            elif name == "--amend":
                flags["amend"] = True
            elif name == "--dry-run":
                flags["dry_run"] = True
            elif name in COMMIT_VALUE_LONG and "=" not in a:
                next(it, None)
        elif a.startswith("-") and len(a) > 1:
            for j, ch in enumerate(a[1:]):
                if ch == "a":
                    flags["all"] = True
                elif ch in COMMIT_VALUE_SHORT:
                    if j == len(a) - 2 and ch not in "Su":  # the value is the next word
                        next(it, None)
                    break
        else:
            paths.append(a)
    return CommitCall(cwd, flags["all"], flags["amend"], tuple(paths), flags["dry_run"])


def _replayable_add(args: Sequence[str]) -> bool:
    """Whether ``git add ARGS`` only stages paths (options of :data:`ADD_OPTIONS`), so that a
    review can run it on a private index: never ``-p``/``-i``/``-e`` (a prompt) or ``-n``."""
    options = [a for a in args[:args.index("--")] if a.startswith("-")] if "--" in args else [
        a for a in args if a.startswith("-")]
    return all(a in ADD_OPTIONS or (a[1:].isalpha() and not a.startswith("--")
                                    and all(f"-{c}" in ADD_OPTIONS for c in a[1:]))
               for a in options)


def commit_invocations(command: str, cwd: Path) -> list[CommitCall]:
    """Every ``git commit`` in the shell ``command`` run from ``cwd``, in order: ``cd DIR``
    before it moves the directory (for the rest of the line), ``git -C DIR`` for that one
    command, ``VAR=x``/``env`` prefixes skipped, ``git`` by any path (``/usr/bin/git``), the
    line of ``sh -c LINE`` (``bash``, ``zsh``, ``dash``) read as well. The ``git add`` runs
    since the previous commit on the line (only staging options) go with it
    (``CommitCall.adds``); another ``git add`` or an index-writing git command before it
    (:data:`INDEX_WRITERS`) is named in ``CommitCall.unseen``."""
    found = []
    adds: list[tuple[Path, tuple[str, ...]]] = []
    unseen = ""
    for words in split_commands(command):
        words = _strip_prefix(words)
        if not words:
            continue
        if os.path.basename(words[0]) in SHELLS and len(words) > 2 and words[1] == "-c":
            found += commit_invocations(words[2], cwd)  # `bash -c '…'`: its own line
            continue
        if words[0] in ("cd", "pushd") and len(words) > 1 and words[1] != "-":
            cwd = cwd / os.path.expanduser(words[1])
            continue
        if os.path.basename(words[0]) != "git":
            continue
        sub, where, args = _git_subcommand(words, cwd)
        if sub == "add" and _replayable_add(args):
            adds.append((where, tuple(args)))
        elif sub == "add" or sub in INDEX_WRITERS:
            unseen = unseen or " ".join(["git", sub, *args])[:80]
        elif sub == "commit":
            found.append(replace(_commit_call(args, where), adds=tuple(adds), unseen=unseen))
            adds = []
    return found


@dataclass
class CommitPreview:
    """What a :class:`CommitCall` would commit, ready for review: ``environ`` for the review
    (``GIT_INDEX_FILE`` set to a private index when the commit takes work-tree changes) and
    ``commit``, a commit object made for ``--amend`` (its tree, HEAD's parents), else "".
    :meth:`close` removes the private index. No ref, index or work-tree file is written."""

    environ: dict[str, str]
    commit: str = ""
    scratch: list[Path] = field(default_factory=list)

    def close(self) -> None:
        for p in self.scratch:
            p.unlink(missing_ok=True)
            Path(f"{p}.lock").unlink(missing_ok=True)


def prepare_commit(repo: Path, call: CommitCall, environ: Mapping[str, str]) -> CommitPreview:
    """The :class:`CommitPreview` of ``call`` in the repository whose top is ``repo``.
    ``git add`` runs before the commit (``call.adds``), ``-a``/``--all`` and pathspecs: a
    private copy of the index (``git.private_copy``) takes them: each ``git add`` as written
    (one that fails is passed over, as its commit would go on without it), then the tracked
    work-tree changes (``git add -u [-- PATHS]``), run in the directory each runs in so the
    paths mean what they mean to git. ``--amend``: that index's tree is written
    and committed with HEAD's parents (``git commit-tree``: an object, no ref). Raises
    GitError."""
    env = dict(environ)
    preview = CommitPreview(env)
    try:
        if call.all or call.paths or call.amend or call.adds:
            index = git.private_copy(git.git_path(repo, "index"), environ)
            preview.scratch.append(index)
            env["GIT_INDEX_FILE"] = str(index)
            for where, add_args in call.adds:
                with contextlib.suppress(GitError):
                    git.run_git(where, "add", *add_args, env=env)
            if call.all or call.paths:
                git.run_git(call.cwd, "add", "-u", "--", *call.paths, env=env)
        if call.amend:
            tree = git.run_git(repo, "write-tree", env=env).decode().strip()
            parents = git.run_git(repo, "rev-parse", "HEAD^@", env=env).decode().split()
            message = b"ocr-hook: what `git commit --amend` would commit\n"
            parent_args = [x for p in parents for x in ("-p", p)]
            preview.commit = git.run_git(
                repo, "commit-tree", tree, *parent_args, stdin=message, env=env,
                extra_env=PREVIEW_IDENTITY).decode().strip()
            env.pop("GIT_INDEX_FILE")
    except BaseException:
        preview.close()
        raise
    return preview


def _ours(hook: object, command: str = CLAUDE_COMMAND) -> bool:
    return isinstance(hook, dict) and str(hook.get("command", "")).strip().endswith(
        command.removeprefix("git ocr "))


def _read_settings(path: Path) -> dict[str, object]:
    """The JSON object of a Claude Code settings file ({} when absent). Raises UsageError
    for a file that is not a JSON object (it is never overwritten then)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {path}: {e}") from e
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as e:
        raise UsageError(f"{path} is not valid JSON ({util.one_line(str(e))}); fix it first"
                         ) from e
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a JSON object; fix it first")
    return data


def _groups(data: dict[str, object], path: Path) -> Iterator[dict[str, object]]:
    hooks = data.get("hooks", {})
    groups = hooks.get("PreToolUse", []) if isinstance(hooks, dict) else None
    if not isinstance(groups, list):
        raise UsageError(f"{path}: \"hooks\".\"PreToolUse\" is not a list; fix it first")
    yield from (g for g in groups if isinstance(g, dict))


def _write_settings(path: Path, data: dict[str, object]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        util.write_atomic(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from e


def install_claude_code(repo: Path) -> tuple[Path, str]:
    """Merge our ``PreToolUse`` entry (matcher ``Bash``, command ``git ocr hook claude-code``)
    into ``repo/.claude/settings.json``, keeping every other key and hook as it is. Returns
    (path, ``installed``|``unchanged``). Raises UsageError for a settings file that is not a
    JSON object (left untouched) or cannot be written."""
    return _install_entry(repo / CLAUDE_SETTINGS, CLAUDE_COMMAND)


def install_codex(repo: Path) -> tuple[Path, str]:
    """:func:`install_claude_code` for Codex CLI: ``git ocr hook codex`` in
    ``repo/.codex/hooks.json``."""
    return _install_entry(repo / CODEX_HOOKS, CODEX_COMMAND)


def uninstall_claude_code(repo: Path) -> tuple[Path, str]:
    """Remove our hook entries from ``repo/.claude/settings.json`` (a group or key left empty
    by that goes too); everything else stays. Returns (path, ``removed``|``absent``)."""
    return _uninstall_entry(repo / CLAUDE_SETTINGS, CLAUDE_COMMAND)


def uninstall_codex(repo: Path) -> tuple[Path, str]:
    """:func:`uninstall_claude_code` for ``repo/.codex/hooks.json``."""
    return _uninstall_entry(repo / CODEX_HOOKS, CODEX_COMMAND)


def _install_entry(path: Path, command: str) -> tuple[Path, str]:
    data = _read_settings(path)
    if any(_ours(h, command) for g in _groups(data, path)
           for h in g.get("hooks") or []  # type: ignore[union-attr]
           if g.get("matcher") == "Bash"):
        return path, "unchanged"
    hooks = data.setdefault("hooks", {})
    assert isinstance(hooks, dict)
    groups = hooks.setdefault("PreToolUse", [])
    assert isinstance(groups, list)
    groups.append({"matcher": "Bash", "hooks": [
        {"type": "command", "command": command, "timeout": CLAUDE_TIMEOUT_S}]})
    _write_settings(path, data)
    return path, "installed"


def _uninstall_entry(path: Path, command: str) -> tuple[Path, str]:
    data = _read_settings(path)
    if not data:
        return path, "absent"
    removed = False
    for g in list(_groups(data, path)):
        hooks = g.get("hooks")
        if isinstance(hooks, list) and any(_ours(h, command) for h in hooks):
            g["hooks"] = [h for h in hooks if not _ours(h, command)]
            removed = True
    if not removed:
        return path, "absent"
    section = data["hooks"]
    assert isinstance(section, dict)
    section["PreToolUse"] = [g for g in section["PreToolUse"]
                             if not (isinstance(g, dict) and g.get("hooks") == [])]
    if not section["PreToolUse"]:
        del section["PreToolUse"]
    if not section:
        del data["hooks"]
    _write_settings(path, data)
    return path, "removed"
