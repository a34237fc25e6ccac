"""workers: the runners that beat (host, pid, queues, what each runs now), and those that stopped beating."""

from __future__ import annotations

from .. import app, cli
from ..search import when

COLUMNS = ("state", "host", "pid", "queues", "conc", "started", "last_beat", "running")


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Runners seen in the last day: live ones (with the jobs they run now), ones that stopped "
                         "cleanly, and ones that stopped beating (killed, hung or cut off from the database). Rows of "
                         "runners gone for a day are deleted by the runners themselves.")
    p.add_argument("--live", action="store_true", help="only the runners beating now")
    p.add_argument("--since", help="only runners seen since then: an age (10m, 2h, 1d ago), ISO-8601 or epoch seconds")
    return p


def execute(args, settings) -> int:
    manager = app.open_reader(settings)
    now = manager.clock.now()
    since = when(args.since, "--since", now)
    found = sorted((w for w in manager.control.workers() if (w.live or not args.live) and (since is None or w.last_seen >= since)),
                   key=lambda w: (w.state != "live", -w.last_seen))
    data = {"workers": [_data(w, now) for w in found],
            "live": sum(1 for w in found if w.live), "stopped": sum(1 for w in found if not w.live)}
    cli.emit(args, data, table(found, now))
    return 0


def _data(w, now: float) -> dict:
    return {"id": w.id, "state": w.state, "host": w.host, "pid": w.pid, "queues": w.queues, "concurrency": w.concurrency,
            "started_at": cli.when(w.started_at), "last_seen": cli.when(w.last_seen), "quiet_s": round(w.quiet_for, 1),
            "running": [{"id": job, "started_at": cli.when(at), "for_s": round(now - at, 1)} for job, at in w.running]}


def table(found: list, now: float) -> str:
    rows = [[_state(w), w.host, str(w.pid), ",".join(w.queues), str(w.concurrency), cli.when(w.started_at) or "",
             f"{ago(w.quiet_for)} ago", _running(w, now)] for w in found]
    return cli.table(COLUMNS, rows, "(no runner matches: none has beaten in the time shown)")


def _state(w) -> str:
    if w.state == "lost":
        return f"stopped beating {ago(w.quiet_for)} ago"
    if w.state == "stopped":
        return f"stopped {ago(w.quiet_for)} ago"
    return "live"


def _running(w, now: float) -> str:
    if not w.running:
        return "-"
    shown = ", ".join(f"{job} ({ago(now - at)})" for job, at in w.running[:5])
    return f"{len(w.running)}: {shown}" + (", ..." if len(w.running) > 5 else "")


def ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"
