"""retry: a person who fixed the cause re-runs failed jobs or steps, manual steps included; one, or all a filter matches."""

from __future__ import annotations

from .. import app, bulk, cli, validate
from . import _filters

EPILOG = """examples:
  %(prog)s --id 41 --step charge_user          # one step of one job, after fixing its cause by hand
  %(prog)s --id 41 --id 42 --reset-attempts
  %(prog)s --queue sms --since 2h --time finished --error 'Connection refused' --dry-run
  %(prog)s --queue sms --since 2h --time finished --yes
"""


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Re-run failed jobs: back to pending, due now or --at. Exit 3 when none is failed.")
    p.epilog = EPILOG
    _filters.add_filter_flags(p)
    _filters.add_bulk_flags(p)
    p.add_argument("--step", help="only this step of a multi-step job (default: every failed step)")
    p.add_argument("--reset-attempts", action="store_true", help="start the attempt count and ladder from zero")
    p.add_argument("--at", help="when to run it: ISO-8601 (without an offset: local time) or epoch seconds (default now)")
    return p


def execute(args, settings) -> int:
    manager = app.open_ready(settings, create=False)
    f = _filters.job_filter(args, manager.clock.now())
    at = validate.instant(args.at, "--at") if args.at else None
    step = validate.text(args.step, "--step", 64) if args.step else None
    return _filters.act(args, manager, "retry", f, lambda f, progress: bulk.retry(
        manager, f, step=step, reset_attempts=args.reset_attempts, at=at, progress=progress))
