"""bin/migrate.py: create or upgrade the tables; safe to run again."""

from __future__ import annotations

import time

from .. import cli, config
from ..config import describe
from ..store import open_store

PROG = "migrate.py"


@cli.boundary(PROG)
def main(argv: list[str] | None = None) -> int:
    p = cli.parser(PROG, "Create or upgrade delayq's tables (idempotent).")
    args = p.parse_args(argv)
    settings = config.load()
    store = open_store(settings.database_url, settings.prefix)
    applied = store.migrate(time.time())
    where = describe(settings.database_url)
    text = f"applied migration(s) {', '.join(map(str, applied))} on {where}" if applied else f"schema up to date on {where}"
    cli.emit(args, {"applied": applied, "database": where, "prefix": settings.prefix}, text)
    return 0
