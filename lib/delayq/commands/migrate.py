"""migrate: create or upgrade the tables; safe to run again."""

from __future__ import annotations

import time

from .. import cli
from ..config import describe
from ..store import open_store


def build_parser(prog: str) -> cli.Parser:
    return cli.parser(prog, "Create or upgrade delayq's tables (idempotent).")


def execute(args, settings) -> int:
    store = open_store(settings.database_url, settings.prefix, settings.db_timeout)
    applied = store.migrate(time.time())
    where = describe(settings.database_url)
    on = f"on {where}, prefix {settings.prefix}"
    text = f"applied migration(s) {', '.join(map(str, applied))} {on}" if applied else f"schema up to date {on}"
    cli.emit(args, {"applied": applied, "database": where, "prefix": settings.prefix}, text)
    return 0
