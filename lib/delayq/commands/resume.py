"""resume: runners claim a paused queue's jobs again (its due jobs run at once)."""

from __future__ import annotations

from .. import app, cli


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Resume a paused queue: every runner claims its jobs again within a second or so.")
    cli.queue_argument(p)
    return p


def execute(args, settings) -> int:
    args.queue = cli.the_queue(args)
    manager = app.open_ready(settings, create=False)
    resumed = manager.control.resume(args.queue)
    text = f"resumed queue {args.queue}" if resumed else f"queue {args.queue} was not paused: nothing to do"
    cli.emit(args, {"queue": args.queue, "paused": False, "was_paused": resumed}, text)
    return 0
