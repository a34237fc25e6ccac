"""What the fault checker reads (tests/chaos/checker.py): the history, the rows, the faults, the runner lives.

Plain data and the few readings of it that every check shares: which runs a job had (a "start" record paired
with its "end"), which jobs are innocent, which process a run died in and when, and which stderr lines are
problems rather than job outcomes. No server, no clock, no process: the unit tests build these by hand.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

ONCE = "tests.chaos.faultjobs:once"
INNOCENT_KINDS = ("ok", "raise", "sleep")
KILLS = ("kill9_supervisor", "kill9_worker")
PAUSES = {"stop_mariadb": "MariaDB", "stop_redis": "Redis"}
FAILOVERS = ("failover_sentinel", "failover_cluster")
SERVER_WORDS = re.compile(r"redis|mysql|mariadb|database|sentinel|cluster|DELAYQ_DB_TIMEOUT|DELAYQ_REDIS_TIMEOUT", re.I)


# -- what goes in -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    """One row of the jobs table (args already parsed from its JSON)."""
    id: int
    callable: str
    args: dict
    status: str
    attempts: int
    crashes: int = 0
    last_error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def kind(self) -> str:
        return self.args.get("kind", "ok")

    @property
    def once(self) -> bool:
        return self.callable == ONCE


@dataclass(frozen=True)
class AttemptRow:
    job_id: int
    attempt: int
    outcome: str
    error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None


def read_rows(store) -> tuple[list[Row], list[AttemptRow]]:
    """Every job row and attempt row of a store's prefix, as the checker reads them (one read transaction)."""
    with store.tx(write=False) as cur:
        cur.execute(f"SELECT id, callable, args, status, attempts, crashes, last_error, started_at, finished_at "
                    f"FROM {store.prefix}_jobs")
        rows = [Row(r[0], r[1], json.loads(r[2]), *r[3:]) for r in cur.fetchall()]
        cur.execute(f"SELECT job_id, attempt, outcome, error, started_at, finished_at FROM {store.prefix}_attempts")
        attempts = [AttemptRow(*r) for r in cur.fetchall()]
    return rows, attempts


def read_statuses(store) -> dict[str, int]:
    """How many jobs of a store's prefix have each status."""
    with store.tx(write=False) as cur:
        cur.execute(f"SELECT status, COUNT(*) FROM {store.prefix}_jobs GROUP BY status")
        return dict(cur.fetchall())


@dataclass(frozen=True)
class Fault:
    """One fault the harness injected: kind (KILLS, "sigterm", PAUSES, FAILOVERS), when, into which pid; `until`
    ends a pause or a failover; hit is False when the target was already gone (not counted)."""
    kind: str
    t: float
    pid: int | None = None
    until: float | None = None
    hit: bool = True
    note: str = ""


@dataclass
class Worker:
    """A child of a runner as the harness saw it: first seen alive, first seen gone (None: never seen gone)."""
    pid: int
    seen_at: float
    gone_at: float | None = None


@dataclass
class RunnerLife:
    """One runner process from outside. killed: when a fault's kill -9 hit it. left: pids of processes its jobs
    started that were still alive a moment after it exited. eof: when its stdout pipe reached EOF (None: never)."""
    name: str
    pid: int
    started: float
    exited: float | None = None
    code: int | None = None
    grace: float = 20.0
    for_seconds: float = 0.0
    sigterm: float | None = None
    killed: float | None = None
    forced: bool = False
    eof: float | None = None
    stderr: list[str] = field(default_factory=list)
    left: list[int] = field(default_factory=list)
    workers: dict[int, Worker] = field(default_factory=dict)


@dataclass(frozen=True)
class Limits:
    """The settings the system ran with, and the slack the checker grants (seconds)."""
    lease: float
    compensate_every: float
    time_limit: float
    db_timeout: float = 3.0
    redis_timeout: float = 2.0
    stuck_slack: float = 5.0          # invariant 4: lease + one compensate period + this
    exit_slack: float = 5.0           # invariant 5: --grace + this
    wait_slack: float = 4.0           # invariant 6: DELAYQ_DB_TIMEOUT / DELAYQ_REDIS_TIMEOUT + this
    lost_window: float = 3.0          # invariant 7: a death this soon after a run's end may have lost its outcome


@dataclass
class Run:
    job: int
    attempt: int | None
    pid: int
    t: float
    kind: str
    end: float | None = None

    @property
    def died(self) -> bool:
        """Its process died under it (a "raise" run never writes its end: it failed, it did not die)."""
        return self.end is None and self.kind != "raise"


# -- reading the history ----------------------------------------------------------------------------------------
def runs_of(history: Iterable[dict]) -> dict[int, list[Run]]:
    """Each job's runs in start order: a start paired with the later end of the same job, attempt and pid."""
    runs: dict[int, list[Run]] = defaultdict(list)
    for rec in history:
        if rec.get("job") is None:
            continue
        if rec["e"] == "start":
            runs[rec["job"]].append(Run(rec["job"], rec.get("attempt"), rec["pid"], rec["t"], rec.get("kind", "ok")))
        elif rec["e"] == "end":
            _pair_end(runs[rec["job"]], rec)
    for job_runs in runs.values():
        job_runs.sort(key=lambda r: r.t)
    return dict(runs)


def _pair_end(job_runs: list[Run], rec: dict) -> None:
    for run in reversed(job_runs):
        if run.end is None and run.pid == rec["pid"] and run.attempt == rec.get("attempt") and run.t <= rec["t"]:
            run.end = rec["t"]
            return


def innocent(row: Row, time_limit: float) -> bool:
    """Neither crashes nor hangs: ok/raise/sleep lasting at most half its time limit (no borderline cases)."""
    if row.kind not in INNOCENT_KINDS:
        return False
    seconds = float(row.args.get("ms", 0)) / 1000 + float(row.args.get("seconds", 0))
    return seconds <= time_limit / 2


def fault_kind(run: Run, row: Row | None, time_limit: float) -> str | None:
    """The job-made fault a culprit's run injects ("job_exit", ... "job_hang"), None for an innocent's run."""
    if row is not None and innocent(row, time_limit) or row is None and run.kind in INNOCENT_KINDS:
        return None
    if run.kind in ("sleep", "ok"):
        return "job_hang"
    return f"job_{run.kind}"


# -- processes: who ran where, and when it died -----------------------------------------------------------------
class Processes:
    """The pids the jobs ran in, mapped to their runner, with the moments each one (or its runner) ended."""

    def __init__(self, lives: list[RunnerLife], faults: list[Fault], history: list[dict]):
        self.lives = lives
        self.kills = [f for f in faults if f.kind in KILLS and f.hit]
        self.owner = {life.pid: life for life in lives}
        self.owner.update({pid: life for life in lives for pid in life.workers})
        self.last_record: dict[int, float] = {}
        for rec in history:
            self.last_record[rec["pid"]] = max(rec["t"], self.last_record.get(rec["pid"], rec["t"]))

    def ends_after(self, pid: int, t: float) -> list[float]:
        """Moments at or after t when the process (or its runner) ended or was killed."""
        out = [f.t for f in self.kills if f.pid == pid and f.t >= t]
        life = self.owner.get(pid)
        if life is not None:
            worker = life.workers.get(pid)
            if worker is not None and worker.gone_at is not None:
                out.append(worker.gone_at)
            out += [f.t for f in self.kills if f.pid == life.pid and f.t >= t]
            if life.exited is not None:
                out.append(life.exited)
        return [x for x in out if x >= t]

    def death_of(self, run: Run) -> float:
        """When a died run's process died: the first end seen at or after its start; else its pid's last record."""
        ends = self.ends_after(run.pid, run.t)
        return min(ends) if ends else self.last_record.get(run.pid, run.t)

    def died_abnormally(self, pid: int, t: float, within: float) -> bool:
        """Within `within` s after t, the process was killed, died under a live runner not told to stop, or its
        runner ended other than by exit 0 (and the process with it, or after it as an orphan the harness ended):
        a moment at which an outcome not yet committed is lost."""
        if any(t <= f.t <= t + within for f in self.kills if f.pid == pid):
            return True
        life = self.owner.get(pid)
        if life is None:
            return False
        if life.exited is not None and t <= life.exited <= t + within and (life.code != 0 or life.killed is not None):
            return True
        worker = life.workers.get(pid)
        gone = worker.gone_at if worker else None
        if gone is None or not t <= gone <= t + within:
            return False
        stopping = life.sigterm if life.sigterm is not None else life.exited
        orphaned = life.killed is not None or life.code not in (0, None)     # ended by the harness after it
        return stopping is None or gone < stopping or orphaned

    def killed_between(self, pid: int, start: float, end: float) -> bool:
        """A harness kill -9 hit the process, or its runner, between start and end."""
        life = self.owner.get(pid)
        targets = {pid, life.pid} if life is not None else {pid}
        return any(start <= f.t <= end for f in self.kills if f.pid in targets)

    def death_near(self, t: float, before: float = 0.1, after: float = 1.0) -> bool:
        """Some process of the system died around t (a kill, a worker gone, a runner's abnormal exit)."""
        moments = [f.t for f in self.kills]
        moments += [w.gone_at for life in self.lives for w in life.workers.values() if w.gone_at is not None]
        moments += [life.exited for life in self.lives if life.exited is not None and life.code != 0]
        return any(t - before <= m <= t + after for m in moments)


# -- stderr -----------------------------------------------------------------------------------------------------
def problem_lines(stderr: list[str], since: float | None = None) -> list[str]:
    """stderr lines that are not a job's outcome log line (JSON with "job", or key=value with job=); with
    `since`, JSON log lines stamped before it are left out (plain lines, such as the error boundary's, carry no
    time and always count)."""
    out = []
    for line in stderr:
        text = line.strip()
        record = _json_record(text)
        if not text or _outcome_line(text, record):
            continue
        if since is not None and record is not None and isinstance(record.get("time"), (int, float)) \
                and record["time"] < since:
            continue
        out.append(text)
    return out


def about_a_server(line: str) -> bool:
    """A plain line (the error boundary's: always counted) or a log line whose message names a server: what a
    runner says about a paused or failing server, as opposed to a job's crash it also reports."""
    record = _json_record(line.strip())
    if record is None:
        return True
    return bool(SERVER_WORDS.search(str(record.get("msg", ""))))


def first_mention(stderr: list[str], start: float, end: float) -> float | None:
    """When a runner first logged a line naming a server between start and end (JSON log lines carry the time)."""
    for line in stderr:
        record = _json_record(line.strip())
        moment = record.get("time") if record else None
        if isinstance(moment, (int, float)) and start <= moment <= end and about_a_server(line):
            return float(moment)
    return None


def _json_record(text: str) -> dict | None:
    if not text.startswith("{"):
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _outcome_line(text: str, record: dict | None) -> bool:
    if record is not None:
        return "job" in record
    return text.startswith("time=") and " job=" in f" {text}"
