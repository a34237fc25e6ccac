"""bin/emit.py: an event with several handlers: one job per handler, each retried on its own."""

from __future__ import annotations

from .. import app, cli, config

PROG = "emit.py"


@cli.boundary(PROG)
def main(argv: list[str] | None = None) -> int:
    p = cli.parser(PROG, "Emit an event: one job per @delayq.on handler found in DELAYQ_EVENT_MODULES.")
    p.add_argument("code", help="the event code, e.g. order.completed")
    p.add_argument("--data", help="the event's data as a JSON object: each handler's keyword arguments")
    p.add_argument("--delay", help="seconds from now (default 0)")
    p.add_argument("--ext", help="business key given to every handler's job, e.g. order:1")
    args = p.parse_args(argv)
    event_id, jobs = app.connect(config.load()).emit(args.code, args.data, delay=args.delay, ext=args.ext)
    data = {"event_id": event_id, "ids": [job.id for job in jobs]}
    cli.emit(args, data, f"event {event_id}: {len(jobs)} job(s) {', '.join(str(j.id) for j in jobs)} "
                         f"(bin/show.py --event {event_id})")
    return 0
