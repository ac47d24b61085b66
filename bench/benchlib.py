"""Shared helpers of the bench scripts (not a benchmark itself; ``bench/run`` runs only
``bench_*.py``).

- :func:`run_child`: run ``git ocr`` as a new process and measure it (wall seconds, CPU seconds
  and peak RSS of the process and the git processes it waited for, from ``os.wait4``);
- :func:`fast_llm`: the tests' loopback model (tests/support/scripted_llm.py) with Nagle's
  algorithm off on its sockets. The server writes headers and body in two ``send`` calls; on a
  reused keep-alive connection the second one waits for the client's delayed ACK (~40 ms on
  Linux), which would be billed to our pipeline in a zero-latency benchmark;
- :class:`EchoModel`: a scripted model whose answers depend on the request: it groups files,
  quotes real added lines of the diff it was sent (plus one invented quote per group that must
  end unanchored), calls a context tool, approves comments in the review filter, answers NONE
  to re-location and plain text to compression calls. Nothing about the answers is
  "intelligent": it exists so a review of a real diff goes through every stage;
- :func:`table`: fixed-width tables.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.scripted_llm import (  # noqa: E402
    Reply,
    ScriptedLLM,
    openai_text,
    openai_tool_calls,
)

EXE = Path(sys.executable).parent / "git-ocr"
OCR_CMD = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "ocr_hook.cli"]
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ocr-hook-bench"


def installed_command(root: Path = ROOT) -> list[str]:
    """``git-ocr`` of a regular (non-editable) install of the source tree ``root``, as a user
    gets it from ``pipx install``, ``uv tool install`` or the pre-commit framework: a venv under
    ``CACHE/installed/<digest of the tree's package files>``, made once with ``pip install`` (the
    package registry is the only network use). A checkout's editable install instead loads a
    path finder on every start (``site`` takes ~15 ms more). Raises SystemExit when pip fails."""
    import hashlib
    import shutil

    h = hashlib.sha256()
    for base in ("ocr_hook", "config"):
        for f in sorted((root / base).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    h.update((root / "pyproject.toml").read_bytes())
    venv = CACHE / "installed" / h.hexdigest()[:16]
    exe = venv / "bin" / "git-ocr"
    if not exe.exists():
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        for cmd in ([sys.executable, "-m", "venv", str(venv)],
                    [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(root)]):
            p = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if p.returncode:
                shutil.rmtree(venv, ignore_errors=True)
                raise SystemExit(f"{' '.join(cmd[:4])}: {(p.stderr or p.stdout).strip()[-300:]}")
    return [str(exe)]


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without repo-local ``GIT_*``, any ``OCR_``/``OPENAI_``/
    ``ANTHROPIC_`` variable and ``PYTHONDONTWRITEBYTECODE`` (``pip install`` compiles the
    package, so a hook never compiles its source on every run; a bench must not either), with
    a private HOME/XDG folders under ``home`` (no user config or cache of the machine leaks
    in) and a fixed git identity."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "OCR_", "OPENAI_", "ANTHROPIC_"))
           and k != "PYTHONDONTWRITEBYTECODE"}  # an installed package has its bytecode
    home.mkdir(parents=True, exist_ok=True)
    env.update(GIT_IDENTITY, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               HOME=str(home), XDG_CONFIG_HOME=str(home / "config"),
               XDG_CACHE_HOME=str(home / "cache"))
    env.update(extra)
    return env


def git(repo: Path, env: Mapping[str, str], *args: str) -> str:
    """``git args`` in ``repo``; stdout text. Exits the bench with git's message on failure."""
    p = subprocess.run(["git", *args], cwd=repo, env=dict(env), capture_output=True, check=False)
    if p.returncode:
        raise SystemExit(f"git {' '.join(args)}: {p.stderr.decode(errors='replace').strip()}")
    return p.stdout.decode("utf-8", "replace")


@dataclass
class ChildRun:
    """One measured child process: exit code, output, wall and CPU seconds, peak RSS in MiB
    (the largest of the process and the children it waited for, Linux ``ru_maxrss``)."""

    rc: int
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float
    maxrss_mib: float

    def json(self) -> dict[str, Any]:
        try:
            value = json.loads(self.stdout)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


def run_child(cmd: Sequence[str], cwd: Path, env: Mapping[str, str],
              timeout_s: float = 600.0) -> ChildRun:
    """Run ``cmd`` and reap it with ``os.wait4`` so its own rusage is returned (RUSAGE_CHILDREN
    would mix in every earlier child). Killed after ``timeout_s`` (rc -9)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=dict(env), stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL)
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return ChildRun(proc.returncode, out.read().decode("utf-8", "replace"),
                        err.read().decode("utf-8", "replace"), wall,
                        usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0)


def fast_llm(llm: ScriptedLLM) -> ScriptedLLM:
    """Turn Nagle's algorithm off for ``llm``'s future connections (see module doc)."""
    llm.server.RequestHandlerClass.disable_nagle_algorithm = True  # type: ignore[attr-defined]
    return llm


def session_records(repo: Path, session_id: str) -> list[dict[str, Any]]:
    """The JSONL records of one run's session log (spec §12)."""
    common = Path(git(repo, os.environ, "rev-parse", "--git-common-dir").strip())
    path = (repo / common if not common.is_absolute() else common) / "ocr-hook" / "sessions"
    text = (path / f"{session_id}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def model_wait_s(records: Iterable[Mapping[str, Any]]) -> float:
    """Seconds during which at least one LLM request was in flight: the union of the
    [llm_request, llm_response] intervals of the session log, paired in order per
    (group, task). Requests without a response (failed) count up to the next record of theirs."""
    open_at: dict[tuple[str, str], list[float]] = {}
    spans: list[tuple[float, float]] = []
    for r in records:
        key = (str(r.get("group", "")), str(r.get("task", "")))
        if r.get("type") == "llm_request":
            open_at.setdefault(key, []).append(float(r["ts"]))
        elif r.get("type") in ("llm_response", "llm_error") and open_at.get(key):
            spans.append((open_at[key].pop(0), float(r["ts"])))
    spans.sort()
    total, cur_start, cur_end = 0.0, None, None
    for s, e in spans:
        if cur_end is None or s > cur_end:
            if cur_end is not None and cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    if cur_end is not None and cur_start is not None:
        total += cur_end - cur_start
    return total


def med(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Right-aligned columns except the first; floats keep the text given by the caller."""
    body = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h)
              for i, h in enumerate(headers)]
    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i])
                         for i, c in enumerate(cells)).rstrip()
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in body)])


def load_line() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"load average {load:.2f} on {os.cpu_count()} cores"


# --- EchoModel -------------------------------------------------------------------------------

_FILE_RE = re.compile(r'<file path="([^"]*)"[^>]*>\n(.*?)\n</file>', re.S)
_LINE_RE = re.compile(r"^\s*(\d*) ([ +-])(.*)$")
_LIST_RE = re.compile(r"^\[(\d+)\] (\w+) (.+?) \(\+\d+/-\d+\)$", re.M)
INVENTED_QUOTE = "frobnicate_the_widget(quantum_flux=None)  # not in any diff"


@dataclass
class Planted:
    """A comment the echo model filed: where its quote really is (1-based new-side lines), or
    ``None`` lines for the invented quote."""

    path: str
    quote: str
    start_line: int | None
    end_line: int | None


def task_of(body: Mapping[str, Any]) -> str:
    """Which of our calls a request is, from its system prompt (config/templates/*_system.md)."""
    msgs = body.get("messages") or []
    system = str(msgs[0].get("content", "")) if msgs else ""
    for prefix, task in (("You are ocr-hook, a senior engineer", "main"),
                         ("You sort the changed files", "grouping"),
                         ("You are the second reader", "review_filter"),
                         ("You locate code", "relocation")):
        if system.startswith(prefix):
            return task
    return "other"


def added_runs(numbered: str, max_len: int = 3) -> list[list[tuple[int, str]]]:
    """Runs of consecutive non-blank added lines in a ``render_numbered`` diff body."""
    runs: list[list[tuple[int, str]]] = []
    cur: list[tuple[int, str]] = []
    for line in numbered.split("\n") + ["@@"]:
        m = _LINE_RE.match(line) if not line.startswith("@@") else None
        if m and m.group(2) == "+" and m.group(1) and m.group(3).strip():
            cur.append((int(m.group(1)), m.group(3)))
            if len(cur) == max_len:
                runs.append(cur)
                cur = []
            continue
        if cur:
            runs.append(cur)
        cur = []
    return runs


@dataclass
class EchoModel:
    """Scripted answers derived from each request (see module doc). ``planted`` lists every
    comment filed; ``tool_first`` makes each group's first answer a ``file_read`` +
    ``code_search`` pair so tool results appear in the conversation."""

    tool_first: bool = True
    latency_s: float = 0.0
    planted: list[Planted] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, llm: ScriptedLLM) -> ScriptedLLM:
        llm._next = self.answer  # type: ignore[method-assign]
        return llm

    def answer(self, raw: str) -> Reply:
        """The reply to one request body (JSON text). Replies carry no ``usage``, so ocr-hook
        counts tokens itself with tiktoken (spec §13) and the token figures are real."""
        try:
            body = json.loads(raw)
        except ValueError:
            return Reply(openai_text("NONE"))
        task = task_of(body)
        msgs = body.get("messages") or []
        user = str(msgs[1].get("content", "")) if len(msgs) > 1 else ""
        if task == "grouping":
            reply = openai_text(json.dumps(self.groups(user)))
        elif task == "review_filter":
            reply = openai_tool_calls(("approve_all_comments", {}))
        elif task == "relocation":
            reply = openai_text("NONE")
        elif task == "other":  # the compression summary
            reply = openai_text("Summary: the changed lines were read; nothing found yet.")
        else:
            reply = self.main_turn(user, msgs)
        reply.pop("usage", None)
        return Reply(reply, delay_s=self.latency_s)

    @staticmethod
    def groups(user: str) -> list[dict[str, Any]]:
        """Files by top-level folder, at most 10 per group (indices of the [i] list)."""
        by_dir: dict[str, list[int]] = {}
        for m in _LIST_RE.finditer(user):
            path = m.group(3).split(" -> ")[-1]
            by_dir.setdefault(path.split("/")[0] if "/" in path else ".", []).append(
                int(m.group(1)))
        out = []
        for d, idx in by_dir.items():
            for k in range(0, len(idx), 10):
                out.append({"label": f"{d} #{k // 10 + 1}", "files": idx[k : k + 10]})
        return out

    def main_turn(self, user: str, msgs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        files = _FILE_RE.findall(user)
        later_round = "<confirmed_findings>" in user
        turns = sum(1 for m in msgs if m.get("role") == "assistant")
        if later_round or not files:
            return openai_tool_calls(("task_done", {"state": "DONE"}))
        if self.tool_first and turns == 0:
            path = files[0][0]
            return openai_tool_calls(("file_read", {"file_path": path, "end_line": 40}),
                                     ("code_search", {"search_text": "import"}))
        if turns == (1 if self.tool_first else 0):
            comments = []
            with self.lock:
                for path, numbered in files:
                    runs = added_runs(numbered)
                    if not runs:
                        continue
                    run = runs[len(runs) // 2]
                    quote = "\n".join(text.strip() for _, text in run)  # indentation lost
                    self.planted.append(Planted(path, quote, run[0][0], run[-1][0]))
                    comments.append({"path": path, "content": "Check this change.",
                                     "existing_code": quote, "severity": "low",
                                     "category": "other"})
                path = files[0][0]
                self.planted.append(Planted(path, INVENTED_QUOTE, None, None))
                comments.append({"path": path, "content": "Invented quote.",
                                 "existing_code": INVENTED_QUOTE, "severity": "low",
                                 "category": "other"})
            return openai_tool_calls(("code_comment", {"comments": comments}))
        return openai_tool_calls(("task_done", {"state": "DONE"}))


def echo_llm(model: EchoModel) -> ScriptedLLM:
    """A loopback server driven by ``model`` (Nagle off)."""
    return model.attach(fast_llm(ScriptedLLM("openai")))


# --- hostile attacks (bench_hostile.py) ------------------------------------------------------

CONTROL_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")  # all but \t and \n


class RecordingLLM(ScriptedLLM):
    """The tests' loopback model (Nagle off, see :func:`fast_llm`) that also keeps every request
    body as text, ``raw``, in arrival order (``requests[i]`` is ``raw[i]`` decoded)."""

    def __init__(self, protocol: str = "openai") -> None:
        self.raw: list[str] = []
        super().__init__(protocol)
        fast_llm(self)

    def _next(self, raw: str) -> Reply:
        self.raw.append(raw)  # called under self.lock, right after requests.append
        return super()._next(raw)


def request_text(raw: str) -> str:
    """What a model reads of one request body: the raw JSON text and, when it parses, every
    string in it decoded (so a value JSON-escaped on the wire, ``\\/`` or ``\\u2028``, is found
    as the model sees it), one per line."""
    try:
        body = json.loads(raw)
    except ValueError:
        return raw
    out: list[str] = [raw]

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(body)
    return "\n".join(out)


def repo_fingerprint(repo: Path) -> dict[str, str]:
    """SHA-256 digests of what a review must never change, read from the files without running
    git (``git status`` would refresh the index): ``index`` (``.git/index`` bytes), ``refs``
    (``HEAD``, ``packed-refs`` and every file under ``.git/refs``, stash included) and
    ``worktree`` (every path outside ``.git`` with its mode and bytes, symlinks as their
    target). Compare two with ``==``; the keys that differ say what changed."""
    import hashlib

    def digest(items: Iterable[tuple[str, bytes]]) -> str:
        h = hashlib.sha256()
        for name, data in items:
            h.update(name.encode("utf-8", "surrogateescape") + b"\0" + data + b"\0")
        return h.hexdigest()

    gitdir = repo / ".git"

    def read(p: Path) -> bytes:
        return p.read_bytes() if p.is_file() else b"(missing)"

    refs = [("HEAD", read(gitdir / "HEAD")), ("packed-refs", read(gitdir / "packed-refs"))]
    refs += [(str(p.relative_to(gitdir)), p.read_bytes())
             for p in sorted((gitdir / "refs").rglob("*")) if p.is_file()]
    tree: list[tuple[str, bytes]] = []
    for top, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if not (Path(top) == repo and d == ".git"))
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            p = Path(top) / name
            st = p.lstat()
            data = os.readlink(p).encode("utf-8", "surrogateescape") if p.is_symlink() \
                else p.read_bytes()
            tree.append((f"{p.relative_to(repo)}:{st.st_mode:o}", data))
    return {"index": digest([("index", read(gitdir / "index"))]), "refs": digest(refs),
            "worktree": digest(tree)}


class TrickleModel:
    """A loopback "model" that answers every POST with ``reply`` (a complete HTTP/1.1 response
    with Content-Length) one byte every ``interval_s`` seconds, status line and headers
    included, for at most ``cap_s`` seconds, then closes the connection. ``holds`` records,
    per request, the seconds from the request's last byte until the client hung up (or the
    cap): how long one request kept the client waiting."""

    def __init__(self, body: bytes, interval_s: float = 1.0, cap_s: float = 10.0) -> None:
        import select
        import socketserver

        self.holds: list[float] = []
        self.lock = threading.Lock()
        head = (f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\n\r\n").encode()
        reply = head + body
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock = self.request
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head_text, rest = data.split(b"\r\n\r\n", 1)
                m = re.search(rb"(?im)^content-length:\s*(\d+)", head_text)
                need = int(m.group(1)) if m else 0
                while len(rest) < need:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    rest += chunk
                t0 = time.monotonic()
                for i in range(len(reply)):
                    if time.monotonic() - t0 >= cap_s:
                        break
                    try:
                        sock.sendall(reply[i:i + 1])
                    except OSError:
                        break
                    ready, _, _ = select.select([sock], [], [], interval_s)
                    if ready and not sock.recv(1):
                        break  # the client hung up
                with owner.lock:
                    owner.holds.append(time.monotonic() - t0)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def text_table(headers: Sequence[str], rows: Iterable[Sequence[object]], *,
               markdown: bool = False) -> str:
    """Left-aligned columns (``table`` right-aligns numbers), or a Markdown table; cell text
    is used as given (``|`` escaped in Markdown)."""
    body = [[str(c) for c in row] for row in rows]
    if markdown:
        def md(cells: Sequence[str]) -> str:
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
        return "\n".join([md(headers), md(["---"] * len(headers)), *(md(r) for r in body)])
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h)
              for i, h in enumerate(headers)]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(widths[i]) for i, c in enumerate(cells)).rstrip()
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in body)])
