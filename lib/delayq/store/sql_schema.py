"""The schema: migrations applied once each, the version check every writing command makes first, and the
database's own clock (mixed into SqlStore, whose transactions it uses)."""

from __future__ import annotations

from typing import Any

from ..errors import SchemaError
from .queries import latest_version, migrations


class SchemaSql:
    run: Any
    tx: Any
    dialect: str
    prefix: str
    tokens: dict[str, str]
    where: str
    backend: str
    integrity_error: Any
    driver_errors: tuple[type[BaseException], ...]
    _missing_table: Any

    def ready(self) -> None:
        """Make sure the tables exist where this store creates them itself (the embedded SQLite); else nothing."""

    def migrate(self, now: float) -> list[int]:
        applied = self.applied_versions()
        done = []
        for version, statements in migrations(self.dialect, self.prefix, self.tokens):
            if version in applied:
                continue
            with self.tx() as cur:
                for statement in statements:
                    cur.execute(statement)
                try:
                    self.run(cur, "record_migration", version=version, now=now)
                except self.integrity_error:
                    continue   # another process applied it at the same moment
            done.append(version)
        return done

    def applied_versions(self) -> set[int]:
        with self.tx() as cur:
            self.run(cur, "create_migrations")
            return {row[0] for row in self.run(cur, "applied_migrations").fetchall()}

    def check_schema(self) -> int:
        """The schema version, proven current (connected, authenticated, migrated); SchemaError otherwise."""
        with self.tx(write=False) as cur:
            try:
                versions = {row[0] for row in self.run(cur, "applied_migrations").fetchall()}
            except self.driver_errors as exc:
                if not self._missing_table(exc):
                    raise
                versions = set()
        need = latest_version(self.dialect)
        have = max(versions, default=0)
        where = f"{self.backend} at {self.where}: delayq's tables (prefix {self.prefix!r})"
        if have == 0:
            raise SchemaError(self.no_tables())
        if have < need:
            raise SchemaError(f"{where} are at schema version {have}, this delayq needs {need}: run `delayq migrate`")
        if have > need:
            raise SchemaError(f"{where} are at schema version {have}, newer than this delayq ({need}): upgrade delayq")
        return have

    def no_tables(self) -> str:
        """What a command run against the wrong database or prefix says (the URL without its password)."""
        return (f"no delayq tables at {self.where} (prefix {self.prefix}): run \"delayq migrate\" to create them, "
                "or set DELAYQ_DATABASE_URL (and DELAYQ_PREFIX) to the database that has them")

    def server_time(self) -> float:
        with self.tx(write=False) as cur:
            return float(self.run(cur, "server_time").fetchone()[0])
