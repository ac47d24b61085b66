#!/usr/bin/env python3
"""A loopback OpenAI-compatible "model" whose answers are written by a person or an agent.

``serve`` answers ``POST /v1/chat/completions`` (also ``/chat/completions``) and ``GET
/v1/models`` on 127.0.0.1. Each chat request gets the next sequence number N of its folder and
is saved as:

- ``D/N.request.json``: the request body exactly as received;
- ``D/N.request.md``: the same, readable: model, tool_choice, output-token limit, each tool
  (name, description, parameters one per line), then the conversation (role, content, tool
  calls with pretty-printed arguments, tool results with their tool_call_id).

The server then polls for ``D/N.answer.json`` and replies with a Chat Completions response
built from it. An answer is one JSON object, either::

    {"content": "plain text answer"}
    {"tool_calls": [{"name": "file_read", "arguments": {"path": "a.py"}}], "content": "optional"}

Tool call ids (``call_N_i``) are generated, arguments are sent as JSON strings (as the OpenAI
API does), ``finish_reason`` is ``tool_calls`` or ``stop``. ``usage.prompt_tokens`` is the
project's offline count (``ocr_hook.util.tokens.count_tokens``, o200k table; a bytes/4 estimate when
the package cannot be imported) over every message's content, every tool call's arguments and
every tool definition; ``completion_tokens`` the same over the answer. ocr-hook never asks for
``stream: true``; a request that does gets the same non-streamed JSON reply.
Every exchange appends one line to ``D/log.jsonl`` (sequence number, prompt and completion
tokens, message and tool counts, seconds waited for the answer).

Commands (``python bench/relay_model.py CMD -h`` for the flags):

- ``serve --dir D --port P``: run the server (Ctrl-C stops it);
- ``wait --dir D [--timeout S]``: block until a request in D, or in a direct subfolder of D, has
  no answer; print ``N PATH_OF_N.request.md`` and exit 0. Exit 3 when ``D/done`` exists and
  nothing is pending (the harness writes it when the reviews are over), 4 on timeout;
- ``answer --dir D N FILE|-`` (or ``answer PATH.request.md FILE|-``): check the answer (valid
  JSON object of the shape above, tool names among the request's tools, arguments an object)
  and write ``D/N.answer.json`` atomically; exit 2 with one line when it is not valid;
- ``log --dir D``: per-request prompt/completion tokens and totals, per folder.

Only the standard library is used (plus ``ocr_hook.util.tokens`` read-only when importable).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
POLL_S = 0.2
INVALID_GRACE_S = 2.0  # an unparsable answer file is retried this long (a non-atomic writer)
_REQ_RE = re.compile(r"^(\d+)\.request\.json$")


# --- token counting -----------------------------------------------------------------------

def _counter() -> Callable[[str], int]:
    """``ocr_hook.util.tokens.count_tokens`` (offline tiktoken) or a bytes/4 estimate."""
    try:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        from ocr_hook.util.tokens import count_tokens
    except Exception:  # noqa: BLE001 - the relay also works without the package
        return lambda text: (len(text.encode("utf-8")) + 3) // 4
    return lambda text: count_tokens(text, "trial-model")


def prompt_text(body: dict[str, Any]) -> str:
    """Everything a model reads in a request: message contents, tool-call names and arguments,
    tool definitions (as JSON)."""
    parts: list[str] = []
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        parts.append(_content_text(m.get("content")))
        for c in m.get("tool_calls") or []:
            fn = (c.get("function") or {}) if isinstance(c, dict) else {}
            parts.append(str(fn.get("name") or "") + str(fn.get("arguments") or ""))
    for t in body.get("tools") or []:
        parts.append(json.dumps(t, ensure_ascii=False))
    return "\n".join(p for p in parts if p)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return ""


# --- rendering ----------------------------------------------------------------------------

def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text``."""
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _block(text: str, lang: str = "") -> list[str]:
    f = _fence(text)
    return [f + lang, text.rstrip("\n"), f]


def _schema_lines(schema: Any, indent: str = "") -> list[str]:
    """A JSON schema's properties, one line each: ``- name (type, required): description``;
    nested objects and arrays of objects are indented below their property."""
    if not isinstance(schema, dict):
        return [f"{indent}- {json.dumps(schema)}"]
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return [f"{indent}(no parameters)"] if not indent else []
    required = set(schema.get("required") or [])
    out = []
    for name, p in props.items():
        p = p if isinstance(p, dict) else {}
        typ = p.get("type", "any")
        if isinstance(typ, list):
            typ = "|".join(str(t) for t in typ)
        if typ == "array" and isinstance(p.get("items"), dict):
            typ = f"array of {p['items'].get('type', 'any')}"
        bits = [str(typ)] + (["required"] if name in required else [])
        if "enum" in p:
            bits.append("one of " + ", ".join(json.dumps(v) for v in p["enum"]))
        for key in ("default", "minimum", "maximum"):
            if key in p:
                bits.append(f"{key} {json.dumps(p[key])}")
        desc = " ".join(str(p.get("description") or "").split())
        out.append(f"{indent}- `{name}` ({', '.join(bits)})" + (f": {desc}" if desc else ""))
        if p.get("type") == "object":
            out += _schema_lines(p, indent + "  ")
        elif isinstance(p.get("items"), dict) and p["items"].get("type") == "object":
            out += _schema_lines(p["items"], indent + "  ")
    return out


def render_request(n: int, body: dict[str, Any], prompt_tokens: int, answer_cmd: str) -> str:
    """The request as Markdown for a human or agent reader."""
    limit = [f"{k}: {body[k]}" for k in ("max_completion_tokens", "max_tokens") if k in body]
    lines = [
        f"# Request {n}",
        "",
        f"model: {body.get('model', '?')} | tool_choice: "
        f"{json.dumps(body['tool_choice']) if 'tool_choice' in body else 'not sent (auto)'}"
        f" | {', '.join(limit) or 'no output limit'} | prompt tokens: {prompt_tokens}",
    ]
    extra = {k: v for k, v in body.items() if k not in (
        "model", "messages", "tools", "tool_choice", "max_completion_tokens", "max_tokens")}
    if extra:
        lines.append(f"other fields: {json.dumps(extra, ensure_ascii=False)}")
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    lines += ["", f"## Tools ({len(tools)})" if tools else "## Tools: none offered"]
    for t in tools:
        fn = t.get("function") or {}
        lines += ["", f"### {fn.get('name', '?')}", ""]
        desc = str(fn.get("description") or "").strip()
        if desc:
            lines += [desc, ""]
        lines += _schema_lines(fn.get("parameters"))
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    lines += ["", f"## Conversation ({len(messages)} messages)"]
    for i, m in enumerate(messages, 1):
        role = str(m.get("role", "?"))
        head = f"### [{i}] {role}"
        if role == "tool":
            head += f" (result of {m.get('tool_call_id', '?')})"
        lines += ["", head, ""]
        text = _content_text(m.get("content"))
        if text:
            lines += _block(text)
        for c in m.get("tool_calls") or []:
            fn = (c.get("function") or {}) if isinstance(c, dict) else {}
            raw = fn.get("arguments")
            try:
                args = json.dumps(json.loads(raw) if isinstance(raw, str) else raw,
                                  indent=2, ensure_ascii=False)
            except ValueError:
                args = str(raw)
            lines += ["", f"tool call `{c.get('id', '?')}`: **{fn.get('name', '?')}**", ""]
            lines += _block(args, "json")
    names = ", ".join(str((t.get("function") or {}).get("name")) for t in tools)
    lines += [
        "",
        "## Your answer",
        "",
        "One JSON object: `{\"content\": \"...\"}` or `{\"tool_calls\": [{\"name\": \"...\", "
        "\"arguments\": {...}}], \"content\": \"optional\"}`"
        + (f"; tools: {names}." if names else "; no tools may be called."),
        "",
        f"    {answer_cmd}",
        "",
    ]
    return "\n".join(lines)


# --- answers ------------------------------------------------------------------------------

class AnswerError(ValueError):
    """An answer that does not have the documented shape (message is one line)."""


def check_answer(answer: Any, request: dict[str, Any] | None) -> dict[str, Any]:
    """Validate an answer object against the documented shape and, when the request is given,
    its offered tool names. Returns the normalised answer; raises AnswerError."""
    if not isinstance(answer, dict):
        raise AnswerError("the answer must be a JSON object")
    unknown = set(answer) - {"content", "tool_calls"}
    if unknown:
        raise AnswerError(f"unknown answer field(s): {', '.join(sorted(unknown))}")
    content = answer.get("content")
    if content is not None and not isinstance(content, str):
        raise AnswerError("content must be a string")
    calls = answer.get("tool_calls") or []
    if not isinstance(calls, list):
        raise AnswerError("tool_calls must be a list")
    if not calls and content is None:
        raise AnswerError("give content or tool_calls")
    offered = None
    if request is not None:
        offered = {str((t.get("function") or {}).get("name")) for t in request.get("tools") or []
                   if isinstance(t, dict)}
    out_calls = []
    for i, c in enumerate(calls):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not c["name"]:
            raise AnswerError(f"tool_calls[{i}] needs a name")
        args = c.get("arguments", {})
        if not isinstance(args, dict):
            raise AnswerError(f"tool_calls[{i}].arguments must be a JSON object")
        if offered is not None and c["name"] not in offered:
            raise AnswerError(f"tool {c['name']!r} was not offered in this request "
                              f"(offered: {', '.join(sorted(offered)) or 'none'})")
        out_calls.append({"name": c["name"], "arguments": args})
    result: dict[str, Any] = {"content": content}
    if out_calls:
        result["tool_calls"] = out_calls
    return result


def completion(n: int, answer: dict[str, Any], model: str, prompt_tokens: int,
               completion_tokens: int) -> dict[str, Any]:
    """A Chat Completions response body for ``answer``."""
    calls = [
        {"id": f"call_{n}_{i}", "type": "function",
         "function": {"name": c["name"], "arguments": json.dumps(c["arguments"],
                                                                  ensure_ascii=False)}}
        for i, c in enumerate(answer.get("tool_calls") or [], 1)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
    if calls:
        message["tool_calls"] = calls
    elif message["content"] is None:
        message["content"] = ""
    return {
        "id": f"chatcmpl-relay-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def answer_tokens(answer: dict[str, Any], count: Callable[[str], int]) -> int:
    parts = [answer.get("content") or ""]
    parts += [c["name"] + json.dumps(c["arguments"], ensure_ascii=False)
              for c in answer.get("tool_calls") or []]
    return count("\n".join(p for p in parts if p))


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --- server -------------------------------------------------------------------------------

class Relay:
    """The relay's state: its folder (may be switched between reviews by a harness), the
    sequence counter and the token counter. Thread-safe."""

    def __init__(self, directory: Path, model: str = "relay-model") -> None:
        self._lock = threading.Lock()
        self.model = model
        self.count = _counter()
        self.stopping = threading.Event()
        self.directory = directory
        self._next = 0
        self.set_directory(directory)

    def set_directory(self, directory: Path) -> None:
        """Serve further requests into ``directory`` (created), numbering after its last one."""
        directory.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self.directory = directory
            done = [int(m.group(1)) for p in directory.iterdir()
                    if (m := _REQ_RE.match(p.name))]
            self._next = max(done, default=0) + 1

    def take_number(self) -> tuple[Path, int]:
        with self._lock:
            n = self._next
            self._next += 1
            return self.directory, n

    def exchange(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """Save and render the request, wait for its answer, return the response body (None
        when the relay is stopping)."""
        directory, n = self.take_number()
        prompt_tokens = self.count(prompt_text(body))
        write_atomic(directory / f"{n}.request.json", json.dumps(body, indent=1,
                                                                  ensure_ascii=False))
        cmd = (f"python3 {Path(__file__).resolve()} answer --dir {directory} {n} ANSWER.json"
               "   (ANSWER.json, or - to read stdin)")
        write_atomic(directory / f"{n}.request.md", render_request(n, body, prompt_tokens, cmd))
        t0 = time.monotonic()
        answer = self._wait_answer(directory, n, body)
        if answer is None:
            return None
        out_tokens = answer_tokens(answer, self.count)
        entry = {
            "n": n, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "prompt_tokens": prompt_tokens, "completion_tokens": out_tokens,
            "messages": len(body.get("messages") or []), "tools": len(body.get("tools") or []),
            "tool_calls": [c["name"] for c in answer.get("tool_calls") or []],
            "wait_s": round(time.monotonic() - t0, 1),
        }
        with self._lock, open(directory / "log.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
        return completion(n, answer, str(body.get("model") or self.model), prompt_tokens,
                          out_tokens)

    def _wait_answer(self, directory: Path, n: int,
                     body: dict[str, Any]) -> dict[str, Any] | None:
        path = directory / f"{n}.answer.json"
        bad_since: float | None = None
        while not self.stopping.is_set():
            if path.exists():
                try:
                    return check_answer(json.loads(path.read_text(encoding="utf-8")), body)
                except (ValueError, OSError) as e:
                    now = time.monotonic()
                    bad_since = bad_since or now
                    if now - bad_since >= INVALID_GRACE_S:
                        # set it aside so `wait` shows the request again
                        os.replace(path, directory / f"{n}.answer.invalid.json")
                        sys.stderr.write(f"relay: answer {n} rejected: {e}\n")
                        bad_since = None
            time.sleep(POLL_S)
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [
                {"id": self.server.relay.model, "object": "model", "owned_by": "relay"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        path = self.path.split("?", 1)[0].rstrip("/")
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise ValueError("body must be an object with messages")
        except ValueError as e:
            self._send(400, {"error": {"message": f"bad request: {e}",
                                       "type": "invalid_request_error"}})
            return
        reply = self.server.relay.exchange(body)
        if reply is None:
            self._send(503, {"error": {"message": "relay stopped"}})
            return
        try:
            self._send(200, reply)
        except OSError:  # the client gave up (timeout); the log still has the exchange
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, relay: Relay) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.relay = relay


def start(directory: Path, port: int, model: str = "relay-model") -> tuple[_Server, Relay]:
    """Start a relay server on 127.0.0.1:``port`` (0 = any) in a daemon thread. Stop it with
    ``relay.stopping.set(); server.shutdown(); server.server_close()``. Raises OSError when the
    port is taken."""
    relay = Relay(directory, model)
    server = _Server(port, relay)
    threading.Thread(target=server.serve_forever, name="relay", daemon=True).start()
    return server, relay


# --- wait / answer / log ------------------------------------------------------------------

def pending(directory: Path) -> list[tuple[Path, int]]:
    """Requests without an answer in ``directory`` and its direct subfolders, oldest first
    (by file modification time)."""
    found = []
    for d in [directory, *sorted(p for p in directory.iterdir() if p.is_dir())]:
        for p in d.iterdir():
            m = _REQ_RE.match(p.name)
            if m and not (d / f"{m.group(1)}.answer.json").exists() \
                    and (d / f"{m.group(1)}.request.md").exists():
                found.append((p.stat().st_mtime, d, int(m.group(1))))
    return [(d, n) for _, d, n in sorted(found)]


def cmd_wait(directory: Path, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s if timeout_s > 0 else None
    while True:
        if directory.is_dir():
            todo = pending(directory)
            if todo:
                d, n = todo[0]
                print(n, d / f"{n}.request.md")
                return 0
            if (directory / "done").exists():
                print("done")
                return 3
        if deadline is not None and time.monotonic() >= deadline:
            print("timeout")
            return 4
        time.sleep(POLL_S)


def cmd_answer(target: str, directory: Path | None, source: str) -> int:
    if directory is not None:
        d, n = directory, int(target)
    else:
        m = re.match(r"^(\d+)\.request\.(md|json)$", Path(target).name)
        if not m:
            return _fail(f"{target}: expected N (with --dir) or a path N.request.md")
        d, n = Path(target).parent, int(m.group(1))
    req_path = d / f"{n}.request.json"
    if not req_path.exists():
        return _fail(f"no request {n} in {d}")
    out = d / f"{n}.answer.json"
    if out.exists():
        return _fail(f"request {n} in {d} is already answered")
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        answer = check_answer(json.loads(text), json.loads(req_path.read_text("utf-8")))
    except (OSError, ValueError) as e:
        return _fail(f"answer not written: {e}")
    write_atomic(out, json.dumps(answer, indent=1, ensure_ascii=False))
    print(f"answered {n}: " + (", ".join(c["name"] for c in answer.get("tool_calls") or [])
                               or "text"))
    return 0


def read_log(directory: Path) -> list[dict[str, Any]]:
    """The exchanges in ``directory/log.jsonl`` ([] when there is none)."""
    path = directory / "log.jsonl"
    if not path.exists():
        return []
    return [json.loads(ln) for ln in path.read_text("utf-8").splitlines() if ln.strip()]


def cmd_log(directory: Path) -> int:
    folders = [directory, *sorted(p for p in directory.iterdir() if p.is_dir())]
    for d in folders:
        entries = read_log(d)
        if not entries:
            continue
        print(f"{d}: {len(entries)} requests, prompt tokens "
              f"{sum(e['prompt_tokens'] for e in entries)}, completion tokens "
              f"{sum(e['completion_tokens'] for e in entries)}")
        for e in entries:
            print(f"  #{e['n']:<4} prompt {e['prompt_tokens']:>7}  completion "
                  f"{e['completion_tokens']:>5}  msgs {e['messages']:>3}  waited "
                  f"{e['wait_s']:>7}s  {', '.join(e['tool_calls']) or 'text'}")
    return 0


def _fail(msg: str) -> int:
    sys.stderr.write(f"relay_model: {msg}\n")
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="run the relay server")
    s.add_argument("--dir", required=True, type=Path)
    s.add_argument("--port", type=int, default=8765)
    s.add_argument("--model", default="relay-model", help="model id listed by /v1/models")
    w = sub.add_parser("wait", help="block until a request has no answer; print N and its path")
    w.add_argument("--dir", required=True, type=Path)
    w.add_argument("--timeout", type=float, default=0, help="seconds; 0 = no limit")
    a = sub.add_parser("answer", help="write the answer to request N atomically")
    a.add_argument("--dir", type=Path, help="folder of the request (then REQ is N)")
    a.add_argument("req", metavar="REQ", help="N, or the path of N.request.md")
    a.add_argument("file", metavar="FILE", help="answer JSON file, or - for stdin")
    lg = sub.add_parser("log", help="per-request token counts")
    lg.add_argument("--dir", required=True, type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "serve":
        try:
            server, relay = start(args.dir, args.port, args.model)
        except OSError as e:
            return _fail(f"cannot listen on 127.0.0.1:{args.port}: {e}")
        print(f"relay on http://127.0.0.1:{server.server_address[1]}/v1 -> {args.dir}",
              flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            relay.stopping.set()
            server.shutdown()
            return 0
    if args.cmd == "wait":
        return cmd_wait(args.dir, args.timeout)
    if args.cmd == "answer":
        if args.dir is not None and not args.req.isdigit():
            return _fail("with --dir, REQ must be a number")
        return cmd_answer(args.req, args.dir, args.file)
    if not args.dir.is_dir():
        return _fail(f"{args.dir}: no such folder")
    return cmd_log(args.dir)


if __name__ == "__main__":
    sys.exit(main())
