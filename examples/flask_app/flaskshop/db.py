"""The shop's own database connection, without an ORM: PyMySQL for mysql://, sqlite3 for sqlite:///. One per
request (Flask's g), opened on first use, rolled back if not committed and closed at the request's teardown."""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import unquote, urlsplit

import click
import pymysql
from flask import Flask, current_app, g
from flask.cli import with_appcontext

SCHEMA = {
    "mysql": "CREATE TABLE IF NOT EXISTS shop_orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, total INT NOT NULL, "
             "status VARCHAR(16) NOT NULL DEFAULT 'placed', confirmations INT NOT NULL DEFAULT 0)",
    "sqlite": "CREATE TABLE IF NOT EXISTS shop_orders (id INTEGER PRIMARY KEY AUTOINCREMENT, total INT NOT NULL, "
              "status TEXT NOT NULL DEFAULT 'placed', confirmations INT NOT NULL DEFAULT 0)",
}


def connect(url: str) -> Any:
    """A new connection to `url` with no transaction begun (commit or roll back what you write)."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return sqlite3.connect(url[len("sqlite:///"):], timeout=10)
    return pymysql.connect(host=parts.hostname or "127.0.0.1", port=parts.port or 3306,
                           user=unquote(parts.username or "root"), password=unquote(parts.password or ""),
                           database=parts.path.lstrip("/"), charset="utf8mb4", autocommit=False)


def param(url: str) -> str:
    """The driver's placeholder: %s for PyMySQL, ? for sqlite3."""
    return "?" if url.startswith("sqlite") else "%s"


def get_db() -> Any:
    """This request's connection."""
    if "db" not in g:
        g.db = connect(current_app.config["DATABASE_URL"])
    return g.db


def close_db(exc: BaseException | None = None) -> None:
    conn = g.pop("db", None)
    if conn is not None:
        conn.rollback()           # whatever the view did not commit
        conn.close()


@click.command("init-db")
@with_appcontext
def init_db_command() -> None:
    """Create the shop's table."""
    conn = get_db()
    conn.cursor().execute(SCHEMA["sqlite" if current_app.config["DATABASE_URL"].startswith("sqlite") else "mysql"])
    conn.commit()
    click.echo("shop_orders is ready")


def init_app(app: Flask) -> None:
    app.teardown_appcontext(close_db)
    app.cli.add_command(init_db_command)
