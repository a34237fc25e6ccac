"""emit: an event with several handlers: one job per handler, each retried on its own."""

from __future__ import annotations

from .. import app, cli


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Emit an event: one job per @delayq.on handler found in DELAYQ_EVENT_MODULES.")
    p.add_argument("code", help="the event code, e.g. order.completed")
    p.add_argument("--data", help="the event's data as a JSON object: each handler's keyword arguments")
    p.add_argument("--delay", help="seconds from now, or 90s, 15m, 2h, 1d (default 0)")
    p.add_argument("--ext", help="business key given to every handler's job, e.g. order:1")
    return p


def execute(args, settings) -> int:
    event_id, jobs = app.open_ready(settings).emit(args.code, args.data, delay=args.delay, ext=args.ext)
    data = {"event_id": event_id, "ids": [job.id for job in jobs]}
    cli.emit(args, data, f"event {event_id}: {len(jobs)} job(s) {', '.join(str(j.id) for j in jobs)} "
                         f"(delayq show --event {event_id})")
    return 0
