"""show: a job (or every job with a business key, or of an event) with its attempts and steps."""

from __future__ import annotations

from .. import app, cli, validate, words

FIELDS = ("id", "queue", "ext", "call", "status", "attempts", "max_attempts", "ladder", "priority", "at_most_once",
          "event", "event_id", "on_timeout", "lease", "timeout", "crashes", "due_at", "deadline", "lease_until",
          "created_at", "started_at", "finished_at", "updated_at", "last_error")
TIMES = {"due_at", "deadline", "lease_until", "created_at", "started_at", "finished_at", "updated_at"}


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Show jobs with their attempts. Exit 3 when none matched.")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", type=int, help="one job id")
    which.add_argument("--ext", help="every job with this business key, oldest first")
    which.add_argument("--event", help="every job of one emitted event (the id emit printed)")
    p.add_argument("--queue", help="with --ext: only in this queue")
    return p


def execute(args, settings) -> int:
    manager = app.open_reader(settings)
    found = manager.reports.find(job_id=args.id, ext=validate.ext(args.ext), queue=args.queue,
                         event_id=validate.text(args.event, "--event", 64) if args.event else None)
    shown = [(job, manager.reports.attempts(job.id), manager.reports.steps(job.id)) for job in found]
    data = {"jobs": [dict(_fields(job), args=_args(job), attempts_history=[_attempt(a) for a in tries],
                          steps=[_step(s) for s in steps]) for job, tries, steps in shown]}
    cli.emit(args, data, "\n\n".join(_text(job, tries, steps) for job, tries, steps in shown))
    return 0


def _fields(job) -> dict:
    return {name: cli.when(getattr(job, name)) if name in TIMES else
            words.shown(job.status) if name == "status" else getattr(job, name) for name in FIELDS}


def _args(job):
    """The arguments as JSON data, or (a row edited by hand) the stored text as it is."""
    try:
        return job.args
    except (ValueError, TypeError, RecursionError):
        return job.args_json


def _ms(a) -> float:
    """How long an attempt took; nan when a time in its row is not a number (edited by hand)."""
    return round((cli.number(a.finished_at) - cli.number(a.started_at)) * 1000, 1)


def _first_line(text) -> str:
    return str(text).splitlines()[0] if text else ""


def _attempt(a) -> dict:
    return {"attempt": a.attempt, "started_at": cli.when(a.started_at), "finished_at": cli.when(a.finished_at),
            "ms": _ms(a), "outcome": words.shown(a.outcome), "error": a.error}


def _step(s) -> dict:
    return {"name": s.name, "mode": s.mode, "status": s.status, "attempts": s.attempts, "error": s.last_error,
            "started_at": cli.when(s.started_at), "finished_at": cli.when(s.finished_at)}


def _text(job, tries, steps) -> str:
    lines = [f"{name:>13}: {value}" for name, value in _fields(job).items()
             if value not in (None, 0) and name != "last_error"]
    lines.insert(4, f"{'args':>13}: {job.args_json}")
    if job.last_error:
        lines.append(f"{'last_error':>13}: " + _block(job.last_error, 15))
    if steps:
        lines.append("        steps:")
        for s in steps:
            lines.append(f"  {s.name} ({s.mode}) {s.status}, {s.attempts} attempt(s)"
                         + (f"  {_block(s.last_error, 4)}" if s.last_error else ""))
    lines.append("      history:" + ("" if tries else " no attempt"))
    for a in tries:
        lines.append(f"  #{a.attempt} {cli.when(a.started_at)} {_ms(a):8.1f} ms  {words.shown(a.outcome)}"
                     + (f"  {_block(a.error, 4)}" if a.error else ""))
    return "\n".join(lines)


def _block(text: str, indent: int) -> str:
    """An error in full (its first line, then the traceback's lines indented under it)."""
    first, *rest = text.rstrip().splitlines() or [""]
    return "\n".join([first, *(" " * indent + line for line in rest)])
