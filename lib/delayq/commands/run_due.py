"""bin/run_due.py: claim the due jobs, run them, record outcomes; once, or looping --for N seconds."""

from __future__ import annotations

import contextlib
import signal
import sys

from .. import app, cli, config, jobs
from ..errors import InvalidInput
from ..runner import Runner

PROG = "run_due.py"


def build_parser() -> cli.Parser:
    p = cli.parser(PROG, "Run due jobs: one pass by default; --for 55 keeps looping so cron restarts it each minute. "
                         "Logs one line per job outcome to stderr (key=value, or JSON with DELAYQ_LOG_FORMAT=json).")
    p.add_argument("-q", "--quiet", action="store_true", help="log only failures and problems, not every outcome")
    p.add_argument("--queue", default="default", help="queue name(s), comma-separated (default: default)")
    p.add_argument("--batch", type=int, default=200, help="jobs claimed per pass, 1-1000 (default 200)")
    p.add_argument("--for", dest="seconds", type=float, default=0.0, help="keep running passes for this many seconds")
    p.add_argument("--interval", type=float, default=1.0, help="with --for: longest sleep between passes (default 1 s)")
    return p


@cli.boundary(PROG)
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = config.load()
    cli.setup_logging(not args.quiet, settings.log_format)
    queues = [jobs.check_queue(q.strip()) for q in args.queue.split(",") if q.strip()]
    if not queues:
        raise InvalidInput("--queue needs at least one queue name")
    if not 1 <= args.batch <= 1000:
        raise InvalidInput("--batch must be between 1 and 1000")
    if args.seconds < 0 or not 0 < args.interval <= 60:
        raise InvalidInput("--for must be >= 0 and --interval between 0 and 60 seconds")
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))   # finish the batch, then exit
    manager = app.connect(settings)
    # With --for, outcomes of one batch are written on a second connection while the next batch runs.
    runner = Runner(manager, queues, args.batch, should_stop=lambda: bool(stop), pipeline=args.seconds > 0)
    # With --json, stdout carries one JSON object: what jobs print goes to stderr instead.
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        try:
            summary = runner.run_for(args.seconds, args.interval) if args.seconds else runner.run_pass()
        finally:
            runner.close()
    cli.emit(args, summary.__dict__, f"{PROG}: {summary.line()}")
    return 0
