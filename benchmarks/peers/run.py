"""The peers' side of the delayed-job benchmark (issue 5): RQ, Huey, Dramatiq,
Celery and ARQ, each with its own delayed-job mechanism and one worker process.

Run with the peers' virtualenv (benchmarks/peers/setup.sh makes it):

    PY=$(benchmarks/peers/setup.sh)
    $PY benchmarks/peers/run.py --redis-url redis://127.0.0.1:6391/0 --workload burst [--n 20000]
    $PY benchmarks/peers/run.py --redis-url ... --workload enqueue [--n 20000]
    $PY benchmarks/peers/run.py --redis-url ... --workload lateness [--rate 1000 --n 30000 --delay 1]
        [--peers rq,huey,dramatiq,celery,arq] [--timeout 300] [--verbose-workers] [--log-dir DIR]
    # issue 11, Huey, Dramatiq and Celery only; --threads N (one process of N threads) or "defaults":
    $PY benchmarks/peers/run.py --redis-url ... --workload wait --threads 8 [--n 2000 --ms 20]
    $PY benchmarks/peers/run.py --redis-url ... --workload mixed --threads 8 [--rate 500 --n 15000
        --slow-every 500 --slow-ms 2000]

Prints one JSON object per peer per line on stdout, e.g.
    {"peer": "rq", "workload": "burst", "n": 20000, "jobs_per_s": 2400.5, "seconds": 8.3, ...}
    {"peer": "celery", "workload": "burst", "error": "why it could not run"}

The given Redis db is FLUSHDB'd before and after each peer: give it a private
redis-server (port 6379 db 0 is refused). Each peer runs in its own child process
(only its own library imported), bounded by --timeout; its worker is started as a
subprocess in a new process group and ended by that group's id.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import common  # noqa: E402

PEERS = ("rq", "huey", "dramatiq", "celery", "arq")
THREADED = ("huey", "dramatiq", "celery")     # the peers of the issue-11 workloads (a thread pool per worker)
WORKLOADS = ("burst", "enqueue", "lateness", "wait", "mixed")
DEFAULT_N = {"burst": 20000, "enqueue": 20000, "lateness": 30000, "wait": 2000, "mixed": 15000}


# ------------------------------------------------------------------ one peer (child process)

class Partial(Exception):
    """A peer ran out of time; `fields` says how far it got (bounds of its figure)."""

    def __init__(self, message: str, fields: dict):
        super().__init__(message)
        self.fields = fields


class Run:
    def __init__(self, args, peer_name: str, log_dir: str):
        self.args = args
        self.name = peer_name
        self.log_dir = log_dir
        self.deadline = common.Deadline(args.timeout)
        os.environ[common.REDIS_URL_ENV] = args.redis_url
        from redis import Redis
        self.r = Redis.from_url(args.redis_url)
        self.r.ping()
        self.r.flushdb()
        self.mod = importlib.import_module(f"{peer_name}_peer")
        self.ctx = self.mod.connect(args.redis_url)
        self.worker: common.WorkerProcess | None = None

    def version(self) -> str:
        from importlib.metadata import version
        return version(self.mod.DIST)

    def start_worker(self) -> None:
        bin_dir = os.path.dirname(sys.executable)
        if self.args.threads is None:
            argv = self.mod.worker_argv(bin_dir, self.args.redis_url, self.args.verbose_workers)
        else:
            argv = self.mod.worker_argv(bin_dir, self.args.redis_url, self.args.verbose_workers, self.args.threads)
        env = dict(os.environ)
        env[common.REDIS_URL_ENV] = self.args.redis_url
        env["PYTHONPATH"] = HERE + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["PYTHONUNBUFFERED"] = "1"
        log_path = os.path.join(self.log_dir, f"{self.name}-{self.args.workload}-worker.log")
        self.worker = common.WorkerProcess(argv, env, HERE, log_path)
        # one immediate job: the worker is up and consuming once it has run
        self.mod.enqueue(self.ctx, "ready", [((), None)])
        ready_by = common.Deadline(min(60.0, max(1.0, self.deadline.left())))
        common.wait_for(lambda: self.r.exists(common.KEY_READY), ready_by, "the worker to start", self.worker)

    def close(self) -> None:
        try:
            if self.worker is not None:
                self.worker.stop()
        finally:
            try:
                self.mod.close(self.ctx)
            except Exception:
                pass
            try:
                self.r.flushdb()
            except Exception:
                pass

    def base(self) -> dict:
        out = {"peer": self.name, "workload": self.args.workload, "version": self.version()}
        if self.args.threads is not None:
            out["threads"] = self.args.threads
        return out

    # -- workloads

    def enqueue_rate(self, n: int) -> float:
        items = common.items_relative_due(n, lambda i: (n, i), 3600.0, self.deadline)
        t0 = time.perf_counter()
        self.mod.enqueue(self.ctx, "burst", items)
        return n / (time.perf_counter() - t0)

    def run_enqueue(self) -> dict:
        n = self.args.n
        self.enqueue_rate(min(100, n))  # warm-up: connections, scripts, lazy imports (not timed)
        rate = self.enqueue_rate(n)
        return {**self.base(), "n": n, "jobs_per_s": round(rate, 1), "seconds": round(n / rate, 3),
                "delay_s": 3600}

    def run_burst(self) -> dict:
        n = self.args.n
        return self.due_at_once("burst", lambda i: (n, i))

    def run_wait(self) -> dict:
        """N jobs due at T that each wait --ms (issue 11); counted in Redis when the worker may be several
        processes (--threads defaults), in the worker's memory otherwise, as burst does."""
        n, ms, shared = self.args.n, self.args.ms, self.args.threads == "defaults"
        return {**self.due_at_once("wait", lambda i: (n, i, ms, shared)), "ms": ms, "counted_in_redis": shared}

    def due_at_once(self, kind: str, args_of) -> dict:
        """N jobs of `kind` due at one moment T (job i's arguments: args_of(i)); N / (T -> the last one ran)."""
        n = self.args.n
        # calibrate the enqueue rate (no worker yet, after a warm-up), so that T leaves
        # room for the whole enqueue
        self.enqueue_rate(100)
        calib = self.enqueue_rate(min(1000, n))
        self.r.flushdb()
        factor = 3.0  # the running worker competes for the CPU during the enqueue
        for attempt in (1, 2):
            self.start_worker()
            lead = 2.0 + factor * n / calib
            t_due = float(math.ceil(time.time() + lead))  # T on a whole second (RQ stores whole seconds)
            t0 = time.time()
            self.mod.enqueue(self.ctx, kind, common.items_fixed_due(n, args_of, t_due, self.deadline))
            t_enqueued = time.time()
            if t_enqueued < t_due:
                break
            msg = (f"enqueue of {n} jobs took {t_enqueued - t0:.1f} s and outlasted the lead time "
                   f"{t_due - t0:.1f} s: T was already past")
            if attempt == 2:
                raise RuntimeError(msg)
            print(f"{self.name}: {msg}; again with a longer lead", file=sys.stderr)
            self.worker.stop()
            self.worker = None
            self.r.flushdb()
            factor *= 3
        after_t = common.Deadline(self.args.timeout + (t_due - time.time()),  # --timeout counts from T
                                  f"within {self.args.timeout:.0f} s of T")
        try:
            common.wait_for(lambda: self.r.exists(common.KEY_DONE), after_t,
                            f"{n} jobs to run", self.worker, interval=0.05)
        except TimeoutError as e:
            now = time.time()
            count = int(self.r.get(common.KEY_COUNT) or 0)
            raise Partial(str(e), {"n": n, "completed": count, "seconds_since_T": round(now - t_due, 1),
                                   # the last job ends after now, so N / (now - T) bounds the figure
                                   "jobs_per_s_at_most": round(n / (now - t_due), 1),
                                   "enqueue_s": round(t_enqueued - t0, 3)}) from None
        done = float(self.r.get(common.KEY_DONE))
        first = float(self.r.get(common.KEY_FIRST))
        rss = self.worker.peak_rss_mb()
        time.sleep(0.5)  # a job run twice would push the count past n
        count = int(self.r.get(common.KEY_COUNT))
        seconds = done - t_due
        out = {**self.base(), "n": n, "jobs_per_s": round(n / seconds, 1), "seconds": round(seconds, 3),
               "first_job_after_T_s": round(first - t_due, 3),
               "enqueue_s": round(t_enqueued - t0, 3), "idle_before_T_s": round(t_due - t_enqueued, 3),
               "worker_peak_rss_mb": rss}
        if attempt > 1:
            out["note"] = "the first enqueue outlasted its lead time; this is the second try, with a longer lead"
        if count != n:
            out["warning"] = f"the counter reached {count}, not {n}: some jobs ran more than once"
        return out

    def run_lateness(self) -> dict:
        n, rate, delay = self.args.n, self.args.rate, self.args.delay
        self.start_worker()
        stats: dict = {}
        self.mod.enqueue(self.ctx, "late", common.items_paced(n, rate, delay, stats, self.deadline))
        after_stream = common.Deadline(self.args.timeout, f"within {self.args.timeout:.0f} s of the stream's end")
        try:
            common.wait_for(lambda: self.r.llen(common.KEY_LATE) >= n, after_stream,
                            f"{n} jobs to run", self.worker, interval=0.05)
        except TimeoutError as e:
            now = time.time()
            ms = sorted(float(v) * 1000.0 for v in self.r.lrange(common.KEY_LATE, 0, -1))
            completed = len(ms)
            if "last_due" in stats:
                # a job not yet run is due at or before the last due time and starts after now
                ms = sorted(ms + [(now - stats["last_due"]) * 1000.0] * (n - completed))
            fields = {"n": n, "rate": rate, "delay_s": delay, "completed": completed}
            if ms and "last_due" in stats:
                fields.update({"p50_ms_at_least": round(common.percentile(ms, 50), 1),
                               "p99_ms_at_least": round(common.percentile(ms, 99), 1),
                               "max_ms_at_least": round(ms[-1], 1)})
            raise Partial(str(e), fields) from None
        rss = self.worker.peak_rss_mb()
        values = sorted(float(v) for v in self.r.lrange(common.KEY_LATE, 0, -1))
        ms = [v * 1000.0 for v in values]
        return {**self.base(), "n": n, "rate": rate, "delay_s": delay,
                "achieved_rate": round(n / stats["stream_s"], 1),
                "enqueue_max_behind_ms": round(stats["max_behind_s"] * 1000, 1),
                "p50_ms": round(common.percentile(ms, 50), 1), "p99_ms": round(common.percentile(ms, 99), 1),
                "max_ms": round(ms[-1], 1), "min_ms": round(ms[0], 1),
                "early": sum(1 for v in ms if v < 0), "worker_peak_rss_mb": rss}

    def run_mixed(self) -> dict:
        """A steady stream (--rate for --n jobs, each due --delay after its enqueue) where one job in
        --slow-every takes --slow-ms (issue 11): the lateness of the other jobs, and of the slow ones apart."""
        n, rate, delay, every, slow_ms = self.args.n, self.args.rate, self.args.delay, self.args.slow_every, \
            self.args.slow_ms
        slow = sum(1 for i in range(n) if common.is_slow(i, every))
        self.start_worker()
        stats: dict = {}
        items = common.items_paced(n, rate, delay, stats, self.deadline,
                                   args_of=lambda i, due: (due, slow_ms if common.is_slow(i, every) else 0))
        self.mod.enqueue(self.ctx, "mixed", items)
        after_stream = common.Deadline(self.args.timeout, f"within {self.args.timeout:.0f} s of the stream's end")
        try:
            common.wait_for(lambda: self.r.llen(common.KEY_LATE) >= n - slow and self.r.llen(common.KEY_SLOW) >= slow,
                            after_stream, f"{n} jobs to run", self.worker, interval=0.05)
        except TimeoutError as e:
            ms = sorted(float(v) * 1000.0 for v in self.r.lrange(common.KEY_LATE, 0, -1))
            fields = {"n": n, "rate": rate, "completed": len(ms) + self.r.llen(common.KEY_SLOW)}
            if ms and len(ms) < n - slow:   # an ordinary job not yet run is due by the last due time, starts after now
                ms = sorted(ms + [(time.time() - stats["last_due"]) * 1000.0] * (n - slow - len(ms)))
                fields["p99_ms_at_least"] = round(common.percentile(ms, 99), 1)
            raise Partial(str(e), fields) from None
        rss = self.worker.peak_rss_mb()
        ms = sorted(float(v) * 1000.0 for v in self.r.lrange(common.KEY_LATE, 0, -1))
        slow_ms_late = sorted(float(v) * 1000.0 for v in self.r.lrange(common.KEY_SLOW, 0, -1))
        return {**self.base(), "n": n, "rate": rate, "delay_s": delay, "slow": slow, "slow_ms": slow_ms,
                "achieved_rate": round(n / stats["stream_s"], 1),
                "enqueue_max_behind_ms": round(stats["max_behind_s"] * 1000, 1),
                "p50_ms": round(common.percentile(ms, 50), 1), "p99_ms": round(common.percentile(ms, 99), 1),
                "max_ms": round(ms[-1], 1), "slow_max_ms": round(slow_ms_late[-1], 1) if slow_ms_late else None,
                "worker_peak_rss_mb": rss}


class Stop(Exception):
    pass


def _on_term(signum, frame):
    raise Stop(f"stopped by signal {signum}")


def child_main(args) -> int:
    signal.signal(signal.SIGTERM, _on_term)
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="peerbench-")
    run = None
    try:
        if args.workload in ("wait", "mixed") and args.one not in THREADED:
            raise RuntimeError(f"the {args.workload} workload is measured for {', '.join(THREADED)} only")
        run = Run(args, args.one, log_dir)
        result = getattr(run, f"run_{args.workload}")()
    except (Exception, Stop, KeyboardInterrupt) as e:
        result = {"peer": args.one, "workload": args.workload, "error": f"{type(e).__name__}: {e}"}
        if isinstance(e, Partial):
            result["error"] = str(e)
            result.update(e.fields)
        elif run is not None and run.worker is not None:
            tail = run.worker.log_tail(600)
            if tail:
                result["worker_log_tail"] = tail
    finally:
        if run is not None:
            run.close()
        if not args.log_dir:
            shutil.rmtree(log_dir, ignore_errors=True)
    print(json.dumps(result), flush=True)
    return 0


# ------------------------------------------------------------------ driver

def run_peer(args, peer: str, argv_rest: list[str]) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--one", peer] + argv_rest
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # setup and enqueue (bounded by --timeout), the lateness stream, then the wait (--timeout)
    limit = 2 * args.timeout + (args.n / args.rate if args.workload in ("lateness", "mixed") else 0) + 120
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # the child ends its worker in its finally
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        return {"peer": peer, "workload": args.workload, "error": f"did not finish within {limit:.0f} s"}
    for line in reversed(out.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return {"peer": peer, "workload": args.workload,
            "error": f"the peer's run exited with code {proc.returncode} and no result: {err.strip()[-600:]}"}


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--redis-url", required=True, help="a private Redis db, FLUSHDB'd between peers")
    p.add_argument("--workload", required=True, choices=WORKLOADS)
    p.add_argument("--n", type=int, help="jobs (default: burst/enqueue 20000, lateness 30000, wait 2000, "
                                          "mixed 15000)")
    p.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    p.add_argument("--rate", type=float, default=1000.0, help="lateness: jobs enqueued per second (default 1000)")
    p.add_argument("--delay", type=float, default=1.0, help="lateness: each job is due this long after its enqueue")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds a peer may take to enqueue, and to run the jobs from T or from the end "
                        "of the lateness stream (default 300)")
    p.add_argument("--threads", type=_threads,
                   help="wait/mixed: one worker process of N threads, or 'defaults' (the worker's own defaults); "
                        "unset: the one-process mode of burst/enqueue/lateness")
    p.add_argument("--ms", type=float, default=20.0, help="wait: milliseconds each job waits (default 20)")
    p.add_argument("--slow-every", type=int, default=500, help="mixed: one job in this many is slow (default 500)")
    p.add_argument("--slow-ms", type=float, default=2000.0, help="mixed: milliseconds a slow job takes (default 2000)")
    p.add_argument("--verbose-workers", action="store_true",
                   help="keep each worker's default logging (default: per-job log lines off)")
    p.add_argument("--log-dir", help="keep the workers' logs here (default: a temporary dir, removed)")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.n is None:
        args.n = DEFAULT_N[args.workload]
    if args.n < 1 or args.rate <= 0 or args.delay < 0:
        p.error("--n and --rate must be positive, --delay not negative")
    if args.workload in ("wait", "mixed") and args.threads is None:
        p.error(f"--workload {args.workload} needs --threads N or --threads defaults")
    return args


def _threads(text: str):
    if text == "defaults":
        return text
    if not text.isdigit() or not 1 <= int(text) <= 1024:
        raise argparse.ArgumentTypeError("a number of threads from 1 to 1024, or 'defaults'")
    return int(text)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    common.check_redis_url(args.redis_url)
    if args.one:
        return child_main(args)
    peers = [s.strip() for s in args.peers.split(",") if s.strip()]
    unknown = [s for s in peers if s not in PEERS]
    if unknown:
        raise SystemExit(f"unknown peer(s): {', '.join(unknown)}; known: {', '.join(PEERS)}")
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
    rest = ["--redis-url", args.redis_url, "--workload", args.workload, "--n", str(args.n),
            "--rate", str(args.rate), "--delay", str(args.delay), "--timeout", str(args.timeout),
            "--ms", str(args.ms), "--slow-every", str(args.slow_every), "--slow-ms", str(args.slow_ms)]
    if args.threads is not None:
        rest += ["--threads", str(args.threads)]
    if args.verbose_workers:
        rest.append("--verbose-workers")
    if args.log_dir:
        rest += ["--log-dir", os.path.abspath(args.log_dir)]
    for peer in peers:
        print(json.dumps(run_peer(args, peer, rest)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
