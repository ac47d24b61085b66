"""``git ocr config path|get|set|unset|list`` on a real user file: the file is private (0600
in a 0700 folder), comments and key order survive an edit, bad values and empty values are
refused with one line, a secret is read from stdin and masked unless ``--show-secret``, a
table left empty is removed. Real: files, ``cli.main``; nothing is faked."""

from __future__ import annotations

import io
import stat
from pathlib import Path

import pytest

from ocr_hook.config import layering
from ocr_hook.config.layering import parse_toml
from tests.support.cli import run_cli
from tests.support.home import user_file, write_user_config


def test_config_set_writes_a_private_user_file_and_get_reads_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    path = user_file("config.toml")
    assert run_cli(["config", "path"], {}, capsys) == (0, f"{path}\n", "")
    assert run_cli(["config", "set", "llm.provider", "deepseek"], {}, capsys)[0] == 0
    assert run_cli(["config", "set", "llm.model", "deepseek-v4-flash"], {}, capsys)[0] == 0
    assert run_cli(["config", "set", "review.concurrency", "4"], {}, capsys)[0] == 0
    assert run_cli(["config", "set", "select.exclude", "vendor/**, *.min.js"], {}, capsys)[0] == 0
    assert run_cli(["config", "set", "cache.enabled", "false"], {}, capsys)[0] == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert parse_toml(path.read_text(), "t") == {
        "llm": {"provider": "deepseek", "model": "deepseek-v4-flash"},
        "review": {"concurrency": 4}, "select": {"exclude": ["vendor/**", "*.min.js"]},
        "cache": {"enabled": False}}
    assert run_cli(["config", "get", "llm.model"], {}, capsys) == (0, "deepseek-v4-flash\n", "")
    assert run_cli(["config", "get", "review.concurrency"], {}, capsys) == (0, "4\n", "")
    assert run_cli(["config", "get", "gate.fail_on"], {}, capsys) == (0, "high\n", "")  # default
    assert run_cli(["config", "unset", "llm.model"], {}, capsys)[0] == 0
    assert run_cli(["config", "get", "llm.model"], {}, capsys) == (1, "", "")
    assert not list(path.parent.glob(".*.tmp"))


def test_config_set_keeps_comments_and_refuses_bad_values(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_user_config(
        '# mine\n[llm]\n# which model\nmodel = "a"\n\n[gate]\nmode = "advisory"\n')
    assert run_cli(["config", "set", "llm.model", "b"], {}, capsys)[0] == 0
    assert path.read_text() == ('# mine\n[llm]\n# which model\nmodel = "b"\n\n[gate]\n'
                                'mode = "advisory"\n')
    rc, out, err = run_cli(["config", "set", "gate.mode", "lenient"], {}, capsys)
    assert rc == 2 and out == ""
    assert err.splitlines() == ["ocr-hook: invalid gate.mode = 'lenient' in `git ocr config set"
                                " gate.mode`: must be blocking or advisory"]  # not the file
    rc, _, err = run_cli(["config", "set", "llm.modle", "x"], {}, capsys)
    assert rc == 2 and "unknown configuration key 'llm.modle'; allowed keys: llm.provider" in err
    rc, _, err = run_cli(["config", "set", "review.concurrency", "many"], {}, capsys)
    assert rc == 2 and err == ("ocr-hook: invalid review.concurrency = 'many' in `git ocr config"
                               " set review.concurrency`: must be a whole number from 1 to 64\n")
    assert 'mode = "advisory"' in path.read_text()


def test_config_set_reads_a_secret_from_stdin_and_list_masks_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-abcdefghijklmnopqrstuvwxyz\n"))
    assert run_cli(["config", "set", "llm.api_key", "-"], {}, capsys)[0] == 0
    rc, out, _ = run_cli(["config", "list", "--show-origin"], {}, capsys)
    assert rc == 0
    lines = dict(line.split(" = ", 1) for line in out.splitlines())
    assert lines["llm.api_key"].startswith('"sk-a…wxyz"\t# ')
    assert lines["gate.mode"] == '"blocking"\t# default'
    assert len(lines) == len(layering.all_keys())
    assert "sk-abcdefghijklmnopqrstuvwxyz" not in out


def test_config_get_masks_the_api_key_unless_show_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write_user_config('[llm]\napi_key = "sk-abcdefghijklmnopqrstuvwxyz"\n')
    assert run_cli(["config", "get", "llm.api_key"], {}, capsys) == (0, '"sk-a…wxyz"\n', "")
    assert run_cli(["config", "get", "llm.api_key", "--show-secret"], {}, capsys) == (
        0, "sk-abcdefghijklmnopqrstuvwxyz\n", "")


@pytest.mark.parametrize("args", [["llm.api_key", "-"], ["llm.model", ""], ["llm.model", "  "]])
def test_config_set_refuses_an_empty_value(
        args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:

    monkeypatch.chdir(tmp_path)
    path = write_user_config('[llm]\napi_key = "sk-old-key-0000000000"\nmodel = "m"\n')
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    rc, out, err = run_cli(["config", "set", *args], {}, capsys)
    where = "no value on stdin" if args[1] == "-" else "empty value"
    assert (rc, out) == (2, "")
    assert err == (f"ocr-hook: {where} for {args[0]}; nothing written (to remove the key: git"
                   f" ocr config unset {args[0]})\n")
    assert path.read_text() == '[llm]\napi_key = "sk-old-key-0000000000"\nmodel = "m"\n'


def test_config_set_keeps_comments_and_key_order_of_the_user_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """tomlkit edits the user's file in place: the changed key keeps its position and its
    end-of-line comment, a new key goes after the table's last key, a table value stays inline,
    a new table goes at the end, and every other line is byte-identical."""
    monkeypatch.chdir(tmp_path)
    path = write_user_config('# my ocr-hook settings\n'
                             '[llm]\n'
                             'provider = "deepseek"  # work account\n'
                             '# the cheap one\n'
                             'model = "deepseek-v4-flash"\n'
                             'timeout_s = 90\n'
                             '\n'
                             '[gate]\n'
                             '# never block my commits\n'
                             'mode = "advisory"\n')
    assert run_cli(["config", "set", "llm.provider", "openai"], {}, capsys) == (0, "", "")
    assert run_cli(["config", "set", "llm.extra_headers", '{"X-Team": "core"}'], {}, capsys)[0] == 0
    assert run_cli(["config", "set", "cache.enabled", "false"], {}, capsys)[0] == 0
    assert path.read_text() == ('# my ocr-hook settings\n'
                                '[llm]\n'
                                'provider = "openai"  # work account\n'
                                '# the cheap one\n'
                                'model = "deepseek-v4-flash"\n'
                                'timeout_s = 90\n'
                                'extra_headers = {X-Team = "core"}\n'
                                '\n'
                                '[gate]\n'
                                '# never block my commits\n'
                                'mode = "advisory"\n'
                                '\n'
                                '[cache]\n'
                                'enabled = false\n')
    assert run_cli(["config", "unset", "llm.timeout_s"], {}, capsys)[0] == 0
    assert 'model = "deepseek-v4-flash"\nextra_headers' in path.read_text()


def test_config_unset_removes_a_table_left_empty(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_user_config(
        '# mine\n[gate]\nmode = "advisory"\n\n[llm]\napi_key = "sk-x-00000000"\n'
        '\n[cache]\nenabled = false\n')
    assert run_cli(["config", "unset", "llm.api_key"], {}, capsys)[0] == 0
    assert path.read_text() == '# mine\n[gate]\nmode = "advisory"\n\n[cache]\nenabled = false\n'
    assert run_cli(["config", "unset", "cache.enabled"], {}, capsys)[0] == 0
    assert path.read_text() == '# mine\n[gate]\nmode = "advisory"\n'
    write_user_config('[llm]\n# from the vault\napi_key = "sk-x-00000000"\n')  # comments stay
    assert run_cli(["config", "unset", "llm.api_key"], {}, capsys)[0] == 0
    assert path.read_text() == "[llm]\n# from the vault\n"
