"""Sample sources and model comments that tests of several packages share, and
:func:`staged`, which stages a change and reads its snapshot as a review would.

- ``APP`` and ``GUARD``: a small Python module and the same module with a guard added inside
  its loop (the anchoring, comment-pool, review-filter and contract tests quote its lines);
- ``APP_PY``, ``SQL_LINE`` and :func:`sql_comment`: a module that builds SQL from user input,
  its line 12, and the critical ``code_comment`` the scripted model files on it.
"""

from __future__ import annotations

from collections.abc import Callable

from ocr_hook.diff.model import FileDiff
from ocr_hook.git import process, target
from tests.support.gitrepo import GitRepo

APP = """\
import os


def load(path):
    with open(path) as fh:
        data = fh.read()
    return data


def total(items):
    result = 0
    for item in items:
        result += item.price
    return result


def name_of(user):
    return user.name
"""

GUARD = APP.replace(
    "    for item in items:\n",
    "    for item in items:\n"
    "        if item.price < 0:\n"
    '            raise ValueError("negative price")\n',
)

APP_PY = """\
import sqlite3


def connect(path):
    return sqlite3.connect(path)


def find_user(conn, name):
    \"\"\"Look a user up by name.\"\"\"
    cursor = conn.cursor()
    # build the query
    query = "SELECT id, email FROM users WHERE name = '" + name + "'"
    cursor.execute(query)
    return cursor.fetchone()
"""
SQL_LINE = """query = "SELECT id, email FROM users WHERE name = '" + name + "'\""""


def sql_comment(path: str = "app.py", quote: str = "        " + SQL_LINE) -> dict:
    return {"comments": [{
        "path": path,
        "content": "User input is concatenated into SQL: injection. Use a parameterised query.",
        "existing_code": quote,
        "suggestion_code": 'cursor.execute("SELECT id, email FROM users WHERE name = ?", (name,))',
        "severity": "critical",
        "category": "security",
    }]}


def staged(repo: GitRepo, old: dict[str, str], new: dict[str, str | None]
           ) -> tuple[dict[str, FileDiff], Callable[[str], list[str] | None], list[str]]:
    """Commit ``old``, stage ``new`` (None deletes); return the snapshot's diffs by path (new
    and old), a reader of new-file lines, and the reviewable paths."""
    repo.commit(old, "old")
    for path, text in new.items():
        if text is None:
            repo.git("rm", "-q", "--", path)
        else:
            repo.stage({path: text})
    t = target.staged_snapshot(repo.path, repo.env)
    files = target.load_diff(repo.path, t)
    by_path: dict[str, FileDiff] = {}
    for f in files:
        by_path.setdefault(f.new_path, f)
        by_path.setdefault(f.old_path, f)

    def lines(path: str) -> list[str] | None:
        data = target.read_blob(repo.path, t.head, by_path[path].new_path)
        return None if data is None else process.decode_text(data).split("\n")

    return by_path, lines, [f.path for f in files if f.status != "deleted"]
