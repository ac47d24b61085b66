"""Loading the rule layers of spec §5 from where they live (the I/O edge of ``rules``).

- ``cli``: ``--rule FILE`` on disk (a rule.json, or a Markdown/text checklist for every file);
- ``repo``: ``rules.file`` (a repository path) or ``.opencodereview/rule.json``, both read from
  HEAD — the committed state — so a commit cannot weaken the rules that review it;
- ``user``: ``$XDG_CONFIG_HOME/ocr-hook/rule.json``;
- ``builtin``: ``config/rules``.
``.md`` references inside repository rule files are read from HEAD, confined to the repository.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from .. import git
from ..errors import ConfigError
from ..util import user_config_dir
from . import guidance as guidance_mod
from . import rules

OCR_RULE_FILE = ".opencodereview/rule.json"  # the reference project's repository rule file
REPO_CONFIG_FILE = ".ocr-hook.toml"
# comments.dismissals.SHARED_FILE, named here: change may not import comments (tests/test_layers.py)
SHARED_DISMISSALS = ".ocr-hook-dismissed.json"


class RuleLayers(NamedTuple):
    """Rule sources, highest precedence first, and the repository paths that configure the
    review (a staged change to one of them is flagged, spec §5)."""

    sources: tuple[rules.RuleSource, ...]
    protected_paths: tuple[str, ...]
    # the agent guidance files at HEAD (AGENTS.md…, ``guidance.load_guidance``)
    guidance: guidance_mod.Guidance = guidance_mod.NO_GUIDANCE

    def text_for(self, paths: list[str]) -> str:
        return rules.group_rule_text(paths, self.sources)

    def check(self, path: str) -> rules.RuleMatch:
        return rules.resolve(path, self.sources)


def _head_reader(repo: Path) -> rules.ReadMd:
    def read(relpath: str) -> str | None:
        [data] = git.head_blobs(repo, [relpath])
        return git.decode_text(data) if data is not None else None

    return read


def _dir_reader(base: Path) -> rules.ReadMd:
    root = base.resolve()

    def read(relpath: str) -> str | None:
        p = (root / relpath).resolve()
        if root not in p.parents:
            raise ConfigError(f"rule file {relpath!r} is outside {root}")
        try:
            return p.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as e:
            raise ConfigError(f"cannot read rule file {p}: {e}") from e

    return read


def _cli_layer(rule_file: str, cwd: Path) -> rules.RuleSource:
    path = Path(rule_file).expanduser()
    if not path.is_absolute():
        path = cwd / path
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"--rule: cannot read {rule_file}: {e.strerror or e}") from e
    if len(data) > rules.RULE_FILE_MAX_BYTES:
        raise ConfigError(f"--rule: {rule_file} is larger than 512 KB")
    if path.suffix.lower() == ".json":
        return rules.parse_rule_json(data, "cli", _dir_reader(path.parent), name=str(rule_file))
    text = data.decode("utf-8", "replace")
    return rules.RuleSource("cli", (rules.RuleEntry(("**/*",), text, False, path.name),))


def load_rule_layers(
    repo: Path,
    *,
    cli_rule: str = "",
    repo_rule_file: str = "",
    environ: Mapping[str, str] = os.environ,
    cwd: Path | None = None,
    guidance: bool = False,
) -> RuleLayers:
    """Read every layer. ``repo_rule_file`` is ``rules.file`` from the configuration: a
    repository path read from HEAD; an absolute or ``~`` path (only the user file, the
    environment or a flag may set one: ``config.repo_file.check_repo_paths``) is read from disk as
    a user-level file. ``guidance`` (``rules.guidance``): also read the agent guidance files at
    HEAD (``guidance.load_guidance``). Raises ConfigError for unreadable or invalid rule
    files."""
    sources: list[rules.RuleSource] = []
    protected = [REPO_CONFIG_FILE, OCR_RULE_FILE, SHARED_DISMISSALS]
    if cli_rule:
        sources.append(_cli_layer(cli_rule, cwd or Path.cwd()))
    head = _head_reader(repo)
    if repo_rule_file.startswith("~"):
        repo_rule_file = os.path.expanduser(repo_rule_file)
    if repo_rule_file and os.path.isabs(repo_rule_file):
        sources.append(_cli_layer(repo_rule_file, repo)._replace(layer="user"))
    elif repo_rule_file:
        rel = repo_rule_file.replace("\\", "/")
        while rel.startswith("./"):
            rel = rel[2:]
        if ".." in rel.split("/"):
            raise ConfigError(f"rules.file {repo_rule_file!r} must stay inside the repository")
        text = head(rel)
        if text is None:
            raise ConfigError(f"rules.file {repo_rule_file!r} does not exist at HEAD")
        protected.append(rel)
        if rel.lower().endswith(".json"):
            sources.append(
                rules.parse_rule_json(text.encode(), "repo", head, name=f"{rel} (HEAD)")
            )
        else:
            entry = rules.RuleEntry(("**/*",), text, False, rel)
            sources.append(rules.RuleSource("repo", (entry,)))
    else:
        text = head(OCR_RULE_FILE)
        if text is not None:
            sources.append(
                rules.parse_rule_json(text.encode(), "repo", head, name=f"{OCR_RULE_FILE} (HEAD)")
            )
    for src in sources:
        if src.layer == "repo":
            protected.extend(e.origin for e in src.entries if e.origin)
    user_file = user_config_dir(environ) / "rule.json"
    if user_file.is_file():
        sources.append(
            rules.parse_rule_json(user_file.read_bytes(), "user", _dir_reader(user_file.parent),
                                  name=str(user_file))
        )
    sources.append(rules.builtin_rules())
    return RuleLayers(tuple(sources), tuple(dict.fromkeys(protected)),
                      guidance_mod.load_guidance(repo, guidance))


def selection_globs(layers: RuleLayers) -> tuple[list[str], list[str]]:
    """(include, exclude) globs declared by the rule files (OCR: rule-file include/exclude)."""
    inc: list[str] = []
    exc: list[str] = []
    for s in layers.sources:
        for g in s.include:
            inc.extend(rules.expand_braces(g))
        for g in s.exclude:
            exc.extend(rules.expand_braces(g))
    return inc, exc
