"""Bad input (spec §14.5): hypothesis fuzzes the diff parser, the configuration loader
and tool-argument parsing. Each may fail only the documented way (DiffParseError, ConfigError,
an ``Error:`` tool result); at the CLI every failure is one line with exit code 2, never a
traceback. Examples are bounded (``OCR_HOOK_TEST_EXAMPLES``, default 60) and derandomised so CI
runs are repeatable. Real: git repositories and their diff output, the tool handlers on a real
snapshot, ``cli.main``."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocr_hook.config import layering
from ocr_hook.diff import patch as diff
from ocr_hook.errors import ConfigError, OcrError
from ocr_hook.git import target
from ocr_hook.llm.types import ToolCall, decode_arguments
from ocr_hook.tools.builtin import builtin_handlers
from ocr_hook.tools.builtin.code_comment import code_comment_handler
from ocr_hook.tools.builtin.task_done import parse_task_done
from ocr_hook.tools.registry import build_registry, load_tool_specs, parse_tools_json
from ocr_hook.tools.snapshot import SnapshotView
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.home import write_user_config

EXAMPLES = int(os.environ.get("OCR_HOOK_TEST_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                derandomize="OCR_HOOK_TEST_RANDOM" not in os.environ,  # set it to soak locally
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                max_size=4),
    max_leaves=12,
)


# -- the diff parser ---------------------------------------------------------------------------


@pytest.fixture
def git_output(repo: GitRepo) -> bytes:
    """Real ``git diff --raw --numstat -p -z`` output with a rename, a binary file, a file
    without final newline, CRLF content, a mode change, a symlink and an odd name."""
    repo.commit({"old name.py": "".join(f"line {i}\n" for i in range(30)),
                 "mode.sh": "echo hi\n", "crlf.txt": "a\r\nb\r\n"}, "init")
    repo.git("mv", "old name.py", "new\tname.py")
    repo.write({"new\tname.py": "".join(f"line {i}\n" for i in range(30)).replace(
        "line 7\n", "line seven\n")})
    repo.stage({"new\tname.py": (repo.path / "new\tname.py").read_bytes(),
                "img.bin": b"\x00\x01\x02binary", "tail.py": "no newline", "crlf.txt": "a\r\nc\r\n",
                "é.py": "x = 1\n"})
    os.symlink("tail.py", repo.path / "link")
    repo.git("add", "link")
    repo.git("update-index", "--chmod=+x", "mode.sh")
    t = target.staged_snapshot(repo.path, os.environ)
    args = target.diff_command(t, "--raw", "--numstat", "-p", "-z", "--no-abbrev", "-U3")
    return _git_bytes(repo, args)


def _git_bytes(repo: GitRepo, args: list[str]) -> bytes:
    import subprocess

    return subprocess.run(["git", *args], cwd=repo.path, env=repo.env, capture_output=True,
                          check=True).stdout


def parse_all(out: bytes) -> list[diff.FileDiff]:
    raw, patch = diff.split_raw_and_patch(out)
    return diff.build_file_diffs(diff.parse_raw_numstat_z(raw), patch)


def check_line_numbers(files: list[diff.FileDiff]) -> None:
    """Line numbers of a parsed hunk advance one by one on each side."""
    for f in files:
        for h in f.hunks:
            old, new = h.old_start, h.new_start
            for ln in h.lines:
                if ln.kind != "+":
                    assert ln.old_line == old
                    old += 1
                if ln.kind != "-":
                    assert ln.new_line == new
                    new += 1


def test_real_output_parses(git_output: bytes) -> None:
    files = parse_all(git_output)
    assert sorted(f.path for f in files) == sorted(
        ["new\tname.py", "img.bin", "tail.py", "crlf.txt", "é.py", "link", "mode.sh"])
    check_line_numbers(files)


@FUZZ
@given(data=st.data())
def test_mutated_git_output_parses_or_raises_diff_parse_error(
    git_output: bytes, data: st.DataObject
) -> None:
    out = bytearray(git_output)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["cut", "drop", "insert", "flip", "dup"]))
        i = data.draw(st.integers(0, max(len(out) - 1, 0)))
        if op == "cut":
            del out[i:]
        elif op == "drop":
            del out[i:i + data.draw(st.integers(1, 40))]
        elif op == "insert":
            out[i:i] = data.draw(st.sampled_from(
                [b"\0", b"\n", b"@@ -1,2 +1 @@\n", b"\\ No newline at end of file\n",
                 b"diff --git a/x b/x\n", b"+", b"-", b"R100\0", b":100644 "]))
        elif op == "flip" and out:
            out[i] = data.draw(st.integers(0, 255))
        elif op == "dup":
            out[i:i] = out[i:i + data.draw(st.integers(1, 200))]
    try:
        files = parse_all(bytes(out))
    except diff.DiffParseError as e:
        assert "\n" not in str(e)
        return
    check_line_numbers(files)


@FUZZ
@given(raw=st.binary(max_size=300), patch=st.binary(max_size=300))
def test_arbitrary_bytes_parse_or_raise_diff_parse_error(raw: bytes, patch: bytes) -> None:
    try:
        diff.build_file_diffs(diff.parse_raw_numstat_z(raw), patch)
    except diff.DiffParseError as e:
        assert "\n" not in str(e)


@FUZZ
@given(lines=st.lists(st.tuples(st.sampled_from([" ", "+", "-", "\\"]), st.text(max_size=20)),
                      max_size=12),
       counts=st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 9),
                        st.integers(0, 9)))
def test_random_hunks_parse_or_raise_diff_parse_error(
    lines: list[tuple[str, str]], counts: tuple[int, int, int, int]
) -> None:
    section = [b"diff --git a/f b/f", b"--- a/f", b"+++ b/f",
               f"@@ -{counts[0]},{counts[1]} +{counts[2]},{counts[3]} @@".encode()]
    section += [(k + t.replace("\n", " ")).encode("utf-8", "surrogatepass") for k, t in lines]
    try:
        hunks, _, _ = diff.parse_hunks(section)
    except diff.DiffParseError as e:
        assert "\n" not in str(e)
        return
    for h in hunks:
        assert sum(ln.kind != "+" for ln in h.lines) == h.old_count
        assert sum(ln.kind != "-" for ln in h.lines) == h.new_count


# -- the configuration loader ----------------------------------------------------------------


@FUZZ
@given(text=st.text(max_size=200))
def test_toml_text_parses_or_raises_one_line_config_error(text: str) -> None:
    try:
        data = layering.parse_toml(text, "fuzz.toml")
    except ConfigError as e:
        assert "\n" not in str(e) and str(e).startswith("fuzz.toml: invalid TOML")
        return
    try:
        layering.build_config([layering.Layer("fuzz.toml", data)])
    except ConfigError as e:
        assert "\n" not in str(e)


keys = st.sampled_from([*layering.all_keys(), "llm.nope", "review", "x.y", "gate.mode.z"])


@FUZZ
@given(items=st.lists(st.tuples(keys, json_values), max_size=6))
def test_any_layer_builds_or_raises_one_line_config_error(items: list[tuple[str, Any]]) -> None:
    data: dict[str, Any] = {}
    for key, value in items:
        section, _, rest = key.partition(".")
        if not rest:
            data[section] = value
        elif isinstance(data.get(section), dict) or section not in data:
            data.setdefault(section, {})[rest] = value
    try:
        cfg = layering.build_config([layering.Layer("fuzz.toml", data)])
    except ConfigError as e:
        assert "\n" not in str(e) and "fuzz.toml" in str(e) or "configuration" in str(e)
        return
    assert isinstance(cfg, layering.Config)


env_names = st.sampled_from(
    [f"OCR_HOOK_{k.replace('.', '_').upper()}" for k in layering.all_keys()]
    + [f"OCR_HOOK_{k.upper()}" for k in layering.FLAG_KEYS]
    + ["OCR_LLM_URL", "OCR_LLM_MODEL", "OCR_LLM_PROTOCOL", "OCR_HOOK_", "OCR_HOOK_LLM_"])


@FUZZ
@given(env=st.dictionaries(env_names, st.text(max_size=30), max_size=5))
def test_environment_layer_builds_or_raises_one_line_config_error(env: dict[str, str]) -> None:
    try:
        cfg = layering.build_config([layering.env_layer(env)])
    except ConfigError as e:
        assert "\n" not in str(e)
        return
    assert isinstance(cfg, layering.Config)


@FUZZ
@given(key=keys, text=st.text(max_size=30))
def test_config_set_values_parse_or_raise_one_line_config_error(key: str, text: str) -> None:
    try:
        layering.parse_value(key, text)
    except ConfigError as e:
        assert "\n" not in str(e)


@pytest.fixture
def cli_repo(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"app.py": "x = 1\n"})
    monkeypatch.chdir(repo.path)
    return repo


toml_lines = st.lists(
    st.one_of(
        st.builds(lambda k, v: f"{k} = {v}", st.sampled_from(
            ["llm.timeout_s", "review.concurrency", "gate.mode", "gate.fail_on", "select.exclude",
             "cache.max_mb", "review.effort", "llm.extra_headers", "mcp.servers", "x", "llm"]),
            st.sampled_from(['"a"', "1", "-5", "[1, 2]", '["*.py"]', "{}", "true", "1e999",
                             '"blocking"', "{ a = 1 }", "[", '"\\u0000"'])),
        st.sampled_from(["[llm]", "[gate]", "[nope]", "[[llm]]", "mode = 3", "=", "[gate.x]"]),
        st.text(max_size=15),
    ),
    max_size=5,
)


@FUZZ
@given(lines=toml_lines, env=st.dictionaries(env_names, st.text(max_size=12), max_size=2))
def test_cli_reports_any_bad_configuration_in_one_line_with_exit_2(
    cli_repo: GitRepo, capsys: pytest.CaptureFixture[str], lines: list[str],
    env: dict[str, str],
) -> None:
    write_user_config("\n".join(lines) + "\n")
    safe_env = {k: v for k, v in env.items() if "\0" not in v}
    rc, out, err = run_cli(["review", "--preview", "--format", "json"], safe_env, capsys)
    assert "Traceback" not in err
    if rc == 0:
        assert json.loads(out)["files"][0]["path"] == "app.py"
    else:
        assert rc == 2, err
        assert out == ""
        assert len(err.splitlines()) == 1 and err.startswith("ocr-hook: "), err


# -- tool arguments ------------------------------------------------------------------------------


@pytest.fixture
def registry(repo: GitRepo) -> Any:
    repo.commit({"README.md": "hello\n", "src/util.py": "def helper():\n    return 1\n"}, "init")
    repo.stage({"app.py": "a = 1\nb = 2\n", ".env": "X=1\n"})
    t = target.staged_snapshot(repo.path, os.environ)
    view = SnapshotView(repo.path, t.head, target.load_diff(repo.path, t))
    return build_registry(parse_tools_json(), builtin_handlers(view), strict=True)


# each built-in tool's argument names, from the specs the model sees (config/tools.json), and
# one no spec declares (models add keys of their own, e.g. "thinking")
TOOL_KEYS = {name: [*spec.parameters.get("properties", {}), "thinking"]
             for name, (spec, _plan, _main) in load_tool_specs().items()}
arg_values = st.one_of(
    json_values,
    st.sampled_from(["app.py", "../etc/passwd", "/etc/passwd", ".env", "src", "", "   ", "-e",
                     "--output=/tmp/x", ":(exclude)*", "a\0b", "(", "[", "*", "1", "-1",
                     "99999999999999999999", '[{"path": "app.py"}]', "C:/x", "src/../app.py"]),
    st.lists(st.sampled_from(["app.py", "..", "/x", ":!app.py", "", "src/util.py"]), max_size=3),
    st.lists(st.dictionaries(st.sampled_from(
        ["path", "content", "existing_code", "suggestion_code", "severity", "category",
         "line"]), json_values, max_size=7), max_size=2),
)


@FUZZ
@given(data=st.data())
def test_tool_handlers_answer_any_arguments_with_a_result(
    registry: Any, data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from(sorted(TOOL_KEYS)))
    args = data.draw(st.dictionaries(st.sampled_from([*TOOL_KEYS[name], "extra"]), arg_values,
                                     max_size=4))
    raw = json.dumps(args)
    value, err = decode_arguments(raw)
    call = ToolCall("c1", name, raw, value, err)
    sink: list[Any] = []
    local = {"code_comment": code_comment_handler(sink.extend, "g")}
    if name == "task_done":
        state, text = parse_task_done(args)
        assert state in (None, "DONE", "FAILED") and text
        return
    result = registry.dispatch(call, (), local)  # strict registry: a handler crash fails here
    assert isinstance(result.text, str) and result.text
    if result.is_error:
        assert result.text.startswith("Error")
    for c in sink:
        assert c.category in ("bug", "security", "performance", "maintainability", "test",
                              "style", "documentation", "other")


@FUZZ
@given(raw=st.one_of(st.text(max_size=60), json_values, st.builds(json.dumps, json_values)))
def test_argument_decoding_never_coerces(raw: Any) -> None:
    value, err = decode_arguments(raw)
    if err is None:
        assert isinstance(value, dict)
    else:
        assert isinstance(err, str) and err and "\n" not in err


@FUZZ
@given(text=st.text(max_size=200), name=st.sampled_from(sorted(TOOL_KEYS)))
def test_tool_calls_written_as_text_decode_or_carry_an_error(text: str, name: str) -> None:
    from ocr_hook.agent.loop import text_tool_calls

    for content in (text, f"<function={name}>{text}</function>",
                    json.dumps({"name": name, "arguments": text}),
                    f"<tool_call>{{\"name\": \"{name}\", \"arguments\": {text}}}</tool_call>"):
        for call in text_tool_calls(content, set(TOOL_KEYS)):
            assert call.name in TOOL_KEYS
            assert isinstance(call.arguments, dict) or call.parse_error


def test_cli_errors_are_one_line_exit_2_for_bad_flags_and_refs(
    cli_repo: GitRepo, capsys: pytest.CaptureFixture[str],
) -> None:
    for argv in (["review", "--commit=-x"], ["review", "--commit", "no-such-ref"],
                 ["review", "--from", "main"], ["review", "--rule", "/nonexistent/rule.json"],
                 ["review", "--from", "main", "--to=-x"]):
        rc, out, err = run_cli(argv, {}, capsys)
        assert (rc, out) == (2, ""), (argv, err)
        assert len(err.splitlines()) == 1 and err.startswith("ocr-hook: "), (argv, err)
    for argv in (["review", "--effort", "max"], ["review", "--timeout", "abc"],
                 ["review", "--concurrency", "x"]):  # argparse: usage, then one error line
        rc, out, err = run_cli(argv, {}, capsys)
        assert (rc, out) == (2, ""), (argv, err)
        assert "Traceback" not in err and err.splitlines()[-1].startswith("git ocr: error: ")
    rc, out, err = run_cli(["review", "--concurrency", "0"], {}, capsys)
    assert (rc, out) == (2, "") and len(err.splitlines()) == 1, err


def test_ocr_error_is_the_only_failure_of_the_parser_boundary() -> None:
    assert issubclass(diff.DiffParseError, OcrError) and issubclass(ConfigError, OcrError)
