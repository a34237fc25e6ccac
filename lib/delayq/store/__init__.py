"""Stores: the durable record of jobs. `open_store` picks one from the database URL."""

from __future__ import annotations

from .base import Cancelled, Inserted, Store

__all__ = ["Cancelled", "Inserted", "Store", "open_store"]


def open_store(database_url: str, prefix: str) -> Store:
    if database_url.startswith("mysql:"):
        from .mysql import MySQLStore

        return MySQLStore(database_url, prefix)
    from .sqlite import SQLiteStore

    return SQLiteStore(database_url, prefix)
