"""A binary-search attack on redacted values, replayed through a real review: a hostile model rebuilds a value by
binary search with ``code_search`` Perl-regexp probes (``GH_TOKEN = "ghp_.{7}[a-m]``), one
probe per character position in each reply, six replies per value. Against a plain value
(``BUILD_ID``, not a secret) the same model rebuilds all 36 characters exactly, so the attack
works; against a GitHub token in the same unchanged file every one of the 216 answers is the
same, so it rebuilds nothing, and no request ever holds eight characters of the token.

Real: a git repository, ``git ocr review`` (``cli.main``), HTTP to a loopback model server, git
grep on the snapshot. Fake: the model (its probes depend on the answers it read), the token
(never issued).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from ocr_hook.tools.builtin.code_search import PERL_NOTE
from tests.support import secret_corpus as corpus
from tests.support.cli import run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import Reply, ScriptedLLM, openai_tool_calls

ALNUM = corpus.ALNUM  # sorted: 62 characters, six halvings
TOKEN = corpus.GH_CLASSIC
_RNG = random.Random(26)
BUILD = "bld_" + "".join(_RNG.choice(ALNUM) for _ in range(36))
TARGETS = (("GH_TOKEN", TOKEN), ("BUILD_ID", BUILD))


class Attacker(ScriptedLLM):
    """A model that answers every main-loop request with the next round of probes: for each
    of the 36 positions of the current target, ``<NAME> = "<prefix>.{i}[<lower half>]`` with
    ``use_perl_regexp``; a result naming the line as a match keeps the lower half, any other
    the upper one. After six rounds (36 probes each, so 216 per target) a target is rebuilt;
    after both, ``task_done``."""

    def __init__(self) -> None:
        super().__init__("openai")
        self.target = 0
        self.ranges = [(0, len(ALNUM))] * 36
        self.pending: dict[str, tuple[int, int]] = {}  # call id -> (position, middle)
        self.answers: dict[str, list[str]] = {name: [] for name, _ in TARGETS}
        self.rebuilt: dict[str, str] = {}

    def _next(self, raw: str) -> Reply:
        for message in json.loads(raw).get("messages", []):
            if message.get("role") == "tool" and message.get("tool_call_id") in self.pending:
                self._read(message["tool_call_id"], message["content"])
        if all(hi - lo == 1 for lo, hi in self.ranges) and self.target < len(TARGETS):
            name, value = TARGETS[self.target]
            self.rebuilt[name] = value[:4] + "".join(ALNUM[lo] for lo, _ in self.ranges)
            self.target += 1
            self.ranges = [(0, len(ALNUM))] * 36
        if self.target == len(TARGETS):
            return Reply(openai_tool_calls(("task_done", {"state": "DONE"})))
        return Reply(self._probes())

    def _read(self, call_id: str, answer: str) -> None:
        i, mid = self.pending.pop(call_id)
        name = TARGETS[self.target][0]
        self.answers[name].append(answer)
        lo, hi = self.ranges[i]
        if hi - lo > 1:
            self.ranges[i] = (lo, mid) if f"|{name} = " in answer else (mid, hi)

    def _probes(self) -> dict[str, Any]:
        name, value = TARGETS[self.target]
        calls = []
        for i, (lo, hi) in enumerate(self.ranges):
            mid = max(lo + 1, (lo + hi) // 2)  # a position found already is probed again
            calls.append(("code_search", {
                "search_text": f'{name} = "{value[:4]}.{{{i}}}[{ALNUM[lo:mid]}]',
                "use_perl_regexp": True, "case_sensitive": True}))
        body = openai_tool_calls(*calls)
        for i, (call, (lo, hi)) in enumerate(zip(body["choices"][0]["message"]["tool_calls"],
                                                 self.ranges, strict=True)):
            call["id"] = f"probe_{self.target}_{i}_{lo}_{hi}"
            self.pending[call["id"]] = (i, max(lo + 1, (lo + hi) // 2))
        return body


@pytest.fixture
def attacker() -> Any:
    server = Attacker()
    yield server
    server.close()


def test_binary_search_probes_rebuild_a_plain_value_but_nothing_of_a_redacted_token(
    repo: GitRepo, attacker: Attacker, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"config/deploy.py": "import os\n\n"
                 f'GH_TOKEN = "{TOKEN}"\nBUILD_ID = "{BUILD}"\n', "app.py": "x = 0\n"}, "init")
    repo.stage({"app.py": "x = 1\n"})
    before = repo.state()
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json", "--effort", "low", "--no-filter"],
                             attacker.env(), capsys)
    assert rc == 0, err
    assert data["verdict"] == "pass"
    assert len(attacker.requests) == 13  # 6 rounds per value, then task_done
    assert attacker.rebuilt["BUILD_ID"] == BUILD  # the attack works on what is shown
    assert len(attacker.answers["GH_TOKEN"]) == 216
    assert set(attacker.answers["GH_TOKEN"]) == {f"No matches found\n{PERL_NOTE}"}
    assert attacker.rebuilt["GH_TOKEN"] == "ghp_" + ALNUM[-1] * 36  # what "no" gives
    sent = json.dumps(attacker.requests)
    assert [TOKEN[j:j + 8] for j in range(4, len(TOKEN) - 7) if TOKEN[j:j + 8] in sent] == []
    assert repo.state() == before
