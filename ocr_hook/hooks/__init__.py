"""Native git hooks: install, chain an existing hook, uninstall; hook managers (lefthook,
husky, the pre-commit framework) detected from the repository; the host running a hook and its
bypass words; the Claude Code, Codex CLI and Cursor hooks (a gate inside the coding agent)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util import lazy_exports

if TYPE_CHECKING:
    from .agents import (
        AgentEvent,
        CommitCall,
        commit_invocations,
        install_claude_code,
        install_codex,
        parse_event,
        prepare_commit,
        uninstall_claude_code,
        uninstall_codex,
    )
    from .cursor import claude_event, cursor_answer, install_cursor, uninstall_cursor
    from .hosts import HOSTS, bypass_clause, framework_all_files, framework_skip_id, hook_host
    from .managers import Refusal, paste_order
    from .native import HOOK_TYPES, ManagedElsewhere, hook_command, install, uninstall

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "agents": ("AgentEvent", "CommitCall", "commit_invocations", "install_claude_code",
               "install_codex", "parse_event", "prepare_commit", "uninstall_claude_code",
               "uninstall_codex",),
    "native": ("HOOK_TYPES", "ManagedElsewhere", "hook_command", "install", "uninstall",),
    "managers": ("Refusal", "paste_order",),
    "hosts": ("HOSTS", "bypass_clause", "framework_all_files", "framework_skip_id",
              "hook_host",),
    "cursor": ("claude_event", "cursor_answer", "install_cursor", "uninstall_cursor",),
})
