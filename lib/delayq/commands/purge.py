"""purge: delete finished jobs with their attempts and steps, in small batches (their counts stay in the metrics)."""

from __future__ import annotations

from .. import app, bulk, cli
from ..errors import InvalidInput
from . import _filters

DEFAULT_STATUSES = "succeeded,cancelled,expired"
EPILOG = """examples:
  %(prog)s --older-than 3d                     # succeeded, cancelled and expired jobs finished 3 days ago
  %(prog)s --older-than 30d --status failed --yes
  %(prog)s --queue import --status succeeded --dry-run
"""


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Delete finished jobs with their history. Failed jobs are kept unless --status names them.")
    p.epilog = EPILOG
    _filters.add_filter_flags(p, older_than=True)
    _filters.add_bulk_flags(p)
    p.add_argument("--batch", type=int, default=500, help="jobs per transaction, 1-5000 (default 500)")
    return p


def execute(args, settings) -> int:
    if not any(getattr(args, name) for name in ("id", "queue", "status", "call", "ext", "ext_prefix", "since", "until",
                                                "error", "older_than")):
        raise InvalidInput("purge needs a filter: --older-than 3d (the usual), or --id, --queue, --status, ... "
                           "(see --help)")
    if not 1 <= args.batch <= 5000:
        raise InvalidInput("--batch must be between 1 and 5000")
    manager = app.open_ready(settings, create=False)
    args.status = args.status or ([] if args.id else [DEFAULT_STATUSES])    # named ids: any final status
    f = _filters.job_filter(args, manager.clock.now())
    return _filters.act(args, manager, "purge", f, lambda f, progress: bulk.purge(manager, f, progress=progress, batch=args.batch),
                        extra={"statuses": list(f.statuses)}, none_is_error=False)
