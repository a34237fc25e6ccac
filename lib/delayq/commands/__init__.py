"""The `delayq` command: one subcommand per script in bin/, with the same flags (rq's, borgmatic's shape).

    delayq enqueue --call shop.jobs:auto_confirm --args '{"order_id": 1}' --delay 1d --ext order:1
    delayq run-due --for 55
    python -m delayq ...                      # the same

Each subcommand is one module here (parse, call manager verbs, report); the bin/ scripts
are five-line cron wrappers around the same modules.
"""

from __future__ import annotations

import importlib
import sys
from typing import Sequence

from .. import cli
from ..version import __version__
from ..errors import EXIT_USAGE

# name -> (module, what it does): a fixed map, never built from input
COMMANDS = {
    "enqueue": ("enqueue", "schedule a job, or many from a JSON-lines file (bin/enqueue_delayed.py)"),
    "cancel": ("cancel", "cancel pending jobs by id, business key or any filter (bin/cancel.py)"),
    "run-due": ("run_due", "run the due jobs: one pass, or --for N seconds (bin/run_due.py)"),
    "compensate": ("compensate", "recover jobs of vanished runners, rebuild the index, send alerts (bin/compensate.py)"),
    "retry": ("retry", "re-run failed jobs or steps after a person fixed the cause, by id or filter (bin/retry.py)"),
    "purge": ("purge", "delete old finished jobs with their history, by age or filter (bin/purge.py)"),
    "show": ("show", "a job with its attempts and steps (bin/show.py)"),
    "list": ("list", "jobs, newest first, filtered (bin/list.py)"),
    "stats": ("stats", "per-queue counts, lateness, recent outcomes; JSON, Prometheus textfile, --watch (bin/stats.py)"),
    "pause": ("pause", "stop claiming a queue's jobs on every runner; enqueue goes on (bin/pause.py)"),
    "resume": ("resume", "claim a paused queue's jobs again (bin/resume.py)"),
    "workers": ("workers", "the runners that beat, what each runs now, and those that stopped (bin/workers.py)"),
    "metrics": ("metrics", "serve Prometheus metrics over HTTP, read from the database (bin/metrics.py)"),
    "web": ("web", "the web dashboard: search, inspect, retry, cancel, pause; needs delayq[web] (bin/web.py)"),
    "migrate": ("migrate", "create or upgrade the tables (bin/migrate.py)"),
    "emit": ("emit", "emit an event: one job per handler (bin/emit.py)"),
    "schedules": ("schedules", "the recurring schedules: next and last slot, last job; pause or resume one "
                               "(bin/schedules.py)"),
}


def run(name: str, argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run one subcommand (the bin/ scripts call this with their own name as prog)."""
    module = importlib.import_module(f"{__name__}.{COMMANDS[name][0]}")
    return cli.run(module, argv, prog or f"delayq {name}")


def usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [f"usage: delayq COMMAND [--help] ...   (delayq {__version__})", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", "Settings come from the environment and a .env file in the working directory (see README)."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The `delayq` console script and `python -m delayq`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else EXIT_USAGE
    if argv[0] == "--version":
        print(f"delayq {__version__}")
        return 0
    if argv[0] not in COMMANDS:
        print(f"delayq: error: unknown command {argv[0][:40]!r}: use one of {', '.join(COMMANDS)} (see --help)",
              file=sys.stderr)
        return EXIT_USAGE
    return run(argv[0], argv[1:])
