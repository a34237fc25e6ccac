"""The embedded default: the store in one SQLite file (stdlib sqlite3, WAL mode).

One writer at a time: BEGIN IMMEDIATE takes the write lock at the start of
every transaction, which makes claim-then-start atomic across processes.
A store opened with create=True (what enqueues: the application's client, `delayq enqueue`, `delayq emit`)
creates the file and its tables on first use: the embedded default needs no migrate step. Any other
(create=False: every command that only reads or acts on jobs already there) never creates the file: run
from the wrong directory, it says that no delayq tables are there instead of showing an empty new database.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from typing import Any, Iterator
from urllib.parse import quote

from ..errors import SchemaError
from .sql import SqlStore


class SQLiteStore(SqlStore):
    dialect = "sqlite"
    backend = "SQLite"
    style = "named"
    driver_errors = (sqlite3.Error,)
    integrity_error = sqlite3.IntegrityError

    def __init__(self, url: str, prefix: str, create: bool = True):
        self.path = url[len("sqlite:///"):] or "delayq.db"
        self.create = create
        self._ready = False
        self._migrating = False
        self._ready_lock = threading.RLock()
        super().__init__(prefix, f"sqlite:///{os.path.abspath(self.path)}")    # which file, wherever we run

    def _tokens(self, prefix: str) -> dict[str, str]:
        return {"table_options": "", "for_update": "", "skip_locked": "", "jobs_ix": f"{prefix}_jobs_",
                "scan_by_id": "NOT INDEXED", "not_by_id_order": "", "by_queue": "", "by_claim": "",
                "by_is_finished": f"INDEXED BY {prefix}_jobs_by_is_finished",
                "on_jobs": ""}

    def _connect(self) -> Any:
        parent = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(parent):
            raise sqlite3.OperationalError(f"directory {parent} does not exist")
        # Pooled: a connection moves between threads, used by one at a time. Without create, mode=rw: a file
        # deleted meanwhile is an error, never a new empty database.
        target, uri = self.path, False
        if not self.create and not self._migrating:
            target, uri = f"file:{quote(os.path.abspath(self.path))}?mode=rw", True
        conn = sqlite3.connect(target, timeout=30, isolation_level=None, check_same_thread=False, uri=uri)
        if not uri:                 # WAL stays set in the file: one that delayq made has it, another is not changed
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
        """Create the tables on first use (create=True); other threads wait until they exist. Without create,
        nothing is created: a file that is not there is a SchemaError saying so."""
        if self._ready:
            return
        with self._ready_lock:
            if self._ready or self._migrating:      # migrate()'s own transactions come back here
                return
            if not self.create:
                if not os.path.exists(self.path):
                    raise SchemaError(self.no_tables())
                self._ready = True                  # tables missing in a file that exists: check_schema says so
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
