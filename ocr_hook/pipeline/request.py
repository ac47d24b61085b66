"""What a review run is asked to do: ``ReviewRequest``, read once from flags, env and files by
``cli`` and handed to ``pipeline.review.run`` (docs/architecture.md: the argparse namespace goes
no further)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..change import NO_GUIDANCE, Guidance, SelectionPolicy
from ..errors import ConfigError
from ..findings import Finding
from ..gate import GateOptions

if TYPE_CHECKING:  # annotations only
    from .. import git
    from ..config import Config
    from ..llm import Endpoint

HOOK_STAGES = ("pre-commit", "pre-merge-commit", "pre-push")  # spec §2: hook-stage defaults


class ReviewRequest(NamedTuple):
    """Everything a run needs, read once from flags, env and files by ``cli``. Immutable: a
    run with changed inputs (one pushed range of several) is a ``_replace`` copy."""

    repo: Path
    config: Config
    environ: Mapping[str, str]
    mode: str = "staged"  # staged | merge | commit | range | push | scan (targets given)
    stage: str = "review"  # review | pre-commit | pre-merge-commit | pre-push
    commit: str = ""
    from_ref: str = ""
    to_ref: str = ""
    targets: tuple[git.Target, ...] = ()  # pre-resolved (push mode)
    # File names the hook was given (pre-commit framework, pass_filenames): only these of the
    # changed paths are reviewed; None = no list was given. An empty tuple reviews nothing.
    path_filter: tuple[str, ...] | None = None
    # The framework handed files, not changes (``pre-commit run --all-files``): the names do not
    # narrow the changed paths, so every slice of that run reviews the same snapshot.
    files_handed: bool = False
    endpoint: Endpoint | None = None
    endpoint_error: str = ""
    # Runs llm.api_key_cmd (config.endpoint.ApiKeyCommand): set when the endpoint's key is still to
    # come from it. Called only right before the first LLM request; raises ConfigError when the
    # command fails, which makes the endpoint unavailable (reason no_endpoint, spec §2).
    api_key_cmd: Callable[[], str] | None = None
    preview: bool = False
    use_cache: bool = True
    background: str = ""
    guidance: Guidance = NO_GUIDANCE  # the agent guidance files at HEAD (rules.guidance)
    protected_paths: tuple[str, ...] = ()  # review-configuration files (spec §5)
    # spec §7.2/§7.3: built-in tool definitions after tools.file (None = shipped tools.json),
    # and the MCP bridge (tools.McpBridge, built by cli, started by pipeline.llm_stage only
    # when a review reaches the tool loop, closed by cli).
    tool_defs: Mapping[str, Any] | None = None
    mcp: Any = None
    # spec §12.3: the findings of the last blocked review of this branch (``pipeline.
    # since_last``), shown to the model with the files they are on; () when there is none.
    earlier: tuple[Finding, ...] = ()
    notes_applied: bool = False  # spec §3.4.1: the reviewed-at-commit commits are left out
    # spec §13.7: where each set budget.* key came from (a file, an environment variable)
    cap_sources: Mapping[str, str] = {}  # a NamedTuple default, never mutated
    # spec §3.4.1: the rule layers (``change.RuleLayers.sources``), for the notes' fingerprint
    rule_sources: tuple[Any, ...] = ()

    @property
    def effort(self) -> str:
        """review.effort, else ``low`` (one round) for every stage: with the thorough main
        prompt a second round adds few findings for much input (measured on real pull
        requests: bench/results/quality-trial-2026-12-02.md)."""
        return self.config.review.effort or "low"

    @property
    def budget_tokens(self) -> int:
        """review.max_tokens_budget, else 300,000 in hooks and 0 (no limit) otherwise."""
        b = self.config.review.max_tokens_budget
        if b is not None:
            return b
        return 300_000 if self.stage in HOOK_STAGES else 0

    @property
    def selection_policy(self) -> SelectionPolicy:
        """What the select.* settings and the context size make of file selection (spec §4). A
        scan has no context gate: a file too large for one prompt is reviewed in windows
        (``pipeline.windows``, spec §3.9); and it leaves every symbolic link out (its blob is
        the link text)."""
        sel = self.config.select
        return SelectionPolicy(include=tuple(sel.include), exclude=tuple(sel.exclude),
                               review_tests=sel.review_tests,
                               context_tokens=0 if self.mode == "scan"
                               else self.config.llm.context_tokens,
                               max_file_bytes=sel.max_file_bytes, max_files=sel.max_files,
                               max_total_bytes=sel.max_total_bytes,
                               links=self.mode != "scan")

    @property
    def llm_labels(self) -> dict[str, str]:
        """JSON ``llm``: the endpoint's provider and model ("" without an endpoint)."""
        e = self.endpoint
        return {"provider": e.provider if e else "", "model": e.model if e else ""}

    def endpoint_with_key(self) -> Endpoint:
        """``endpoint`` with its API key from ``api_key_cmd`` when that is set (runs the
        command: call it only right before the first LLM request). Raises OcrError when the
        key command fails, ConfigError (``endpoint_error``) when there is no endpoint."""
        if self.endpoint is None:
            raise ConfigError(self.endpoint_error or "no LLM endpoint configured")
        if self.api_key_cmd is None:
            return self.endpoint
        return self.endpoint._replace(api_key=self.api_key_cmd())

    @property
    def gate(self) -> GateOptions:
        """The gate settings of this run."""
        g = self.config.gate
        return GateOptions(g.mode, g.fail_on, g.on_error, g.block_preexisting)
