"""The fault checker of issue 21, in the spirit of Jepsen: what the jobs wrote, what the tables say, what was done.

A pure library: no server, no clock, no process. It takes
  - the history the jobs wrote themselves (tests/chaos/faultjobs.py: a "start" and an "end" line per run),
  - the rows of the jobs and attempts tables,
  - the fault log (what the harness injected, when, into which pid, and whether it hit a live process),
  - one RunnerLife per runner process (start, SIGTERM, exit, code, stderr, stdout EOF, its worker pids and when
    each died, the descendants still alive after it exited),
and returns the violations of invariants 1-7 and the figures beside them. The harness is
tests/chaos/faultcheck.py; tests/unit/test_checker.py proves each check on small crafted histories. The inputs
and their shared readings (runs, innocence, process deaths) are in tests/chaos/observed.py.

Vocabulary. A *run* is a "start" record and, if its code returned, the "end" record of the same job, attempt and
pid. A run that has a start and no end *died* (its process died under it), except a "raise" run, which never writes
its end. A job is *innocent* when its kind neither crashes nor hangs: "ok", "raise", "sleep" of at most half the time
limit. Everything else (exit, segv, fork, term_proof, spin, block_c, hog, a sleep past the limit) is a *culprit*.
"""

from __future__ import annotations

import signal
from collections import Counter, defaultdict
from dataclasses import dataclass

from tests.chaos.observed import (FAILOVERS, KILLS, PAUSES, AttemptRow, Fault, Limits, Processes, Row,  # noqa: F401
                                  Run, RunnerLife, Worker, about_a_server, fault_kind, first_mention, innocent,
                                  problem_lines, runs_of)

FINAL = ("succeeded", "failed", "timed_out", "cancelled")
UNKNOWN = "outcome unknown"
TIMED_OUT = "timed out after"
STARTUP = 1.0       # seconds from a runner's spawn in which a SIGTERM may still find the interpreter starting
INVARIANTS = {
    1: "an at-most-once job runs at most once",
    2: "every run has its attempt row",
    3: "only the culprit is blamed",
    4: "nothing stays stuck",
    5: "a runner always ends",
    6: "waits on MariaDB/Redis are bounded",
    7: "re-runs per kill -9 (a figure)",
}


# -- what comes out ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Violation:
    invariant: int
    subject: str           # "job 12" or "runner r3 (pid 4242)"
    reason: str            # one line


@dataclass
class Report:
    violations: list[Violation]
    figures: dict

    def count(self, invariant: int) -> int:
        return sum(1 for v in self.violations if v.invariant == invariant)

    def of(self, invariant: int) -> list[Violation]:
        return [v for v in self.violations if v.invariant == invariant]


# -- the checks -------------------------------------------------------------------------------------------------
class Checker:
    """One judgment of one world: each check reads the runs, rows and lives prepared here once and returns the
    one-line reasons it found (several reasons of one subject and invariant make one violation)."""

    def __init__(self, history: list[dict], rows: list[Row], attempts: list[AttemptRow], faults: list[Fault],
                 lives: list[RunnerLife], limits: Limits):
        self.history, self.limits, self.faults, self.lives = history, limits, faults, lives
        self.rows = {row.id: row for row in rows}
        self.attempts: dict[int, list[AttemptRow]] = defaultdict(list)
        for a in attempts:
            self.attempts[a.job_id].append(a)
        self.runs = runs_of(history)
        self.procs = Processes(lives, faults, history)
        self.t0 = min([r["t"] for r in history] + [f.t for f in faults] + [life.started for life in lives]
                      or [0.0])
        self.lost_outcomes = Counter()         # invariant 7: "rerun" (ordinary), "unknown" (at most once)
        self.allowed = Counter()               # allowances granted, shown as figures

    def at(self, t: float | None) -> str:
        """A moment as seconds since the first thing seen, for one-line reasons."""
        return "never" if t is None else f"+{t - self.t0:.1f}s"

    def check(self) -> Report:
        out: list[Violation] = []
        for job in sorted(set(self.rows) | set(self.runs)):
            out += self.check_job(job)
        for life in self.lives:
            out += self.check_runner(life)
        out += self.check_pauses()
        return Report(out, self.figures())

    def check_job(self, job: int) -> list[Violation]:
        row, runs = self.rows.get(job), self.runs.get(job, [])
        subject = f"job {job}" + (f" ({'once' if row.once else 'run'} {row.kind})" if row else "")
        found = {1: self.once_at_most(row, runs), 2: self.attempt_rows(job, row, runs),
                 3: self.blame(row, runs) if row else [], 4: self.not_stuck(row, runs)}
        return [Violation(inv, subject, "; ".join(reasons)) for inv, reasons in found.items() if reasons]

    # 1 ---------------------------------------------------------------------------------------------------------
    def once_at_most(self, row: Row | None, runs: list[Run]) -> list[str]:
        if row is None or not row.once or len(runs) <= 1:
            return []
        return [f"ran {len(runs)} times: " + ", ".join(f"attempt {r.attempt} pid {r.pid} at {self.at(r.t)}"
                                                       for r in runs)]

    # 2 ---------------------------------------------------------------------------------------------------------
    def attempt_rows(self, job: int, row: Row | None, runs: list[Run]) -> list[str]:
        if not runs:
            return []
        if row is None:
            return [f"ran {len(runs)} time(s) but has no row in the jobs table"]
        have = {a.attempt for a in self.attempts.get(job, [])}
        out = [f"attempt {r.attempt} ran (pid {r.pid} at {self.at(r.t)}) but has no attempt row"
               for r in runs if r.attempt not in have]
        numbers = Counter(r.attempt for r in runs)
        out += [f"attempt {n} started {c} times: reported as never started and its number reused"
                for n, c in sorted(numbers.items(), key=lambda x: (x[0] is None, x[0])) if c > 1]
        if row.attempts == 0:
            out.append("ran but the row shows attempts 0")
        elif max((r.attempt or 0) for r in runs) > row.attempts:
            out.append(f"ran attempt {max((r.attempt or 0) for r in runs)} but the row shows attempts {row.attempts}")
        if row.status in FINAL and row.started_at is None:
            out.append(f"ran, is {row.status}, and its started_at is empty")
        return out

    # 3 ---------------------------------------------------------------------------------------------------------
    def blame(self, row: Row, runs: list[Run]) -> list[str]:
        if not innocent(row, self.limits.time_limit):
            return []
        out = []
        killed = self.killed_runs(runs)
        if row.crashes > killed:
            out.append(f"innocent but crashes={row.crashes}" + (f" ({killed} after a kill -9)" if killed else ""))
        elif row.crashes:
            self.allowed["innocent_crashes_counted_after_a_kill9"] += row.crashes
        out += self.innocent_end(row, runs, row.crashes <= killed and self.interrupted_by_harness(runs))
        out += [f"attempt {a.attempt}'s row says {a.error.splitlines()[0][:80]!r}"
                for a in self.attempts.get(row.id, []) if a.error and TIMED_OUT in a.error]
        if not row.once:
            out += self.reruns(row, runs)
        return out

    def killed_runs(self, runs: list[Run]) -> int:
        """Runs that died under a harness kill -9 (of their worker or its supervisor): a system cannot tell that
        SIGKILL from the OOM killer's answer to the job itself, so a crash counted for each is not held against it."""
        return sum(1 for r in runs if r.died and self.procs.killed_between(r.pid, r.t, self.procs.death_of(r) + 0.1))

    def external(self, run: Run) -> bool:
        """A died run that the harness ended: a kill -9 of its worker or runner, its runner's SIGTERM (the grace
        period ran out), or a server fault that ended its runner; not a batch-mate's crash, hang or hog."""
        death = self.procs.death_of(run)
        if self.procs.killed_between(run.pid, run.t, death + 0.1):
            return True
        life = self.procs.owner.get(run.pid)
        if life is None:
            return False
        if life.sigterm is not None and life.sigterm <= death + 0.1:
            return True
        return (life.exited is not None and life.exited <= death + 0.1 and life.code not in (0, None)
                and self.server_fault_during(run.t, death))

    def interrupted_by_harness(self, runs: list[Run]) -> bool:
        """Every run that died, died of the harness's doing, and the last run, if it ended, lost its outcome to
        a death: attempts an innocent lost that way may use up its max_attempts."""
        if any(r.died and not self.external(r) for r in runs):
            return False
        last = runs[-1] if runs else None
        return last is None or last.end is None or self.procs.died_abnormally(last.pid, last.end,
                                                                                self.lost_window(last.end))

    def innocent_end(self, row: Row, runs: list[Run], harness_did_it: bool = False) -> list[str]:
        """An innocent ends failed or timed_out only by its own ladder (raise), as outcome unknown when the run
        of an at-most-once job died under it, or with its attempts (or crashes) used up by the harness's kills,
        SIGTERMs and server faults; never by a time limit, nor by a batch-mate."""
        if row.status not in ("failed", "timed_out"):
            return []
        error = (row.last_error or "").splitlines()[0][:100] if row.last_error else ""
        if row.kind == "raise" and row.status == "failed" and (TIMED_OUT not in error or "fails on purpose" in error):
            return []
        if row.once and row.status == "failed" and UNKNOWN in (row.last_error or ""):
            return self.unknown_allowed(row, runs)
        if harness_did_it and row.status == "failed" and TIMED_OUT not in (row.last_error or ""):
            self.allowed["innocent_failed_after_harness_interruptions"] += 1
            return []
        return [f"innocent but ended {row.status}: {error!r}"]

    def unknown_allowed(self, row: Row, runs: list[Run]) -> list[str]:
        if any(r.end is None for r in runs):        # died (or raised, and its process may have died after)
            return []
        if runs:
            last = runs[-1]
            if self.procs.died_abnormally(last.pid, last.end, self.lost_window(last.end)):
                self.lost_outcomes["unknown"] += 1
                return []
            return [f"failed as outcome unknown though its run ended at {self.at(last.end)} and its process lived on"]
        started = self.begun_at(row)
        if started is not None and self.procs.death_near(started, before=0.05, after=0.25):
            self.allowed["once_died_before_its_first_line"] += 1
            return []
        return ["failed as outcome unknown, yet it never started (no start in the history)"]

    def begun_at(self, row: Row) -> float | None:
        times = [a.started_at for a in self.attempts.get(row.id, []) if a.started_at is not None]
        return max(times) if times else row.started_at

    def reruns(self, row: Row, runs: list[Run]) -> list[str]:
        """An ordinary innocent runs again only after a run that died (or raised), never beside one still running;
        after a run that ended, only if its process died between that end and the new run, soon after the end
        (its outcome lost: counted under invariant 7)."""
        out = []
        for before, again in zip(runs, runs[1:]):
            if self.overlap(before, again):
                out.append(f"ran again (attempt {again.attempt} at {self.at(again.t)}) while attempt "
                           f"{before.attempt} still ran (pid {before.pid})")
            elif before.end is not None:
                within = min(self.lost_window(before.end), again.t - before.end)
                if self.procs.died_abnormally(before.pid, before.end, within):
                    self.lost_outcomes["rerun"] += 1
                else:
                    out.append(f"ran again (attempt {again.attempt} at {self.at(again.t)}) though attempt "
                               f"{before.attempt} ended at {self.at(before.end)} and its process lived on")
        return out

    def overlap(self, before: Run, again: Run) -> bool:
        """The second run began while the first still ran: before its end, or before its process died (a runner
        cut off from a paused server must end its jobs before their leases can be taken over)."""
        if before.end is not None:
            return again.t < before.end
        if before.died:
            return again.t < self.procs.death_of(before) - 0.2      # the harness sees a death within 50 ms
        return False

    def lost_window(self, end: float) -> float:
        """How long after a run's end a death may still lose its outcome: the commit's few seconds, longer by any
        server pause or failover meanwhile (no outcome can be written through one)."""
        return self.limits.lost_window + self.server_time(end, end + self.limits.lost_window + 30)

    # 4 ---------------------------------------------------------------------------------------------------------
    def not_stuck(self, row: Row | None, runs: list[Run]) -> list[str]:
        if row is None:
            return []
        out = [] if row.status in FINAL else [f"still {row.status} at the end (attempts {row.attempts})"]
        for i, run in enumerate(runs):
            if run.died:
                late = self.recovered_late(row, run, runs[i + 1:])
                if late:
                    out.append(late)
        return out

    def recovered_late(self, row: Row, run: Run, later: list[Run]) -> str | None:
        """A died run's job must run again or become final within lease + one compensate period + slack of the
        death, plus the time a server was paused or failing over meanwhile (nothing can recover through that; a
        pause that begins before that bound is over moves the bound on by its whole length)."""
        died = self.procs.death_of(run)
        base = self.limits.lease + self.limits.compensate_every + self.limits.stuck_slack
        bound = base
        for _ in range(10):          # a pause that begins within the bound moves it on by its whole length
            longer = base + self.server_time(died, died + bound)
            if longer <= bound:
                break
            bound = longer
        final = row.finished_at if row.status in FINAL and row.finished_at and row.finished_at >= run.t else None
        # claimed again counts too (an attempt row of a later attempt): that claim may itself have been cut short
        # by another fault before its job began, which no history record shows
        claimed = [a.started_at for a in self.attempts.get(row.id, []) if a.attempt > run.attempt and a.started_at]
        # or recovered: the died run's own attempt row, written by the recovery that made the job pending again
        # (running it then waits for a runner, which a paused server may have ended: cron starts the next)
        claimed += [a.finished_at for a in self.attempts.get(row.id, [])
                    if a.attempt == run.attempt and a.finished_at and a.finished_at >= died]
        nexts = [r.t for r in later] + ([final] if final is not None else []) + claimed
        if not nexts:
            return None                   # never recovered: "still running at the end" already says it
        delay = min(nexts) - died
        if delay <= bound:
            return None
        return (f"attempt {run.attempt} died (pid {run.pid}) at {self.at(died)}; ran again or became final "
                f"{delay:.1f} s later (bound {bound:.1f} s)")

    def server_time(self, start: float, end: float) -> float:
        """Seconds of pauses and failovers overlapping [start, end]."""
        total = 0.0
        for f in self.faults:
            if f.hit and f.until is not None and (f.kind in PAUSES or f.kind in FAILOVERS):
                total += max(0.0, min(f.until, end) - max(f.t, start))
        return total

    # 5 ---------------------------------------------------------------------------------------------------------
    def check_runner(self, life: RunnerLife) -> list[Violation]:
        if life.killed is not None:
            return []                     # kill -9 ends it; what it left behind is a figure
        reasons = self.sigterm_end(life) if life.sigterm is not None else self.own_end(life)
        if life.left:
            reasons.append(f"{len(life.left)} process(es) its jobs started outlived it: pids "
                           + ",".join(map(str, life.left[:5])))
        subject = f"runner {life.name} (pid {life.pid})"
        return [Violation(5, subject, "; ".join(reasons))] if reasons else []

    def sigterm_end(self, life: RunnerLife) -> list[str]:
        deadline = life.sigterm + life.grace + self.limits.exit_slack
        if self.server_fault_during(life.sigterm, deadline):
            return []                     # a paused or failing server may end it with 1: invariant 6 judges it
        out = []
        if life.exited is None or life.exited > deadline:
            out.append(f"{'never exited' if life.exited is None else 'exited'} "
                       f"{self.after(life.exited, life.sigterm)} after SIGTERM (bound --grace {life.grace:g} + "
                       f"{self.limits.exit_slack:g} s){'; the harness had to kill it' if life.forced else ''}")
        elif life.code != 0 and not self.before_its_first_statement(life):
            out.append(f"exit code {life.code} after SIGTERM: {self.last_problem(life)}")
        if life.eof is None or life.eof > deadline:
            held = " (until the harness ended what its jobs started)" if life.left else ""
            out.append(f"stdout still open {self.after(life.eof, life.sigterm)} after SIGTERM{held}")
        return out

    def before_its_first_statement(self, life: RunnerLife) -> bool:
        """Ended by a SIGTERM's default action within STARTUP of its spawn, with no line on stderr and no run by it
        or its workers: the interpreter was still starting, before bin/run_due.py's first statement installs the
        handler (no Python code can act before that; a supervisor that must not lose even that signal starts the
        runner with SIGTERM blocked). Counted as an allowance, as a figure."""
        if life.code != -signal.SIGTERM or life.sigterm - life.started > STARTUP or life.stderr:
            return False
        pids = {life.pid, *life.workers}
        if any(r.pid in pids for runs in self.runs.values() for r in runs):
            return False
        self.allowed["runner_ended_by_sigterm_before_its_first_statement"] += 1
        return True

    def own_end(self, life: RunnerLife) -> list[str]:
        """A runner nobody signalled ends by itself after --for, with 0, unless a server fault ended it."""
        if life.exited is None:
            return ["never exited"]
        if self.server_fault_during(life.started, life.exited):
            return []
        out = []
        bound = life.for_seconds + self.limits.time_limit + life.grace + self.limits.exit_slack
        if life.exited - life.started > bound:
            out.append(f"ran {life.exited - life.started:.1f} s with --for {life.for_seconds:g} (bound {bound:g} s)"
                       + ("; the harness had to kill it" if life.forced else ""))
        elif life.code != 0:
            out.append(f"exited {life.code} with no signal and no server fault: {self.last_problem(life)}")
        if life.eof is None or life.eof > life.exited + self.limits.exit_slack:
            out.append(f"stdout still open {self.after(life.eof, life.exited)} after it exited")
        return out

    @staticmethod
    def after(t: float | None, since: float) -> str:
        return "forever" if t is None else f"{t - since:.1f} s"

    def server_fault_during(self, start: float, end: float) -> bool:
        return any(f.hit and f.t <= end and (f.until or f.t) + self.limits.wait_slack >= start
                   for f in self.faults if f.kind in PAUSES or f.kind in FAILOVERS)

    # 6 ---------------------------------------------------------------------------------------------------------
    def check_pauses(self) -> list[Violation]:
        out = []
        for life in self.lives:
            reasons = []
            for f in self.faults:
                if f.hit and f.kind in PAUSES:
                    reasons += self.paused_end(life, f)
                elif f.hit and f.kind in FAILOVERS:
                    reasons += self.failover_end(life, f)
            if reasons:
                out.append(Violation(6, f"runner {life.name} (pid {life.pid})", "; ".join(dict.fromkeys(reasons))))
        return out

    def paused_end(self, life: RunnerLife, f: Fault) -> list[str]:
        """Exit 1 with one line and no traceback, by the bound: the timeout after the runner's first wait on the
        paused server. That wait begins at once, or when one of its jobs ends (at most the time limit) if every
        slot was busy; if it logged the server's error, its wait is known to have ended then."""
        server = PAUSES[f.kind]
        timeout = self.limits.db_timeout if f.kind == "stop_mariadb" else self.limits.redis_timeout
        if life.started >= f.until or (life.exited is not None and life.exited < f.t):
            return []
        ref = max(f.t, life.started)
        bound = ref + timeout + self.limits.time_limit + self.limits.wait_slack
        noticed = first_mention(life.stderr, f.t, f.until)
        if noticed is not None:
            bound = min(bound, noticed + self.limits.wait_slack)
        if any(t is not None and t < bound for t in (life.sigterm, life.killed)):
            return []                     # another fault ended it
        if f.until < bound:             # the pause ended before the bound: only how it ended, if it ended then
            ended_in = life.exited is not None and life.exited <= f.until + 1
            return self.one_line(life, server, f.t) if ended_in and life.code == 1 else []
        if life.exited is None or life.exited > bound:
            seen = f", {self.after(min(life.exited or f.until, f.until), noticed)} after it logged the error" \
                if noticed is not None else ""
            return [f"still running {self.after(min(life.exited or f.until, f.until), ref)} into a {server} pause"
                    f"{seen} (bound {bound - ref:.1f} s)"]
        if life.code != 1:
            return [f"exited {life.code} in a {server} pause (want 1)"]
        return self.one_line(life, server, f.t)

    def failover_end(self, life: RunnerLife, f: Fault) -> list[str]:
        """A runner may ride over a failover or exit 1 with one line."""
        window_end = (f.until or f.t) + self.limits.wait_slack
        if life.exited is None or not f.t <= life.exited <= window_end or life.code != 1 or life.killed is not None:
            return []
        return self.one_line(life, "failover", f.t)

    def one_line(self, life: RunnerLife, server: str, since: float) -> list[str]:
        problems = [line for line in problem_lines(life.stderr, since) if about_a_server(line)]
        if any("Traceback" in line for line in life.stderr):
            return [f"a traceback on stderr after a {server} fault"]
        if len(problems) != 1:
            return [f"{len(problems)} lines on stderr after a {server} fault (want 1): {problems[:2]!r}"]
        return []

    def last_problem(self, life: RunnerLife) -> str:
        problems = problem_lines(life.stderr)
        return repr(problems[-1][:120]) if problems else "(no line)"

    # figures -------------------------------------------------------------------------------------------------
    def figures(self) -> dict:
        all_runs = [r for runs in self.runs.values() for r in runs]
        kills = sum(1 for f in self.faults if f.kind in KILLS and f.hit)
        reruns = self.lost_outcomes["rerun"]
        return {
            "jobs": len(self.rows), "runs": len(all_runs), "runs_died": sum(r.died for r in all_runs),
            "statuses": dict(Counter(row.status for row in self.rows.values())),
            "runs_by_kind": dict(Counter(r.kind for r in all_runs)),
            "faults": self.faults_by_kind(all_runs),
            "runners": len(self.lives),
            "runner_exit_codes": dict(Counter(str(life.code) for life in self.lives)),
            "left_by_kill9_supervisor": sum(len(life.left) for life in self.lives if life.killed is not None),
            "kill9": kills, "reruns_after_lost_outcome": reruns,
            "reruns_per_kill9": round(reruns / kills, 2) if kills else None,
            "at_most_once_lost_outcomes": self.lost_outcomes["unknown"],
            "allowances": dict(self.allowed),
        }

    def faults_by_kind(self, all_runs: list[Run]) -> dict:
        """Harness faults that hit a live process, and culprit runs (each one a job-made fault that happened)."""
        faults = Counter(f.kind for f in self.faults if f.hit)
        faults.update(k for k in (fault_kind(r, self.rows.get(r.job), self.limits.time_limit) for r in all_runs) if k)
        return dict(sorted(faults.items()))


def check(history: list[dict], rows: list[Row], attempts: list[AttemptRow], faults: list[Fault],
          lives: list[RunnerLife], limits: Limits) -> Report:
    """Violations of invariants 1-6 and the figures (7 among them) for one world's history, tables and faults."""
    return Checker(history, rows, attempts, faults, lives, limits).check()
