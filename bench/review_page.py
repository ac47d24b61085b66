"""The review page of a 3-file review, rendered and photographed in headless
Chromium: ``bench/results/review_page.html`` and ``bench/results/review_page.png``.

A temporary repository gets a change to three files (Python, JavaScript, Go); the loopback
scripted model files five findings (a blocking SQL injection, an off-by-one, a removed check on
the old side, a style note, and one on a line marked ``ocr-hook: ignore``); ``git ocr review
--format html`` writes the page, and Chromium (behind a loopback proxy that swallows every
request, so nothing leaves the machine) takes the screenshot. Prints the page's size, how many
requests the page made (must be 0) and the render time.

Run: ``.venv/bin/python bench/review_page.py [--out DIR]`` (needs ``chromium``; ``.ci/run``
installs it).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ocr_hook import cli  # noqa: E402
from tests.support.browser import Listener, page_requests, screenshot  # noqa: E402
from tests.support.gitrepo import GitRepo, git_env  # noqa: E402
from tests.support.scripted_llm import ScriptedLLM  # noqa: E402

FILES_OLD = {
    "api/users.py": "import db\n\n\ndef find(name):\n    return db.one('SELECT * FROM users')\n\n\n"
                    "def limit(n):\n    if n < 0:\n        raise ValueError(n)\n    return n\n",
    "web/cart.js": "export function total(items) {\n  return 0;\n}\n",
    "svc/retry.go": "package svc\n\nconst Attempts = 3\n",
}
FILES_NEW = {
    "api/users.py": "import db\n\n\ndef find(name):\n"
                    "    sql = \"SELECT * FROM users WHERE name = '\" + name + \"'\"\n"
                    "    return db.one(sql)\n\n\ndef limit(n):\n    return n\n",
    "web/cart.js": "export function total(items) {\n  let sum = 0;\n"
                   "  for (let i = 0; i <= items.length; i++) {\n    sum += items[i].price;\n  }\n"
                   "  return sum;\n}\n",
    "svc/retry.go": "package svc\n\nimport \"time\"\n\nconst Attempts = 3\n\n"
                    "func Backoff(n int) time.Duration {\n"
                    "\treturn time.Duration(n*n) * 100 * time.Millisecond"
                    " // ocr-hook: ignore quadratic on purpose\n}\n",
}


def comments() -> list[dict[str, str]]:
    def c(path: str, quote: str, content: str, sev: str, cat: str, sugg: str = "") -> dict[str, str]:
        return {"path": path, "existing_code": quote, "content": content, "severity": sev,
                "category": cat, "suggestion_code": sugg}

    return [
        c("api/users.py", "sql = \"SELECT * FROM users WHERE name = '\" + name + \"'\"",
          "User input is concatenated into SQL: an injection. Pass name as a parameter.",
          "critical", "security", "sql = 'SELECT * FROM users WHERE name = ?'"),
        c("api/users.py", "if n < 0:\n    raise ValueError(n)",
          "The negative check was removed: limit(-1) now returns -1.", "medium", "bug"),
        c("web/cart.js", "for (let i = 0; i <= items.length; i++) {",
          "Off by one: the last iteration reads items[items.length], which is undefined.",
          "high", "bug", "for (let i = 0; i < items.length; i++) {"),
        c("web/cart.js", "let sum = 0;", "Prefer items.reduce for a sum.", "low", "style"),
        c("svc/retry.go", "return time.Duration(n*n) * 100 * time.Millisecond",
          "Quadratic backoff grows quickly.", "high", "performance"),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ocr-page-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = git_env(home)
        repo = GitRepo(Path(tmp) / "repo", env)
        repo.commit(dict(FILES_OLD), "init")
        repo.stage(dict(FILES_NEW))
        llm = ScriptedLLM("openai")
        llm.tool_calls(("code_comment", {"comments": comments()}),
                       ("task_done", {"state": "DONE"}))
        page = args.out / "review_page.html"
        args.out.mkdir(parents=True, exist_ok=True)
        old_cwd = Path.cwd()
        os.chdir(repo.path)
        try:
            full_env = {**env, **llm.env(), "XDG_CONFIG_HOME": str(home / ".config"),
                        "OCR_HOOK_REVIEW_FILTER": "false"}
            rc = cli.main(["review", "--format", "html", "--output", str(page)], environ=full_env)
        finally:
            os.chdir(old_cwd)
            llm.close()
    proxy = Listener()
    t0 = time.monotonic()
    try:
        screenshot(page, args.out / "review_page.png", width=1280, height=2000,
                   proxy_port=proxy.port)
    finally:
        proxy.close()
    took = time.monotonic() - t0
    made = page_requests(proxy.requests)
    print("| item | value |\n|---|---|")
    print(f"| review exit code | {rc} |")
    print(f"| page | {page.relative_to(ROOT) if page.is_relative_to(ROOT) else page}"
          f" ({page.stat().st_size} bytes) |")
    print(f"| requests made by the page | {len(made)} |")
    print(f"| Chromium screenshot wall time | {took:.2f} s |")
    return 0 if rc == 1 and not made else 1


if __name__ == "__main__":
    raise SystemExit(main())
