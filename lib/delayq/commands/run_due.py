"""run-due: claim the due jobs, run many at once in worker processes, record outcomes; once, or --for N seconds."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Iterator

from .. import app, cli, logs, schedules, validate
from ..errors import InvalidInput
from ..runner import DEFAULT_CONCURRENCY, DEFAULT_GRACE, Runner
from ..scheduler import Scheduler
from ..workers import Heartbeat

STOP: list[bool] = []     # bin/run_due.py: a SIGTERM came before execute() installed its handler

EPILOG = """Jobs run in --processes worker processes (default 1) of --concurrency threads each (default 16, or
DELAYQ_CONCURRENCY, or the queue's "concurrency" in DELAYQ_QUEUES): a job that waits on an upstream does
not hold up the others, and a job that ends its process takes only its worker down. A job runs at most its
timeout (its own, its queue's, else --timeout / DELAYQ_TIMEOUT, default 30 s); then it is stopped: it
timed_out, which counts as a failure (retried on its ladder, or failed). SIGTERM: claim nothing more, put
jobs not started back at once, let running jobs end within --grace seconds, exit 0 (a second signal: at once).
"""


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Run due jobs: one pass by default (until nothing more is due, at most --batch jobs); "
                         "--for 55 keeps claiming for 55 s. Logs one line per job outcome to stderr "
                         "(key=value, or JSON with DELAYQ_LOG_FORMAT=json).")
    p.epilog = EPILOG
    p.add_argument("-q", "--quiet", action="store_true", help="log only failures and problems, not every outcome")
    p.add_argument("--queue", default="default", help="queue name(s), comma-separated (default: default)")
    p.add_argument("--batch", type=int, default=200, help="one pass: claim at most this many jobs, 1-100000 "
                                                          "(default 200)")
    p.add_argument("--for", dest="seconds", type=float, default=0.0, help="keep claiming for this many seconds")
    p.add_argument("--interval", type=float, default=1.0, help="longest wait between looks for due jobs (default 1 s)")
    p.add_argument("--concurrency", type=int, help=f"jobs at once per process, 1-1024 (default {DEFAULT_CONCURRENCY})")
    p.add_argument("--processes", type=int, default=1, help="worker processes, 0-64 (default 1; 0: run jobs in "
                                                            "this process, without isolation)")
    p.add_argument("--timeout", help="default time limit of an attempt: 30, 90s, 5m (default DELAYQ_TIMEOUT, 30 s)")
    p.add_argument("--grace", type=float, default=DEFAULT_GRACE,
                   help=f"after SIGTERM, seconds running jobs may take to end (default {DEFAULT_GRACE:g})")
    return p


def execute(args, settings) -> int:
    cli.setup_logging(not args.quiet, settings.log_format)
    queues = [validate.queue(q.strip(), "--queue") for q in args.queue.split(",") if q.strip()]
    if not queues:
        raise InvalidInput("--queue needs at least one queue name")
    check_flags(args)
    limits = {q: d["concurrency"] for q, d in settings.queues.items() if "concurrency" in d}
    concurrency = args.concurrency or settings.concurrency or (
        limits.get(queues[0]) if len(queues) == 1 else None) or DEFAULT_CONCURRENCY
    timeout = validate.duration(args.timeout, "--timeout", 1, validate.MAX_LEASE) if args.timeout else settings.timeout
    stop: list[bool] = [True] if STOP else []      # a SIGTERM that came while Python was importing (bin/run_due.py)
    runner: Runner | None = None

    def on_signal(*_: object) -> None:
        if stop and runner is not None:    # a second signal: no more grace
            runner.grace = 0.0
        stop.append(True)
        if runner is not None:
            runner.wake()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    manager = app.open_reader(settings)      # never creates a database: the wrong one is one line
    scheduler = Scheduler(manager, schedules.load(settings.schedule_modules, settings.allowed_modules)) \
        if settings.schedule_modules else None
    # With --json, stdout carries one JSON object: what jobs print (in this process or a worker) goes to stderr.
    with stdout_to_stderr() if args.json else contextlib.nullcontext():
        # With --for, outcomes are written on a second connection while the next jobs run.
        beat = Heartbeat(manager.control, queues, concurrency * max(1, args.processes), running=lambda: runner.running_now(),
                         every=settings.heartbeat)
        runner = Runner(manager, queues, args.batch, concurrency=concurrency, processes=args.processes,
                        should_stop=lambda: bool(stop), pipeline=args.seconds > 0, timeout=timeout, grace=args.grace,
                        queue_limits=limits if len(queues) > 1 else None, reopen=lambda: app.open_manager(settings, create=False),
                        beat=beat.tick if scheduler is None else lambda: (beat.tick(), scheduler.tick()))
        # a one-shot pass shows up only if it runs past one beat; worker processes: the supervisor beats, no thread
        beat.start(at_once=args.seconds > 0, thread=args.processes == 0)
        failed = True
        try:
            if scheduler is not None:     # the slots due now, before the first claim: a one-shot pass runs them
                scheduler.tick()
                logs.flush()              # its lines written before the workers fork (a child would write them too)
                if args.processes == 0:
                    scheduler.start()
            summary = runner.run_for(args.seconds, args.interval, one_pass=not args.seconds)
            failed = False
        finally:
            if scheduler is not None:
                scheduler.stop()
            beat.stop(mark=not failed)      # a failing runner does not wait once more on its backend
            runner.close()
            if failed:                      # it exits 1 with one line: to the end, as a run that ended well
                ignore_signals_to_the_end()
    if args.json or summary.busy or args.seconds:      # an idle pass (a loop.sh tick) prints nothing
        cli.emit(args, summary.__dict__, f"{args.prog}: {summary.line()}")
    ignore_signals_to_the_end()
    return 0


def ignore_signals_to_the_end() -> None:
    """The run is over: a SIGTERM or SIGINT from now on is ignored. At its shutdown the interpreter puts back the
    default action of every signal a Python function handled, and a SIGTERM that came in those last moments (cron's
    next tick, a deploy) would end the process as killed (exit -15) after it did all its work; an ignored one
    stays ignored."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """File descriptor 1 points at stderr meanwhile: worker processes and C code inherit it too."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def check_flags(args) -> None:
    if not 1 <= args.batch <= 100_000:
        raise InvalidInput("--batch must be between 1 and 100000")
    if not 0 <= args.seconds <= 86400 or not 0 < args.interval <= 60:
        raise InvalidInput("--for must be 0 to 86400 seconds and --interval between 0 and 60 seconds")
    if args.concurrency is not None and not 1 <= args.concurrency <= 1024:
        raise InvalidInput("--concurrency must be between 1 and 1024")
    if not 0 <= args.processes <= 64:
        raise InvalidInput("--processes must be between 0 and 64")
    if not 0 <= args.grace <= 3600:
        raise InvalidInput("--grace must be between 0 and 3600 seconds")
