"""The embedded default: the store in one SQLite file (stdlib sqlite3, WAL mode).

One writer at a time: BEGIN IMMEDIATE takes the write lock at the start of
every transaction, which makes claim-then-start atomic across processes.
"""

from __future__ import annotations

import os
import sqlite3
import time
from typing import Any

from .sql import SqlStore


class SQLiteStore(SqlStore):
    dialect = "sqlite"
    backend = "SQLite"
    placeholder = "?"
    driver_errors = (sqlite3.Error,)
    integrity_error = sqlite3.IntegrityError

    def __init__(self, url: str, prefix: str):
        path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else url[len("sqlite:"):]
        self.path = path or "delayq.db"
        super().__init__(prefix, f"sqlite:///{self.path}")
        self._ready = False

    def _connect(self) -> Any:
        parent = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(parent):
            raise sqlite3.OperationalError(f"directory {parent} does not exist")
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def _begin(self, conn: Any) -> None:
        conn.execute("BEGIN IMMEDIATE")

    @property
    def conn(self) -> Any:
        conn = super().conn
        if not self._ready:
            self._ready = True     # created on first use: no migrate step for the embedded default
            self.migrate(time.time())
        return conn

    def server_time(self) -> float:
        return time.time()
