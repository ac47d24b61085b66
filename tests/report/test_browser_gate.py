"""Where no Chromium is installed, the review page's browser test skips with its reason; under
``OCR_TEST_REQUIRE_CHROMIUM=1`` (``.ci/run`` sets it) it fails instead, so CI always runs it.

Real: the lookup on PATH (an empty directory), pytest's skip and fail outcomes, and the README's
test command run in a fresh interpreter without and with the variable."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import browser
from tests.support.paths import ROOT

NO_CHROMIUM = "no Chromium found: install the system package (`apt-get install -y chromium`," \
              " as .ci/run does)"
HTML_TEST = "tests/report/test_html.py::test_review_page_renders_findings_inline_at_their_lines" \
            "_with_no_request"


def test_no_chromium_skips_with_the_reason_unless_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.skip.Exception) as skipped:
        browser.chromium_or_skip(required=False)
    assert str(skipped.value) == f"{NO_CHROMIUM}; set OCR_TEST_REQUIRE_CHROMIUM=1 to fail instead"
    with pytest.raises(pytest.fail.Exception) as failed:
        browser.chromium_or_skip(required=True)
    assert str(failed.value) == (f"{NO_CHROMIUM} (OCR_TEST_REQUIRE_CHROMIUM is set: this run"
                                 " must have the browser)")
    (tmp_path / "chromium").write_text("#!/bin/sh\n")
    (tmp_path / "chromium").chmod(0o755)
    assert browser.chromium_or_skip(required=True) == str(tmp_path / "chromium")


@pytest.mark.parametrize("required", ["", "1"])
def test_the_browser_test_without_chromium_skips_or_fails_under_the_ci_variable(
    tmp_path: Path, required: str,
) -> None:
    bindir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k != browser.REQUIRE_VARIABLE}
    # git and this interpreter only: no Chromium on PATH
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "git").symlink_to(shutil.which("git") or "git")
    env["PATH"] = f"{bindir}{os.pathsep}{tmp_path / 'bin'}"
    if required:
        env[browser.REQUIRE_VARIABLE] = required
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                        HTML_TEST], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    if any((bindir / n).exists() for n in browser.CHROMIUM_NAMES):
        pytest.skip("a Chromium sits next to this interpreter")
    if required:
        assert p.returncode == 1, p.stdout
        assert "1 failed" in p.stdout and "OCR_TEST_REQUIRE_CHROMIUM is set" in p.stdout
    else:
        assert p.returncode == 0, p.stdout
        reason, summary = p.stdout.splitlines()[-2:]
        where, _, said = reason.partition(": ")
        assert where.startswith("SKIPPED [1] tests/support/browser.py:")
        assert said == f"{NO_CHROMIUM}; set OCR_TEST_REQUIRE_CHROMIUM=1 to fail instead"
        assert summary.startswith("1 skipped in ")


def test_ci_run_requires_chromium_before_the_readme_test_command() -> None:
    """``.ci/run`` exports the variable before it runs the README's test command, so a CI
    machine without Chromium fails instead of skipping the browser tests."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    exported = script.index(f"export {browser.REQUIRE_VARIABLE}=1")
    [test_run] = [i for i, line in enumerate(script) if " -m pytest " in line]
    assert exported < test_run
    assert script[test_run].startswith(".venv/bin/python -m pytest -q -rs")
