"""Named SQL queries, read from sql/<dialect>/queries.sql (procrastinate's layout).

A block starts with "-- name: NAME", then a one-line "-- description", then the
SQL. Table names are filled in from the prefix at load time; placeholder lists
({ids}, {queues}) and VALUES groups ({rows}) are expanded per call. Values are
never formatted into SQL: they are always bound parameters.
"""

from __future__ import annotations

import re
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parents[3] / "sql"
_NAME_RE = re.compile(r"^-- name: (\w+)\s*$", re.M)
_ROW_OF = {"insert_jobs_plain": "job_row", "insert_attempts": "attempt_row"}


def parse(text: str) -> dict[str, str]:
    """Query text by name from one queries.sql file."""
    parts = _NAME_RE.split(text)
    queries = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        lines = [line for line in body.strip().splitlines() if not line.startswith("--")]
        queries[name] = " ".join(line.strip() for line in lines if line.strip())
    return queries


def tables(prefix: str) -> dict[str, str]:
    return {"jobs": f"{prefix}_jobs", "attempts": f"{prefix}_attempts", "steps": f"{prefix}_steps",
            "migrations": f"{prefix}_migrations"}


class Queries:
    """The named queries of one dialect with the table names of one prefix."""

    def __init__(self, dialect: str, prefix: str, placeholder: str):
        raw = parse((SQL_DIR / dialect / "queries.sql").read_text())
        names = tables(prefix)
        self._sql = {name: _fill(sql, names) for name, sql in raw.items()}
        self.placeholder = placeholder

    def names(self) -> set[str]:
        return set(self._sql)

    def __call__(self, name: str, ids: int = 0, queues: int = 0, statuses: int = 0, rows: int = 0) -> str:
        sql = self._sql[name]
        for token, count in (("{ids}", ids), ("{queues}", queues), ("{statuses}", statuses)):
            if count:
                sql = sql.replace(token, ", ".join([self.placeholder] * count))
        if rows:
            row = self._sql[_ROW_OF[name]]
            sql = sql.replace("{rows}", ", ".join([row] * rows))
        return sql


def migrations(dialect: str, prefix: str) -> list[tuple[int, list[str]]]:
    """(version, statements) for each file in sql/<dialect>/migrations, in order."""
    found = []
    for path in sorted((SQL_DIR / dialect / "migrations").glob("*.sql")):
        version = int(path.name.split("_", 1)[0])
        body = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("--"))
        statements = [_fill(s.strip(), tables(prefix)) for s in body.split(";") if s.strip()]
        found.append((version, statements))
    return found


def _fill(sql: str, names: dict[str, str]) -> str:
    for key, value in names.items():
        sql = sql.replace("{" + key + "}", value)
    return sql
