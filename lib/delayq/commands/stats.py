"""stats: per queue, counts by status, what is due and how late, throughput and failures of the last minute and
hour (from the attempts), paused queues and runners; a table, JSON, a Prometheus textfile, or a live view."""

from __future__ import annotations

import sys

from .. import app, cli, jobs, metrics, words
from ..config import describe
from ..errors import InvalidInput
from ..reports import LIVE_UPTO

FAILED_ATTEMPT = ("retry", "failed", "timed_out", "expired", "interrupted")   # an attempt that did not do its work
OUTCOME_KEYS = ("succeeded", "failed", "timed_out", "expired")         # counted per window (words.counted_as)
COLUMNS = ("queue", "pending", "running", "failed", "due_now", "lag_s", "ok_1m", "ok_1h", "err_1m", "err_1h",
           "late_avg_s", "late_max_s", "next_due")


def gather(manager) -> dict[str, dict]:
    """queue -> counts by status, due now, oldest due lag (0 when paused), next due, outcomes of the last minute
    and hour from the attempts (a retried job's failure still counts), lateness, paused."""
    now, groups = manager.reports.queue_figures()
    paused = manager.control.paused_queues()
    queues: dict[str, dict] = {}
    for g in groups:
        q = _queue(queues, g.queue, paused)
        q["counts"][words.shown(g.status)] += g.count
        if g.counted_at is not None:        # a big group: compensate's count, made then
            q["counted_at"][words.shown(g.status)] = g.counted_at
        elif g.at_least:
            q["counted_at"][words.shown(g.status)] = None
        if g.status == jobs.PENDING:
            # cli.number: a due time edited by hand into text, inf or 1e300 gives an inf or nan lag, never a crash
            q["due_now"] = g.due_now
            late = now - cli.number(g.oldest_due) if g.due_now and not q["paused"] else 0.0
            q["oldest_due_lag_s"] = round(max(0.0, late), 3)
            q["oldest_due"], q["next_due"] = g.oldest_due, g.next_due
    for queue, outcome, hour, minute, late_avg, late_max in manager.reports.recent_attempts():
        q = _queue(queues, queue or "", paused)
        names = words.counted_as(outcome)       # a run that timed out counts as timed_out and as retry or failed
        for window, n in (("1m", int(minute or 0)), ("1h", int(hour or 0))):
            q[f"attempts_{window}"] += n
            for key in OUTCOME_KEYS:
                q[f"{key}_{window}"] += n if key in names else 0
            if any(name in FAILED_ATTEMPT for name in names):
                q[f"errors_{window}"] += n
        if late_avg is not None:
            _lateness(q, int(hour or 0), float(late_avg), float(late_max))
    for queue in paused:
        _queue(queues, queue, paused)
    for queue, waiting in manager.reports.waiting_on_limits().items():
        _queue(queues, queue, paused)["waiting_on_limit"] = waiting
    for queue, limit in manager.limits.items():
        q = _queue(queues, queue, paused)
        q["rate_per_s"], q["max_running"] = limit.rate, limit.max_running
    return queues


def _queue(queues: dict[str, dict], queue: str, paused: dict) -> dict:
    if queue not in queues:
        queues[queue] = {"counts": dict.fromkeys(words.STATUSES, 0), "counted_at": {}, "due_now": 0, "oldest_due_lag_s": 0.0,
                         "oldest_due": None, "next_due": None, "paused": queue in paused,
                         "paused_since": paused[queue][0] if queue in paused else None,
                         "paused_reason": paused[queue][1] if queue in paused else None,
                         "lateness_avg_s": None, "lateness_max_s": None, "_late_n": 0,
                         "waiting_on_limit": 0, "rate_per_s": None, "max_running": None}
        for window in ("1m", "1h"):
            for key in ("attempts", *OUTCOME_KEYS, "errors"):
                queues[queue][f"{key}_{window}"] = 0
    return queues[queue]


def _lateness(q: dict, n: int, avg: float, top: float) -> None:
    """Merge one outcome's lateness (average over n attempts, maximum) into the queue's."""
    total = q["_late_n"] + n
    if total:
        q["lateness_avg_s"] = round(((q["lateness_avg_s"] or 0.0) * q["_late_n"] + avg * n) / total, 3)
    q["lateness_max_s"] = round(max(top, q["lateness_max_s"] if q["lateness_max_s"] is not None else top), 3)
    q["_late_n"] = total


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Per-queue statistics for operators: counts, lateness, the last minute and hour of attempts, "
                         "paused queues, runners.")
    p.add_argument("--prom", metavar="FILE", help="also write the Prometheus metrics to FILE (node_exporter's textfile "
                                                 "collector; written to a temporary file, then renamed)")
    p.add_argument("--watch", nargs="?", type=float, const=2.0, metavar="SECONDS",
                   help="refresh every SECONDS (default 2) until Ctrl-C")
    return p


def execute(args, settings) -> int:
    if args.watch is not None and not 0.2 <= args.watch <= 3600:
        raise InvalidInput("--watch takes 0.2 to 3600 seconds")
    manager = app.open_reader(settings)
    if args.watch is None:
        return show(args, manager, settings)
    try:
        while True:
            if sys.stdout.isatty() and not args.json:
                print("\x1b[H\x1b[2J", end="")
            show(args, manager, settings)
            sys.stdout.flush()
            manager.clock.sleep(args.watch)
    except KeyboardInterrupt:
        return 0


def show(args, manager, settings) -> int:
    stats = gather(manager)
    if args.prom:
        metrics.write_textfile(args.prom, manager)
    runners = manager.control.workers()
    shown = {q: {k: (cli.when(v) if k in ("next_due", "oldest_due", "paused_since") else
                     {status: cli.when(at) for status, at in v.items()} if k == "counted_at" else v)
                 for k, v in s.items() if not k.startswith("_")} for q, s in stats.items()}
    data = {"time": cli.when(manager.clock.now()), "queues": shown,
            "workers": {state: sum(1 for w in runners if w.state == state) for state in ("live", "lost", "stopped")},
            "database": describe(settings.database_url), "prefix": settings.prefix}
    cli.emit(args, data, table(shown) + "\n" + footer(shown, data["workers"]) +
             f"\ndatabase: {data['database']}, prefix {settings.prefix}")
    return 0


def table(stats: dict[str, dict]) -> str:
    rows = [[q + (" (paused)" if s["paused"] else ""), *(_count(s, status) for status in ("pending", "running", "failed")),
             _most(s["due_now"]), f"{s['oldest_due_lag_s']:.1f}", str(s["succeeded_1m"]),
             str(s["succeeded_1h"]), str(s["errors_1m"]), str(s["errors_1h"]), _num(s["lateness_avg_s"]),
             _num(s["lateness_max_s"]), s["next_due"] or "-"] for q, s in sorted(stats.items())]
    return cli.table(COLUMNS, rows, "(no jobs)")


def footer(stats: dict[str, dict], workers: dict[str, int]) -> str:
    lines = [f"paused: {q} since {s['paused_since']}" + (f" ({s['paused_reason']})" if s["paused_reason"] else "")
             for q, s in sorted(stats.items()) if s["paused"]]
    lines += [f"limits: {q}" + (f" rate {s['rate_per_s']:g}/s" if s["rate_per_s"] else "")
              + (f" max_running {s['max_running']}" if s["max_running"] else "")
              + f": {s['waiting_on_limit']} job(s) waiting on a limit"
              for q, s in sorted(stats.items()) if s["rate_per_s"] or s["max_running"] or s["waiting_on_limit"]]
    lines.append(f"runners: {workers['live']} live, {workers['lost']} stopped beating, {workers['stopped']} stopped "
                 "(delayq workers)")
    if any(s["counted_at"] or s["due_now"] > LIVE_UPTO for s in stats.values()):
        lines.append(f"(~: compensate's count, at most a minute or two old, of a queue's jobs of one status above "
                     f"{LIVE_UPTO:,}; >{LIVE_UPTO}: more than that, not counted yet)")
    return "\n".join(lines) + "\n(ok/err: attempts that succeeded / failed or were retried; late: start minus due, last hour)"


def _count(s: dict, status: str) -> str:
    """A count as the table shows it: exact, compensate's (~), or a floor (>10000)."""
    if status not in s["counted_at"]:
        return str(s["counts"][status])
    return f"{s['counts'][status]}~" if s["counted_at"][status] is not None else f">{LIVE_UPTO}"


def _most(n: int) -> str:
    return f">{LIVE_UPTO}" if n > LIVE_UPTO else str(n)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
