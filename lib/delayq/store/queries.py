"""Named SQL queries and migrations, read from the store's sql/ folder (procrastinate's layout).

One file of queries (store/sql/queries.sql) serves both dialects; sql/<dialect>/queries.sql
overrides only the queries whose SQL truly differs. Migrations: sql/migrations/NNNN_*.sql
are shared, sql/<dialect>/migrations/NNNN_*.sql replaces a version for one dialect.
The files ship inside the package (lib/delayq/store/sql/) and are read with
importlib.resources, so an installed copy finds them wherever it lives.

A block starts with "-- name: NAME", then a one-line "-- description", then the SQL.
Parameters are named (:name); a list value passed for `IN (:ids)` becomes one
placeholder per item. Values are never formatted into SQL: they are always bound.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Any, Mapping

_NAME_RE = re.compile(r"^-- name: (\w+)\s*$", re.M)
_PARAM_RE = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_VERSION_RE = re.compile(r"^(\d{4})_\w+\.sql$")
_INCLUDE_RE = re.compile(r"\{include:(\w+)\}")


def sql_dir():
    """The store's sql/ folder (lib/delayq/store/sql), as an importlib.resources Traversable."""
    return resources.files(__package__) / "sql"


def parse(text: str) -> dict[str, str]:
    """Query text by name from one queries file (comment lines dropped, lines joined)."""
    parts = _NAME_RE.split(text)
    queries = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        lines = [line.strip() for line in body.strip().splitlines() if not line.lstrip().startswith("--")]
        queries[name] = " ".join(line for line in lines if line)
    return queries


TABLES = ("jobs", "attempts", "steps", "migrations", "queues", "workers", "tallies", "audit", "rollups", "schedules",
          "slots", "limits", "limited", "counts")


def tables(prefix: str) -> dict[str, str]:
    """Table names by token ({jobs}, {attempts}, ...) for a prefix."""
    return {name: f"{prefix}_{name}" for name in TABLES}


def load(dialect: str) -> dict[str, str]:
    """The shared queries with the dialect's overrides applied (raw text, tokens not yet filled)."""
    queries = parse((sql_dir() / "queries.sql").read_text(encoding="utf-8"))
    overrides = parse((sql_dir() / dialect / "queries.sql").read_text(encoding="utf-8"))
    unknown = set(overrides) - set(queries)
    if unknown:   # an override of nothing is a typo: the shared file names every query
        raise KeyError(f"sql/{dialect}/queries.sql overrides unknown queries: {', '.join(sorted(unknown))}")
    merged = {**queries, **overrides}
    missing = sorted(name for name, sql in merged.items() if not sql)
    if missing:
        raise KeyError(f"sql/{dialect}/queries.sql must define {', '.join(missing)} (declared without SQL in sql/queries.sql)")
    return merged


class IntList(list):
    """A list of ints bound as one parameter of `IN (:ids)`: the driver renders it as 1, 2, 3 (mysql.py's encoder
    for this type: each item through int(), so nothing but digits reaches the SQL), instead of one placeholder and
    one escaping call an item (500 a claim, twice, and once more an outcome group)."""


class Queries:
    """The named queries of one dialect and prefix, in the driver's parameter style.

    `q("start_jobs", token=t, now=n, lease=l, ids=[1, 2])` returns (sql, params) for cursor.execute.
    """

    def __init__(self, dialect: str, prefix: str, style: str, tokens: Mapping[str, str]):
        self.style = style                      # "pyformat" (PyMySQL: %(name)s) or "named" (sqlite3: :name)
        fill = {**tables(prefix), **tokens}
        self._sql = {name: self._convert(fill_tokens(sql, fill)) for name, sql in load(dialect).items()}
        for name, sql in self._sql.items():     # {include:NAME}: one level, the included text as converted
            self._sql[name] = _INCLUDE_RE.sub(lambda m: self._sql[m.group(1)], sql)
        self._expanded: dict[tuple, str] = {}

    def names(self) -> set[str]:
        return set(self._sql)

    def __call__(self, name: str, /, **params: Any) -> tuple[str, dict[str, Any]]:
        return self._expand(name, self._sql[name], params)

    def compose(self, name: str, parts: list[str], tokens: dict[str, str], /, **params: Any) -> tuple[str, dict]:
        """Query `name` with its {where} made of the named fragments AND-ed (all of them, or "1 = 1")."""
        where = " AND ".join(f"({self._sql[part]})" for part in parts) or "1 = 1"
        sql = fill_tokens(self._sql[name].replace("{where}", where), tokens)
        return self._expand((name, *parts, *tokens.values()), sql, params)

    def _expand(self, key: Any, sql: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if self.style == "pyformat":       # a list of ints stays one parameter: the driver renders it (IntList)
            params = {k: IntList(v) if isinstance(v, list) and v and all(type(i) is int for i in v) else v
                      for k, v in params.items()}
        lists = [(k, len(value)) for k, value in params.items()
                 if isinstance(value, (list, tuple)) and not isinstance(value, IntList)]
        if not lists:
            return sql, params
        cache_key = (key, *lists)
        expanded = self._expanded.get(cache_key)
        if expanded is None:
            for k, count in lists:
                marks = ", ".join(self._mark(f"{k}_{i}") for i in range(count))
                sql = re.sub(re.escape(self._mark(k)) + r"(?!\w)", lambda _: marks, sql)
            if len(self._expanded) > 4096:
                self._expanded.clear()
            self._expanded[cache_key] = expanded = sql
        flat = {k: value for k, value in params.items()
                if not isinstance(value, (list, tuple)) or isinstance(value, IntList)}
        for k, _ in lists:
            flat.update((f"{k}_{i}", item) for i, item in enumerate(params[k]))
        return expanded, flat

    def _mark(self, key: str) -> str:
        return f"%({key})s" if self.style == "pyformat" else f":{key}"

    def _convert(self, sql: str) -> str:
        if self.style != "pyformat":
            return sql
        return _PARAM_RE.sub(lambda m: f"%({m.group(1)})s", sql.replace("%", "%%"))


def fill_tokens(sql: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        sql = sql.replace("{" + key + "}", value)
    return sql


def migrations(dialect: str, prefix: str, tokens: Mapping[str, str]) -> list[tuple[int, list[str]]]:
    """(version, statements) in version order: shared files, each replaced where the dialect has its own."""
    files: dict[int, Any] = {}
    for folder in (sql_dir() / "migrations", sql_dir() / dialect / "migrations"):
        for item in folder.iterdir():
            match = _VERSION_RE.match(item.name)
            if match:
                files[int(match.group(1))] = item
    fill = {**tables(prefix), **tokens}
    found = []
    for version in sorted(files):
        text = files[version].read_text(encoding="utf-8")
        body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
        found.append((version, [fill_tokens(s.strip(), fill) for s in body.split(";") if s.strip()]))
    return found


def latest_version(dialect: str) -> int:
    """The schema version this code needs: the highest migration it ships."""
    return max(version for version, _ in migrations(dialect, "x", {}))
