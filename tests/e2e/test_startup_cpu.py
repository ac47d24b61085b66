"""Review-path CPU: what a 1-file review, a cache miss and a cache hit import and
compile, in a fresh interpreter (this test process has long imported and compiled everything).

- the entry shapes of the cache (``cache_entries``) load only to read a stored entry: not
  without a cache, not on a miss that stores its result;
- the value checks of the secret rules (``secret_values``) load with the first rule match;
- a user tools file's shapes (``tools.tools_file``) load only for a ``tools.file``;
- neither ``uuid`` (which loads ``platform``) nor ``pathspec`` loads on these paths;
- of the 75 secret rules, a clean 1-file change and the review's own prompts compile only
  the rules whose keywords they hold and that need no assignment;
- of the rule map's globs, only the entry whose literal parts are in the path is matched,
  with its shipped regexes (no pathspec spec compiled).

Real: a subprocess interpreter, ``cli.main``, git, HTTP to the scripted loopback model.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import run_python
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

WATCHED = ("ocr_hook.pipeline.cache.entries", "ocr_hook.pipeline.cache.policy", "ocr_hook.secrets.values",
           "ocr_hook.tools.tools_file", "ocr_hook.tools.registry", "ocr_hook.secrets.redaction",
           "uuid", "platform", "pathspec")

PROBE = """\
import json, sys
from ocr_hook import cli
rc = cli.main(sys.argv[1:])
from ocr_hook.change import rules
from ocr_hook.secrets import patterns as secret_rules
report = {{
    "rc": rc,
    "modules": [m for m in {watched!r} if m in sys.modules],
    "secret_rules": sorted({{r.type for r in secret_rules.rules() if r.is_compiled()}})
                    if secret_rules.rules.cache_info().currsize else [],
    "rule_specs": rules._compile.cache_info().currsize,
}}
sys.stderr.write("\\nREPORT=" + json.dumps(report) + "\\n")
"""


def probe(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[dict[str, object], str]:
    """Run ``cli.main(argv)`` in a new interpreter: (its report, stdout)."""
    p = run_python(["-c", PROBE.format(watched=WATCHED), *argv], cwd=cwd, env=env)
    line = next(ln for ln in p.stderr.splitlines() if ln.startswith("REPORT="))
    return json.loads(line[7:]), p.stdout


def test_review_without_cache_loads_no_cache_shapes_and_compiles_few_rules(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"app.py": "def f(x):\n    return x + 1\n"}, "init")
    repo.stage({"app.py": "def f(x):\n    return x - 1\n"})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    report, out = probe(["review", "--format", "json", "--no-cache"], repo.path, llm.env())
    assert (report["rc"], json.loads(out)["status"], len(llm.requests)) == (0, "complete", 1)
    # no uuid (it loads platform) for tool-call ids, no pathspec for the built-in rules
    assert report["modules"] == ["ocr_hook.tools.registry", "ocr_hook.secrets.redaction"]
    # "sk" is in "task": the prompts' only keyword of a rule that needs no assignment (the
    # shape-family rules' keywords are words prose and prompts do not use: "authorization",
    # "api(", "-pass", "password>")
    assert report["secret_rules"] == ["discord-bot-token", "twilio-api-key"]
    assert report["rule_specs"] == 0  # python.md's entry: its shipped regexes, no pathspec


def test_cache_miss_stores_without_the_entry_shapes_and_a_hit_reads_them(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.stage({"app.py": "x = 1\n"})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    report, out = probe(["review", "--format", "json"], repo.path, llm.env())
    assert (report["rc"], json.loads(out)["status"], len(llm.requests)) == (0, "complete", 1)
    assert "ocr_hook.pipeline.cache.entries" not in report["modules"]
    assert "ocr_hook.pipeline.cache.policy" in report["modules"]
    report, out = probe(["review", "--format", "json"], repo.path, llm.env())
    assert (report["rc"], json.loads(out)["summary"]["cache_hits"], len(llm.requests)) == (
        0, 1, 1)
    assert report["modules"] == ["ocr_hook.pipeline.cache.entries", "ocr_hook.pipeline.cache.policy",
                                 "ocr_hook.secrets.redaction"]
    assert report["secret_rules"] == ["discord-bot-token"]  # the hunk, scanned again


def test_a_secret_in_the_change_loads_the_value_checks_and_its_rules(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    value = "Xk9#mP2$" + "vL8@qR4!z"
    repo.stage({"app.py": f'db_password = "{value}"\n'})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    report, out = probe(["review", "--format", "json", "--no-cache"], repo.path, llm.env())
    data = json.loads(out)
    assert (report["rc"], [c["category"] for c in data["comments"]]) == (1, ["security"])
    assert value not in json.dumps(llm.requests)
    assert "ocr_hook.secrets.values" in report["modules"]
    assert {"generic-secret", "password"} <= set(report["secret_rules"])
