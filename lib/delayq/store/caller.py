"""The caller's own connection (enqueue's `connection=`): which objects are accepted, and the DB-API
connection each one stands for.

Accepted, on the database DELAYQ_DATABASE_URL names:
  mysql://   a PyMySQL connection, a mysqlclient (MySQLdb) connection, or a Django connection on either
             (`django.db.connection`, `django.db.connections["alias"]`: the MySQL backend with mysqlclient,
             or with PyMySQL through pymysql.install_as_MySQLdb())
  sqlite://  a sqlite3 connection, or a Django connection on its sqlite3 backend

PyMySQL and mysqlclient both take `%(name)s` parameters and report the server's version the same way, so
the rest of the store treats them alike. A Django connection is unwrapped to the DB-API connection it holds
(opened first if it was not yet): the job's row is then written inside whatever transaction Django has open
on it (`transaction.atomic()`), or committed at once in Django's autocommit mode, like any ORM write.
Driver modules are never imported here: objects are recognised by the module their type comes from.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..errors import InvalidInput

MYSQL_DRIVERS = ("pymysql", "MySQLdb")          # top-level modules of PyMySQL and mysqlclient
DJANGO_VENDORS = {"mysql": "mysql", "sqlite": "sqlite"}   # Django's connection.vendor -> delayq's dialect
EXPECTED = {
    "mysql": "a PyMySQL or mysqlclient (MySQLdb) connection, or Django's django.db.connection on its MySQL backend",
    "sqlite": "a sqlite3 connection, or Django's django.db.connection on its sqlite3 backend",
}


def kind(obj: Any) -> str:
    """What an object is, as an error message names it: module.Class."""
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def dbapi(connection: Any, dialect: str, backend: str) -> Any:
    """The DB-API connection to write on for `connection`, or InvalidInput naming what was expected.

    dialect: "mysql" or "sqlite" (the store's); backend: its name as messages show it (MySQL, SQLite).
    """
    if _is_django(connection):
        return _django_dbapi(connection, dialect, backend)
    if _accepts(connection, dialect):
        return connection
    raise _refused(connection, dialect, backend)


def _accepts(connection: Any, dialect: str) -> bool:
    if dialect == "sqlite":
        return isinstance(connection, sqlite3.Connection)
    top = type(connection).__module__.split(".")[0]
    return top in MYSQL_DRIVERS and hasattr(connection, "cursor") and hasattr(connection, "get_server_info")


def _is_django(obj: Any) -> bool:
    """A Django DatabaseWrapper, or the django.db.connection proxy to one (not a Django cursor)."""
    return (type(obj).__module__.split(".")[0] == "django" and hasattr(obj, "ensure_connection")
            and hasattr(obj, "vendor"))


def _django_dbapi(wrapper: Any, dialect: str, backend: str) -> Any:
    vendor = getattr(wrapper, "vendor", "?")
    if DJANGO_VENDORS.get(vendor) != dialect:
        raise InvalidInput(f"connection= is Django's {vendor!r} connection ({getattr(wrapper, 'alias', '?')!r}), but "
                           f"delayq's tables are in {backend} (DELAYQ_DATABASE_URL): enqueue on the Django database "
                           "that holds them, or use enqueue_on_commit (delayq.integrations.django)", "connection")
    wrapper.ensure_connection()
    raw = wrapper.connection
    if not _accepts(raw, dialect):
        raise _refused(raw, dialect, backend)
    return raw


def narrow_charset(connection: Any, exc: BaseException) -> InvalidInput | None:
    """For MySQL's "Incorrect string value" (1366) on a connection in 3-byte utf8 (Django's default charset), the
    one-line fix; None for any other error."""
    args = getattr(exc, "args", ())
    if not args or args[0] != 1366:
        return None
    name = getattr(connection, "character_set_name", None)
    charset = name() if callable(name) else getattr(connection, "charset", "")
    if charset not in ("utf8", "utf8mb3"):
        return None
    return InvalidInput(f"connection= uses the {charset} character set, which cannot hold the job's text (4-byte "
                        "characters such as emoji): connect with charset utf8mb4 (Django: DATABASES OPTIONS "
                        "{\"charset\": \"utf8mb4\"})", "connection")


def _refused(connection: Any, dialect: str, backend: str) -> InvalidInput:
    return InvalidInput(f"connection= must be an open connection to the {backend} database that DELAYQ_DATABASE_URL "
                        f"names: {EXPECTED[dialect]}; got {kind(connection)}", "connection")
