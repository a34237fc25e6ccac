"""The fault check of issue 21: a job stream, faults at random times, and a checker that counts violations.

    .venv/bin/python tests/chaos/faultcheck.py --minutes 30 --min-faults 500    # the long form (`make chaos`)
    .venv/bin/python tests/chaos/faultcheck.py --short                          # CI's form, about 4 minutes

Three worlds, one after the other, each with its own tables and history file:
  main      a private MariaDB and a private Redis (ours to SIGSTOP): kill -9 of a supervisor (a run_due.py pid)
            and of a worker (one of its children), SIGTERM with --grace, SIGSTOP + SIGCONT of MariaDB and of Redis;
  sentinel  the shared MariaDB beside a private Sentinel set: failovers (graceful, or the master SIGKILLed), kills;
  cluster   the shared MariaDB beside a private Redis Cluster: the same with a Cluster.
In each, two runners are kept going as cron would (`bin/run_due.py --for N --processes 1|2`, restarted when one
ends), `bin/compensate.py` runs every COMPENSATE_EVERY seconds (a scaled cron minute), a producer enqueues a
steady stream of innocent jobs and, at random moments, culprits (tests/chaos/faultjobs.py: exit, segv, fork,
term_proof, spin, block_c, hog, a sleep past the time limit), and two busy CPU loops run beside it all. Then
the faults stop, the system settles, everything is read back and tests/chaos/checker.py judges it.

Prints a table (invariant | violations | faults injected by kind | figures), writes
tests/chaos/results/faultcheck-{short,full}.json, and exits 1 if invariants 1-6 have any violation (or if fewer
faults than --min-faults hit a live process), 2 if a server it needs could not be started.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from itertools import zip_longest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "lib"), ROOT]

from tests.chaos import checker, faultjobs  # noqa: E402
from tests.chaos.faultprocs import TAG_VAR, Compensator, Keeper, cpu_loops, end, kill_pids, tagged  # noqa: E402
from tests.chaos.faultworld import CULPRITS, Faults, Producer, Servers, Settings, World  # noqa: E402

RESULTS = os.path.join(ROOT, "tests", "chaos", "results")


PROCESS_FAULTS = ("kill9_supervisor", "kill9_worker", "sigterm")


class Unavailable(Exception):
    """A server or tool a phase needs could not be started (exit 2, with how to get it)."""


@dataclass(frozen=True)
class Phase:
    """One world's run: how long faults are injected, how many of each, how long it may take to settle."""
    name: str                   # main, sentinel or cluster (which servers: faultworld.Servers)
    seconds: float
    faults: dict[str, int]
    culprits: int               # jobs of each culprit kind enqueued
    settle: float


def plan(short: bool, minutes: float, min_faults: int) -> tuple[Settings, list[Phase]]:
    """The short form: every kind of fault 25 times or so across the worlds (pauses and failovers a few times,
    each takes seconds). The long form: 30 minutes scaled by --minutes, raised until it plans --min-faults."""
    if short:
        side = {kind: 5 for kind in PROCESS_FAULTS}
        return Settings(), [
            Phase("main", 70, {**{kind: 15 for kind in PROCESS_FAULTS}, "stop_mariadb": 2, "stop_redis": 2}, 14, 45),
            Phase("sentinel", 25, {**side, "failover_sentinel": 3}, 6, 40),
            Phase("cluster", 25, {**side, "failover_cluster": 3}, 6, 40)]
    settings = Settings(for_range=(30, 120), rate=6.0, hog_mb=2048, fork_seconds=120, term_proof_seconds=60)
    f = minutes / 30
    main = {"kill9_supervisor": 100, "kill9_worker": 100, "sigterm": 60, "stop_mariadb": 25, "stop_redis": 25}
    side = {"kill9_supervisor": 20, "kill9_worker": 20, "sigterm": 10}
    phases = [Phase("main", 1200 * f, main, 40, 120),
              Phase("sentinel", 300 * f, {**side, "failover_sentinel": 20}, 10, 90),
              Phase("cluster", 300 * f, {**side, "failover_cluster": 20}, 10, 90)]
    planned = sum(sum(p.faults.values()) + p.culprits * len(CULPRITS) for p in phases)
    scale = max(f, min_faults / planned * 1.1 if planned else f)
    return settings, [fit(replace(p, faults={k: max(1, round(n * scale)) for k, n in p.faults.items()},
                                  culprits=max(1, round(p.culprits * scale)))) for p in phases]


def fit(phase: Phase, seconds_each: float = 14.0) -> Phase:
    """At most half a phase spent in pauses and failovers (each takes up to ~14 s): the rest is for the kills."""
    slow = {k: n for k, n in phase.faults.items() if k.startswith(("stop_", "failover_"))}
    room = max(len(slow), int(phase.seconds / 2 / seconds_each))
    if sum(slow.values()) <= room:
        return phase
    shrink = room / sum(slow.values())
    return replace(phase, faults={**phase.faults, **{k: max(1, int(n * shrink)) for k, n in slow.items()}})


def limits(s: Settings) -> checker.Limits:
    return checker.Limits(lease=s.lease, compensate_every=s.compensate_every, time_limit=s.time_limit,
                          db_timeout=s.db_timeout, redis_timeout=s.redis_timeout, exit_slack=s.exit_slack,
                          wait_slack=s.wait_slack)


# -- one phase --------------------------------------------------------------------------------------------------
def run_phase(phase: Phase, settings: Settings, tmp: str, seed: int, keep: str | None) -> dict:
    """Start the phase's servers, drive the world, always drop its tables and stop what was started."""
    started = time.time()
    try:
        servers = Servers.start(phase.name)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        raise Unavailable(f"{phase.name}: its servers could not be started ({exc}); needs mariadb-install-db, "
                          f"/usr/sbin/mariadbd, redis-server and redis-cli >= 7 (`make test` installs them)") from exc
    try:
        world = World(servers, settings, tmp)
        try:
            result = drive(world, phase, seed, keep)
        finally:
            world.drop()
    finally:
        servers.stop()
    result["seconds"] = round(time.time() - started, 1)
    return result


@dataclass
class Crew:
    """What keeps a world busy: runners kept going, compensate every cron minute, the job stream."""
    keeper: Keeper
    compensator: Compensator
    producer: Producer

    @classmethod
    def start(cls, world: World, culprits: list[tuple[float, str]], seed: int) -> "Crew":
        env = {**world.env, TAG_VAR: f"{world.prefix}-compensate"}
        crew = cls(Keeper(world.spawn_runner),
                   Compensator(world.compensate_argv(), env, ROOT, world.settings.compensate_every),
                   Producer(world, culprits, seed))
        crew.keeper.start(), crew.compensator.start(), crew.producer.start()
        return crew

    def stop(self, world: World) -> list[int]:
        """Everything ends, bounded: servers resumed, runners SIGTERMed (and SIGKILLed past their bound), then
        whatever still carries this world's tag is ended by pid; returns those pids."""
        self.producer.stop()
        world.servers.resume()
        self.keeper.stop(timeout=world.settings.grace + world.settings.exit_slack + 30)
        self.compensator.stop()
        return kill_pids(tagged(f"{world.prefix}-", prefix=True))


def drive(world: World, phase: Phase, seed: int, keep: str | None) -> dict:
    """Faults while jobs flow, then a settle with runners and compensate still going, then the judgment."""
    rng = random.Random(seed)
    times = {"start": time.time()}
    culprits = [(times["start"] + rng.uniform(0, phase.seconds * 0.9), kind)
                for kind in CULPRITS for _ in range(phase.culprits)]
    schedule = [kind for kind, n in phase.faults.items() for _ in range(n)]
    rng.shuffle(schedule)
    crew = Crew.start(world, culprits, seed)
    settled, left = None, {}
    try:
        inject(Faults(world, crew.keeper), schedule, times["start"], phase.seconds, rng)
        times["injected"] = time.time()
        crew.producer.stop()
        settled, left = settle(world, phase.settle)
    finally:
        times["settled"] = time.time()
        swept = crew.stop(world)
        times["stopped"] = time.time()
    result = judge(world, crew, settled, swept, keep)
    result["figures"]["statuses_when_settling_ended"] = left
    result["figures"]["timing_s"] = {f"{a}-{b}": round(times[b] - times[a], 1) for a, b in
                                     (("start", "injected"), ("injected", "settled"), ("settled", "stopped"))
                                     if a in times and b in times}
    return result


def inject(faults: Faults, schedule: list[str], t0: float, seconds: float, rng: random.Random) -> None:
    """The faults in order, each after a random gap around (time left / faults left): a pause or a failover
    takes seconds, and the faults after it spread over what is left instead of bunching. Never past twice the
    phase's length."""
    for i, kind in enumerate(schedule):
        time.sleep(rng.uniform(0.2, 1.8) * max(0.0, t0 + seconds - time.time()) / (len(schedule) - i))
        if time.time() > t0 + 2 * seconds:
            break
        faults.inject(kind)
    time.sleep(max(0.0, t0 + seconds - time.time()))


def settle(world: World, limit: float) -> tuple[float | None, dict]:
    """Seconds until no job is pending or running (runners and compensate still going), None if not in `limit`;
    and the statuses last seen."""
    start, counts = time.time(), {}
    while time.time() - start < limit:
        try:
            counts = world.statuses()
        except Exception as exc:    # a server still recovering from its last fault: look again
            counts = {"unknown": 1, "error": str(exc)[:100]}
        if not counts.get("pending") and not counts.get("running") and not counts.get("unknown"):
            return round(time.time() - start, 1), counts
        time.sleep(1.0)
    return None, counts


def judge(world: World, crew: Crew, settled: float | None, swept: list[int], keep: str | None) -> dict:
    """Read everything back, call the checker, add the harness's own figures."""
    keeper, compensator, producer = crew.keeper, crew.compensator, crew.producer
    rows, attempts = world.rows()
    inputs = (faultjobs.read(world.history), rows, attempts, world.faults, [r.life for r in keeper.runners],
              limits(world.settings))
    if keep:
        save_inputs(os.path.join(keep, f"{world.servers.kind}.json"), *inputs)
    report = checker.check(*inputs)
    misses = Counter(f.kind for f in world.faults if not f.hit)
    harness = {"settled_in_s": settled, "enqueued": producer.enqueued, "enqueue_errors": len(producer.errors),
               "compensate_runs": compensator.ok, "compensate_failures": len(compensator.failures),
               "compensate_failure_lines": sorted(set(compensator.failures))[:3],
               "runner_spawn_errors": len(keeper.spawn_errors), "faults_that_missed": dict(misses),
               "processes_swept_at_the_end": len(swept)}
    return {"violations": [vars(v) for v in report.violations], "figures": {**report.figures, **harness}}


def save_inputs(path: str, history: list[dict], rows: list, attempts: list, faults: list, lives: list,
                limits_: checker.Limits) -> None:
    """Everything the checker read, to judge it again (--recheck) without running the phase again."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"history": history, "rows": [asdict(r) for r in rows], "attempts": [asdict(a) for a in attempts],
                   "faults": [asdict(x) for x in faults], "lives": [asdict(life) for life in lives],
                   "limits": asdict(limits_)}, f)


SETTINGS_LIMITS = ("lease", "compensate_every", "time_limit", "db_timeout", "redis_timeout", "exit_slack", "wait_slack")


def load_inputs(path: str) -> tuple:
    """Saved inputs; the checker's own allowances (stuck_slack, lost_window) are today's defaults."""
    with open(path) as f:
        data = json.load(f)
    lives = []
    for life in data["lives"]:
        workers = {int(pid): checker.Worker(**w) for pid, w in life.pop("workers").items()}
        lives.append(checker.RunnerLife(**life, workers=workers))
    return (data["history"], [checker.Row(**r) for r in data["rows"]],
            [checker.AttemptRow(**a) for a in data["attempts"]], [checker.Fault(**x) for x in data["faults"]], lives,
            checker.Limits(**{k: v for k, v in data["limits"].items() if k in SETTINGS_LIMITS}))


def recheck(paths: list[str]) -> int:
    """Judge saved inputs again (after a change to the checker) and print the table."""
    results = {}
    for path in paths:
        report = checker.check(*load_inputs(path))
        results[os.path.basename(path)] = {"violations": [vars(v) for v in report.violations],
                                           "figures": report.figures}
    total = merge(results)
    print(table(total))
    if total["violations"]:
        print("\nexamples:\n" + examples(total))
    return 1 if any(v["invariant"] <= 6 for v in total["violations"]) else 0


# -- the table --------------------------------------------------------------------------------------------------
SHOWN = ("jobs", "runs", "runs_died", "runners", "kill9", "reruns_after_lost_outcome", "reruns_per_kill9",
         "at_most_once_lost_outcomes", "left_by_kill9_supervisor", "enqueue_errors", "compensate_failures",
         "faults_that_missed", "processes_swept_at_the_end")


def merge(results: dict[str, dict]) -> dict:
    """All phases as one: violations (subjects prefixed by the phase), counts summed, per-kill figure recomputed
    (what does not add up, such as the statuses left when settling ended, stays in each phase's figures)."""
    violations, figures = [], Counter()
    faults, extra = Counter(), {}
    for name, result in results.items():
        violations += [{**v, "subject": f"[{name}] {v['subject']}"} for v in result["violations"]]
        for key, value in result["figures"].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "reruns_per_kill9":
                figures[key] += value
            elif isinstance(value, dict) and key == "faults":
                faults.update(value)
            elif isinstance(value, dict) and all(isinstance(v, (int, float)) for v in value.values()):
                extra.setdefault(key, Counter()).update(value)
    figures = dict(figures)
    figures["reruns_per_kill9"] = round(figures["reruns_after_lost_outcome"] / figures["kill9"], 2) \
        if figures.get("kill9") else None
    figures.update({k: dict(v) for k, v in extra.items()})
    return {"violations": violations, "figures": figures, "faults": dict(sorted(faults.items()))}


def table(total: dict) -> str:
    counts = Counter(v["invariant"] for v in total["violations"])
    left = [f"{i} {text}" for i, text in checker.INVARIANTS.items()]
    middle = [str(counts.get(i, 0)) if i < 7 else "-" for i in checker.INVARIANTS]
    faults = [f"{kind} {n}" for kind, n in total["faults"].items()] + [f"total {sum(total['faults'].values())}"]
    figures = [f"{key} {total['figures'].get(key)}" for key in SHOWN if key in total["figures"]]
    widths = (44, 10, 26)
    lines = [" | ".join(["invariant".ljust(widths[0]), "violations".rjust(widths[1]),
                         "faults injected (by kind)".ljust(widths[2]), "figures"])]
    lines.append("-" * 120)
    for a, b, c, d in zip_longest(left, middle, faults, figures, fillvalue=""):
        lines.append(" | ".join([a.ljust(widths[0]), b.rjust(widths[1]), c.ljust(widths[2]), d]).rstrip())
    lines.append("faults count only what hit a live process; job_*: runs of culprit jobs (job_hang: a sleep past "
                 "the time limit); 7: re-runs of innocent jobs whose run had ended, per kill -9")
    return "\n".join(lines)


def examples(total: dict, each: int = 4) -> str:
    lines = []
    for i in range(1, 7):
        found = [v for v in total["violations"] if v["invariant"] == i]
        for v in found[:each]:
            lines.append(f"  {i}: {v['subject']}: {v['reason'][:300]}")
        if len(found) > each:
            lines.append(f"  {i}: ... and {len(found) - each} more (see the JSON)")
    return "\n".join(lines)


# -- main -------------------------------------------------------------------------------------------------------
def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Faults at random times into real runners and servers; a checker "
                                            "counts the violations of issue 21's invariants 1-7.")
    p.add_argument("--minutes", type=float, default=30.0, help="length of the long form (default 30)")
    p.add_argument("--min-faults", type=int, help="fail unless at least this many faults hit (default: 500 for "
                                                  "the long form, none for --short)")
    p.add_argument("--short", action="store_true", help="CI's form: about 4 minutes")
    p.add_argument("--phases", default="main,sentinel,cluster", help="worlds to run (default: all three)")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: a new one, printed)")
    p.add_argument("--keep-data", metavar="DIR", help="save what the checker read, one JSON file per phase")
    p.add_argument("--recheck", nargs="+", metavar="FILE", help="judge files saved by --keep-data again; run nothing")
    args = p.parse_args(argv)
    if args.min_faults is None:
        args.min_faults = 0 if args.short else 500
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.recheck:
        return recheck(args.recheck)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    random.seed(seed)
    settings, phases = plan(args.short, args.minutes, args.min_faults)
    wanted = args.phases.split(",")
    signal.signal(signal.SIGTERM, _interrupt)
    print(f"faultcheck: {'short' if args.short else 'long'} form, seed {seed}, phases {','.join(wanted)}", flush=True)
    started, results = time.time(), {}
    loops = cpu_loops(2, {**os.environ, TAG_VAR: f"faultcheck-cpu-{os.getpid()}"})
    try:
        with tempfile.TemporaryDirectory(prefix="delayq-faultcheck-") as tmp:
            for phase in (p for p in phases if p.name in wanted):
                print(f"faultcheck: {phase.name}: {phase.seconds:g} s of faults {phase.faults}, "
                      f"{phase.culprits} of each culprit", flush=True)
                try:
                    results[phase.name] = run_phase(phase, settings, tmp, seed + len(results), args.keep_data)
                except Unavailable as exc:
                    print(f"faultcheck: {exc}", file=sys.stderr)
                    return 2
    finally:
        end(loops)
    return report(args, seed, settings, results, time.time() - started)


def report(args: argparse.Namespace, seed: int, settings: Settings, results: dict, seconds: float) -> int:
    total = merge(results)
    print()
    for name, result in results.items():
        f = result["figures"]
        print(f"{name}: {result['seconds']:g} s ({f.get('timing_s')}); settled in {f['settled_in_s']} s; "
              f"statuses {f['statuses']}")
    print()
    print(table(total))
    if total["violations"]:
        print("\nexamples:\n" + examples(total))
    broken = sum(1 for v in total["violations"] if v["invariant"] <= 6)
    hits = sum(total["faults"].values())
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"faultcheck-{'short' if args.short else 'full'}.json")
    with open(path, "w") as f:
        json.dump({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "form": "short" if args.short else
                   "full", "seed": seed, "seconds": round(seconds, 1), "settings": vars(settings),
                   "total": total, "phases": results}, f, indent=1, default=str)
    print(f"\nfaultcheck: {hits} faults hit, {broken} violations of invariants 1-6, {seconds:.0f} s; {path}")
    if hits < args.min_faults:
        print(f"faultcheck: only {hits} faults hit a live process, fewer than --min-faults {args.min_faults}")
        return 1
    return 1 if broken else 0


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
