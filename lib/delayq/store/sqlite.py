"""The embedded default: the store in one SQLite file (stdlib sqlite3, WAL mode).

One writer at a time: BEGIN IMMEDIATE takes the write lock at the start of
every transaction, which makes claim-then-start atomic across processes.
The tables are created on first use: the embedded default needs no migrate step.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from typing import Any, Iterator

from .sql import SqlStore


class SQLiteStore(SqlStore):
    dialect = "sqlite"
    backend = "SQLite"
    style = "named"
    driver_errors = (sqlite3.Error,)
    integrity_error = sqlite3.IntegrityError

    def __init__(self, url: str, prefix: str):
        self.path = url[len("sqlite:///"):] or "delayq.db"
        self._ready = False
        self._migrating = False
        self._ready_lock = threading.RLock()
        super().__init__(prefix, f"sqlite:///{self.path}")

    def _tokens(self, prefix: str) -> dict[str, str]:
        return {"table_options": "", "for_update": "", "skip_locked": "", "jobs_ix": f"{prefix}_jobs_",
                "scan_by_id": "NOT INDEXED", "on_jobs": ""}

    def _connect(self) -> Any:
        parent = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(parent):
            raise sqlite3.OperationalError(f"directory {parent} does not exist")
        # Pooled: a connection moves between threads, used by one at a time.
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def _begin(self, conn: Any, write: bool) -> None:
        # A writer takes the one write lock up front (claim-then-start is atomic across processes);
        # a reader begins deferred and, in WAL mode, never waits for a writer.
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def _missing_table(self, exc: BaseException) -> bool:
        return "no such table" in str(exc)

    def tx(self, write: bool = True) -> Iterator[Any]:
        self.ready()
        return super().tx(write)

    def ready(self) -> None:
        """Create the tables on first use; other threads wait until they exist."""
        if self._ready:
            return
        with self._ready_lock:
            if self._ready or self._migrating:      # migrate()'s own transactions come back here
                return
            self._migrating = True
            try:
                self.migrate(time.time())
                self._ready = True
            finally:
                self._migrating = False

    def migrate(self, now: float) -> list[int]:
        """The migrations this call applied: its own reads do not create the tables first (ready() would, and
        `delayq migrate` on a new file would then say "schema up to date" while it created them)."""
        with self._ready_lock:
            was, self._migrating = self._migrating, True
            try:
                done = super().migrate(now)
            finally:
                self._migrating = was
            self._ready = True
            return done

    def server_time(self) -> float:
        return time.time()
