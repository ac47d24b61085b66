"""The text output (spec §11): findings a person can act on, written to a stream.

Layout: the blocking findings first, each marked ``BLOCKING``, then the rest by severity (most
severe first; ties by path and line). Each finding is a compiler-style diagnostic::

    BLOCKING app.py:12 [critical · security] id 3f9a1c2b7d10
      User input is concatenated into SQL.
         |
      12 |     query = "SELECT … '" + name + "'"
         |
      suggestion:
        -     query = "SELECT … '" + name + "'"
        +     cursor.execute("SELECT … ?", (name,))

then the dismissed findings (one line each, with the reason and who dismissed them), the
changed paths that were not reviewed or were excluded (reasons in words: ``lock file``,
``generated/minified``, ``vendored``, ``test file``…), the summary line, and the verdict in
words with the mode (``BLOCKED: 2 findings at or above high (blocking mode)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ..change import WHOLE_DETAIL, SelectionReason, reason_words
from ..findings import Finding, advisory_reason, advisory_text
from ..gate import blocks
from ..llm import Usage
from ..vocabulary import AnchorMethod, Severity
from .display import BOLD, RESET, SEVERITY_COLORS, display_path, display_text, use_color
from .result import FileOutcome, ReviewResult

CODE_LINES_MAX = 8  # anchored lines shown under a finding; the rest are counted
COVERAGE_LINES_MAX = 20  # per kind in text output; JSON ``files[]`` always lists every path
_BOLD_RED = "\033[1;31m"
# anchored in the hunks, or unanchored (then "location unknown" says it): no anchor note
_UNNOTED_ANCHORS = frozenset({AnchorMethod.HUNK_NEW, AnchorMethod.HUNK_OLD, AnchorMethod.NONE})


def is_blocking(f: Finding, result: ReviewResult) -> bool:
    """Whether ``f`` is one of the findings that block (blocking mode, at or above fail_on, not
    advisory: ``gate.blocks``)."""
    return result.gate.mode == "blocking" and blocks(f, result.gate)


def text_order(result: ReviewResult) -> list[Finding]:
    """The findings in text order: blocking first, then by severity (most severe first), then
    by path, anchored before unanchored, by line."""
    return sorted(result.findings, key=lambda f: (
        not is_blocking(f, result), -f.severity, f.path, f.start_line == 0, f.start_line))


def finding_location(f: Finding) -> str:
    """``path:12``, ``path:5-7``, ``path (location unknown)``, with notes (old side, anchor
    tier other than the hunks, ambiguous) in parentheses."""
    path = display_path(f.path)
    if not f.start_line:
        return f"{path} (location unknown)"
    lines = str(f.start_line) if f.end_line <= f.start_line else f"{f.start_line}-{f.end_line}"
    notes = ["old side"] if f.side == "old" else []  # spec §8.1: never shown as new side
    if f.anchor not in _UNNOTED_ANCHORS:
        notes.append(f"anchor: {f.anchor}")  # file, loose, relocated, refiled
    if f.ambiguous:
        notes.append("ambiguous")
    return f"{path}:{lines}" + (f" ({', '.join(notes)})" if notes else "")


def code_lines(f: Finding) -> list[str]:
    """The code a finding is anchored to, with a line-number gutter when every anchored line
    is known (``f.code``); else the model's quote marked with ``>``. At most CODE_LINES_MAX
    lines, then a count of the rest."""
    code = display_text(f.code, keep="\n\t").expandtabs(4).split("\n") if f.code else []
    if code and f.start_line and len(code) == f.end_line - f.start_line + 1:
        width = len(str(f.end_line))
        rows = [f"{f.start_line + i:>{width}} | {line}" for i, line in enumerate(code)]
        pad = " " * width + " |"
        shown = rows[:CODE_LINES_MAX]
        if len(rows) > CODE_LINES_MAX:
            shown.append(f"{' ' * width} | … {len(rows) - CODE_LINES_MAX} more line(s)")
        return [pad, *shown, pad]
    quote = [ln for ln in display_text(f.existing_code, keep="\n\t").split("\n") if ln.strip()]
    shown = [f"> {ln}" for ln in quote[:CODE_LINES_MAX]]
    if len(quote) > CODE_LINES_MAX:
        shown.append(f"> … {len(quote) - CODE_LINES_MAX} more line(s)")
    return shown


def suggestion_lines(existing: str, suggestion: str) -> list[str]:
    """The suggestion as a small ``-``/``+`` diff against the quote ([] when there is none)."""
    if not suggestion.strip():
        return []
    a = existing.splitlines()
    b = suggestion.splitlines()
    out = []
    import difflib  # only for a finding with a suggestion

    for line in difflib.unified_diff(a, b, lineterm="", n=len(a) + len(b)):
        if line.startswith(("---", "+++", "@@")):
            continue
        out.append(line)
    return out


def finding_block(f: Finding, blocking: bool, paint: Painter, advisory: bool = False) -> list[str]:
    """The lines of one finding (see the module docstring); ``advisory``: say why it does not
    block when it is pre-existing or moved (``findings.advisory_text``)."""
    badge = paint(SEVERITY_COLORS[f.severity], f"[{f.severity.label} · {f.category}]")
    mark = paint(_BOLD_RED, "BLOCKING ") if blocking else ""
    out = [f"{mark}{paint(BOLD, finding_location(f))} {badge} id {f.id}"]
    out += [f"  {line}" for line in display_text(f.content, keep="\n\t").split("\n")]
    if advisory and advisory_text(f):
        out.append(f"  {display_text(advisory_text(f))}")
    out += [f"  {line}" for line in code_lines(f)]
    diff = suggestion_lines(display_text(f.code or f.existing_code, keep="\n\t"),
                            display_text(f.suggestion_code, keep="\n\t"))
    if diff:
        out.append("  suggestion:")
        out += [f"    {line}" for line in diff]
    return out


class Painter:
    """Wraps text in an ANSI colour when colour is on (a TTY without NO_COLOR)."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, code: str, text: str) -> str:
        return f"{code}{text}{RESET}" if self.on else text


def preview_command(inp: Mapping[str, Any]) -> str:
    """The ``git ocr review --preview`` command that lists the paths of the reviewed input
    (``ReviewResult.input``: staged snapshot, one commit, or one range, pushed or not, with
    its actual ends), or "" when no single command does (a merge, several pushed ranges, a
    range from the empty tree)."""
    mode = inp.get("mode")
    if mode == "staged":
        return "git ocr review --preview"
    head = str(inp.get("head") or "")
    if mode == "commit" and head and not head.startswith("("):
        return f"git ocr review --preview --commit {head}"
    if mode not in ("range", "push"):
        return ""
    ranges = inp.get("ranges") or [{"base": inp.get("base"), "head": head}]
    ends = {(str(r.get("base") or ""), str(r.get("head") or "")) for r in ranges}
    if len(ends) != 1:
        return ""
    [(base, head)] = ends
    if not base or not head or base.startswith("(") or head.startswith("("):
        return ""
    return f"git ocr review --preview --from {base} --to {head}"


def coverage_lines(files: Sequence[FileOutcome], preview: str = "") -> list[str]:
    """The account of the changed paths that were not reviewed (spec §8.3): one line each,
    ``not reviewed: <path> (<why>)`` for selected files left unreviewed, then ``excluded:
    <path> (<why>)`` for files selection kept out, reasons in words (``reason_words``); at
    most COVERAGE_LINES_MAX of each, the rest counted by reason, naming the ``preview``
    command (:func:`preview_command`) that lists them all when there is one. Before them,
    ``reviewed whole: <path> (<why>)`` for each file reviewed whole (spec §4: its old side was
    left out; at most COVERAGE_LINES_MAX, then ``reviewed whole: N more``). [] when every
    changed path was reviewed by its diff."""
    whole = [o for o in files if o.whole and o.reviewed]
    out = [f"reviewed whole: {_shown_path(o)} "
           f"({display_text(o.detail.removeprefix(WHOLE_DETAIL))})"
           for o in whole[:COVERAGE_LINES_MAX]]
    if len(whole) > COVERAGE_LINES_MAX:
        out.append(f"reviewed whole: {len(whole) - COVERAGE_LINES_MAX} more")
    for label, picked in (
        ("not reviewed", [o for o in files if o.will_review and not o.reviewed]),
        ("excluded", [o for o in files if not o.will_review]),
    ):
        for o in picked[:COVERAGE_LINES_MAX]:
            out.append(f"{label}: {_shown_path(o)} ({file_reason(o)})")
        rest = picked[COVERAGE_LINES_MAX:]
        if rest:
            counts: dict[str, int] = {}
            for o in rest:
                why = file_reason(o, detail=False)
                counts[why] = counts.get(why, 0) + 1
            hint = f"; `{preview}` lists every path" if preview else ""
            out.append(f"{label}: {len(rest)} more ("
                       + ", ".join(f"{n} {r}" for r, n in counts.items()) + f"{hint})")
    return out


def _shown_path(o: FileOutcome) -> str:
    """``path``, or ``old → new`` for a rename or copy."""
    path = display_path(o.path)
    return f"{display_path(o.old_path)} → {path}" if o.old_path != o.path else path


def file_reason(o: FileOutcome, *, detail: bool = True) -> str:
    """Why ``o`` was excluded or not reviewed, in words; with ``detail``, followed by
    ``: <o.detail>`` when there is one (sizes, bounds, the secret scan of a file whose content
    was not loaded)."""
    if not o.reason:
        return "unknown"
    if o.reason == SelectionReason.TOO_LARGE and o.size_bytes is not None:
        why = "too large"  # decided from the blob's size, not from the model's context
    else:
        why = reason_words(o.path, o.reason)
    return f"{why}: {display_text(o.detail)}" if detail and o.detail else why


def _short(label: Any) -> str:
    """A full object id shortened to 12 characters; other labels unchanged."""
    text = str(label)
    return text[:12] if len(text) in (40, 64) and text.isalnum() else text


def scope_lines(inp: Mapping[str, Any], status: str = "") -> list[str]:
    """Text lines naming what was reviewed: each pushed range with its commit count and the
    older commits left out (``not reviewed …`` / ``partly reviewed …`` for a range whose
    ``status``, or the run's ``status`` when it is the only one, is failed / partial), the
    ``base..head`` of a commit, range or merge, then the commits left out as reviewed at
    commit time (spec §3.4.1), or where the files of a scan come from.
    [] for the staged snapshot (its base is HEAD)."""
    mode = inp.get("mode", "")
    noted = [f"reviewed at commit time: {_short(c['commit'])} (session {c['session'] or '?'})"
             + (f" (note on {_short(c['noted_commit'])})"
                if c.get("noted_commit") not in (None, "", c["commit"]) else "")
             for c in inp.get("reviewed_at_commit") or ()]  # spec §3.4.1
    if mode == "push" or (mode == "range" and "ranges" in inp):
        ranges = inp.get("ranges") or []
        if not ranges:
            return noted or ["reviewed: nothing (no new commits to push)"]
        lines = []
        for r in ranges:
            n = r.get("commits", 0)
            done = r.get("status") or (status if len(ranges) == 1 else "")
            verb = {"failed": "not reviewed", "partial": "partly reviewed"}.get(done, "reviewed")
            line = (f"{verb} {r.get('ref') or mode}: {_short(r['base'])}..{_short(r['head'])}"
                    f" ({n} commit{'s' if n != 1 else ''})")
            if r.get("not_reviewed_commits"):
                line += (f"; {r['not_reviewed_commits']} older commit(s) not reviewed"
                         f" ({_short(r['not_reviewed_base'])}..{_short(r['base'])})")
            lines.append(line)
        return lines + noted
    if mode in ("commit", "range", "merge"):
        return [f"reviewed: {_short(inp.get('base', ''))}..{_short(inp.get('head', ''))}",
                *noted]
    if mode == "scan":  # git ocr scan (spec §3.9): whole files, not a change
        head = str(inp.get("head", ""))
        return ["scanned: whole files " + ("as staged" if head == "(index)"
                                           else f"at {_short(head)}")]
    return []


def write_preview_table(result: ReviewResult, stream: TextIO) -> None:
    """``--preview`` as text (spec §4): path (``old → new`` for renames), status (a scan:
    ``scanned``), +/-, and ``yes`` or ``no (why, in words)``; then a count line (a scan:
    ``N file(s)``, not ``N changed file(s)``), and one line per agent guidance file the model
    is given (``input.guidance``, read from HEAD)."""
    scan = result.input.get("mode") == "scan"  # spec §3.9: whole files, not a change
    rows = []
    for o in result.files:
        path = _shown_path(o)
        review = "yes" if o.will_review and not o.reason else f"no ({file_reason(o)})"
        review += " (whole file)" if o.whole and review == "yes" else ""
        rows.append((path, "scanned" if scan else o.status, f"+{o.insertions}/-{o.deletions}",
                     review))
    header = ("path", "status", "+/-", "review")
    widths = [max([len(header[i])] + [len(r[i]) for r in rows]) for i in range(3)]
    for r in [header, *rows]:
        stream.write(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]}\n")
    n = sum(1 for o in result.files if o.will_review and not o.reason)
    stream.write(f"\n{len(result.files)} {'' if scan else 'changed '}file(s), {n} to review\n")
    for g in result.input.get("guidance") or ():
        cut = f", cut to {g['shown_bytes']} bytes" if g.get("cut") else ""
        stream.write(f"guidance (HEAD): {display_path(g['path'])} ({g['bytes']} bytes{cut})\n")


def verdict_line(result: ReviewResult) -> str:
    """The gate's verdict in words, with the mode: ``PASS: no finding at or above high
    (blocking mode)``, ``BLOCKED: 2 findings at or above high (blocking mode)``, …"""
    d, g = result.decision, result.gate
    mode = f"({g.mode} mode)"
    n = d.blocking_findings
    hits = f"{n} finding{'s' if n != 1 else ''} at or above {g.fail_on}"
    dismissed = f", {len(result.dismissed)} dismissed" if result.dismissed else ""
    advisory = sum(1 for f in result.findings if not g.block_preexisting and advisory_reason(f)
                   and f.severity >= Severity[g.fail_on.upper()])
    if advisory:  # at or above fail_on, let through as pre-existing or moved (spec §9)
        dismissed += f", {advisory} advisory (pre-existing or moved)"
    if d.verdict == "findings":
        if d.blocked:
            return f"BLOCKED: {hits}{dismissed} {mode}"
        return f"PASS: {hits}, not blocking{dismissed} {mode}"
    if d.verdict == "incomplete":
        if d.blocked:
            return f"BLOCKED: review incomplete and gate.on_error = block {mode}"
        if g.mode == "advisory":
            return f"PASS: review incomplete{dismissed} {mode}"
        return f"PASS: review incomplete, let through by gate.on_error = allow{dismissed} {mode}"
    return f"PASS: no finding at or above {g.fail_on}{dismissed} {mode}"


def dismissed_lines(result: ReviewResult) -> list[str]:
    """One line per dismissed finding: where, what, by whom and why."""
    out = []
    for d in result.dismissed:
        f = d.finding
        why = f": {display_text(d.reason)}" if d.reason else ""
        by = {"inline": "inline marker", "shared": "shared", "personal": "personal"}[d.by]
        who = f", {display_text(d.author)}" if d.author else ""
        out.append(f"dismissed: {finding_location(f)} [{f.severity.label} · {f.category}] id {f.id}"
                   f" ({by}{who}){why}")
    return out


def summary_line(result: ReviewResult) -> str:
    """``ocr-hook: 2 reviewed, 1 excluded, 0 incomplete; 1 finding(s) (1 high); …``."""
    by_sev = ", ".join(
        f"{n} {s.label}"
        for s in sorted(Severity, reverse=True)
        if (n := sum(1 for f in result.findings if f.severity == s))
    )
    reviewed = sum(1 for o in result.files if o.reviewed)
    excluded = sum(1 for o in result.files if not o.will_review)
    incomplete = sum(1 for o in result.files if o.will_review and not o.reviewed)
    u = result.usage
    failed = result.llm_attempts - result.llm_calls  # each answered call is one attempt
    failed_attempts = (f" ({failed} failed attempt{'s' if failed != 1 else ''})"
                       if failed > 0 else "")
    dismissed = f", {len(result.dismissed)} dismissed" if result.dismissed else ""
    return (
        f"ocr-hook: {reviewed} reviewed, {excluded} excluded, {incomplete} incomplete;"
        f" {len(result.findings)} finding(s){f' ({by_sev})' if by_sev else ''}{dismissed};"
        f" tokens in/out {u.input_tokens + u.cache_read_tokens + u.cache_write_tokens}/"
        f"{u.output_tokens}{_cached(u)}; {result.llm_calls} LLM call(s){failed_attempts};"
        f" {result.cache_hits} cache hit(s);"
        f" {result.elapsed_ms / 1000:.1f}s"
    )


def since_last_line(since: Mapping[str, Any]) -> str:
    """``Since the last blocked review: 1 resolved, 0 persisting, 0 new`` (spec §12.3) of a
    result's ``since_last``, then ``, N carried`` and ``, N dismissed`` when there are any."""
    n = {k: len(v) if isinstance(v, list) else 0 for k, v in since.items()}
    extra = "".join(f", {n[k]} {k}" for k in ("carried", "dismissed") if n.get(k))
    return (f"Since the last blocked review: {n.get('resolved', 0)} resolved,"
            f" {n.get('persisting', 0)} persisting, {n.get('new', 0)} new{extra}")


def _cached(u: Usage) -> str:
    """`` (cache read R, written W)`` of the provider's prompt cache, as its usage reported
    them (both counted in the input tokens); "" when it reported none."""
    if not (u.cache_read_tokens or u.cache_write_tokens):
        return ""
    return f" (cache read {u.cache_read_tokens}, written {u.cache_write_tokens})"


def write_text(result: ReviewResult, stream: TextIO, environ: Mapping[str, str]) -> None:
    """The whole text output of ``result`` (see the module docstring); ``--preview`` is the
    selection table instead."""
    if result.preview:
        write_preview_table(result, stream)
        return
    paint = Painter(use_color(stream, environ))
    w = stream.write
    for f in text_order(result):
        w("\n" + "\n".join(finding_block(
            f, is_blocking(f, result), paint,
            result.gate.mode == "blocking" and not result.gate.block_preexisting)) + "\n")
    if not result.findings and result.status in ("complete", "skipped"):
        w("No findings.\n" if result.status == "complete" else "Nothing to review.\n")
    for line in scope_lines(result.input, result.status):
        w(f"{display_text(line)}\n")
    for block in (dismissed_lines(result),
                  coverage_lines(result.files, preview_command(result.input))):
        if block:
            w("\n" + "\n".join(block) + "\n")
    for reason in result.incomplete_reasons:
        w(f"{display_text(reason)}\n")
    w(f"\n{summary_line(result)}\n")
    if result.since_last is not None:  # spec §12.3
        w(f"{since_last_line(result.since_last)}\n")
    if result.cache_hits and not result.llm_calls and result.status == "complete":
        w("(cached result: this snapshot was reviewed before with the same settings)\n")
    w(f"{verdict_line(result)}\n")
