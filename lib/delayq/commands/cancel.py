"""bin/cancel.py: pending jobs become cancelled and leave the due index."""

from __future__ import annotations

from .. import app, cli, config
from ..errors import NotFound

PROG = "cancel.py"


@cli.boundary(PROG)
def main(argv: list[str] | None = None) -> int:
    p = cli.parser(PROG, "Cancel pending jobs by business key or id. Exit 3 when nothing pending matched.")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--ext", help="business key, e.g. order:123: every pending job with it")
    which.add_argument("--id", type=int, help="one job id")
    p.add_argument("--queue", help="only in this queue")
    args = p.parse_args(argv)
    result = app.connect(config.load()).cancel(job_id=args.id, ext=args.ext, queue=args.queue)
    untouched = [f"job {job} is {status}" for job, status in result.untouched]
    if not result.cancelled:
        raise NotFound(f"nothing cancelled: {', '.join(untouched)} (only pending jobs can be cancelled)")
    data = {"cancelled": len(result.cancelled), "ids": [job for job, _ in result.cancelled],
            "untouched": [{"id": job, "status": status} for job, status in result.untouched]}
    text = f"cancelled {len(result.cancelled)} job(s)" + (f"; left alone: {', '.join(untouched)}" if untouched else "")
    cli.emit(args, data, text)
    return 0
