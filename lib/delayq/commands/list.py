"""list: a table of jobs, newest first, by the same filters as retry, cancel and purge; keyset pages (--before)."""

from __future__ import annotations

from .. import app, cli, words
from ..config import describe
from ..errors import InvalidInput
from ..search import MAX_PAGE
from . import _filters

COLUMNS = (("id", 8), ("queue", 10), ("status", 10), ("att", 5), ("due_at", 29), ("ext", 20), ("callable", 32))


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "List jobs, newest first.")
    _filters.add_filter_flags(p)
    p.add_argument("--limit", type=int, default=50, help=f"at most this many rows, 1-{MAX_PAGE} (default 50)")
    p.add_argument("--before", type=int, metavar="ID", help="the next page: ids below this one (the last id shown)")
    return p


def execute(args, settings) -> int:
    if not 1 <= args.limit <= MAX_PAGE:
        raise InvalidInput(f"--limit must be between 1 and {MAX_PAGE}")
    manager = app.open_reader(settings)
    f = _filters.job_filter(args, manager.clock.now())
    rows = manager.reports.search(f, before=args.before, limit=args.limit)
    paused = manager.control.paused_queues()
    for row in rows:
        row["due_at"], row["finished_at"] = cli.when(row["due_at"]), cli.when(row["finished_at"])
        row["created_at"] = cli.when(row["created_at"])
        row["status"] = words.shown(row["status"])
        row["last_error"] = str(row["last_error"] or "").split("\n")[0] or None
    shown = {row["queue"] for row in rows} | set(f.queues)
    held = {queue: {"since": cli.when(at), "reason": reason} for queue, (at, reason) in paused.items() if queue in shown}
    more = rows[-1]["id"] if len(rows) == args.limit else None
    where = describe(settings.database_url)
    cli.emit(args, {"jobs": rows, "paused": held, "next_before": more, "database": where, "prefix": settings.prefix},
             table(rows, held, more, f"{where}, prefix {settings.prefix}"))
    return 0


def table(rows: list[dict], paused: dict[str, dict], more: int | None, where: str = "") -> str:
    head = "  ".join(name.ljust(width) for name, width in COLUMNS)
    lines = [head.rstrip(), "  ".join("-" * width for _, width in COLUMNS)]
    for row in rows:
        values = dict(row, att=f"{row['attempts']}/{row['max_attempts']}")
        lines.append("  ".join(_cell(values.get(name), width) for name, width in COLUMNS).rstrip())
    if not rows:
        lines.append(f"(no jobs in {where})" if where else "(no jobs)")
    for queue, info in sorted(paused.items()):
        lines.append(f"queue {queue} is paused since {info['since']}" + (f": {info['reason']}" if info["reason"] else "")
                     + f" (delayq resume {queue})")
    if more is not None:
        lines.append(f"more: --before {more}")
    return "\n".join(lines)


def _cell(value: object, width: int) -> str:
    text = "" if value is None else str(value)
    return (text if len(text) <= width else text[: width - 1] + "…").ljust(width)
