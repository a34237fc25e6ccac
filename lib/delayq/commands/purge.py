"""bin/purge.py: delete old finished jobs with their attempts and steps, in small batches."""

from __future__ import annotations

import sys

from tqdm import tqdm

from .. import app, cli, config, ladders
from ..errors import InvalidInput

PROG = "purge.py"


@cli.boundary(PROG)
def main(argv: list[str] | None = None) -> int:
    p = cli.parser(PROG, "Delete jobs that finished before --older-than, with their history. "
                         "Failed jobs are kept unless --status names them.")
    p.add_argument("--older-than", required=True, help="age of finished jobs to delete: 3d, 12h, 3600")
    p.add_argument("--status", default="succeeded,cancelled,timed_out",
                   help="final statuses to delete (default succeeded,cancelled,timed_out)")
    p.add_argument("--batch", type=int, default=500, help="rows per transaction, 1-5000 (default 500)")
    args = p.parse_args(argv)
    age = ladders.parse_duration(args.older_than)
    if not 1 <= args.batch <= 5000:
        raise InvalidInput("--batch must be between 1 and 5000")
    statuses = [s.strip() for s in args.status.split(",") if s.strip()]
    manager = app.connect(config.load())
    with tqdm(desc="purge", unit="job", disable=not sys.stderr.isatty(), file=sys.stderr) as bar:
        deleted = manager.purge(statuses, age, args.batch, bar.update)
    cli.emit(args, {"deleted": deleted, "statuses": statuses}, f"deleted {deleted} job(s) ({', '.join(statuses)})")
    return 0
