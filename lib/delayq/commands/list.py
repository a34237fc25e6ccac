"""bin/list.py: a table of jobs, newest first."""

from __future__ import annotations

from .. import app, cli, config, jobs
from ..errors import InvalidInput

PROG = "list.py"
COLUMNS = (("id", 8), ("queue", 10), ("status", 10), ("att", 5), ("due_at", 29), ("ext", 20), ("callable", 32))


@cli.boundary(PROG)
def main(argv: list[str] | None = None) -> int:
    p = cli.parser(PROG, "List jobs, newest first.")
    p.add_argument("--status", choices=jobs.STATUSES, help="only jobs in this status")
    p.add_argument("--queue", help="only this queue")
    p.add_argument("--ext-prefix", help="only business keys starting with this, e.g. order:")
    p.add_argument("--limit", type=int, default=50, help="at most this many rows, 1-10000 (default 50)")
    args = p.parse_args(argv)
    if not 1 <= args.limit <= 10_000:
        raise InvalidInput("--limit must be between 1 and 10000")
    if args.queue is not None:
        jobs.check_queue(args.queue)
    rows = app.connect(config.load()).store.list_jobs(args.status, args.queue, args.ext_prefix, args.limit)
    for row in rows:
        row["due_at"], row["finished_at"] = cli.when(row["due_at"]), cli.when(row["finished_at"])
        row["last_error"] = (row["last_error"] or "").split("\n")[0] or None
    cli.emit(args, {"jobs": rows}, table(rows))
    return 0


def table(rows: list[dict]) -> str:
    head = "  ".join(name.ljust(width) for name, width in COLUMNS)
    lines = [head.rstrip(), "  ".join("-" * width for _, width in COLUMNS)]
    for row in rows:
        values = dict(row, att=f"{row['attempts']}/{row['max_attempts']}")
        lines.append("  ".join(_cell(values.get(name), width) for name, width in COLUMNS).rstrip())
    if not rows:
        lines.append("(no jobs)")
    return "\n".join(lines)


def _cell(value: object, width: int) -> str:
    text = "" if value is None else str(value)
    return (text if len(text) <= width else text[: width - 1] + "…").ljust(width)
