"""compensate: recover jobs of vanished runners, rebuild the due index, send alerts (cron, each minute)."""

from __future__ import annotations

import sys
import time

from tqdm import tqdm

from .. import app, cli, recovery, scheduler
from ..recovery import Reconciled
from ..runner import orphans


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Recover the jobs of runners that died on this host from the ledgers they left, then running "
                         "jobs whose lease ran out; put pending jobs missing from the due index "
                         "back, drop stale index entries, and send alerts for jobs that failed for good. "
                         "Safe to run from several hosts at once.", verbose=True)
    p.add_argument("--rebuild-every", type=float, default=600, metavar="SECONDS",
                   help="rebuild the due index at most this often across all hosts (default 600); at once when "
                        "Redis lost its keys (FLUSHALL, a restart without persistence)")
    p.add_argument("--rebuild", choices=("auto", "now", "never"), default="auto",
                   help="auto (default): by --rebuild-every; now: this run; never: leases and alerts only")
    return p


def execute(args, settings) -> int:
    cli.setup_logging(args.verbose, settings.log_format)
    manager = app.open_ready(settings, create=False)     # a broken configuration fails here, with its cause
    started = time.monotonic()
    settled = orphans.recover_here(manager)    # ledgers runners on this host left: first, before their leases
    recovered = recovery.recover_expired(manager)
    store, now = manager.store, manager.clock.now()
    stranded = recovery.requeue_stranded(store, manager.index, now) + recovery.index_newer(store, manager.index, now)
    rebuilt = Reconciled()
    index = manager.index
    if args.rebuild == "now" or (args.rebuild == "auto" and getattr(index, "rebuild_due", None)
                                 and index.rebuild_due(args.rebuild_every)):
        with tqdm(desc="reconcile", unit="job", disable=not sys.stderr.isatty(), file=sys.stderr) as bar:
            try:
                rebuilt = recovery.reconcile(store, index, manager.clock, bar.update)
            except BaseException:
                if getattr(index, "rebuild_failed", None):
                    index.rebuild_failed()    # let the next run try again, not in --rebuild-every seconds
                raise
    alerter = app.alerter(settings)     # after recovery: a bad alert setting never blocks it
    alerted = manager.control.send_alerts(alerter) if alerter else 0
    rolled = manager.control.roll_up()      # the dashboard's 24-hour and 7-day charts
    counted = manager.control.count_jobs()  # the queues' big groups, for the overview and `delayq stats`
    scheduler.forget(manager)               # schedules' slot rows older than 8 days
    forget_until = time.monotonic() + 5     # the limits' rows of jobs that ended: pages of 1,000, 5 s at most
    while manager.store.forget_limited() >= 1000 and time.monotonic() < forget_until:
        pass
    data = {"from_ledgers": len(settled), "requeued": sum(1 for r in recovered if r.status == "pending"),
            "failed": sum(1 for r in recovered if r.status == "failed"),
            "restored": rebuilt.restored + stranded, "dropped": rebuilt.dropped, "scanned": rebuilt.scanned,
            "alerted": alerted, "rolled_up": rolled, "counted": counted, "seconds": round(time.monotonic() - started, 3)}
    cli.emit(args, data, f"{args.prog}: " + " ".join(f"{k}={v}" for k, v in data.items()))
    return 0
