"""The since-last state file (spec §12.3): a version-1 entry (a bare session id: every finding
of that session is open) survives a write made for another chain."""

from __future__ import annotations

import json
from pathlib import Path

from ocr_hook.pipeline.since_last import Entry, _write_state, read_state, state_path


def test_a_version_1_entry_survives_a_write_for_another_chain(tmp_path: Path) -> None:
    state_path(tmp_path).parent.mkdir(parents=True)
    state_path(tmp_path).write_text(json.dumps(
        {"version": 1, "blocked": {"staged refs/heads/a": "20261203-100000-aaaaaa"}}))
    table = read_state(tmp_path)
    assert table == {"staged refs/heads/a": Entry("20261203-100000-aaaaaa", None)}
    table["staged refs/heads/b"] = Entry("20261203-110000-bbbbbb",
                                         (("20261203-110000-bbbbbb", "0123456789ab"),))
    _write_state(tmp_path, table)
    assert read_state(tmp_path) == {
        "staged refs/heads/a": Entry("20261203-100000-aaaaaa", None),
        "staged refs/heads/b": Entry("20261203-110000-bbbbbb",
                                     (("20261203-110000-bbbbbb", "0123456789ab"),))}
