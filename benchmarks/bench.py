"""`make bench`: delayq against RQ, Huey, Dramatiq, Celery and ARQ on delayed jobs, side by side in one run.

Everything on this machine: one private redis-server started for the run (shared
by delayq and the peers; the shared one on 6379 is never touched), the local
MariaDB (each run on its own table prefix), the peers in their own virtualenv
(benchmarks/.venv-peers, from benchmarks/requirements.txt). Each figure is the
median of BENCH_RUNS runs (default 3) with min and max. Results are printed as a
table and written to benchmarks/results/latest.json.

    make bench             # BENCH_N=20000, 3 runs, lateness 1000 jobs/s for 30 s, backlog 1,000,000, the scaling
                           # figures (benchmarks/scaling.py: 1, 2, 4 runners, plain Redis and Cluster), the dashboard's
                           # search page on 1,000,000 jobs (benchmarks/web_page.py), the issue-10/11 sections 6-12,
                           # and issue 26's scale section (benchmarks/scale.py: BENCH_SCALE=200000 pending jobs and as
                           # many finished, on its own private mariadbd and redis-server)
    make bench-quick       # N=2000, 1 run, Huey and Dramatiq only (Dramatiq alone in 6-9), lateness 200 jobs/s for
                           # 3 s, backlog 20,000, cron timing in 15-second minutes: about 3 min; its figures are for
                           # development, the targets are judged on make bench
    BENCH_LONG=1 make bench                              # the hanging-job case for 10 minutes instead of 3
    .venv/bin/python benchmarks/bench.py issue11 issue10 # only sections 6-11 and/or 12 (results/parts.json)
    .venv/bin/python benchmarks/bench.py burst           # only sections 1-2, with the runner of record beside

Sections 1 and 12 also run the code of record (benchmarks/baseline.py: the one-job-at-a-time runner, commit
BENCH_BASELINE, from a temporary git worktree) run by run beside the current code, so "no slower" is judged
in one run on one machine. Each section's figures go to results/partial.json as soon as it ends.

Sections 6-12 (issues 11 and 10): I/O-bound bursts at 8 and 64 threads and with each side's defaults, a
mixed stream, CPU-bound jobs in 1 and 2 processes, bin/loop.sh under real cron timing, and enqueueing
through the client; docs/PERFORMANCE.md says how each is measured.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]

import client_enqueue as E  # noqa: E402
from baseline import Baseline  # noqa: E402
from baseline import NAME as BASELINE  # noqa: E402
import concurrency as C  # noqa: E402
import cron_timing as CT  # noqa: E402
import delayq_side as D  # noqa: E402
import scale  # noqa: E402
import scaling  # noqa: E402
import web_page  # noqa: E402
from ceiling import ceiling  # noqa: E402
from procfs import pid_of, quiet  # noqa: E402
from tests.chaos.servers import PrivateRedis  # noqa: E402

QUICK = os.environ.get("BENCH_QUICK") == "1"
N = int(os.environ.get("BENCH_N", "2000" if QUICK else "20000"))
RUNS = int(os.environ.get("BENCH_RUNS", "1" if QUICK else "3"))
RATE, SECONDS = (200, 3) if QUICK else (1000, 30)
BACKLOG = int(os.environ.get("BENCH_BACKLOG", "20000" if QUICK else "1000000"))
MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
# quick: only the two peers that set the bar in every full run (RQ and Celery need minutes even at N=2,000)
PEERS = os.environ.get("BENCH_PEERS", "huey,dramatiq" if QUICK else "rq,huey,dramatiq,celery,arq")
PEER_TIMEOUT = os.environ.get("BENCH_PEER_TIMEOUT", "20" if QUICK else "120")   # seconds a peer may take after T


def stat(values: list[float], digits: int = 1) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {"median": None}
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits),
            "max": round(max(values), digits), "runs": len(values)}


def peers_python() -> tuple[str | None, str | None]:
    """(the peers' python, None), or (None, why they cannot run)."""
    done = subprocess.run(["bash", os.path.join(HERE, "peers", "setup.sh")], capture_output=True, text=True)
    if done.returncode != 0:
        why = f"peers not installed: {done.stderr.strip()[-300:]}"
        print(f"bench: {why}; delayq alone", file=sys.stderr)
        return None, why
    return done.stdout.strip().splitlines()[-1], None


def run_peers(python: str | None, why_not: str | None, redis_url: str, workload: str,
              extra: list[str], peers: str = PEERS, timeout: str = PEER_TIMEOUT) -> dict[str, list[dict]]:
    """RUNS runs of each peer. Every peer asked for gets rows: a peer that cannot run, or whose run printed
    nothing, gets an error row saying why. A peer that failed or ran out of BENCH_PEER_TIMEOUT is not run
    again (its error and bound stand, and waiting out the timeout twice more would not change them)."""
    peers = [p for p in peers.split(",") if p and p != "none"]
    if not python:
        return {p: [{"peer": p, "error": why_not or "peers not run"}] for p in peers}
    out: dict[str, list[dict]] = {}
    for _ in range(RUNS):
        if not peers:
            break
        done = subprocess.run([python, os.path.join(HERE, "peers", "run.py"), "--redis-url", redis_url, "--workload",
                               workload, "--peers", ",".join(peers), "--timeout", timeout, *extra],
                              capture_output=True, text=True, cwd=ROOT)
        seen = set()
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                seen.add(row["peer"])
                out.setdefault(row["peer"], []).append(row)
        for peer in peers:
            if peer not in seen:
                tail = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1][-300:]
                out.setdefault(peer, []).append({"peer": peer, "error": f"run.py printed no result: {tail}"})
        peers = [p for p in peers if "error" not in out[p][-1]]
    return out


def peer_figure(rows: list[dict], key: str) -> dict:
    """The median of a peer's finished runs, and how many there were. For a peer that did not finish a run:
    its error and the bound it reached (`jobs_per_s_at_most`, `p99_ms_at_least`, ...), as `bound`."""
    errors = [r for r in rows if "error" in r]
    figure = stat([r[key] for r in rows if key in r and "error" not in r])
    if errors:
        bound = next(((k, v) for k, v in errors[0].items() if k.startswith(key + "_at_")), None)
        figure["error"] = errors[0]["error"] + (f"; {bound[0].replace('_', ' ')} {bound[1]}" if bound else "")
        if bound:
            figure["bound"] = bound[1]
    return figure


def main() -> None:
    began = time.monotonic()
    redis = PrivateRedis()
    url = redis.url
    results: dict = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "n": N, "runs": RUNS,
                     "machine": f"{platform.node()}, {os.cpu_count()} cores, {platform.python_version()}", "quick": QUICK}
    try:
        py, why_not = peers_python() if PEERS not in ("", "none") else (None, "BENCH_PEERS is empty")
        measure_issue11(py, why_not, url, results)
        checkpoint(results)
        measure_issue10(url, results)
        checkpoint(results)
        measure_burst_and_enqueue(py, why_not, url, results)
        checkpoint(results)
        late = [D.lateness(MYSQL, url, RATE, SECONDS) for _ in range(RUNS)]
        results["lateness_p99_ms"] = {"delayq": stat([x["p99_ms"] for x in late])}
        results["lateness_p50_ms"] = {"delayq": stat([x["p50_ms"] for x in late])}
        results["lateness_max_ms"] = {"delayq": stat([x["max_ms"] for x in late])}
        peer_late = run_peers(py, why_not, url, "lateness", ["--rate", str(RATE), "--n", str(RATE * SECONDS)])
        for key in ("p99_ms", "p50_ms", "max_ms"):
            results[f"lateness_{key}"].update({k: peer_figure(v, key) for k, v in peer_late.items()})
        checkpoint(results)
        backlog = [D.burst(MYSQL, url, N, backlog=BACKLOG) for _ in range(RUNS)]
        results["backlog"] = {"pending": BACKLOG, "burst_jobs_per_s": stat([b["jobs_per_s"] for b in backlog]),
                              "rebuild_seconds": stat([b["rebuild_seconds"] for b in backlog])}
        checkpoint(results)
        ceil = [ceiling(MYSQL, url, N) for _ in range(RUNS)]
        results["ceiling"] = {k: stat([c[k] for c in ceil]) for k in ("batched_500", "single_row_autocommit")}
        checkpoint(results)
        if not QUICK:   # minutes of 20 ms jobs: not in bench-quick (run benchmarks/scaling.py alone)
            results["scaling"] = scaling.figures(MYSQL, url, RUNS, [redis.proc.pid])
        results["web_page"] = web_page.run(BACKLOG)      # the dashboard's search page on as many jobs as the backlog
        checkpoint(results)
        if not QUICK:   # its own private servers, BENCH_SCALE jobs (not in bench-quick: run benchmarks/scale.py alone)
            results["scale"] = scale.guarded(scale.run)     # its own servers failing must not lose the rest
    finally:
        redis.stop()
    results["seconds"] = round(time.monotonic() - began)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "quick.json" if QUICK else "latest.json"), "w") as f:
        json.dump(results, f, indent=2)
    print(report(results))


def checkpoint(results: dict) -> None:
    """What was measured so far, in results/partial.json: a section that fails later loses nothing before it."""
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "partial.json"), "w") as f:
        json.dump(results, f, indent=2)


def best_peer(figures: dict) -> tuple[str | None, float | None]:
    """The peer with the highest median; a peer that did not finish counts at the bound it reached
    (`jobs_per_s_at_most`), so a peer cut short can never make a ratio look better than it is."""
    peers = {}
    for name, f in figures.items():
        if name.startswith("delayq"):
            continue
        value = f.get("median") if f.get("median") is not None else f.get("bound")
        if value is not None:
            peers[name + (" (at most)" if f.get("median") is None else "")] = value
    if not peers:
        return None, None
    name = max(peers, key=peers.get)
    return name, peers[name]


def _ratio(mine: float | None, figures: dict, factor: float, unit: str = "") -> tuple[str, str, bool | None]:
    peer, theirs = best_peer(figures)
    if mine is None:
        return "no figure", "-", None
    if not theirs:
        return f"{mine}{unit} (no peer ran)", "-", None
    return f"{mine} vs {peer} {theirs}", f"{mine / theirs:.2f}x", mine >= factor * theirs


def _limit(value: float | None, limit: float, unit: str, inclusive: bool = False) -> tuple[str, str, bool | None]:
    if value is None:
        return "no figure", "-", None
    return f"{value}{unit}", "-", value <= limit if inclusive else value < limit


def report(r: dict) -> str:
    lines = [f"delayq benchmark, {r['when']}, {r['machine']}, N={r['n']}, median of {r['runs']} run(s), "
             f"took {r.get('seconds', '?')} s", ""]
    if r.get("quick"):
        lines[-1:] = ["quick run: small N, one run, Huey and Dramatiq only; the figures are for development, "
                      "judge the targets on `make bench`", ""]

    def section(title: str, figures: dict, unit: str) -> None:
        lines.extend(section_lines(r, title, figures, unit))

    lines += burst_and_enqueue_sections(r)
    section("3. lateness p99, steady stream", r["lateness_p99_ms"], "ms")
    section("   lateness p50", r["lateness_p50_ms"], "ms")
    section("   lateness max", r["lateness_max_ms"], "ms")
    b, c = r["backlog"], r["ceiling"]
    lines += [f"4. backlog: burst with {b['pending']:,} pending in the future: {b['burst_jobs_per_s']['median']} jobs/s; "
              f"index rebuild of the backlog: {b['rebuild_seconds']['median']} s", ""]
    lines += [f"5. write-set ceiling (plain script): batched by 500 {c['batched_500']['median']} jobs/s, "
              f"single-row autocommit {c['single_row_autocommit']['median']} jobs/s", ""]
    lines += report_issue11(r) + report_issue10(r)
    burst = r["burst"]["delayq mysql+redis"]["median"]
    ceiling_ = c["batched_500"]["median"]
    loaded = b["burst_jobs_per_s"]["median"]
    flat = abs(loaded - burst) / burst if burst and loaded is not None else None
    rss = r.get("runner_peak_rss_mb")
    targets = [
        ("no-op burst >= 4x best peer", *_ratio(burst, r["burst"], 4)),
        _not_slower(r),
        (">= 30% of the write-set ceiling", f"{burst} / {ceiling_}", f"{burst / ceiling_:.0%}", burst >= 0.3 * ceiling_)
        if burst and ceiling_ else (">= 30% of the write-set ceiling", "no figure", "-", None),
        ("bulk enqueue >= 2x best peer", *_ratio(r["enqueue"]["delayq bulk"]["median"], r["enqueue"], 2)),
        ("lateness p99 <= 100 ms", *_limit(r["lateness_p99_ms"]["delayq"]["median"], 100, " ms", inclusive=True)),
        ("backlog within 10% of empty", f"{loaded} vs {burst}", f"{flat:.0%} off", flat <= 0.10)
        if flat is not None else ("backlog within 10% of empty", "no figure", "-", None),
        ("rebuild of the backlog < 30 s", *_limit(b["rebuild_seconds"]["median"], 30, " s")),
        ("runner peak RSS < 100 MB", *_limit(rss, 100, " MB")),
    ]
    if r.get("scaling"):
        lines += [scaling.report(r["scaling"]), ""]
    web = r.get("web_page")
    if web:
        lines += [web_page.report(web), ""]
        targets.append((f"dashboard page < 200 ms ({web['jobs']:,} jobs)",
                        *_limit(web["slowest_common_ms"], web_page.TARGET_MS, " ms slowest median")))
        targets.append((f"every dashboard page p95 < 100 ms ({web['jobs']:,} jobs; issue 24)",
                        *_limit(web["slowest_p95_ms"], web_page.P95_MS, " ms slowest p95")))
    if r.get("scale") and "error" in r["scale"]:
        lines += [f"issue 26's scale section (benchmarks/scale.py): no figure: {r['scale']['error']}", ""]
    elif r.get("scale"):
        lines += [scale.report(r["scale"], with_targets=False), ""]
        targets += [(f"{what} ({r['scale']['scale']:,} pending; issue 26)", figure, "-", met)
                    for what, figure, met in scale.targets(r["scale"])]
    lines += target_lines("targets (issues 5, 14 and 26)", targets)
    lines += target_lines("targets (issue 11)", targets_issue11(r))
    lines += target_lines("targets (issue 10)", targets_issue10(r))
    return "\n".join(lines)


def section_lines(r: dict, title: str, figures: dict, unit: str) -> list[str]:
    """A numbered section: one line per contender, median (min, max), or why there is no figure."""
    lines = [f"{title} ({unit})"]
    width = max([22, *(len(name) for name in figures)])
    for name, f in figures.items():
        if f.get("median") is None:
            lines.append(f"  {name:<{width}} no figure: {f.get('error', 'none was measured')}")
            continue
        runs = f" over {f['runs']} of {r['runs']} runs" if f.get("runs", r["runs"]) < r["runs"] else ""
        lines.append(f"  {name:<{width}} {f['median']:>10}  (min {f['min']}, max {f['max']}{runs})")
        if f.get("error"):
            lines.append(f"  {'':<{width}} then: {f['error']}")
    lines.append("")
    return lines


def target_lines(title: str, targets: list[tuple]) -> list[str]:
    """One line per target: what, the figure, the ratio, met / NOT MET (n/a: no figure to judge)."""
    if not targets:
        return []
    lines = [title]
    for name, figure, ratio, met in targets:
        mark = "met" if met else ("NOT MET" if met is False else "n/a")
        lines.append(f"  {name:<32} {figure:<34} {ratio:>10}  {mark}")
    return lines


# ---------------------------------------------------------------------------------------------------------
# Issue 11 (concurrent runner, time limits, the minute boundary) and issue 10 (the application's client):
# sections 6-12 and their targets. delayq's side: concurrency.py, cron_timing.py, client_enqueue.py; the
# peers' (Huey, Dramatiq, Celery with a thread pool): peers/run.py --workload wait|mixed --threads N|defaults.
LONG = os.environ.get("BENCH_LONG") == "1"          # the hang case for 10 minutes instead of 3
IO_N = int(os.environ.get("BENCH_IO_N", "500" if QUICK else "2000"))
IO_MS = 20                                           # an I/O-bound job waits this long (ms)
MIXED_RATE, MIXED_SECONDS = 500, (5 if QUICK else 30)
CPU_N = int(os.environ.get("BENCH_CPU_N", "200" if QUICK else "1000"))
ENQ_ONE, ENQ_EACH = (300, 100) if QUICK else (2000, 1000)     # single enqueues: one thread; each of 8 threads
TX_SAMPLES = 12 if QUICK else 100                    # jobs of each kind in the in-transaction lateness
BULK_RECORD = 32201                                  # docs/PERFORMANCE.md: bulk enqueue, the figure of record
# the peers with a thread pool; quick: Dramatiq only (Celery's timers cap its delayed bursts, see peers/README)
THREADED = os.environ.get("BENCH_PEERS_THREADED", "dramatiq" if QUICK else
                          ",".join(p for p in PEERS.split(",") if p in ("huey", "dramatiq", "celery")))
WAIT_TIMEOUT = os.environ.get("BENCH_WAIT_TIMEOUT", "20" if QUICK else "90")   # Huey's default thread: ~45 s
IO_CASES = (("c8", ("--concurrency", "8", "--processes", "1"), "8"),
            ("c64", ("--concurrency", "64", "--processes", "1"), "64"),
            ("defaults", (), "defaults"))


def progress(what: str, since: float) -> float:
    """One line on stderr as each part of issues 10-11 ends (a full run is long): returns now."""
    print(f"bench: {what} done in {time.monotonic() - since:.0f} s", file=sys.stderr, flush=True)
    return time.monotonic()


def measure_issue11(py: str | None, why_not: str | None, url: str, results: dict) -> None:
    """Sections 6-11: I/O-bound bursts (8, 64, defaults), the mixed stream, CPU-bound processes, cron timing."""
    results["io_burst"], results["io_rss_mb"] = {}, {}
    t = time.monotonic()
    for case, flags, threads in IO_CASES:
        runs = [C.due_at_once(MYSQL, url, IO_N, C.WAIT, {"ms": IO_MS}, flags) for _ in range(RUNS)]
        results["io_burst"][case] = {"delayq": stat([x["jobs_per_s"] for x in runs])}
        results["io_rss_mb"][case] = stat([x["runner_peak_rss_mb"] for x in runs])
        peers = run_peers(py, why_not, url, "wait", ["--n", str(IO_N), "--ms", str(IO_MS), "--threads", threads],
                          peers=THREADED, timeout=WAIT_TIMEOUT)
        results["io_burst"][case].update({k: peer_figure(v, "jobs_per_s") for k, v in peers.items()})
        t = progress(f"I/O-bound burst, {case}", t)
    mixed = [C.mixed(MYSQL, url, MIXED_RATE, MIXED_SECONDS, flags=IO_CASES[0][1]) for _ in range(RUNS)]
    peers = run_peers(py, why_not, url, "mixed", ["--rate", str(MIXED_RATE), "--n", str(MIXED_RATE * MIXED_SECONDS),
                                                  "--threads", "8"], peers=THREADED)
    for key in ("p99_ms", "p50_ms", "max_ms"):
        results[f"mixed_{key}"] = {"delayq": stat([x[key] for x in mixed])}
        results[f"mixed_{key}"].update({k: peer_figure(v, key) for k, v in peers.items()})
    t = progress("mixed stream", t)
    cpu = [(C.due_at_once(MYSQL, url, CPU_N, C.SPIN, {"ms": 10}, ("--processes", "1")),
            C.due_at_once(MYSQL, url, CPU_N, C.SPIN, {"ms": 10}, ("--processes", "2"))) for _ in range(RUNS)]
    results["cpu"] = {"--processes 1": stat([a["jobs_per_s"] for a, _ in cpu]),
                      "--processes 2": stat([b["jobs_per_s"] for _, b in cpu])}
    results["cpu_ratio"] = stat([b["jobs_per_s"] / a["jobs_per_s"] for a, b in cpu], 2)    # P=1, P=2 run in pairs
    t = progress("CPU-bound burst", t)
    plan = [("slow", 2), ("hang", 2)] if QUICK else [("slow", 3), ("hang", 10 if LONG else 3)]
    results["cron"] = CT.run(MYSQL, url, plan, minute=15 if QUICK else 60, together=QUICK)
    progress("cron timing", t)


def measure_burst_and_enqueue(py: str | None, why_not: str | None, url: str, results: dict) -> None:
    """Sections 1 and 2: the no-op burst (delayq on three backends, the runner's RSS, the peers) and enqueue."""
    with tempfile.TemporaryDirectory() as tmp, Baseline() as old:
        sqlite = f"sqlite:///{tmp}/bench.db"
        mine, theirs = [], []
        mariadbd = pid_of("mariadbd")
        for _ in range(RUNS):        # run by run beside the code of record: the same servers, the same noise
            quiet(mariadbd)          # each from a quiet server: not in the purge of the other's dropped tables
            mine.append(D.burst(MYSQL, url, N)["jobs_per_s"])
            quiet(mariadbd)
            theirs.append(old.run("burst", MYSQL, url, N).get("jobs_per_s"))
        results["burst"] = {"delayq mysql+redis": stat(mine)}
        results["burst"].update({name: stat([D.burst(db, rd, N)["jobs_per_s"] for _ in range(RUNS)])
                                 for name, db, rd in (("delayq mysql", MYSQL, None), ("delayq sqlite", sqlite, None))})
        results["burst"][BASELINE] = stat([x for x in theirs if x]) if old.path else {"error": old.why_not}
    results["runner_peak_rss_mb"] = D.burst(MYSQL, url, N)["runner_peak_rss_mb"]
    results["burst"].update({k: peer_figure(v, "jobs_per_s") for k, v in
                             run_peers(py, why_not, url, "burst", ["--n", str(N)]).items()})
    enq = [D.enqueue(MYSQL, url, N) for _ in range(RUNS)]
    results["enqueue"] = {"delayq one by one": stat([e["one_by_one_per_s"] for e in enq]),
                          "delayq bulk": stat([e["bulk_per_s"] for e in enq])}
    results["enqueue"].update({k: peer_figure(v, "jobs_per_s") for k, v in
                               run_peers(py, why_not, url, "enqueue", ["--n", str(N)]).items()})


def burst_and_enqueue_sections(r: dict) -> list[str]:
    """Sections 1 and 2 of the table (make bench, and `bench.py burst`)."""
    return (section_lines(r, "1. burst of delayed no-op jobs, one runner with its defaults", r["burst"], "jobs/s")
            + section_lines(r, "2. delayed enqueue", r["enqueue"], "jobs/s"))


def report_burst_and_enqueue(r: dict) -> list[str]:
    """`bench.py burst`: sections 1 and 2, and the burst's target (make bench has it in its targets block)."""
    if "burst" not in r:
        return []
    lines = burst_and_enqueue_sections(r)
    return lines + target_lines("targets (issue 11, the no-op burst)", [
        ("no-op burst >= 4x best peer", *_ratio(r["burst"]["delayq mysql+redis"]["median"], r["burst"], 4)),
        _not_slower(r), ("runner peak RSS < 100 MB", *_limit(r.get("runner_peak_rss_mb"), 100, " MB"))])


def _not_slower(r: dict) -> tuple:
    """Issue 11: the concurrent runner's no-op burst against the runner it replaced, measured in the same run."""
    name = "no-op burst no slower than the one-job-at-a-time runner (same run)"
    mine, old = r["burst"]["delayq mysql+redis"].get("median"), r["burst"].get(BASELINE, {}).get("median")
    if not mine or not old:
        return name, "no figure", "-", None
    return name, f"{mine} vs {old}", f"{mine / old:.0%}", mine >= old


def measure_issue10(url: str, results: dict) -> None:
    """Section 12: single enqueues from 1 and 8 threads through one client, bulk, the in-transaction lateness."""
    t = time.monotonic()
    threads = [E.threads(MYSQL, url, ENQ_ONE, ENQ_EACH) for _ in range(RUNS)]
    results["client_threads"] = {"delayq, one thread": stat([t["one_thread_per_s"] for t in threads]),
                                 "delayq, 8 threads": stat([t["8_threads_per_s"] for t in threads])}
    results["client_threads_ratio"] = stat([t["ratio"] for t in threads], 2)     # within each run: the same noise
    results["client_threads_busy"] = stat([t["one_thread_cores_busy"] for t in threads], 2)
    results["client_threads_cpu_us"] = {"one thread": stat([t["one_thread_cpu_us"] for t in threads], 0),
                                        "8 threads": stat([t["8_threads_cpu_us"] for t in threads], 0)}
    grouped = [E.grouping(MYSQL, url) for _ in range(RUNS)]
    results["client_32_threads"] = {
        f"{how}: {what}": stat([g[key][field] for g in grouped], 0)
        for key, how in (("grouped", "grouped (client.enqueue)"), ("alone", "each job alone (Manager.insert)"))
        for field, what in (("per_s", "jobs/s"), ("cpu_us", "CPU µs a job"))}
    bulk, record = [], []
    with Baseline() as old:
        for _ in range(RUNS):        # run by run beside the code of record's bulk enqueue (its manager's enqueue_many)
            bulk.append(E.bulk(MYSQL, url, N))
            record.append(old.run("enqueue", MYSQL, url, N).get("bulk_per_s"))
    results["client_bulk"] = {"client.enqueue_many": stat([b["enqueue_many_per_s"] for b in bulk]),
                              "--from-file (the CLI)": stat([b["from_file_per_s"] for b in bulk]),
                              BASELINE: stat([x for x in record if x]) if old.path else {"error": old.why_not}}
    results["in_transaction"] = {"runner defaults": E.in_transaction(MYSQL, url, TX_SAMPLES),
                                 "runner --interval 0.05": E.in_transaction(MYSQL, url, TX_SAMPLES,
                                                                            ("--interval", "0.05"))}
    progress("enqueue through the client", t)


def _median(figures: dict, name: str) -> float | None:
    return figures.get(name, {}).get("median")


def report_issue11(r: dict) -> list[str]:
    if "io_burst" not in r:
        return []
    io, lines = r["io_burst"], []
    lines += section_lines(r, f"6. I/O-bound burst: {IO_N:,} jobs due at once, each waiting {IO_MS} ms, one worker "
                              "process of 8 threads (limit 400 jobs/s)", io["c8"], "jobs/s")
    lines += section_lines(r, "7. the same at 64 threads (limit 3,200 jobs/s)", io["c64"], "jobs/s")
    lines += section_lines(r, "8. the same, each with its own defaults (delayq 1 process x 16 threads; Dramatiq one "
                              "process per core x 8 threads; Huey 1 thread; Celery prefork, one process per core)",
                           io["defaults"], "jobs/s")
    rss = r["io_rss_mb"]
    lines += [f"   delayq runner peak RSS (runner + its worker, summed): 8 threads {_median(rss, 'c8')} MB, "
              f"64 threads {_median(rss, 'c64')} MB, defaults {_median(rss, 'defaults')} MB", ""]
    title = f"9. mixed: {MIXED_RATE} jobs/s for {MIXED_SECONDS} s, 1 in 500 waits 2 s, 8 threads: lateness of the rest"
    lines += section_lines(r, title + ", p99", r["mixed_p99_ms"], "ms")
    lines += section_lines(r, "   p50", r["mixed_p50_ms"], "ms")
    lines += section_lines(r, "   max", r["mixed_max_ms"], "ms")
    lines += section_lines(r, f"10. CPU-bound burst: {CPU_N:,} jobs computing 10 ms each, 16 threads per process",
                           r["cpu"], "jobs/s")
    lines[-1:] = [f"   P=2 / P=1 in each run (the two run back to back): median {r['cpu_ratio']['median']}x "
                  f"(min {r['cpu_ratio']['min']}, max {r['cpu_ratio']['max']})", ""]
    lines += cron_lines(r["cron"])
    return lines


def cron_lines(cron: dict) -> list[str]:
    minute = next(iter(cron.values()))["minute_s"]
    lines = ["11. under bin/loop.sh 2 bin/run_due.py, a loop started at each " +
             ("real minute boundary" if minute == 60 else f"{minute:g}-second 'minute' (shortened, times scaled: "
              "not real cron timing)") + ", 5 no-op jobs/s due 1 s after their enqueue; one run"]
    scale = minute / 60
    for name, what in (("slow", f"a {50 * scale:g} s job due at second {56 * scale:g} of each minute"),
                       ("hang", f"a job that hangs forever (stopped at its {max(1, round(30 * scale))} s limit), "
                                f"due at second {56 * scale:g} of each minute")):
        c = cron.get(name)
        if not c:
            continue
        lines.append(f"  {what}, {c['minutes']} minute(s): the other jobs' lateness p50 {c['p50_ms']} ms, "
                     f"p99 {c['p99_ms']} ms, max {c['max_ms']} ms ({c['jobs']} jobs, {c['not_run']} not run)")
        lines.append(f"    most runs alive at once {c.get('max_runs')} "
                     f"({c.get('seconds_with_2_runs_or_more')} s with 2 or more), most delayq processes "
                     f"{c.get('max_processes')} (runs + their workers, counted every second); the special jobs: " +
                     ", ".join(f"{j['status']}" + (f" ({j['error']})" if j["error"] else "") for j in c["special"]))
    return lines + [""]


def report_issue10(r: dict) -> list[str]:
    if "client_threads" not in r:
        return []
    lines = section_lines(r, "12. single enqueues through one shared client (delayq.connect())",
                          r["client_threads"], "jobs/s")
    t = r["client_threads_ratio"]
    lines[-1:] = [f"    8 threads / one thread in each run: median {t['median']}x (min {t['min']}, max {t['max']})"]
    if r.get("client_threads_busy", {}).get("median"):
        cpu = r.get("client_threads_cpu_us", {})
        lines.append(f"    one thread keeps {r['client_threads_busy']['median']} cores busy (client + mariadbd + "
                     f"redis-server); CPU a job, all three: one thread {cpu.get('one thread', {}).get('median')} µs, "
                     f"8 threads {cpu.get('8 threads', {}).get('median')} µs (their writes grouped)")
    lines.append("")
    if "client_32_threads" in r:
        lines += section_lines(r, "    32 threads on one client: their writes grouped, and each job written alone",
                               r["client_32_threads"], "jobs/s, and CPU µs a job in the client, mariadbd and Redis")
    lines += section_lines(r, "    bulk enqueue through the client", r["client_bulk"], "jobs/s")
    lines.append("    lateness added by enqueueing in the application's transaction (enqueue(..., connection=conn), "
                 "commit), a job due at once; one run:")
    for setting, t in r["in_transaction"].items():
        lines.append(f"    {setting}: plain p50 {t['plain']['p50_ms']} / p99 {t['plain']['p99_ms']} ms, in a "
                     f"transaction p50 {t['transaction']['p50_ms']} / p99 {t['transaction']['p99_ms']} ms: added "
                     f"p50 {t['added_p50_ms']} ms, p99 {t['added_p99_ms']} ms; in a transaction and due in 2 s: "
                     f"start - due p99 {t['transaction, due in 2 s']['p99_ms']} ms")
    return lines + [""]


def targets_issue11(r: dict) -> list[tuple]:
    if "io_burst" not in r:
        return []
    io, cron = r["io_burst"], r["cron"]
    c8, c64, dflt = (_median(io[c], "delayq") for c in ("c8", "c64", "defaults"))
    p1, p2, ratio = _median(r["cpu"], "--processes 1"), _median(r["cpu"], "--processes 2"), r["cpu_ratio"]["median"]
    runs = cron.get("hang", {}).get("max_runs")
    return [
        _share("I/O, 8 threads >= 95% of 400/s", c8, 400, 0.95),
        ("I/O, 8 threads >= best peer", *_ratio(c8, io["c8"], 1)),
        _share("I/O, 64 threads >= 85% of 3,200", c64, 3200, 0.85),
        ("I/O, 64 threads: 1.5x best peer", *_ratio(c64, io["c64"], 1.5)),
        ("RSS at 64 threads < 100 MB", *_limit(_median(r["io_rss_mb"], "c64"), 100, " MB")),
        ("I/O, defaults >= best peer's", *_ratio(dflt, io["defaults"], 1)),
        ("mixed, 8 threads: p99 <= 100 ms", *_limit(_median(r["mixed_p99_ms"], "delayq"), 100, " ms", inclusive=True)),
        ("CPU: P=2 >= 1.7x P=1", f"{p2} vs {p1}", f"{ratio:.2f}x", ratio >= 1.7)
        if ratio else ("CPU: P=2 >= 1.7x P=1", "no figure", "-", None),
        ("cron, 50 s job: p99 <= 3 s", *_limit(cron.get("slow", {}).get("p99_ms"), 3000, " ms", inclusive=True)),
        ("cron, hang: <= 1 extra run alive", f"{runs} runs at most", "-", runs <= 2)
        if runs else ("cron, hang: <= 1 extra run alive", "no figure", "-", None),
        ("cron, hang: p99 <= 3 s", *_limit(cron.get("hang", {}).get("p99_ms"), 3000, " ms", inclusive=True)),
    ]


def targets_issue10(r: dict) -> list[tuple]:
    if "client_threads" not in r:
        return []
    one, eight = _median(r["client_threads"], "delayq, one thread"), _median(r["client_threads"], "delayq, 8 threads")
    ratio, bulk = r["client_threads_ratio"]["median"], _median(r["client_bulk"], "client.enqueue_many")
    record = _median(r["client_bulk"], BASELINE)
    return [
        ("8 threads >= 3x one (one client)", f"{eight} vs {one}", f"{ratio:.2f}x", ratio >= 3)
        if ratio else ("8 threads >= 3x one (one client)", "no figure", "-", None),
        _share("bulk within 10% of the code of record's (same run)", bulk, record, 0.90) if record else
        _share(f"bulk within 10% of {BULK_RECORD:,}/s (the figure of record: no same-run figure)", bulk, BULK_RECORD,
               0.90),
    ]


def _share(name: str, value: float | None, limit: float, at_least: float) -> tuple:
    if value is None:
        return name, "no figure", "-", None
    return name, f"{value} / {limit:g}", f"{value / limit:.0%}", value >= at_least * limit


def main_parts(parts: list[str]) -> None:
    """`bench.py issue11 issue10`: only those sections (for working on them), into results/parts.json."""
    unknown = set(parts) - {"issue11", "issue10", "burst"}
    if unknown:
        raise SystemExit(f"unknown part(s) {', '.join(sorted(unknown))}: issue11, issue10, burst")
    began = time.monotonic()
    redis = PrivateRedis()
    results: dict = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "n": N, "runs": RUNS,
                     "machine": f"{platform.node()}, {os.cpu_count()} cores, {platform.python_version()}",
                     "quick": QUICK}
    try:
        py, why_not = peers_python() if PEERS not in ("", "none") else (None, "BENCH_PEERS is empty")
        if "issue11" in parts:
            measure_issue11(py, why_not, redis.url, results)
            checkpoint(results)
        if "issue10" in parts:
            measure_issue10(redis.url, results)
            checkpoint(results)
        if "burst" in parts:
            measure_burst_and_enqueue(py, why_not, redis.url, results)
    finally:
        redis.stop()
    results["seconds"] = round(time.monotonic() - began)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "parts.json"), "w") as f:
        json.dump(results, f, indent=2)
    lines = [f"delayq benchmark, parts {', '.join(parts)}, {results['when']}, {results['machine']}, median of "
             f"{RUNS} run(s), took {results['seconds']} s", ""]
    lines += report_burst_and_enqueue(results) + report_issue11(results) + report_issue10(results)
    lines += target_lines("targets (issue 11)", targets_issue11(results))
    lines += target_lines("targets (issue 10)", targets_issue10(results))
    print("\n".join(lines))


if __name__ == "__main__":
    main_parts(sys.argv[1:]) if sys.argv[1:] else main()
