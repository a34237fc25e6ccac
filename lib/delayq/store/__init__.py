"""Stores: the durable record of jobs. `open_store` picks one from the database URL."""

from __future__ import annotations

from ..config import DEFAULT_DB_TIMEOUT
from .base import (Cancelled, Changed, ClaimStore, ControlStore, Inserted, JobStore, MaintenanceStore,
                   ReportStore, Step, StepStore, Store)

__all__ = ["Cancelled", "Changed", "ClaimStore", "ControlStore", "Inserted", "JobStore", "MaintenanceStore",
           "ReportStore", "Step", "StepStore", "Store", "open_store"]


def open_store(database_url: str, prefix: str, timeout: float = DEFAULT_DB_TIMEOUT, create: bool = True) -> Store:
    """The store for a URL already checked by config (mysql://... or sqlite:///...); connects lazily.

    timeout: seconds any one wait on a MySQL server may take (DELAYQ_DB_TIMEOUT).
    create: whether the embedded SQLite file and its tables are made on first use (what enqueues); False for
    what only reads or acts on jobs already there: a missing file is then a SchemaError, never a new database.
    A MySQL store never creates its tables (`delayq migrate` does).
    """
    if database_url.startswith("mysql:"):
        from .mysql import MySQLStore

        return MySQLStore(database_url, prefix, timeout)
    from .sqlite import SQLiteStore

    return SQLiteStore(database_url, prefix, create)
