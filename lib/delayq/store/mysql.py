"""The store on MySQL 8 / MariaDB >= 10.6 through PyMySQL."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

import pymysql

from ..config import describe
from .sql import SqlStore

_NO_TABLE = 1146


class MySQLStore(SqlStore):
    dialect = "mysql"
    backend = "MySQL"
    placeholder = "%s"
    driver_errors = (pymysql.err.Error,)
    integrity_error = pymysql.err.IntegrityError

    def __init__(self, url: str, prefix: str):
        super().__init__(prefix, describe(url))
        self._url = url

    def _connect(self) -> Any:
        parts = urlsplit(self._url)
        conn = pymysql.connect(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 3306,
            user=unquote(parts.username or "root"),
            password=unquote(parts.password or ""),
            database=parts.path.lstrip("/") or None,
            charset="utf8mb4",
            autocommit=False,
            connect_timeout=5,
            read_timeout=60,
            write_timeout=60,
        )
        with conn.cursor() as cur:
            # Each statement sees the latest committed rows: what a queue wants, and fewer gap locks.
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            cur.execute("SELECT VERSION()")
            self.returning = "mariadb" in cur.fetchone()[0].lower()
        return conn

    def _begin(self, conn: Any) -> None:
        conn.begin()

    def _explain(self, exc: BaseException) -> str:
        args = getattr(exc, "args", ())
        if args and args[0] == _NO_TABLE:
            return f"{args[1]}; create the tables with bin/migrate.py"
        if len(args) >= 2:
            return f"({args[0]}) {args[1]}"
        return str(exc) or type(exc).__name__
