"""bin/retry.py: a person who fixed the cause re-runs a failed job or step, manual steps included."""

from __future__ import annotations

from .. import app, cli, config, jobs

PROG = "retry.py"


@cli.boundary(PROG)
def main(argv: list[str] | None = None) -> int:
    p = cli.parser(PROG, "Re-run failed jobs: back to pending, due now or --at. Exit 3 when none is failed.")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", type=int, help="one job id")
    which.add_argument("--ext", help="every failed job with this business key")
    p.add_argument("--step", help="only this step of a multi-step job (default: every failed step)")
    p.add_argument("--reset-attempts", action="store_true", help="start the attempt count and ladder from zero")
    p.add_argument("--at", help="when to run it: ISO-8601 or epoch seconds (default now)")
    args = p.parse_args(argv)
    manager = app.connect(config.load())
    at = jobs.parse_at(args.at) if args.at else None
    ids = manager.retry(job_id=args.id, ext=args.ext, step=args.step, reset_attempts=args.reset_attempts, at=at)
    cli.emit(args, {"retried": len(ids), "ids": ids}, f"retrying {len(ids)} job(s): {', '.join(map(str, ids))}")
    return 0
