"""`make bench`: delayq against RQ, Huey, Dramatiq, Celery and ARQ on delayed jobs, side by side in one run.

Everything on this machine: one private redis-server started for the run (shared
by delayq and the peers; the shared one on 6379 is never touched), the local
MariaDB (each run on its own table prefix), the peers in their own virtualenv
(benchmarks/.venv-peers, from benchmarks/requirements.txt). Each figure is the
median of BENCH_RUNS runs (default 3) with min and max. Results are printed as a
table and written to benchmarks/results/latest.json.

    make bench             # BENCH_N=20000, 3 runs, lateness 1000 jobs/s for 30 s, backlog 1,000,000: about 30 min
    make bench-quick       # N=2000, 1 run, Huey and Dramatiq only, lateness 200 jobs/s for 3 s, backlog 20,000:
                           # under a minute; its figures are for development, the targets are judged on make bench
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

import delayq_side as D  # noqa: E402
from ceiling import ceiling  # noqa: E402
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


def stat(values: list[float]) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {"median": None}
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1), "max": round(max(values), 1),
            "runs": len(values)}


def peers_python() -> tuple[str | None, str | None]:
    """(the peers' python, None), or (None, why they cannot run)."""
    done = subprocess.run(["bash", os.path.join(HERE, "peers", "setup.sh")], capture_output=True, text=True)
    if done.returncode != 0:
        why = f"peers not installed: {done.stderr.strip()[-300:]}"
        print(f"bench: {why}; delayq alone", file=sys.stderr)
        return None, why
    return done.stdout.strip().splitlines()[-1], None


def run_peers(python: str | None, why_not: str | None, redis_url: str, workload: str,
              extra: list[str]) -> dict[str, list[dict]]:
    """RUNS runs of each peer. Every peer asked for gets rows: a peer that cannot run, or whose run printed
    nothing, gets an error row saying why. A peer that failed or ran out of BENCH_PEER_TIMEOUT is not run
    again (its error and bound stand, and waiting out the timeout twice more would not change them)."""
    peers = [p for p in PEERS.split(",") if p and p != "none"]
    if not python:
        return {p: [{"peer": p, "error": why_not or "peers not run"}] for p in peers}
    out: dict[str, list[dict]] = {}
    for _ in range(RUNS):
        if not peers:
            break
        done = subprocess.run([python, os.path.join(HERE, "peers", "run.py"), "--redis-url", redis_url, "--workload",
                               workload, "--peers", ",".join(peers), "--timeout", PEER_TIMEOUT, *extra],
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
        with tempfile.TemporaryDirectory() as tmp:
            sqlite = f"sqlite:///{tmp}/bench.db"
            results["burst"] = {name: stat([D.burst(db, rd, N)["jobs_per_s"] for _ in range(RUNS)])
                                for name, db, rd in (("delayq mysql+redis", MYSQL, url), ("delayq mysql", MYSQL, None),
                                                     ("delayq sqlite", sqlite, None))}
        rss = D.burst(MYSQL, url, N)["runner_peak_rss_mb"]
        results["runner_peak_rss_mb"] = rss
        results["burst"].update({k: peer_figure(v, "jobs_per_s") for k, v in
                                 run_peers(py, why_not, url, "burst", ["--n", str(N)]).items()})
        enq = [D.enqueue(MYSQL, url, N) for _ in range(RUNS)]
        results["enqueue"] = {"delayq one by one": stat([e["one_by_one_per_s"] for e in enq]),
                              "delayq bulk": stat([e["bulk_per_s"] for e in enq])}
        results["enqueue"].update({k: peer_figure(v, "jobs_per_s") for k, v in
                                   run_peers(py, why_not, url, "enqueue", ["--n", str(N)]).items()})
        late = [D.lateness(MYSQL, url, RATE, SECONDS) for _ in range(RUNS)]
        results["lateness_p99_ms"] = {"delayq": stat([x["p99_ms"] for x in late])}
        results["lateness_p50_ms"] = {"delayq": stat([x["p50_ms"] for x in late])}
        results["lateness_max_ms"] = {"delayq": stat([x["max_ms"] for x in late])}
        peer_late = run_peers(py, why_not, url, "lateness", ["--rate", str(RATE), "--n", str(RATE * SECONDS)])
        for key in ("p99_ms", "p50_ms", "max_ms"):
            results[f"lateness_{key}"].update({k: peer_figure(v, key) for k, v in peer_late.items()})
        backlog = [D.burst(MYSQL, url, N, backlog=BACKLOG) for _ in range(RUNS)]
        results["backlog"] = {"pending": BACKLOG, "burst_jobs_per_s": stat([b["jobs_per_s"] for b in backlog]),
                              "rebuild_seconds": stat([b["rebuild_seconds"] for b in backlog])}
        ceil = [ceiling(MYSQL, url, N) for _ in range(RUNS)]
        results["ceiling"] = {k: stat([c[k] for c in ceil]) for k in ("batched_500", "single_row_autocommit")}
    finally:
        redis.stop()
    results["seconds"] = round(time.monotonic() - began)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "quick.json" if QUICK else "latest.json"), "w") as f:
        json.dump(results, f, indent=2)
    print(report(results))


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
        lines.append(f"{title} ({unit})")
        for name, f in figures.items():
            if f.get("median") is None:
                lines.append(f"  {name:<22} no figure: {f.get('error', 'none was measured')}")
                continue
            runs = f" over {f['runs']} of {r['runs']} runs" if f.get("runs", r["runs"]) < r["runs"] else ""
            lines.append(f"  {name:<22} {f['median']:>10}  (min {f['min']}, max {f['max']}{runs})")
            if f.get("error"):
                lines.append(f"  {'':<22} then: {f['error']}")
        lines.append("")

    section("1. burst of delayed no-op jobs, one runner", r["burst"], "jobs/s")
    section("2. delayed enqueue", r["enqueue"], "jobs/s")
    section("3. lateness p99, steady stream", r["lateness_p99_ms"], "ms")
    section("   lateness p50", r["lateness_p50_ms"], "ms")
    section("   lateness max", r["lateness_max_ms"], "ms")
    b, c = r["backlog"], r["ceiling"]
    lines += [f"4. backlog: burst with {b['pending']:,} pending in the future: {b['burst_jobs_per_s']['median']} jobs/s; "
              f"index rebuild of the backlog: {b['rebuild_seconds']['median']} s", ""]
    lines += [f"5. write-set ceiling (plain script): batched by 500 {c['batched_500']['median']} jobs/s, "
              f"single-row autocommit {c['single_row_autocommit']['median']} jobs/s", ""]
    burst = r["burst"]["delayq mysql+redis"]["median"]
    ceiling_ = c["batched_500"]["median"]
    loaded = b["burst_jobs_per_s"]["median"]
    flat = abs(loaded - burst) / burst if burst and loaded is not None else None
    rss = r.get("runner_peak_rss_mb")
    targets = [
        ("burst >= 4x best peer (no-op job)", *_ratio(burst, r["burst"], 4)),
        (">= 30% of the write-set ceiling", f"{burst} / {ceiling_}", f"{burst / ceiling_:.0%}", burst >= 0.3 * ceiling_)
        if burst and ceiling_ else (">= 30% of the write-set ceiling", "no figure", "-", None),
        ("bulk enqueue >= 2x best peer", *_ratio(r["enqueue"]["delayq bulk"]["median"], r["enqueue"], 2)),
        ("lateness p99 <= 100 ms", *_limit(r["lateness_p99_ms"]["delayq"]["median"], 100, " ms", inclusive=True)),
        ("backlog within 10% of empty", f"{loaded} vs {burst}", f"{flat:.0%} off", flat <= 0.10)
        if flat is not None else ("backlog within 10% of empty", "no figure", "-", None),
        ("rebuild of the backlog < 30 s", *_limit(b["rebuild_seconds"]["median"], 30, " s")),
        ("runner peak RSS < 100 MB", *_limit(rss, 100, " MB")),
    ]
    lines.append("targets (issue 5)")
    for name, figure, ratio, met in targets:
        mark = "met" if met else ("NOT MET" if met is False else "n/a")
        lines.append(f"  {name:<32} {figure:<34} {ratio:>10}  {mark}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
