"""delayq's side of the issue-11 figures in `make bench`: jobs that wait, jobs that compute, a slow job in a stream.

Each function takes the URLs to use and the runner's flags, and returns a dict of figures.
The runner is the real `bin/run_due.py --for` process (delayq_side.World.runner); what is
measured is read back from the database, as in delayq_side:

- due_at_once: N jobs due at one moment T (the I/O-bound burst: examples.shop:wait_ms; the
  CPU-bound one: examples.shop:spin_ms); N / (T -> the last outcome committed). Also the
  runner's peak RSS (the runner and its worker processes, summed) and when the first job
  started after T (a runner that was not yet up at T shows there).
- mixed: a steady stream where one job in `every` takes `slow_ms` (wait_ms) and the others are
  no-ops; lateness (attempt start - due) of the no-ops, and of the slow ones apart.
"""

from __future__ import annotations

from delayq_side import NOOP, World, _pct, produce, stop

WAIT = "examples.shop:wait_ms"      # sleeps `ms`: a job waiting on an upstream
SPIN = "examples.shop:spin_ms"      # computes for `ms`, holding the GIL


def due_at_once(database_url: str, redis_url: str | None, n: int, call: str, args: dict,
                flags: tuple[str, ...] = ()) -> dict:
    """N jobs `call(**args)` due at one moment T; one runner with `flags` (none: delayq's defaults)."""
    w = World(database_url, redis_url)
    try:
        due = w.q.clock.now() + 2.0 + n / 5000
        w.q.enqueue_many({"call": call, "args": args, "at": due} for _ in range(n))
        if w.q.clock.now() > due:
            raise RuntimeError("enqueue outlasted the lead time: raise it")
        runner = w.runner(*flags)
        committed, rss = w.wait_committed(due, n, runner)
        stop(runner)
        first, returned = w.sql("SELECT MIN(a.started_at), MAX(a.finished_at) FROM {attempts} a")[0]
        return {"jobs_per_s": round(n / (committed - due)), "seconds": round(committed - due, 3),
                "first_started_s": round(float(first) - due, 3), "last_returned_s": round(float(returned) - due, 3),
                "runner_peak_rss_mb": round(rss, 1) if rss is not None else None, "flags": " ".join(flags)}
    finally:
        w.close()


def is_slow(i: int, every: int) -> bool:
    """The same rule as the peers' (benchmarks/peers/common.py): one in `every`, the first in the middle."""
    return every > 0 and i % every == every // 2


def mixed(database_url: str, redis_url: str | None, rate: int, seconds: float, every: int = 500,
          slow_ms: float = 2000, flags: tuple[str, ...] = (), delay: float = 1.0) -> dict:
    """`rate` jobs/s for `seconds`, each due `delay` s after its enqueue; one in `every` waits `slow_ms`.

    Lateness = attempts.started_at - jobs.due_at of the no-op jobs (p50, p99, max), and the slow jobs' worst."""
    w = World(database_url, redis_url)
    try:
        runner = w.runner(*flags)
        w.wait_running(runner)          # as the peers' driver waits for its worker to consume
        slow = {"call": WAIT, "args": {"ms": slow_ms}}
        sent, last_due = produce(w, rate, seconds, delay, lambda i: slow if is_slow(i, every) else {"call": NOOP})
        w.wait_committed(last_due, sent + 1, runner, timeout=300, interval=0.1)
        stop(runner)
        rows = w.sql("SELECT j.callable, a.started_at - j.due_at FROM {attempts} a JOIN {jobs} j ON j.id = a.job_id")
        late = sorted(ms * 1000 for call, ms in rows if call == NOOP)
        slow_late = [ms * 1000 for call, ms in rows if call == WAIT]
        return {"jobs": len(late), "slow": len(slow_late), "p50_ms": round(_pct(late, 50), 1),
                "p99_ms": round(_pct(late, 99), 1), "max_ms": round(late[-1], 1),
                "slow_max_ms": round(max(slow_late), 1) if slow_late else None, "flags": " ".join(flags)}
    finally:
        w.close()
