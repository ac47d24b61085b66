"""The review page: one self-contained HTML file for ``--format html`` and
``git ocr session show ID --html``.

Contents: the verdict in words (red blocked, amber incomplete with its ``NOT REVIEWED`` lines,
green passed) with the gate and the summary, the findings by file, the
coverage list (every changed path: reviewed, excluded or not reviewed, reasons in words), and
each reviewed file's diff with its findings shown inline under the line they are anchored to
(severity, category, message, suggestion, id; blocking ones marked; dismissed ones folded).
Findings whose lines are not in the shown diff (unanchored, or anchored outside the hunks)
are listed at the top of their file.

Self-contained and inert: no script, no external stylesheet, font or image; a
Content-Security-Policy meta tag (``default-src 'none'; style-src 'unsafe-inline'``) makes the
browser refuse any request even if model text tried to add one, and every text from the model,
the diff or a path is HTML-escaped. It reads in any browser from a ``file://`` URL.

Input is plain data, so a session can be rendered later (:func:`render_html`): ``data`` is
the JSON object of ``report.json_format.to_json`` (spec §11, with ``dismissed[]``), ``diffs``
the reviewed files' diffs, and ``verdict`` the text output's verdict line; :func:`write_html`,
the writer of ``--format html``, takes the three from a result. Imported only for ``--format
html`` and ``--html``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any, TextIO

from ..change import NOT_REVIEWED_REASONS, SelectionReason, reason_words
from ..diff import FileDiff, Hunk, Line
from ..util import display_text, shown_text
from ..vocabulary import Severity, StopReason
from .display import utf8_safe
from .json_format import to_json
from .text import verdict_line

if TYPE_CHECKING:
    from .result import ReviewResult

CSP = "default-src 'none'; style-src 'unsafe-inline'"
SEVERITY_RANK = {s.label: int(s) for s in Severity}  # the JSON's severity labels, ranked
# trusted HTML added to a finding's box (the session viewer's marks): f(comment, dismissed)
BoxExtra = Callable[[Mapping[str, Any], bool], str]

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2328;
background:#f6f8fa}
header,section{max-width:1200px;margin:0 auto;padding:12px 24px}
h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:16px 0 8px}
.verdict{font-size:18px;font-weight:600;padding:10px 14px;border-radius:6px;margin:8px 0}
.verdict.blocked{background:#ffebe9;color:#82071e;border:1px solid #ff8182}
.verdict.passed{background:#dafbe1;color:#116329;border:1px solid #4ac26b}
.verdict.incomplete{background:#fff8c5;color:#7d4e00;border:1px solid #d4a72c}
.not-reviewed{font-weight:600;color:#7d4e00;margin:4px 0}
.meta{color:#57606a;margin:4px 0}.meta span{margin-right:18px;white-space:nowrap}
table{border-collapse:collapse;width:100%;background:#fff}
.cov td,.cov th{border-bottom:1px solid #d0d7de;padding:4px 8px;text-align:left}
.cov .no{color:#57606a}.cov .miss{color:#9a6700;font-weight:600}
article{background:#fff;border:1px solid #d0d7de;border-radius:6px;margin:14px 0;overflow:hidden}
article h2{margin:0;padding:8px 12px;background:#f6f8fa;border-bottom:1px solid #d0d7de;
font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px}
.diff td{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;
white-space:pre-wrap;word-break:break-all;vertical-align:top;padding:0 8px}
.diff td.num{width:1%;min-width:36px;color:#6e7781;text-align:right;user-select:none}
.diff tr.add td.code{background:#e6ffec}.diff tr.del td.code{background:#ffebe9}
.diff tr.add td.num{background:#ccffd8}.diff tr.del td.num{background:#ffd7d5}
.diff tr.hunk td{background:#ddf4ff;color:#57606a;padding:2px 8px}
.finding>td{padding:6px 12px!important;white-space:normal!important;font-family:inherit!important}
.box{border:1px solid #d0d7de;border-left:4px solid #8c959f;border-radius:6px;padding:8px 12px;
background:#fff;font:13px/1.45 system-ui,sans-serif;max-width:900px}
.box.critical{border-left-color:#82071e}.box.high{border-left-color:#cf222e}
.box.medium{border-left-color:#bf8700}.box.low{border-left-color:#0969da}
.box.dismissed{opacity:.75;border-left-color:#8c959f}
.sev{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;
color:#fff;background:#8c959f;margin-right:6px}
.sev.critical{background:#82071e}.sev.high{background:#cf222e}.sev.medium{background:#bf8700}
.sev.low{background:#0969da}.blocking{color:#cf222e;font-weight:700;margin-right:6px}
.fid{color:#6e7781;font-family:ui-monospace,monospace;font-size:12px}
.msg{margin:6px 0;white-space:pre-wrap}
pre.sugg,pre.quote{background:#f6f8fa;border-radius:4px;padding:6px 8px;margin:6px 0;
white-space:pre-wrap;font-size:12px}pre.quote{border-left:3px solid #d0d7de}
.outside{padding:6px 12px;border-bottom:1px solid #d0d7de}
ul.index{padding-left:20px}
"""


def _e(text: object) -> str:
    """``text`` HTML-escaped; undecodable path bytes as ``\\xNN`` and any other lone surrogate
    as U+FFFD (:func:`report.display.utf8_safe`), so the page always encodes as UTF-8; control,
    format and separator characters (BEL, U+202E, U+2028…) spelled out as the text output does
    (spec §11.1, ``util.display_text``), newlines and tabs kept."""
    return escape(display_text(utf8_safe(str(text)), keep="\n\t"), quote=True)


def is_blocking(c: Mapping[str, Any], gate: Mapping[str, Any]) -> bool:
    """Whether JSON comment ``c`` blocks under JSON ``gate`` (blocking mode, at/above fail_on,
    not advisory: ``advisory_reason`` is set only when the gate lets it pass)."""
    if c.get("advisory_reason"):
        return False
    return (gate.get("mode") == "blocking"
            and SEVERITY_RANK.get(str(c.get("severity")), 0)
            >= SEVERITY_RANK.get(str(gate.get("fail_on")), 3))


def write_html(result: ReviewResult, stream: TextIO, environ: Mapping[str, str]) -> None:
    """``--format html``: the page of ``result``, from its JSON object, the diffs of its
    reviewed files (:func:`review_diffs`) and its verdict line. ``environ`` is not read (the
    writers of ``report.formats`` share one signature)."""
    stream.write(render_html(utf8_safe(to_json(result)), review_diffs(result),
                             verdict_line(result)))


def review_diffs(result: ReviewResult) -> list[FileDiff]:
    """The diffs of the reviewed files (each path once, in group order): the review page's
    diffs."""
    seen: dict[str, FileDiff] = {}
    for g in result.groups:
        for f in g.files:
            seen.setdefault(f.path, f)
    return list(seen.values())


def render_html(data: Mapping[str, Any], diffs: Sequence[FileDiff], verdict: str, *,
                box_extra: BoxExtra | None = None, before: str = "", after: str = "") -> str:
    """The whole page (see the module docstring) as a string. The session viewer
    (``report.viewer``) adds its own trusted HTML: ``before`` right after the header,
    ``after`` at the end of the body and ``box_extra(comment, dismissed)`` inside each
    finding's box; the static page passes none of them."""
    gate = data.get("gate", {})
    blocked = bool(gate.get("blocking"))
    kind = ("blocked" if blocked else
            "incomplete" if data.get("verdict") == "incomplete" else "passed")
    title = f"ocr-hook review: {verdict}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="referrer" content="no-referrer">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>",
        "<header><h1>ocr-hook review</h1>",
        f'<p class="verdict {kind}" id="verdict">{_e(verdict)}</p>',
        *(f'<p class="not-reviewed">{_e(str(r))}</p>' for r in data.get("incomplete_reasons", [])),
        _meta(data),
        "</header>",
        before,
        _finding_index(data),
        _coverage(data),
        _file_sections(data, diffs, box_extra),
        after,
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _input_line(inp: Mapping[str, Any]) -> str:
    """``input: staged HEAD..<tree>``; a scan has no base: ``input: scan of <head>``."""
    if inp.get("mode") == "scan":
        return f"input: scan of {inp.get('head', '')}"
    return f"input: {inp.get('mode', '')} {inp.get('base', '')}..{inp.get('head', '')}"


def _meta(data: Mapping[str, Any]) -> str:
    s = data.get("summary", {})
    inp = data.get("input", {})
    llm = data.get("llm", {})
    gate = data.get("gate", {})
    items = [
        f"gate: {gate.get('mode', '')}, fail on {gate.get('fail_on', '')}",
        f"status: {data.get('status', '')}",
        _input_line(inp),
        f"model: {llm.get('model', '') or '—'}",
        f"files reviewed: {s.get('files_reviewed', 0)}",
        f"findings: {s.get('comments', 0)}, dismissed: {len(data.get('dismissed', []))}",
        f"tokens in/out: {s.get('input_tokens', 0)}/{s.get('output_tokens', 0)}",
        f"LLM calls: {s.get('llm_calls', 0)}, cache hits: {s.get('cache_hits', 0)}",
        f"time: {int(s.get('elapsed_ms', 0) or 0) / 1000:.1f}s",
        f"session: {data.get('session_id', '') or '—'}",
    ]
    # a space between the spans: the line wraps between items (each item stays whole)
    return '<p class="meta">' + " ".join(f"<span>{_e(i)}</span>" for i in items) + "</p>"


def _finding_index(data: Mapping[str, Any]) -> str:
    """The list of findings (blocking first, then by severity), each linking to its box."""
    comments = sorted(data.get("comments", []), key=lambda c: (
        not is_blocking(c, data.get("gate", {})), -SEVERITY_RANK.get(c.get("severity"), 0),
        c.get("path", ""), c.get("start_line", 0)))
    if not comments:
        return '<section id="findings"><h2>Findings</h2><p>No findings.</p></section>'
    rows = []
    for c in comments:
        mark = '<span class="blocking">BLOCKING</span>' if is_blocking(
            c, data.get("gate", {})) else ""
        rows.append(f'<li>{mark}<span class="sev {_e(c["severity"])}">{_e(c["severity"])}'
                    f'</span><a href="#finding-{_e(c["id"])}">{_e(_where(c))}</a> '
                    f'[{_e(c["category"])}] {_e(_first_line(c["content"]))}</li>')
    return ('<section id="findings"><h2>Findings</h2><ul class="index">' + "".join(rows)
            + "</ul></section>")


def _where(c: Mapping[str, Any]) -> str:
    start, end = int(c.get("start_line", 0)), int(c.get("end_line", 0))
    if not start:
        return f"{c.get('path')} (location unknown)"
    lines = str(start) if end <= start else f"{start}-{end}"
    return f"{c.get('path')}:{lines}" + (" (old side)" if c.get("side") == "old" else "")


def _first_line(text: str) -> str:
    first = next((ln for ln in str(text).split("\n") if ln.strip()), "")  # not U+2028
    return first if len(first) <= 160 else first[:157] + "…"


def _coverage(data: Mapping[str, Any]) -> str:
    """Every changed path with what happened to it, reasons in words."""
    rows = []
    for f in data.get("files", []):
        if f.get("reviewed"):
            what, cls = "reviewed", ""
        elif (f.get("will_review", True) or f.get("not_reviewed")) and (
                why := _not_reviewed(f.get("reason"), f.get("size_bytes"))):
            what, cls = f"not reviewed: {why}", "miss"
        else:
            what, cls = f"excluded: {reason_words(f['path'], f.get('reason', ''))}", "no"
        if f.get("detail") and not f.get("reviewed"):  # sizes, bounds, secret scan
            what += f": {f['detail']}"
        path = f["path"] if f.get("old_path") in (None, f["path"]) else \
            f"{f['old_path']} → {f['path']}"
        rows.append(f'<tr><td>{_e(path)}</td><td>{_e(f.get("status", ""))}</td>'
                    f'<td class="{cls}">{_e(what)}</td></tr>')
    return ('<section id="coverage"><h2>Changed files</h2><table class="cov"><tr><th>path</th>'
            "<th>status</th><th>review</th></tr>" + "".join(rows) + "</table></section>")


def _not_reviewed(reason: Any, size_bytes: Any = None) -> str | None:
    """A JSON ``files[]`` reason that leaves a selected file not reviewed, in words: a stop
    reason's brief words, too large (from its size, or for the model's context) or a bound of
    the change set; None for the others (excluded)."""
    stop = StopReason.lookup(reason)
    if stop is not None:
        return stop.brief
    if reason == SelectionReason.TOO_LARGE and size_bytes is not None:
        return "too large"  # decided from the blob's size, as the text output says
    return reason_words("", reason) if reason in NOT_REVIEWED_REASONS else None


def _file_sections(data: Mapping[str, Any], diffs: Sequence[FileDiff],
                   extra: BoxExtra | None = None) -> str:
    """One article per shown diff, then the findings of files without a shown diff."""
    gate = data.get("gate", {})
    items = [(c, False) for c in data.get("comments", [])]
    items += [(d, True) for d in data.get("dismissed", [])]
    # paths compared as shown (a non-UTF-8 byte as \xNN), as the JSON data carries them
    with_diff = {shown_text(fd.path) for fd in diffs}
    out = ['<section id="diffs"><h2>Reviewed files</h2>']
    for n, fd in enumerate(diffs):
        path = shown_text(fd.path)
        mine = [(c, dis) for c, dis in items if shown_text(str(c.get("path"))) == path]
        out.append(_file_article(n, fd, mine, gate, extra))
    rest = [(c, dis) for c, dis in items if shown_text(str(c.get("path"))) not in with_diff]
    if rest:
        out.append('<article id="other-findings"><h2>Findings in files without a shown diff'
                   "</h2>" + "".join(f'<div class="outside">{_box(c, dis, gate, extra)}</div>'
                                     for c, dis in rest) + "</article>")
    out.append("</section>")
    return "\n".join(out)


def _file_article(n: int, fd: FileDiff, items: Sequence[tuple[Mapping[str, Any], bool]],
                  gate: Mapping[str, Any], extra: BoxExtra | None = None) -> str:
    """One file: its findings outside the diff, then the diff with the others inline."""
    rows_by_line: dict[tuple[str, int], list[str]] = {}
    shown_lines = {("new", ln.new_line) for h in fd.hunks for ln in h.lines if ln.new_line}
    shown_lines |= {("old", ln.old_line) for h in fd.hunks for ln in h.lines
                    if ln.old_line and ln.kind == "-"}
    outside = []
    for c, dismissed in items:
        side = "old" if c.get("side") == "old" else "new"
        end = int(c.get("end_line", 0) or 0)
        if end and (side, end) not in shown_lines and side == "old":
            # an old-side finding on a context line: shown where that line is on the old side
            shown_ctx = {ln.old_line: ln.new_line for h in fd.hunks for ln in h.lines
                         if ln.kind == " "}
            if end in shown_ctx:
                rows_by_line.setdefault(("new", shown_ctx[end] or 0), []).append(
                    _finding_row(c, dismissed, gate, extra))
                continue
        if end and (side, end) in shown_lines:
            rows_by_line.setdefault((side, end), []).append(
                _finding_row(c, dismissed, gate, extra))
        else:
            outside.append(f'<div class="outside">{_box(c, dismissed, gate, extra)}</div>')
    title = fd.path if fd.old_path == fd.path else f"{fd.old_path} → {fd.path}"
    body = [f'<article class="file" id="file-{n}" data-path="{_e(fd.path)}">',
            f"<h2>{_e(title)} <small>({_e(fd.status)}, +{fd.insertions}/-{fd.deletions})"
            "</small></h2>", *outside, '<table class="diff">']
    for h in fd.hunks:
        body.append(f'<tr class="hunk"><td colspan="3">{_e(h.header)}</td></tr>')
        for ln in h.lines:
            body.append(_line_row(n, ln.kind, ln.text, ln.old_line, ln.new_line))
            if ln.kind == "-" and ln.old_line:
                body.extend(rows_by_line.pop(("old", ln.old_line), []))
            elif ln.new_line:
                body.extend(rows_by_line.pop(("new", ln.new_line), []))
    body.append("</table></article>")
    return "\n".join(body)


def _line_row(n: int, kind: str, text: str, old: int | None, new: int | None) -> str:
    cls = {"+": "add", "-": "del", " ": "ctx"}[kind]
    ident = f"f{n}-n{new}" if new else f"f{n}-o{old}"
    return (f'<tr class="line {cls}" id="{ident}" data-old="{old or ""}" data-new="{new or ""}">'
            f'<td class="num">{old or ""}</td><td class="num">{new or ""}</td>'
            f'<td class="code">{_e(kind)}{_e(text.replace(chr(13), ""))}</td></tr>')


def _finding_row(c: Mapping[str, Any], dismissed: bool, gate: Mapping[str, Any],
                 extra: BoxExtra | None = None) -> str:
    return (f'<tr class="finding" data-finding-id="{_e(c["id"])}" data-side="{_e(c["side"])}"'
            f' data-start="{int(c["start_line"])}" data-end="{int(c["end_line"])}"'
            f' data-dismissed="{"yes" if dismissed else "no"}"><td colspan="3">'
            f"{_box(c, dismissed, gate, extra)}</td></tr>")


def _box(c: Mapping[str, Any], dismissed: bool, gate: Mapping[str, Any],
         extra: BoxExtra | None = None) -> str:
    """One finding: badges, location, id, message, the model's quote when the finding has no
    location (nothing else would show which code it means), suggestion; a dismissed one
    folded."""
    sev = _e(c.get("severity", ""))
    mark = ('<span class="blocking">BLOCKING</span>'
            if not dismissed and is_blocking(c, gate) else "")
    head = (f'{mark}<span class="sev {sev}">{sev}</span><b>{_e(c.get("category", ""))}</b> '
            f'{_e(_where(c))} <span class="fid">id {_e(c.get("id", ""))}</span>')
    body = f'<div class="msg">{_e(c.get("content", ""))}</div>'
    quote = str(c.get("existing_code", "") or "")
    if not int(c.get("start_line", 0) or 0) and quote.strip():  # no line to show it under
        body += ('<div>Quoted code (not found in the file):</div>'
                 f'<pre class="quote">{_e(quote)}</pre>')
    sugg = str(c.get("suggestion_code", "") or "")
    if sugg.strip():
        body += f'<div>Suggestion:</div><pre class="sugg">{_e(sugg)}</pre>'
    if extra is not None:
        body += extra(c, dismissed)
    fid = _e(c.get("id", ""))
    if dismissed:
        why = f": {c.get('reason')}" if c.get("reason") else ""
        return (f'<div class="box dismissed" id="finding-{fid}"><details><summary>dismissed'
                f' ({_e(c.get("by", ""))}{_e(why)}) — {head}</summary>{body}</details></div>')
    return f'<div class="box {sev}" id="finding-{fid}">{head}{body}</div>'


# ---- diffs in session records (``git ocr session show ID --html``) --------------------------


def diff_from_record(rec: Mapping[str, Any]) -> FileDiff:
    """A FileDiff from a session ``result`` record's diff entry
    (``pipeline.services.diff_record``)."""
    hunks = tuple(
        Hunk(int(h[0]), int(h[1]), int(h[2]), int(h[3]), str(h[4]),
             tuple(Line(str(k), str(t), o, n) for k, t, o, n in h[5]))  # type: ignore[arg-type]
        for h in rec.get("hunks", []))
    return FileDiff(status=str(rec.get("status", "")), old_path=str(rec.get("old_path", "")),
                    new_path=str(rec.get("new_path", "")), hunks=hunks,
                    insertions=int(rec.get("insertions", 0)),
                    deletions=int(rec.get("deletions", 0)))
