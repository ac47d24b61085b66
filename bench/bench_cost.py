#!/usr/bin/env python3
"""Billable input tokens with provider prompt caching: ocr-hook against the reference CLI
(OCR 1.12.4) for the same reviews, the same scripted model, over both protocols (OpenAI Chat
Completions and Anthropic Messages), computed from each tool's own recorded request bodies.

Reviews: range mode, ``git ocr review --from A --to B --format json --no-cache`` and ``ocr
review --from A --to B`` (bench/ocrlib.py), both with ``--concurrency 1`` (requests arrive in
a fixed order) at each tool's default effort (ocr-hook low: one round; OCR medium: a second
round, answered at once, plus its review filter and, for some groups, a plan). The default
cases are three commits of this repository's own history (a clone in a temp folder; pinned
hashes in ``CASES``), each changing 5-7 files of ``ocr_hook/`` in 2-3 folders: offline, and the
same bytes on every machine. ``--repo PATH --range A..B`` (repeatable) adds others (cloned
too: a review never runs in the source repository).

The scripted model (:class:`CostModel`, a loopback server speaking both wire formats) treats
both tools alike: every main-task conversation takes three rounds (``file_read`` of its first
file + ``code_search`` for an identifier of that file's added lines; one ``code_comment`` per
file quoting a real added line; ``task_done``); what is read, searched and quoted is planned
from git (``plan_files``), not from either tool's prompt. Grouping answers put files of one
folder together; every other request kind gets the minimal answer it expects. A row is marked
``(!)`` and a WARNING printed when a review did not end complete, a main conversation did not
take exactly three rounds, the two tools reviewed different files, or a body has more than 4
breakpoints. Both tools write the current minute into their main prompt; each review starts
early in a minute so all its requests carry the same one.

Cost model (token counts: tiktoken o200k_base through ocr-hook's offline tables, the same for
both tools; each review starts from a cold cache; no cache time-to-live is modelled: every
review here ends within seconds, well inside the 5-minute TTL):

- Anthropic: the prompt is the tools (in order), the system blocks, then every message's content
  blocks (a string ``system`` or string content is one block). A block with ``cache_control``
  is a breakpoint; a cache entry is the exact prefix up to a breakpoint. A request reads the
  longest stored entry equal to its prefix ending at a block at most 20 blocks before one of
  its breakpoints; the tokens from there to its last breakpoint are written (1.25x), when that
  prefix has at least 1,024 tokens (shorter prefixes are neither written nor read), and each
  breakpoint prefix of 1,024+ tokens is stored; the rest is plain input. billable = plain +
  1.25 x written + 0.1 x read.
- OpenAI (automatic caching): the prompt is the token sequence of the tool definitions then the
  messages; a request's cached part is its longest common token prefix with any earlier
  request of the same review, if at least 1,024 tokens, rounded down to 1,024 + a multiple of
  128. billable = uncached + cached x ``--cached-price`` (default 0.25; the model's cached
  price over its input price). ``prompt_cache_key`` only routes requests to a cache machine;
  it changes no count here.

The cost functions are checked on hand-made bodies at start (``--self-check`` runs only that).
Columns: requests, input tokens, read from cache, written (Anthropic), billable (in plain input
tokens), and ocr-hook's input and billable as a ratio of OCR's. ``--explain`` prints, per
request, its cost and where it first differs from the earlier request it shares most with
(what breaks the prefix); ``--dump DIR`` writes the bodies. ``--record LABEL`` appends the run to
``results/cost.json`` and rewrites ``results/cost.md``. About 30 s on 2 cores.

Usage: python bench/bench_cost.py [--protocols openai,anthropic] [--cached-price 0.25]
       [--repo PATH --range A..B]... [--explain] [--dump DIR] [--record LABEL] [--self-check]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ocrlib
from benchlib import OCR_CMD, ROOT, RecordingLLM, clean_env, load_line, run_child, table

from tests.support.scripted_llm import (
    Reply,
    anthropic_text,
    anthropic_tool_calls,
    openai_text,
    openai_tool_calls,
)

RESULTS = Path(__file__).resolve().parent / "results"

# --- reading a request body, either protocol --------------------------------------------------


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the ``text`` of its text blocks/parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def conversation(body: Mapping[str, Any]) -> tuple[str, str, int]:
    """(system text, text of the user messages before the first assistant message, assistant
    turns so far) of a request body in OpenAI Chat Completions or Anthropic Messages form."""
    msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    system = _text(body.get("system", ""))
    system += "\n".join(_text(m.get("content")) for m in msgs if m.get("role") == "system")
    first = next((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), len(msgs))
    user = "\n".join(_text(m.get("content")) for m in msgs[:first] if m.get("role") == "user")
    turns = sum(1 for m in msgs if m.get("role") == "assistant")
    return system, user, turns


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """Names of the tools a request offers (OpenAI ``function.name`` or Anthropic ``name``)."""
    out = []
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            out.append(str((t.get("function") or t).get("name", "")))
    return out


# --- the scripted model ----------------------------------------------------------------------

FILE_RE = re.compile(r'<file path="([^"]*)"')
LIST_RE = re.compile(r"^\[(\d+)\]\s+\S+\s+(.+?)\s+\(\+\d+/-\d+\)\s*$", re.M)
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{5,}")
CONFIRMED_RE = re.compile(r"<confirmed_findings>(.*?)</confirmed_findings>", re.S)


@dataclass
class FilePlan:
    """What the scripted model does with one changed file: ``quote`` (a real added line, as in
    the file at B) for its comment, ``ident`` (an identifier of its added lines, the one with
    the fewest matches in the repository at B) for ``code_search``."""

    quote: str
    ident: str


def plan_files(repo: Path, env: Mapping[str, str], a: str, b: str) -> dict[str, FilePlan]:
    """A :class:`FilePlan` per path git lists with added lines in ``a..b`` (merge base of a and
    b to b, as range mode reviews). Computed from git, not from either tool's diff rendering,
    so both tools are asked the same."""
    def out(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, env=dict(env), capture_output=True,
                              text=True, check=True).stdout
    base = out("merge-base", a, b).strip()
    plans: dict[str, FilePlan] = {}
    path = ""
    added: dict[str, list[str]] = {}
    for line in out("diff", "--no-color", "--no-renames", "-U0", base, b).splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else ""
        elif line.startswith("+") and path:
            added.setdefault(path, []).append(line[1:])
    for path, lines in added.items():
        quote = next((x for x in lines if len(x.strip()) >= 12), None) or next(
            (x for x in lines if x.strip()), None)
        if quote is None:
            continue
        idents = list(dict.fromkeys(i for x in lines for i in IDENT_RE.findall(x)))
        counts = {}
        for ident in idents[:40]:
            grep = subprocess.run(["git", "grep", "-c", "-F", "-w", ident, b], cwd=repo,
                                  env=dict(env), capture_output=True, text=True, check=False)
            counts[ident] = sum(int(x.rsplit(":", 1)[1]) for x in grep.stdout.splitlines())
        ident = min(idents[:40], key=lambda i: (counts[i], idents.index(i))) if idents \
            else quote.split()[0]
        plans[path] = FilePlan(quote, ident)
    return plans


@dataclass
class CostModel:
    """The scripted model both tools talk to (one per review). Every main-task conversation
    (a request offering ``code_comment``; its files are the ``<file path="...">`` of its first
    user message) takes three rounds: ``file_read`` of its first file (lines 1-40) plus
    ``code_search`` for that file's planned identifier; one ``code_comment`` per file quoting
    its planned line; ``task_done``. A later review round (both tools list the earlier
    findings, with their paths, in ``<confirmed_findings>``) is answered ``task_done`` at once. Other requests get the
    minimal answer they expect: a grouping (an ``[i] STATUS path (+a/-d)`` list) one group per
    folder, a review filter ``approve_all_comments`` / ``task_done``, OCR's plan an empty plan
    (a summary line and no issues), any other text request ``NONE``. ``kinds`` counts requests by kind; ``rounds`` lists, per main conversation that
    ended, how many assistant turns it took."""

    protocol: str
    plans: dict[str, FilePlan]
    kinds: dict[str, int] = field(default_factory=dict)
    rounds: list[int] = field(default_factory=list)
    ids: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _reply(self, *calls: tuple[str, Any], text: str = "") -> Reply:
        """A reply without ``usage`` (each tool counts itself), its tool call ids numbered in
        order (the same on every run, so token counts repeat)."""
        if self.protocol == "anthropic":
            body = anthropic_tool_calls(*calls) if calls else anthropic_text(text)
            items = [b for b in body["content"] if b.get("type") == "tool_use"]
        else:
            body = openai_tool_calls(*calls) if calls else openai_text(text)
            items = body["choices"][0]["message"].get("tool_calls") or []
        for item in items:
            self.ids += 1
            item["id"] = f"call_{self.ids:04d}"
        body.pop("usage", None)
        return Reply(body)

    def _count(self, kind: str) -> None:
        with self.lock:
            self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def answer(self, raw: str) -> Reply:
        """The reply to one request body (JSON text)."""
        try:
            body = json.loads(raw)
        except ValueError:
            self._count("not JSON")
            return self._reply(text="NONE")
        system, user, turns = conversation(body)
        names = tool_names(body)
        if "code_comment" in names:
            return self.main(system, user, turns)
        if "approve_all_comments" in names:
            self._count("review filter")
            return self._reply(("approve_all_comments", {}))
        if names:
            self._count("other (tools): " + ",".join(names[:3]))
            return self._reply(("task_done", {"state": "DONE"}) if "task_done" in names
                               else (names[0], {}))
        listed = LIST_RE.findall(user)
        if listed:
            self._count("grouping")
            return self._reply(text=json.dumps(self.groups(listed)))
        if "review plan" in system.lower():
            self._count("plan")
            return self._reply(text="Summary: the change as shown.\n\nIssues\n\n(none)")
        self._count("other (text)")
        return self._reply(text="NONE")

    @staticmethod
    def groups(listed: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
        """One group per folder, in the order listed, at most 10 files each."""
        by_dir: dict[str, list[int]] = {}
        for idx, path in listed:
            path = path.split(" -> ")[-1].strip()
            by_dir.setdefault(path.rsplit("/", 1)[0] if "/" in path else ".", []).append(int(idx))
        return [{"label": f"{d} #{k // 10 + 1}", "files": v[k:k + 10]}
                for d, v in by_dir.items() for k in range(0, len(v), 10)]

    def main(self, system: str, user: str, turns: int) -> Reply:
        """A main-task request: the files are the planned paths among the ``<file path>`` of
        the first user turn (else of the system prompt, should the diffs move there)."""
        planned = []
        for text in (user, system):
            found = FILE_RE.findall(text.split("</review_files>")[0])
            planned = [p for p in dict.fromkeys(found) if p in self.plans]
            if planned:
                break
        confirmed = CONFIRMED_RE.findall(user + "\n" + system)
        if any(p in c for c in confirmed for p in self.plans):  # a later review round
            self._count("main, later round")
            return self._reply(("task_done", {"state": "DONE"}))
        self._count("main")
        if turns == 0 and planned:
            first = planned[0]
            return self._reply(("file_read", {"file_path": first, "start_line": 1,
                                              "end_line": 40}),
                               ("code_search", {"search_text": self.plans[first].ident}))
        if turns == 1 and planned:
            return self._reply(("code_comment", {"comments": [
                {"path": p, "content": "Check this added line.",
                 "existing_code": self.plans[p].quote, "severity": "low",
                 "category": "other"} for p in planned]}))
        with self.lock:
            self.rounds.append(turns + 1)
        return self._reply(("task_done", {"state": "DONE"}))


# --- the cost model --------------------------------------------------------------------------

MIN_CACHE_TOKENS = 1024  # both providers: a shorter prefix is never cached
OPENAI_STEP = 128        # OpenAI: cached prefixes grow in 128-token steps past the minimum
LOOKBACK_BLOCKS = 20     # Anthropic: a hit is looked for at most 20 blocks before a breakpoint
WRITE_PRICE, READ_PRICE = 1.25, 0.1  # Anthropic, x the input price


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@functools.cache
def _encoder() -> Any:
    from ocr_hook.util import tokens

    enc = tokens._encoding("o200k_base")  # the tables ocr-hook ships (offline)
    if enc is None:
        raise SystemExit("tiktoken o200k_base is not available offline (pip install -e .)")
    return enc


def encode(text: str) -> list[int]:
    """o200k_base tokens of ``text`` (the same encoding for both tools and protocols)."""
    return _encoder().encode(text, disallowed_special=()) if text else []


@dataclass(frozen=True)
class Block:
    """One unit of a prompt: ``key`` (canonical JSON of what the provider sees, cache_control
    left out: equal keys, equal content), ``text`` (what is tokenized: a text's own characters,
    a tool definition or tool call as canonical JSON) and ``breakpoint`` (it carries
    ``cache_control``)."""

    key: str
    text: str
    breakpoint: bool = False


def _block(role: str, b: Any) -> Block:
    if not isinstance(b, dict):
        b = {"type": "text", "text": str(b)}
    plain = {k: v for k, v in b.items() if k != "cache_control"}
    if plain.get("type") == "text":
        text = str(plain.get("text", ""))
    elif plain.get("type") == "tool_result":
        c = plain.get("content")
        text = c if isinstance(c, str) else _text(c) or _canon(c)
    else:
        text = _canon(plain)
    return Block(_canon([role, plain]), text, "cache_control" in b)


def anthropic_blocks(body: Mapping[str, Any]) -> list[Block]:
    """A Messages request as the provider caches it: every tool (in order), then the system
    blocks, then every message's content blocks, in order (a string ``system`` or string
    content is one text block)."""
    out = [_block("tool", t) for t in body.get("tools") or []]
    system = body.get("system")
    if system:
        out += [_block("system", b) for b in (system if isinstance(system, list) else [system])]
    for m in body.get("messages") or []:
        c = m.get("content")
        for b in c if isinstance(c, list) else [c]:
            out.append(_block(str(m.get("role")), b))
    return out


def openai_blocks(body: Mapping[str, Any]) -> list[Block]:
    """A Chat Completions request in prompt order: each tool definition (canonical JSON), then
    each message: its role, its content text and its tool calls / tool call id (canonical
    JSON)."""
    out = [Block(_canon(t), _canon(t)) for t in body.get("tools") or []]
    for m in body.get("messages") or []:
        rest = {k: v for k, v in m.items() if k not in ("role", "content") and v}
        text = f"{m.get('role')}\n{_text(m.get('content'))}" + (_canon(rest) if rest else "")
        out.append(Block(_canon(m), text))
    return out


@dataclass
class Cost:
    """Input tokens of some requests: ``input`` in all, of which ``read`` from the cache,
    ``written`` to it (Anthropic only) and the rest plain; ``billable`` in units of one plain
    input token."""

    requests: int = 0
    input: int = 0
    read: int = 0
    written: int = 0
    billable: float = 0.0

    def add(self, other: Cost) -> None:
        self.requests += other.requests
        self.input += other.input
        self.read += other.read
        self.written += other.written
        self.billable += other.billable


def anthropic_costs(bodies: Sequence[Mapping[str, Any]]) -> list[Cost]:
    """Billable input of each of ``bodies`` (one review's requests, in the order sent) under
    Anthropic's prompt caching, from a cold cache: a cache entry is the exact prefix (of
    :func:`anthropic_blocks`) ending at a breakpoint. A request reads the longest stored entry that equals its prefix ending at a
    block at most :data:`LOOKBACK_BLOCKS` before one of its breakpoints; the tokens after it up
    to its last breakpoint are written (1.25x), when that prefix has at least
    :data:`MIN_CACHE_TOKENS`, and each such breakpoint prefix is stored; the rest is plain
    (1x); reads cost 0.1x. No time-to-live (every review here ends within minutes)."""
    store: set[str] = set()
    out = []
    for body in bodies:
        blocks = anthropic_blocks(body)
        cum, keys, h = [0], [""], hashlib.sha256()
        for b in blocks:
            h.update(b.key.encode() + b"\0")
            keys.append(h.hexdigest())
            cum.append(cum[-1] + len(encode(b.text)))
        marks = [i + 1 for i, b in enumerate(blocks) if b.breakpoint]  # prefix lengths
        hit = 0
        for k in marks:
            for j in range(k, max(k - LOOKBACK_BLOCKS, 1) - 1, -1):
                if j > hit and keys[j] in store:
                    hit = j
                    break
        read = cum[hit]
        written = 0
        if marks and cum[marks[-1]] >= MIN_CACHE_TOKENS and marks[-1] > hit:
            written = cum[marks[-1]] - read
        for k in marks:
            if cum[k] >= MIN_CACHE_TOKENS:
                store.add(keys[k])
        plain = cum[-1] - read - written
        out.append(Cost(1, cum[-1], read, written,
                        plain + WRITE_PRICE * written + READ_PRICE * read))
    return out


def body_problems(protocol: str, bodies: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the cost model cannot price as sent: more than 4 breakpoints in a Messages request
    (the API refuses it) or a request-level ``cache_control`` (not modelled)."""
    out = []
    for i, body in enumerate(bodies):
        if protocol != "anthropic":
            continue
        marks = sum(b.breakpoint for b in anthropic_blocks(body))
        if marks > 4:
            out.append(f"request {i}: {marks} cache_control breakpoints (the API allows 4)")
        if "cache_control" in body:
            out.append(f"request {i}: a request-level cache_control (not modelled)")
    return out


def _common(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the longest common prefix of two token lists or strings (bisection on
    slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def openai_cached(common: int) -> int:
    """Cached tokens of a request whose longest common prefix with an earlier one is
    ``common`` tokens: 0 under :data:`MIN_CACHE_TOKENS`, else rounded down to the minimum plus
    a multiple of :data:`OPENAI_STEP`."""
    if common < MIN_CACHE_TOKENS:
        return 0
    return MIN_CACHE_TOKENS + (common - MIN_CACHE_TOKENS) // OPENAI_STEP * OPENAI_STEP


def openai_costs(bodies: Sequence[Mapping[str, Any]], cached_price: float = 0.25
                 ) -> list[Cost]:
    """Billable input of each of ``bodies`` (one review's requests, in order) under OpenAI's automatic
    prompt caching: the prompt is the token sequence of :func:`openai_blocks`; the cached part
    of a request is its longest common token prefix with any earlier request of the review,
    when that is at least :data:`MIN_CACHE_TOKENS`, rounded down to 1,024 + a multiple of
    :data:`OPENAI_STEP`; it costs ``cached_price``, the rest 1x. ``prompt_cache_key`` only
    routes requests to a cache and changes no count here."""
    seen: list[list[int]] = []
    out = []
    for body in bodies:
        tokens = [t for b in openai_blocks(body) for t in encode(b.text)]
        cached = openai_cached(max((_common(tokens, s) for s in seen), default=0))
        seen.append(tokens)
        out.append(Cost(1, len(tokens), cached, 0,
                        len(tokens) - cached + cached_price * cached))
    return out


def total(costs: Sequence[Cost]) -> Cost:
    """The sum of some requests' costs."""
    out = Cost()
    for c in costs:
        out.add(c)
    return out


def anthropic_cost(bodies: Sequence[Mapping[str, Any]]) -> Cost:
    """:func:`anthropic_costs` summed."""
    return total(anthropic_costs(bodies))


def openai_cost(bodies: Sequence[Mapping[str, Any]], cached_price: float = 0.25) -> Cost:
    """:func:`openai_costs` summed."""
    return total(openai_costs(bodies, cached_price))


def self_check() -> None:
    """The cost functions on hand-made bodies (exact figures); raises AssertionError."""
    assert [openai_cached(n) for n in (0, 1023, 1024, 1151, 1152, 2000)] == \
        [0, 0, 1024, 1024, 1152, 1920]
    long_text = "".join(f" word{i % 97}" for i in range(1000))  # > 1,024 tokens
    n_long = len(encode(long_text))
    assert n_long >= 2000, n_long
    cc = {"type": "ephemeral"}

    def ant(system: str, user: str, mark: bool = True, tools: int = 0) -> dict[str, Any]:
        sys_block: dict[str, Any] = {"type": "text", "text": system}
        if mark:
            sys_block["cache_control"] = cc
        return {"tools": [{"name": f"t{i}", "input_schema": {}} for i in range(tools)],
                "system": [sys_block], "messages": [{"role": "user", "content": user}]}

    n_a, n_b = len(encode("first question")), len(encode("second question"))
    # two requests sharing a breakpoint prefix: written once at 1.25x, then read at 0.1x
    c = anthropic_cost([ant(long_text, "first question"), ant(long_text, "second question")])
    assert (c.requests, c.input, c.read, c.written) == (2, 2 * n_long + n_a + n_b, n_long,
                                                        n_long), c
    assert abs(c.billable - (n_a + 1.25 * n_long + n_b + 0.1 * n_long)) < 1e-9, c
    # no breakpoint: nothing cached; a breakpoint prefix under 1,024 tokens: neither
    c = anthropic_cost([ant(long_text, "first question", mark=False)] * 2)
    assert (c.read, c.written, c.billable) == (0, 0, 2 * (n_long + n_a)), c
    short = " ".join(["word"] * 300)
    c = anthropic_cost([ant(short, "first question")] * 2)
    assert (c.read, c.written) == (0, 0), c
    # a changed prefix (the system text) misses; a hit more than 20 blocks back is not found
    c = anthropic_cost([ant(long_text, "q"), ant(long_text + " changed", "q")])
    assert c.read == 0 and c.written == n_long + len(encode(long_text + " changed")), c
    first = ant(long_text, "q")
    later = ant(long_text, "q", mark=False)
    later["messages"] = [{"role": "user", "content": [{"type": "text", "text": f"m{i}"}
                                                      for i in range(25)]}]
    later["messages"][0]["content"][-1]["cache_control"] = cc
    c = anthropic_cost([first, later])
    assert c.read == 0, c  # the system prefix is 25 blocks before the only breakpoint
    later["messages"][0]["content"] = later["messages"][0]["content"][:19]
    later["messages"][0]["content"][-1]["cache_control"] = cc
    c = anthropic_cost([first, later])
    assert c.read == n_long, c
    # OpenAI: a shared 2,000+ token system message, cached in 128-token steps
    def oai(system: str, user: str) -> dict[str, Any]:
        return {"messages": [{"role": "system", "content": system},
                             {"role": "user", "content": user}]}
    sys_tokens = encode(f"system\n{long_text}")
    c = openai_cost([oai(long_text, "alpha"), oai(long_text, "omega")], cached_price=0.5)
    shared = len(sys_tokens) + _common(encode("user\nalpha"), encode("user\nomega"))
    assert c.read == openai_cached(shared) and c.read >= 1920, (c, shared)
    assert abs(c.billable - (c.input - c.read + 0.5 * c.read)) < 1e-9, c
    c = openai_cost([oai(short, "alpha"), oai(short, "omega")])
    assert c.read == 0 and c.billable == c.input, c


# --- running the reviews ---------------------------------------------------------------------

# (label, A, B): commits of this repository that change 5-7 files of ocr_hook/ in 2-3 folders
# (only package files: ocr-hook leaves tests/ and docs out by default, OCR does not, and both
# must review the same files)
CASES = (
    ("2465fba prompts/paths", "2465fbaa991a7626cb461ca0be668aec8171f69b~1",
     "2465fbaa991a7626cb461ca0be668aec8171f69b"),
    ("0d72cfd util.text", "0d72cfdc530534d3032ba4a07fb59159bd003de5~1",
     "0d72cfdc530534d3032ba4a07fb59159bd003de5"),
    ("f732a0d agent+tools", "f732a0dfeb6fb086fbd2d305dc57b2d3da28bd76~1",
     "f732a0dfeb6fb086fbd2d305dc57b2d3da28bd76"),
)
TOOLS = ("ocr-hook", "OCR")


@dataclass
class Run:
    """One review by one tool over one protocol: the request bodies in the order received,
    the scripted model's record, and what went wrong (empty when the review ended complete
    and every main conversation took three rounds)."""

    bodies: list[dict[str, Any]]
    model: CostModel
    problems: list[str]
    wall_s: float
    reviewed: list[str]


def _fresh_minute() -> None:
    """Both tools put the current minute in their main prompt: start a review early in a
    minute so that all its requests carry the same one (reviews here take seconds)."""
    sec = time.localtime().tm_sec
    if sec > 45:
        time.sleep(61 - sec)


def review(tool: str, protocol: str, repo: Path, a: str, b: str, plans: dict[str, FilePlan],
           base: Path, ocr: str) -> Run:
    """Review ``a..b`` of ``repo`` with ``tool`` against a fresh :class:`CostModel` server,
    concurrency 1, the tool's default effort, in a private HOME under ``base``."""
    model = CostModel(protocol, plans)
    llm = RecordingLLM(protocol)
    llm._next = model.answer  # type: ignore[method-assign]
    home = Path(tempfile.mkdtemp(prefix=f"{tool}-{protocol}-", dir=base))
    try:
        env = clean_env(home, **llm.env())
        rng = ["--from", a, "--to", b, "--concurrency", "1"]
        if tool == "OCR":
            ocrlib.write_config(home, llm.url, protocol)
            cmd = ocrlib.review_command(ocr, *rng)
        else:
            cmd = [*OCR_CMD, "review", *rng, "--format", "json", "--no-cache"]
        _fresh_minute()
        r = run_child(cmd, repo, env)
        out = r.json()
        problems = []
        if r.rc not in (0, 1) or out.get("status") != "complete":
            problems.append(f"exit {r.rc}, status {out.get('status')!r}: "
                            f"{r.stderr.strip()[-200:]}")
        groups = out.get("groups") or []
        if len(groups) != len(model.rounds) or any(n != 3 for n in model.rounds):
            problems.append(f"{len(groups)} groups, main conversations' rounds {model.rounds}")
        problems += body_problems(protocol, llm.requests)
        reviewed = sorted(p for g in groups for p in g.get("files") or [])
        return Run(list(llm.requests), model, problems, r.wall_s, reviewed)
    finally:
        llm.close()


def cost_of(protocol: str, bodies: Sequence[Mapping[str, Any]], cached_price: float) -> Cost:
    """The billable input of one review's bodies under its protocol's caching rules."""
    if protocol == "anthropic":
        return anthropic_cost(bodies)
    return openai_cost(bodies, cached_price)


def explain(protocol: str, bodies: Sequence[Mapping[str, Any]], cached_price: float) -> list[str]:
    """One line per request: its cost, and where it first differs from the earlier request it
    shares the most leading blocks with (block index, role, tokens of that block before the
    first differing character, and the texts from there), for reading what breaks a prefix."""
    make = anthropic_blocks if protocol == "anthropic" else openai_blocks
    costs = (anthropic_costs(bodies) if protocol == "anthropic"
             else openai_costs(bodies, cached_price))
    seen: list[list[Block]] = []
    out = []
    for i, (body, c) in enumerate(zip(bodies, costs, strict=True)):
        blocks = make(body)
        line = f"#{i} in {c.input} read {c.read} written {c.written}"
        best, at, score = -1, -1, (-1, -1)
        for j, prev in enumerate(seen):
            n = next((k for k, (x, y) in enumerate(zip(blocks, prev, strict=False))
                      if x.key != y.key), min(len(blocks), len(prev)))
            same = _common(blocks[n].text, prev[n].text) if n < min(len(blocks), len(prev)) \
                else 0
            if (n, same) > score:
                best, at, score = j, n, (n, same)
        seen.append(blocks)
        if 0 <= at < len(blocks):
            new, old = blocks[at].text, (seen[best][at].text if at < len(seen[best]) else "")
            n = _common(new, old)
            role = json.loads(blocks[at].key)
            role = role[0] if isinstance(role, list) else role.get("role", "tool")
            line += (f"; vs #{best}: block {at} ({role}) after {len(encode(new[:n]))} tokens: "
                     f"{new[n:n + 50]!r} / {old[n:n + 50]!r}")
        out.append(line)
    return out


def _row(review_label: str, tool: str, c: Cost, ref: Cost | None,
         warn: bool = False) -> list[object]:
    tool += " (!)" if warn else ""
    ratio_in = f"{c.input / ref.input:.2f}x" if ref and ref.input else ""
    ratio = f"{c.billable / ref.billable:.2f}x" if ref and ref.billable else ""
    return [review_label, tool, c.requests, f"{c.input:,}", f"{c.read:,}", f"{c.written:,}",
            f"{c.billable:,.0f}", ratio_in, ratio]


HEADERS = ("review", "tool", "requests", "input tokens", "read from cache", "written",
           "billable", "input ocr-hook/OCR", "billable ocr-hook/OCR")


def tables(results: Mapping[str, Mapping[str, Mapping[str, Any]]], cached_price: float,
           markdown: bool = False) -> str:
    """One table per protocol from ``results[protocol][review][tool]`` (``cost`` and
    ``problems``), a totals row each, then the warnings."""
    from benchlib import text_table

    parts, warnings = [], []
    for protocol, reviews in results.items():
        rows, totals = [], {t: Cost() for t in TOOLS}
        for label, by_tool in reviews.items():
            for tool in TOOLS:
                c = Cost(**by_tool[tool]["cost"])
                totals[tool].add(c)
                ref = Cost(**by_tool["OCR"]["cost"]) if tool == "ocr-hook" else None
                rows.append(_row(label, tool, c, ref, bool(by_tool[tool]["problems"])))
                warnings += [f"{protocol}, {label}, {tool}: {p}" for p in by_tool[tool]["problems"]]
        for tool in TOOLS:
            rows.append(_row("total", tool, totals[tool],
                             totals["OCR"] if tool == "ocr-hook" else None))
        rule = ("Anthropic prompt caching: breakpoints, writes 1.25x, reads 0.1x"
                if protocol == "anthropic" else
                f"OpenAI automatic caching: cached tokens at {cached_price:g}x")
        title = f"{'Anthropic Messages' if protocol == 'anthropic' else 'OpenAI Chat Completions'} ({rule})"
        body = text_table(HEADERS, rows, markdown=True) if markdown else table(HEADERS, rows)
        parts.append(f"{'### ' if markdown else ''}{title}\n\n{body}" if markdown
                     else f"{title}\n{body}")
    for w in warnings:
        parts.append(f"WARNING {w}")
    return "\n\n".join(parts)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, action="append", default=[],
                    help="another repository to review (with --range, in the same order)")
    ap.add_argument("--range", dest="ranges", action="append", default=[], metavar="A..B")
    ap.add_argument("--no-default-cases", action="store_true",
                    help="only the --repo/--range reviews")
    ap.add_argument("--protocols", default="openai,anthropic")
    ap.add_argument("--cached-price", type=float, default=0.25,
                    help="OpenAI: price of a cached input token, x the input price")
    ap.add_argument("--ocr", default=None, help="the OCR executable (default: ocrlib.find_ocr)")
    ap.add_argument("--record", metavar="LABEL", default="")
    ap.add_argument("--explain", action="store_true",
                    help="print where each request's prefix first differs from earlier ones")
    ap.add_argument("--dump", type=Path, default=None, help="write every review's bodies here")
    ap.add_argument("--self-check", action="store_true", help="check the cost functions, exit")
    args = ap.parse_args(argv)
    if len(args.repo) != len(args.ranges):
        ap.error("give one --range A..B per --repo")
    return args


def run_case(args: argparse.Namespace, label: str, protocol: str, order: Sequence[str],
             where: tuple[Path, str, str], plans: dict[str, FilePlan], base: Path,
             ocr: str) -> dict[str, Any]:
    """Both tools' reviews of one case over one protocol: ``{tool: {cost, problems, kinds,
    rounds, wall_s, reviewed}}``; a problem is added when the two reviewed other files."""
    repo, a, b = where
    out: dict[str, Any] = {}
    for tool in order:
        run = review(tool, protocol, repo, a, b, plans, base, ocr)
        c = cost_of(protocol, run.bodies, args.cached_price)
        out[tool] = {"cost": asdict(c), "problems": run.problems, "kinds": run.model.kinds,
                     "rounds": run.model.rounds, "wall_s": round(run.wall_s, 2),
                     "reviewed": run.reviewed}
        if args.dump:
            args.dump.mkdir(parents=True, exist_ok=True)
            name = re.sub(r"\W+", "_", f"{label}-{protocol}-{tool}")
            (args.dump / f"{name}.json").write_text(json.dumps(run.bodies, indent=1))
        if args.explain:
            print(f"--- {label}, {protocol}, {tool}: {run.model.kinds}")
            print("\n".join(explain(protocol, run.bodies, args.cached_price)))
    if out["ocr-hook"]["reviewed"] != out["OCR"]["reviewed"]:
        out["ocr-hook"]["problems"].append(
            f"reviewed {out['ocr-hook']['reviewed']}, OCR {out['OCR']['reviewed']}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    self_check()
    if args.self_check:
        print("cost functions: self-check passed")
        return 0
    ocr = ocrlib.find_ocr(args.ocr)
    base = Path(tempfile.mkdtemp(prefix="ocr-bench-cost-"))
    try:
        env = clean_env(base / "git-home")
        cases: list[tuple[str, Path, str, str]] = []
        def clone(src: Path, name: str) -> Path:  # reviews change HEAD: never in the source
            dst = base / name
            subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(src), str(dst)],
                           env=env, check=True, capture_output=True)
            return dst
        if not args.no_default_cases:
            own = clone(ROOT, "ocr-hook")
            cases += [(label, own, a, b) for label, a, b in CASES]
        for i, (repo, rng) in enumerate(zip(args.repo, args.ranges, strict=True)):
            a, b = (subprocess.run(["git", "rev-parse", "--verify", f"{ref}^{{commit}}"],
                                   cwd=repo, env=env, capture_output=True, text=True,
                                   check=True).stdout.strip() for ref in rng.split("..", 1))
            cases.append((f"{repo.name} {rng}", clone(repo.resolve(), f"repo{i}"), a, b))
        results: dict[str, dict[str, dict[str, Any]]] = {}
        for n, (label, repo, a, b) in enumerate(cases):
            subprocess.run(["git", "checkout", "-q", "--detach", b], cwd=repo, env=env,
                           check=True, capture_output=True)
            plans = plan_files(repo, env, a, b)
            for protocol in args.protocols.split(","):
                order = TOOLS if n % 2 == 0 else TOOLS[::-1]  # alternate who goes first
                results.setdefault(protocol, {})[label] = run_case(
                    args, label, protocol, order, (repo, a, b), plans, base, ocr)
        report(args, results)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def report(args: argparse.Namespace, results: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Print the tables and the load line; with ``--record``, add the run to cost.json and
    write cost.md."""
    head = (f"billable input tokens with prompt caching, ocr-hook vs OCR {ocrlib.OCR_VERSION}, "
            f"same scripted model, concurrency 1, each tool's default effort; {load_line()}")
    print(head)
    print()
    print(tables(results, args.cached_price))
    if not args.record:
        return
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=False).stdout.strip()
    path = RESULTS / "cost.json"
    recorded = json.loads(path.read_text()) if path.is_file() else {"runs": []}
    recorded["runs"].append({"label": args.record, "commit": commit, "load": load_line(),
                             "cached_price": args.cached_price, "results": results})
    path.write_text(json.dumps(recorded, indent=1) + "\n")
    md = ["# Billable input with prompt caching: `bench/bench_cost.py`\n",
          "Cost model: bench/README.md (\"Cost model\"). Runs, latest first.\n"]
    for run in reversed(recorded["runs"]):
        md.append(f"## {run['label']} ({run['commit']}; {run['load']})\n")
        md.append(tables(run["results"], run["cached_price"], markdown=True) + "\n")
    (RESULTS / "cost.md").write_text("\n".join(md))
    print(f"\nrecorded as {args.record!r} in {path} and {RESULTS / 'cost.md'}")


if __name__ == "__main__":
    sys.exit(main())
