"""bin/stats.py: per queue, counts by status, what is due and how late, recent outcomes; table, JSON or Prometheus."""

from __future__ import annotations

import os
import tempfile

from .. import app, cli, config, jobs

PROG = "stats.py"
HOUR = 3600.0


def gather(manager) -> dict[str, dict]:
    """queue -> {status counts, due_now, oldest_due_lag_s, next_due, succeeded_1h, failed_1h}."""
    now = manager.clock.now()
    queues: dict[str, dict] = {}
    for queue, status, count, due_now, oldest, upcoming, recent in manager.store.stats(now, now - HOUR):
        q = queues.setdefault(queue, {"counts": {s: 0 for s in jobs.STATUSES}, "due_now": 0, "oldest_due_lag_s": 0.0,
                                      "next_due": None, "succeeded_1h": 0, "failed_1h": 0, "timed_out_1h": 0})
        q["counts"][status] = int(count)
        if status == jobs.PENDING:
            q["due_now"] = int(due_now or 0)
            q["oldest_due_lag_s"] = round(max(0.0, now - float(oldest)), 3) if q["due_now"] else 0.0
            q["next_due"] = None if upcoming is None else float(upcoming)
        if status in (jobs.SUCCEEDED, jobs.FAILED, jobs.TIMED_OUT):
            q[f"{status}_1h"] = int(recent or 0)
    return queues


@cli.boundary(PROG)
def main(argv: list[str] | None = None) -> int:
    p = cli.parser(PROG, "Per-queue statistics for operators (one pass over the jobs table).")
    p.add_argument("--prom", metavar="FILE", help="also write a Prometheus textfile (node_exporter's textfile collector)")
    args = p.parse_args(argv)
    stats = gather(app.connect(config.load()))
    if args.prom:
        write_prom(args.prom, stats)
    shown = {q: dict(s, next_due=cli.when(s["next_due"])) for q, s in stats.items()}
    cli.emit(args, {"queues": shown}, table(shown))
    return 0


def table(stats: dict[str, dict]) -> str:
    cols = ["queue", *jobs.STATUSES, "due_now", "lag_s", "ok_1h", "failed_1h", "next_due"]
    rows = [[q, *[str(s["counts"][st]) for st in jobs.STATUSES], str(s["due_now"]), f"{s['oldest_due_lag_s']:.1f}",
             str(s["succeeded_1h"]), str(s["failed_1h"]), s["next_due"] or "-"] for q, s in sorted(stats.items())]
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines) if rows else lines[0] + "\n(no jobs)"


def prom_text(stats: dict[str, dict]) -> str:
    out = ["# HELP delayq_jobs Jobs by queue and status.", "# TYPE delayq_jobs gauge"]
    for q, s in sorted(stats.items()):
        out += [f'delayq_jobs{{queue="{_label(q)}",status="{st}"}} {n}' for st, n in s["counts"].items()]
    for name, key, help_ in (("delayq_due_now", "due_now", "Pending jobs whose due time has come."),
                             ("delayq_oldest_due_lag_seconds", "oldest_due_lag_s", "How late the oldest due job is."),
                             ("delayq_succeeded_last_hour", "succeeded_1h", "Jobs succeeded in the last hour."),
                             ("delayq_failed_last_hour", "failed_1h", "Jobs failed for good in the last hour."),
                             ("delayq_timed_out_last_hour", "timed_out_1h", "Jobs ended by their deadline in the last hour.")):
        out += [f"# HELP {name} {help_}", f"# TYPE {name} gauge"]
        out += [f'{name}{{queue="{_label(q)}"}} {s[key]}' for q, s in sorted(stats.items())]
    return "\n".join(out) + "\n"


def write_prom(path: str, stats: dict[str, dict]) -> None:
    """Write atomically (temp file + rename), so the collector never reads half a file."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".delayq-", suffix=".prom.tmp")
    with os.fdopen(fd, "w") as f:
        f.write(prom_text(stats))
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
