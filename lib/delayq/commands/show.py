"""bin/show.py: a job (or every job with a business key) with its attempt history."""

from __future__ import annotations

from .. import app, cli, config

PROG = "show.py"
FIELDS = ("id", "queue", "ext", "call", "status", "attempts", "max_attempts", "ladder", "priority", "at_most_once",
          "event", "event_id", "on_timeout", "due_at", "deadline", "lease_until", "created_at", "started_at",
          "finished_at", "updated_at", "last_error")
TIMES = {"due_at", "deadline", "lease_until", "created_at", "started_at", "finished_at", "updated_at"}


@cli.boundary(PROG)
def main(argv: list[str] | None = None) -> int:
    p = cli.parser(PROG, "Show jobs with their attempts. Exit 3 when none matched.")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", type=int, help="one job id")
    which.add_argument("--ext", help="every job with this business key, oldest first")
    which.add_argument("--event", help="every job of one emitted event (the id emit.py printed)")
    p.add_argument("--queue", help="with --ext: only in this queue")
    args = p.parse_args(argv)
    manager = app.connect(config.load())
    found = manager.find(job_id=args.id, ext=args.ext, queue=args.queue, event_id=args.event)
    shown = [(job, manager.attempts(job.id), manager.store.steps(job.id)) for job in found]
    data = {"jobs": [dict(_fields(job), args=job.args, attempts_history=[_attempt(a) for a in tries],
                          steps=[_step(s) for s in steps]) for job, tries, steps in shown]}
    cli.emit(args, data, "\n\n".join(_text(job, tries, steps) for job, tries, steps in shown))
    return 0


def _fields(job) -> dict:
    return {name: cli.when(getattr(job, name)) if name in TIMES else getattr(job, name) for name in FIELDS}


def _attempt(a) -> dict:
    return {"attempt": a.attempt, "started_at": cli.when(a.started_at), "finished_at": cli.when(a.finished_at),
            "ms": round((a.finished_at - a.started_at) * 1000, 1), "outcome": a.outcome, "error": a.error}


def _step(s) -> dict:
    return {"name": s.name, "mode": s.mode, "status": s.status, "attempts": s.attempts, "error": s.last_error,
            "started_at": cli.when(s.started_at), "finished_at": cli.when(s.finished_at)}


def _text(job, tries, steps) -> str:
    lines = [f"{name:>13}: {value}" for name, value in _fields(job).items()
             if value not in (None, 0) and name != "last_error"]
    lines.insert(4, f"{'args':>13}: {job.args_json}")
    if job.last_error:
        lines.append(f"{'last_error':>13}: {job.last_error.splitlines()[0]}")
    if steps:
        lines.append("        steps:")
        for s in steps:
            error = f"  {s.last_error.splitlines()[0]}" if s.last_error else ""
            lines.append(f"  {s.name} ({s.mode}) {s.status}, {s.attempts} attempt(s){error}")
    lines.append("      history:" + ("" if tries else " no attempt"))
    for a in tries:
        error = f"  {a.error.splitlines()[0]}" if a.error else ""
        lines.append(f"  #{a.attempt} {cli.when(a.started_at)} {(a.finished_at - a.started_at) * 1000:8.1f} ms  {a.outcome}{error}")
    return "\n".join(lines)
