"""pause: stop every runner from claiming a queue's jobs (kept in the database); enqueue goes on."""

from __future__ import annotations

from .. import app, cli
from ..search import JobFilter


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Pause a queue: every runner on every host stops claiming its jobs within a second or so "
                         "(jobs already running finish). Enqueue still works; `delayq resume QUEUE` undoes it.")
    cli.queue_argument(p)
    p.add_argument("--reason", help="why, shown by stats and list (e.g. 'SMS gateway down, INC-123')")
    return p


def execute(args, settings) -> int:
    args.queue = cli.the_queue(args)
    manager = app.open_ready(settings, create=False)
    new = manager.control.pause(args.queue, args.reason)
    since, reason = manager.control.paused_queues()[args.queue]
    waiting = sum(n for _, status, n in manager.reports.count(JobFilter(queues=(args.queue,), statuses=("pending",))))
    data = {"queue": args.queue, "paused": True, "already": not new, "since": cli.when(since), "reason": reason,
            "pending": waiting}
    text = (f"paused queue {args.queue}" if new else f"queue {args.queue} was already paused since {cli.when(since)}") + (
        f" ({reason})" if reason else "") + f": {waiting} pending job(s) wait until `delayq resume {args.queue}`"
    cli.emit(args, data, text)
    return 0
