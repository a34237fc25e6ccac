"""Chaos scenarios of scale-out (issue 13), part of `make chaos`: failover mid-run on a Sentinel set and on a
Cluster (the clock-skew scenario is in skew.py).

Real processes: two `bin/run_due.py --for` runners (restarted, as cron would, if one exits), `bin/compensate.py`
every 2 s with its default --rebuild-every 600, and a producer enqueueing all along. Executions are counted
from outside (a side-effect log).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

from scripts.redis_topology import Cluster, Sentinel
from tests.chaos.chaos import BIN, FULL, ROOT, SHARED_MYSQL, World, kill

PASSWORD, SENTINEL_PASSWORD = "chaos-node-pw", "chaos-sentinel-pw"
QUEUES = [f"q{i}" for i in range(6)]


class Supervisor(threading.Thread):
    """Keeps `count` runners alive like cron does: a runner that exits is counted, its last line kept, and
    a new one started."""

    def __init__(self, w: World, count: int, *args: str, prefix: list[str] | None = None):
        super().__init__(daemon=True)
        self.w, self.args, self.prefix, self.halt = w, args, prefix or [], threading.Event()
        self.procs = [self._start() for _ in range(count)]
        self.exits: list[tuple[int, str]] = []

    def _start(self) -> subprocess.Popen:
        cmd = [*self.prefix, sys.executable, os.path.join(BIN, "run_due.py"), "--for", "3600", "--interval", "0.1",
               "--quiet", *self.args]
        return subprocess.Popen(cmd, env=self.w.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)

    def run(self) -> None:
        while not self.halt.wait(0.2):
            for i, proc in enumerate(self.procs):
                if proc.poll() is not None:
                    last = (proc.stderr.read().strip().splitlines() or [""])[-1]
                    self.exits.append((proc.returncode, last[:300]))
                    self.procs[i] = self._start()

    def stop(self) -> None:
        self.halt.set()
        self.join()
        for proc in self.procs:
            kill(proc)


class Compensator(threading.Thread):
    """bin/compensate.py every `every` seconds, as cron runs it (each minute in production)."""

    def __init__(self, w: World, every: float = 2.0, prefix: list[str] | None = None):
        super().__init__(daemon=True)
        self.w, self.every, self.prefix, self.halt = w, every, prefix or [], threading.Event()
        self.runs: list[dict] = []
        self.failures: list[str] = []
        self.paused = threading.Lock()     # held by a scenario that must see the index before a rebuild

    def run(self) -> None:
        while not self.halt.wait(self.every):
            with self.paused:
                self._once()

    def _once(self) -> None:
        done = subprocess.run([*self.prefix, sys.executable, os.path.join(BIN, "compensate.py"), "--json"],
                              env=self.w.env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        if done.returncode == 0:
            self.runs.append(json.loads(done.stdout))
        else:
            self.failures.append(done.stderr.strip()[-300:])

    def stop(self) -> None:
        self.halt.set()
        self.join()

    def total(self, key: str) -> int:
        return sum(run[key] for run in self.runs)


class Producer(threading.Thread):
    """Enqueues `rate` jobs a second, due at once, across the queues; one in ten at most once (a charge)."""

    def __init__(self, w: World, rate: int = 100):
        super().__init__(daemon=True)
        import delayq

        self.q = delayq.open_manager(w.config)
        self.w, self.rate, self.halt = w, rate, threading.Event()
        self.once: set[int] = set()
        self.errors: list[str] = []
        self.n = 0

    def run(self) -> None:
        while not self.halt.wait(0.05):
            batch = []
            for _ in range(max(1, self.rate // 20)):
                call = "examples.shop:charge" if self.n % 10 == 0 else "examples.shop:record"
                args = {"path": self.w.log} if call.endswith("charge") else {"path": self.w.log, "tag": "x"}
                batch.append({"call": call, "args": args, "queue": QUEUES[self.n % len(QUEUES)]})
                self.n += 1
            try:
                rows = self.q.enqueue_many(batch)
            except Exception as exc:   # counted: a failed enqueue wrote nothing (its rows were deleted)
                self.errors.append(str(exc)[:200])
                continue
            self.once.update(r.id for r, item in zip(rows, batch) if item["call"].endswith("charge"))

    def stop(self) -> None:
        self.halt.set()
        self.join()
        self.q.close()


def _replicas(topology, master_port: int) -> list[int]:
    if isinstance(topology, Cluster):
        return topology.replicas_of(master_port)
    return [n.port for n in topology.nodes if n.role == "replica"]


def _lose_writes_then_kill(w: World, topology, queue: str) -> tuple[float, int, list[int], list, float]:
    """Cut the replicas' link to the queue's master (a wrong masterauth keeps them from reconnecting within
    milliseconds), claim up to 5 jobs and enqueue 20 (acknowledged by the master alone: what asynchronous
    replication loses), SIGKILL the master. Returns (moment of the kill, its port, the 20 ids, the claimed
    jobs, seconds until every node or sentinel agreed on the promoted replica)."""
    key = w.q.index.keys(queue)[0]
    master = topology.owner(key) if isinstance(topology, Cluster) else topology.master_address()[1]
    held = _held_queue(w, topology, master)      # a queue on the same master that no runner serves
    w.q.enqueue_many({"call": "examples.shop:record", "args": {"path": w.log, "tag": "held"}, "queue": held}
                     for _ in range(5))
    time.sleep(0.2)                              # replicated: only the claim below will be lost
    replicas = _replicas(topology, master)
    for replica in replicas:
        topology.admin(replica).config_set("masterauth", "cut-off")
        topology.admin(replica).execute_command("CLIENT", "KILL", "TYPE", "master")
    claimed = w.q.claim([held], 5)        # rows running under our token; the move to in flight will be lost
    ids = [r.id for r in w.q.enqueue_many({"call": "examples.shop:record", "args": {"path": w.log, "tag": "late"},
                                           "queue": queue} for _ in range(20))]
    try:
        promoted = topology.kill_master(key) if isinstance(topology, Cluster) else topology.kill_master()
    finally:
        for replica in replicas:
            topology.admin(replica).config_set("masterauth", PASSWORD)
    killed_at = time.time() - promoted          # kill_master times from the SIGKILL to the agreement
    return killed_at, master, ids, claimed, promoted


def _settled(topology) -> None:
    """Every node (or sentinel) agrees on the masters and every replica is in sync: the next kill is clean."""
    if isinstance(topology, Cluster):
        topology.wait_ok(30)
        return
    from scripts.redis_topology import wait_for

    def agreed() -> bool:
        seen = {int(topology.admin(p).sentinel_get_master_addr_by_name(topology.master_name)[1])
                for p in topology.sentinel_ports}
        return len(seen) == 1 and topology._sentinels_see_all() and topology._replicas_in_sync(seen.pop())
    wait_for(agreed, 30, "sentinels agreeing on one master with its replica in sync")


def _held_queue(w: World, topology, master: int) -> str:
    if not isinstance(topology, Cluster):
        return "held"
    return next(f"held{i}" for i in range(1000) if topology.owner(w.q.index.keys(f"held{i}")[0]) == master)


def _claim_again_then_finish(w: World, jobs: list) -> int:
    """Another runner claims the jobs the new master holds as due (their claim was lost): the rows are running,
    so it gets none. Then their first runner runs them and records the outcomes. Returns what the second got."""
    from delayq.runner import Runner

    again = w.q.claim(list({job.queue for job in jobs}), 5) if jobs else []
    runner = Runner(w.q, QUEUES)
    w.q.finish([outcome for outcome in (runner.execute(job) for job in jobs) if outcome is not None])
    return len(again)


def _where_stuck(w: World, ids: list[int]) -> list[str]:
    """One line a job: its row (queue, status, attempts, lease left) and its place in the due index."""
    r, now, lines = w.q.index.r, time.time(), []
    with w.q.store.tx() as cur:
        cur.execute(f"SELECT id, queue, status, attempts, lease_until, due_at FROM {w.prefix}_jobs "
                    f"WHERE id IN ({','.join(map(str, ids))})")
        for job, queue, status, attempts, lease_until, due_at in cur.fetchall():
            due, inflight = w.q.index.keys(queue)
            lines.append(f"{job} {queue} {status} attempts={attempts} due_in={due_at - now:.1f}s "
                         f"lease_left={'-' if lease_until is None else f'{lease_until - now:.1f}s'} "
                         f"due_set={r.zscore(due, job)} inflight_set={r.zscore(inflight, job)}")
    return lines


def _missing_from_index(w: World, queue: str, ids: list[int]) -> int:
    """Of these pending jobs, how many neither the due set nor the in-flight set holds (their ZADD was lost)."""
    due, inflight = w.q.index.keys(queue)
    r = w.q.index.r
    pending = {job for job, (_, status, _) in w.rows().items() if status == "pending"}
    return sum(1 for job in ids if job in pending and r.zscore(due, job) is None and r.zscore(inflight, job) is None)


def _due_again(w: World, jobs: list) -> int:
    """Of these claimed (running) jobs, how many the new master holds as due: their claim was lost."""
    return sum(1 for job in jobs if w.q.index.r.zscore(w.q.index.keys(job.queue)[0], job.id) is not None)


def _resume_seconds(w: World, killed_at: float, queue: str | None) -> float | None:
    """From the kill to the start of the first job enqueued after it (in the queue whose master died)."""
    where = "AND j.queue = %s" if queue else ""
    with w.q.store.tx() as cur:
        cur.execute(f"SELECT MIN(a.started_at) FROM {w.prefix}_attempts a JOIN {w.prefix}_jobs j ON j.id = a.job_id "
                    f"WHERE j.created_at > %s {where}", (killed_at, queue) if queue else (killed_at,))
        first = cur.fetchone()[0]
    return round(first - killed_at, 2) if first is not None else None


def failover(kind: str, tmp: str) -> dict:
    cycles = 10 if FULL else 2
    if kind == "cluster":
        topology = Cluster(masters=3, replicas=1, password=PASSWORD)
        url = topology.url
    else:
        topology = Sentinel(password=PASSWORD, sentinel_password=SENTINEL_PASSWORD)
        url = topology.url + f"?sentinel_password={SENTINEL_PASSWORD}"
    try:
        w = World(SHARED_MYSQL, url, tmp)
        producer, compensator = Producer(w), Compensator(w)
        runners = Supervisor(w, 2, "--queue", ",".join(QUEUES), "--batch", "50")
        producer.start(), runners.start(), compensator.start()
        kills, lost_zadds, lost_claims, reclaimed, claimed, late = [], 0, 0, 0, [], []
        for cycle in range(cycles):
            time.sleep(1.5)
            _settled(topology)
            queue = QUEUES[cycle % len(QUEUES)]
            with compensator.paused:
                killed_at, port, ids, jobs, promoted = _lose_writes_then_kill(w, topology, queue)
                lost_zadds += _missing_from_index(w, queue, ids)
                lost_claims += _due_again(w, jobs)
            reclaimed += _claim_again_then_finish(w, jobs)
            claimed += [job.id for job in jobs]
            late.append((killed_at, ids))
            kills.append((killed_at, queue if kind == "cluster" else None, round(promoted, 2)))
            topology.restart(port)
        time.sleep(2)
        producer.stop()
        finished = _wait_final(w, 120)
        runners.stop()
        compensator.stop()
        return _failover_result(w, kind, producer, runners, compensator, kills, finished,
                                {"lost_zadds": lost_zadds, "lost_claims": lost_claims, "claimed": claimed,
                                 "reclaimed": reclaimed,
                                 "late": late})
    finally:
        topology.stop()


def _wait_final(w: World, timeout: float) -> bool:
    """Wait (without compensating here: the compensate processes do it) until no job is pending or running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = w.statuses()
        if not counts.get("pending") and not counts.get("running"):
            return True
        time.sleep(0.5)
    return False


def _late_ran_within(w: World, late: list) -> float | None:
    """The longest time from a kill to the start of a job whose ZADD that failover lost (run after compensate)."""
    worst = None
    for killed_at, ids in late:
        with w.q.store.tx() as cur:
            cur.execute(f"SELECT MAX(started_at) FROM {w.prefix}_attempts WHERE job_id IN ({','.join(map(str, ids))})")
            last = cur.fetchone()[0]
        if last is not None:
            worst = max(worst or 0.0, last - killed_at)
    return round(worst, 2) if worst is not None else None


def _failover_result(w: World, kind: str, producer: Producer, runners: Supervisor, compensator: Compensator,
                     kills: list, finished: bool, seen: dict) -> dict:
    runs, rows = w.executions(), w.rows()
    ordinary = [job for job in rows if job not in producer.once]
    resume = [_resume_seconds(w, at, queue) for at, queue, _ in kills]
    lost = [job for job in rows if runs[job] == 0 and rows[job][1] != "failed"]
    result = {
        "topology": kind, "failovers": len(kills), "jobs": len(rows),
        "promoted_s": [p for _, _, p in kills], "resume_s": resume,
        "resume_s_max": max((r for r in resume if r is not None), default=None),
        "zadds_lost_by_failover": seen["lost_zadds"], "restored_by_compensate": compensator.total("restored"),
        "lost_zadd_jobs_ran_within_s_of_the_kill": _late_ran_within(w, seen["late"]),
        "claims_lost_by_failover": seen["lost_claims"], "of_those_claimed_again_by_another_runner": seen["reclaimed"],
        "jobs_whose_claim_was_lost_ran_twice": sum(1 for job in seen["claimed"] if runs[job] > 1),
        "lost": len(lost),
        "at_most_once_ran_twice": sum(1 for job in producer.once if runs[job] > 1),
        "at_most_once_outcome_unknown": sum(1 for job in producer.once if rows.get(job, ("", ""))[1] == "failed"),
        "ordinary_ran_twice": sum(1 for job in ordinary if runs[job] > 1),
        "runner_exits": len(runners.exits), "runner_exit_lines": sorted({line for _, line in runners.exits})[:3],
        "enqueue_errors": len(producer.errors), "compensate_failures": len(compensator.failures),
    }
    if lost:     # what the next one to look needs: where each lost job is stuck
        result["lost_jobs"] = _where_stuck(w, lost[:10])
    result["promises"] = {
        "every job final": finished,
        "0 lost": result["lost"] == 0 and finished,
        "a job whose claim the failover lost ran once":
            result["jobs_whose_claim_was_lost_ran_twice"] == 0 and seen["reclaimed"] == 0,
        "at-most-once jobs 0 twice": result["at_most_once_ran_twice"] == 0,
        "ordinary jobs twice only when a runner died (docs/RELIABILITY.md)":
            result["ordinary_ran_twice"] == 0 or result["runner_exits"] > 0,
        "a runner rides over the failover or exits 1 with one line":
            all(code == 1 and line and "Traceback" not in line for code, line in runners.exits),
        "the service resumed after every failover": all(r is not None for r in resume),
    }
    w.drop()
    return result


def s6_failover_sentinel(tmp: str, _redis_url: str) -> dict:
    return failover("sentinel", tmp)


def s7_failover_cluster(tmp: str, _redis_url: str) -> dict:
    return failover("cluster", tmp)
