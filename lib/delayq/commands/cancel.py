"""cancel: pending jobs become cancelled and leave the due index; one, or all a filter matches."""

from __future__ import annotations

from .. import app, bulk, cli
from . import _filters

EPILOG = """examples:
  %(prog)s --ext order:123                    # every pending job with this business key, in every queue
  %(prog)s --queue sms --call shop.sms:send_promo --dry-run
  %(prog)s --queue sms --ext-prefix promo: --yes
"""


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Cancel pending jobs. Exit 3 when nothing pending matched; the output names the queues.")
    p.epilog = EPILOG
    _filters.add_filter_flags(p)
    _filters.add_bulk_flags(p)
    return p


def execute(args, settings) -> int:
    manager = app.open_ready(settings, create=False)
    f = _filters.job_filter(args, manager.clock.now())
    return _filters.act(args, manager, "cancel", f, lambda f, progress: bulk.cancel(manager, f, progress=progress))
