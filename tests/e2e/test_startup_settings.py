"""The settings path imports only what it uses (start-up): loading the configuration
needs neither the endpoint presets nor ``llm.types`` nor ``hashlib``/``base64`` (the
``allow_secrets`` probes are built only when entries are checked), and the built-in data is read
by a plain path, so ``importlib.resources`` (and what it brings) is never imported by a review.
Each check runs in a fresh interpreter, because this test process has long imported everything.

Real: a subprocess interpreter, git, ``cli.main``, the scripted loopback model.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import run_python
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

WATCHED = ("importlib.resources", "hashlib", "base64", "ocr_hook.config.endpoint",
           "ocr_hook.llm.types", "pydantic")

SETTINGS = """\
import json, os, sys
from pathlib import Path
from ocr_hook.config import load as config_load
cfg, from_repo = config_load.load_settings(Path.cwd(), {}, os.environ)
print(json.dumps({"loaded": [m for m in WATCHED if m in sys.modules],
                  "fail_on": cfg.gate.fail_on, "allow": cfg.security.allow_secrets}))
""".replace("WATCHED", repr(WATCHED))

REVIEW = """\
import json, sys
from ocr_hook import cli
rc = cli.main(sys.argv[1:])
sys.stderr.write("\\nLOADED=" + json.dumps([m for m in WATCHED if m in sys.modules]) + "\\n")
""".replace("WATCHED", repr(WATCHED))


def fresh(code: str, argv: list[str], cwd: Path, env: dict[str, str]
          ) -> subprocess.CompletedProcess[str]:
    return run_python(["-c", code, *argv], cwd=cwd, env=env)


def test_loading_settings_imports_no_endpoint_hashing_or_resource_machinery(
    repo: GitRepo,
) -> None:
    repo.commit({".ocr-hook.toml": "[gate]\nfail_on = \"medium\"\n"}, "init")
    p = fresh(SETTINGS, [], repo.path, {"OCR_HOOK_REVIEW_CONCURRENCY": "4"})
    assert json.loads(p.stdout) == {"loaded": [], "fail_on": "medium", "allow": []}, p.stderr


def test_allow_secrets_entries_still_build_their_probes_and_refuse_a_catch_all(
    repo: GitRepo,
) -> None:
    repo.commit({"a.py": "x = 1\n"}, "init")
    p = fresh(SETTINGS, [], repo.path, {"OCR_HOOK_SECURITY_ALLOW_SECRETS": "EXAMPLE-[0-9]+"})
    data = json.loads(p.stdout)
    assert (data["allow"], "hashlib" in data["loaded"]) == (["EXAMPLE-[0-9]+"], True)
    p = fresh(SETTINGS, [], repo.path, {"OCR_HOOK_SECURITY_ALLOW_SECRETS": ".*"})
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.strip().splitlines()[-1].startswith(
        "ocr_hook.errors.ConfigError: invalid security.allow_secrets = ['.*'] in environment"
        " variable OCR_HOOK_SECURITY_ALLOW_SECRETS: '.*' matches arbitrary values")


def test_reviews_read_builtin_data_without_importlib_resources(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    """Nothing to review, a preview and a cache hit never import it; a review that calls the
    model does, through requests (certifi finds its CA bundle with it), not through us."""
    repo.commit({"app.py": "x = 1\n"}, "init")
    p = fresh(REVIEW, ["review", "--format", "json"], repo.path, llm.env())
    assert (p.returncode, json.loads(p.stdout)["files"]) == (0, []), p.stderr
    assert "importlib.resources" not in p.stderr.split("LOADED=")[1]
    repo.stage({"app.py": "x = 2\n"})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    seen = []
    for argv in (["review", "--preview", "--format", "json"],
                 ["review", "--format", "json", "--effort", "low"],
                 ["review", "--format", "json", "--effort", "low"]):  # the last: a cache hit
        p = fresh(REVIEW, argv, repo.path, llm.env())
        loaded = json.loads(p.stderr.split("LOADED=")[1].splitlines()[0])
        assert (p.returncode, json.loads(p.stdout)["files"][0]["path"]) == (0, "app.py")
        seen.append("importlib.resources" in loaded)
    assert (seen, len(llm.requests)) == ([False, True, False], 1)  # third: from the cache
