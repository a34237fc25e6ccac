"""Issue 21, "A crash-only runner": each reproduction of its "Why" list, run as cron runs it, with the right answer.

The jobs are tests/chaos/faultjobs.py: each writes a start and an end record (job, attempt, pid, time) to a
history file that the runner never touches, so what ran is read from the jobs themselves, beside the tables
(jobs: status, attempts, crashes, last_error, started_at; attempts: one row per run). The real bin/run_due.py
and bin/compensate.py run in subprocesses; processes are killed by their pid; servers are real (MariaDB +
Redis only: the faults are those of that deployment), and the private ones of conftest.py are the ones paused.

The design these answers follow: run_due.py is a supervisor whose worker processes are its children, each in
a process group of its own; an at-most-once job (and a job that once crashed a worker) runs alone in a process
of its own, so that a batch-mate's crash cannot touch it; a dead worker's jobs go to the same recovery as a
dead runner's, at once.
"""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict

import pytest

from delayq.clock import SystemClock
from delayq.runner import orphans
from delayq.store import open_store
from delayq.store.queries import TABLES
from tests.acceptance.test_runner import enqueue, leftovers, runner, statuses
from tests.chaos import faultjobs
from tests.chaos.servers import resume
from tests.conftest import ROOT, Backend, drop_redis
from tests.helpers import command, environ, script, until

ON_MARIADB_REDIS = pytest.mark.parametrize("world", ["mysql+redis"], indirect=True)
ALLOWED = "examples,tests.chaos"


# -- the world, the jobs, the history ------------------------------------------------------------------------
def allow_faults(backend):
    """Every script of this backend may run tests.chaos.faultjobs (world.env() allows `examples` only)."""
    base = backend.env
    backend.env = lambda: {**base(), "DELAYQ_ALLOWED_MODULES": ALLOWED}
    return backend


@pytest.fixture
def chaos(world):
    """The `world` fixture (MariaDB + Redis), its scripts allowed to run the fault jobs."""
    yield allow_faults(world)
    end_processes(world)


@pytest.fixture
def private_world(mariadb, redis_server, tmp_path):
    """A world on the private MariaDB and Redis of conftest.py: ours to pause with SIGSTOP."""
    backend = Backend("mysql+redis", tmp_path, SystemClock())
    backend.database_url, backend.redis_url = mariadb.url, redis_server.url
    open_store(backend.database_url, backend.prefix).migrate(backend.clock.now())
    yield allow_faults(backend)
    resume(mariadb.proc)
    resume(redis_server.proc)
    end_processes(backend)
    for m in backend.managers:
        m.close()
    for table in TABLES:
        backend.sql(f"DROP TABLE IF EXISTS `{backend.prefix}_{table}`")      # our own generated prefix
    drop_redis(backend.prefix, redis_server.url)
    shutil.rmtree(orphans.directory(open_store(backend.database_url, backend.prefix), make=False), ignore_errors=True)


def fault(history, kind="ok", *, once=False, delay=None, ladder=None, **args):
    """One line of a bulk file: a fault job (`run`, or `once`: at most once) writing to `history`."""
    job = {"call": f"tests.chaos.faultjobs:{'once' if once else 'run'}",
           "args": {"path": str(history), "kind": kind, **args}}
    if delay is not None:
        job["delay"] = delay
    if ladder is not None:
        job["ladder"] = ladder
    return job


def runs(history) -> dict[int, list[dict]]:
    """Each job's runs in the order they began: attempt, pid, start, end (None: its process died in it)."""
    found: dict[int, list[dict]] = defaultdict(list)
    running: dict[tuple[int, int], dict] = {}
    for record in faultjobs.read(str(history)):
        key = (record["job"], record["pid"])
        if record["e"] == "start":
            run = {"attempt": record["attempt"], "pid": record["pid"], "start": record["t"], "end": None}
            found[record["job"]].append(run)
            running[key] = run
        elif key in running:
            running.pop(key)["end"] = record["t"]
    return found


def started(history) -> int:
    return sum(1 for record in faultjobs.read(str(history)) if record["e"] == "start")


def jobs(world) -> dict[int, dict]:
    names = ("status", "attempts", "crashes", "last_error", "started_at")
    return {row[0]: dict(zip(names, row[1:]))
            for row in world.sql("SELECT id, status, attempts, crashes, last_error, started_at FROM {jobs}")}


def attempt_rows(world) -> dict[int, list[tuple[int, str, str]]]:
    """Each job's attempt rows, in the order written: (attempt, outcome, error)."""
    found: dict[int, list[tuple[int, str, str]]] = defaultdict(list)
    for job_id, attempt, outcome, error in world.sql("SELECT job_id, attempt, outcome, error FROM {attempts} "
                                                     "ORDER BY id"):
        found[job_id].append((attempt, outcome, error or ""))
    return found


def unrecorded(world, history) -> list[tuple[int, int]]:
    """(job, attempt) of the runs that have no attempt row of their own (invariant 2: none)."""
    ran = Counter((job, run["attempt"]) for job, its in runs(history).items() for run in its)
    rows = Counter((job, attempt) for job, its in attempt_rows(world).items() for attempt, _, _ in its)
    return sorted(key for key, n in ran.items() if rows[key] < n)


# -- processes ------------------------------------------------------------------------------------------------
def descendants(pid: int) -> set[int]:
    """Every process below `pid` now (children of each of its threads, recursively)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        for path in glob.glob(f"/proc/{todo.pop()}/task/*/children"):
            try:
                with open(path) as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            todo += [k for k in kids if k not in found]
            found.update(kids)
    return found


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def kill(*pids: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def end_processes(world, *procs: subprocess.Popen) -> None:
    """Clean-up: our subprocesses, then whatever still carries this world's prefix (a job's forked child)."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    kill(*(int(pid) for pid in leftovers(world)))


def run_due_piped(world, *args, stderr, **extra):
    """`run_due.py ARGS | cat`, as a shell would start it; the caller holds no end of the pipe."""
    cat = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    proc = subprocess.Popen(command("run_due.py", *args), env=environ(world, **extra), cwd=ROOT, stdout=cat.stdin,
                            stderr=stderr)
    cat.stdin.close()
    return proc, cat


# -- 1. a batch-mate that calls os._exit ------------------------------------------------------------------------
@ON_MARIADB_REDIS
def test_an_exit_in_a_batch_mate_runs_no_at_most_once_job_twice(chaos, tmp_path):
    """Issue 21, reproduction 1: seven at-most-once jobs of 1.5 s and, due 1 s later, a job calling os._exit(1).

    Right answer: each at-most-once job ran once (it ran alone: the crash could not touch it) and succeeded; the
    crash is the exit job's alone: pending on its ladder, crashes = 1, one run, whose attempt row says it killed
    its worker process; every run has its attempt row.
    """
    history = tmp_path / "history.jsonl"
    killer, *charges = enqueue(chaos, [fault(history, "exit", delay=1, ladder="60")] +
                               [fault(history, "ok", once=True, ms=1500)] * 7)
    first = script(chaos, "run_due.py", "--for", "3", "--concurrency", "8", "--timeout", "10", check=None)
    second = script(chaos, "run_due.py", "--for", "3", check=None)
    ran, rows, tries = runs(history), jobs(chaos), attempt_rows(chaos)
    assert {job: len(ran[job]) for job in charges} == {job: 1 for job in charges}, ran
    assert {job: rows[job]["status"] for job in charges} == {job: "succeeded" for job in charges}, rows
    assert (rows[killer]["status"], rows[killer]["crashes"], len(ran[killer])) == ("pending", 1, 1), rows[killer]
    [(attempt, _, error)] = tries[killer]
    assert attempt == 1 and "killed" in error, tries[killer]
    assert unrecorded(chaos, history) == []
    assert (first.returncode, second.returncode) == (0, 0), (first.stderr[-2000:], second.stderr[-2000:])


@ON_MARIADB_REDIS
def test_an_exit_in_a_batch_mate_reruns_ordinary_jobs_once_and_blames_none_of_them(chaos, tmp_path):
    """Issue 21, reproduction 1, with seven ordinary jobs of 1.5 s as the batch-mates of the os._exit job.

    Right answer: each ordinary job succeeded with crashes = 0; it ran at most twice, and again only after a
    run that its process did not survive (no end record), once; an attempt row for each run; none of them
    failed or timed out. The exit job never succeeded and is pending on its ladder.
    """
    history = tmp_path / "history.jsonl"
    killer, *mates = enqueue(chaos, [fault(history, "exit", delay=1, ladder="60")] +
                             [fault(history, "ok", ms=1500)] * 7)
    first = script(chaos, "run_due.py", "--for", "3", "--concurrency", "8", "--timeout", "10", check=None)
    second = script(chaos, "run_due.py", "--for", "3", check=None)
    ran, rows, tries = runs(history), jobs(chaos), attempt_rows(chaos)
    assert {job: (rows[job]["status"], rows[job]["crashes"]) for job in mates} == \
        {job: ("succeeded", 0) for job in mates}, rows
    for job in mates:
        its = ran[job]
        assert 1 <= len(its) <= 2 and its[-1]["end"] is not None, (job, its)
        assert all(run["end"] is None for run in its[:-1]), (job, its)     # again only after a run that died
        assert not any(outcome == "failed" or "timed out" in error for _, outcome, error in tries[job]), tries[job]
    assert rows[killer]["status"] == "pending" and rows[killer]["crashes"] <= 1, rows[killer]
    assert unrecorded(chaos, history) == []
    assert (first.returncode, second.returncode) == (0, 0), (first.stderr[-2000:], second.stderr[-2000:])


# -- 2. the OOM killer's kill -----------------------------------------------------------------------------------
@ON_MARIADB_REDIS
def test_a_kill_9_of_the_processes_running_at_most_once_jobs_runs_none_again(chaos, tmp_path):
    """Issue 21, reproduction 2: eight at-most-once jobs of 2 s; once all have started, kill -9 of every process
    under the runner that runs one of them (as the OOM killer would).

    Right answer: each job ran once; each killed run ends failed as "outcome unknown" with one attempt row
    (attempt 1) and crashes = 0 (a kill from outside is nobody's fault); the next run_due.py runs none of them;
    the runner itself exits 0 at the end of its window.
    """
    history = tmp_path / "history.jsonl"
    charges = enqueue(chaos, [fault(history, "ok", once=True, ms=2000)] * 8)
    begun = time.monotonic()
    proc = runner(chaos, "--for", "6", "--concurrency", "8")
    try:
        until(lambda: started(history) >= 8, timeout=30, detail=lambda: runs(history))
        below = descendants(proc.pid)
        victims = {run["pid"] for its in runs(history).values() for run in its}
        assert victims <= below, (victims, below)            # jobs run in the runner's children, never in it
        kill(*victims)
        assert proc.wait(timeout=begun + 6 + 5 - time.monotonic()) == 0, proc.communicate()[1][-2000:]   # its window
    finally:
        end_processes(chaos, proc)
    ran, rows, tries = runs(history), jobs(chaos), attempt_rows(chaos)
    assert {job: len(ran[job]) for job in charges} == {job: 1 for job in charges}, ran
    killed = [job for job in charges if ran[job][0]["end"] is None]
    assert killed, ran
    for job in killed:
        assert rows[job]["status"] == "failed" and "outcome unknown" in (rows[job]["last_error"] or ""), rows[job]
        assert rows[job]["crashes"] == 0, rows[job]
        assert [attempt for attempt, _, _ in tries[job]] == [1], tries[job]
    assert all(rows[job]["status"] == "succeeded" for job in charges if job not in killed), rows
    script(chaos, "run_due.py", "--for", "3", check=0)
    assert {job: len(its) for job, its in runs(history).items()} == {job: 1 for job in charges}


# -- 3. ordinary jobs of a killed worker ------------------------------------------------------------------------
@ON_MARIADB_REDIS
def test_the_ordinary_jobs_of_a_killed_worker_run_again_and_keep_their_records(chaos, tmp_path):
    """Issue 21, reproduction 3: eight ordinary jobs of 2 s; once all have started, kill -9 of the worker
    process running them.

    Right answer: every job succeeded, crashes = 0, ran at most twice; each run has its attempt row (the killed
    one says "interrupted"); at no time does a job that ran show attempts = 0 or no started_at (it was never
    "handed back as never started").
    """
    history = tmp_path / "history.jsonl"
    ids = enqueue(chaos, [fault(history, "ok", ms=2000)] * 8)
    proc = runner(chaos, "--for", "10", "--concurrency", "8")
    forgotten: list[tuple[int, dict]] = []

    def look():          # a job that began must never look as if it had not
        began = runs(history)
        for job, row in jobs(chaos).items():
            if began.get(job) and (row["attempts"] == 0 or row["started_at"] is None):
                forgotten.append((job, row))
        return proc.poll() is not None

    try:
        until(lambda: started(history) >= 8, timeout=30, detail=lambda: runs(history))
        workers = {run["pid"] for its in runs(history).values() for run in its}
        assert workers <= descendants(proc.pid), workers
        kill(*workers)
        until(look, timeout=40, every=0.1)
        assert proc.returncode == 0, proc.communicate()[1][-2000:]
    finally:
        end_processes(chaos, proc)
    script(chaos, "run_due.py", "--for", "3", check=0)     # cron's next minute, for a runner that handed jobs back
    look()
    assert forgotten == [], forgotten[:5]
    ran, rows, tries = runs(history), jobs(chaos), attempt_rows(chaos)
    assert {job: (row["status"], row["crashes"]) for job, row in rows.items()} == \
        {job: ("succeeded", 0) for job in ids}, rows
    assert all(1 <= len(ran[job]) <= 2 for job in ids), ran
    assert unrecorded(chaos, history) == []
    for job in ids:
        for run in ran[job]:
            if run["end"] is None and run["pid"] in workers:          # the run in the killed worker
                assert any(attempt == run["attempt"] and "interrupted" in outcome + error
                           for attempt, outcome, error in tries[job]), (job, tries[job])


# -- 4. a runner that never ends ----------------------------------------------------------------------------------
@ON_MARIADB_REDIS
def test_a_forked_child_and_an_exit_in_one_worker_leave_a_runner_that_ends(chaos, tmp_path):
    """Issue 21, reproduction 4: a job forks a child that sleeps 120 s holding the runner's stdout, then a
    batch-mate calls os._exit(1); nine jobs of 1 s besides; `run_due.py --for 40 --grace 5 | cat`.

    Right answer: the exit is recorded as a crash (crashes = 1, never "timed out"); the nine others succeed within
    15 s; SIGTERM then ends the runner with exit 0 within grace + 5 s, no process of its tree (the forked sleeper
    included) is left, and `cat` sees the end of its input and exits within grace + 5 s of the SIGTERM.
    """
    history, errors = tmp_path / "history.jsonl", open(tmp_path / "runner.err", "w")
    forker, killer, *nine = enqueue(chaos, [fault(history, "fork", seconds=120),
                                            fault(history, "exit", delay=1, ladder="60")] +
                                    [fault(history, "ok", ms=1000)] * 9)
    begun = time.monotonic()
    proc, cat = run_due_piped(chaos, "--for", "40", "--concurrency", "8", "--grace", "5", stderr=errors)
    try:
        until(lambda: all(jobs(chaos)[job]["status"] == "succeeded" for job in nine),
              timeout=15 - (time.monotonic() - begun), detail=lambda: (jobs(chaos), runs(history)))
        tree = descendants(proc.pid) | {int(pid) for pid in leftovers(chaos)}
        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        assert proc.wait(timeout=30) == 0 and time.monotonic() - signalled < 5 + 5, open(errors.name).read()[-2000:]
        until(lambda: cat.poll() is not None, timeout=signalled + 10 - time.monotonic())
        until(lambda: not any(alive(pid) for pid in tree) and not leftovers(chaos), timeout=1,
              detail=lambda: [pid for pid in tree if alive(pid)] + leftovers(chaos))
    finally:
        end_processes(chaos, proc, cat)
        errors.close()
    rows, tries = jobs(chaos), attempt_rows(chaos)
    assert rows[killer]["crashes"] == 1, (rows[killer], tries[killer])
    assert tries[killer] and not any("timed out" in error for _, _, error in tries[killer]), tries[killer]
    assert rows[forker]["status"] == "succeeded", rows[forker]


@ON_MARIADB_REDIS
def test_a_runner_whose_workers_keep_dying_keeps_its_window(chaos, tmp_path):
    """Issue 21, invariant 5's other side (found by the short fault check, as a runner that exited 0 in a MariaDB
    pause): five jobs that call os._exit, then a job due 8 s later; `run_due.py --for 12 --processes 1`. More than
    three deaths in 10 s hold the next worker back a few seconds (no fork in a tight loop); with no child left
    meanwhile, the supervisor's loop ended and the runner exited 0 at once, its window not over.

    Right answer: the runner keeps its window (it ends 12 s after it began, not before) and runs the later job."""
    history = tmp_path / "history.jsonl"
    *_, later = enqueue(chaos, [fault(history, "exit", ladder="1")] * 5 + [fault(history, "ok", delay=8)])
    begun = time.monotonic()
    done = script(chaos, "run_due.py", "--for", "12", "--processes", "1", "--concurrency", "4", check=0)
    took = time.monotonic() - begun
    assert took >= 11.5 and jobs(chaos)[later]["status"] == "succeeded", (took, jobs(chaos)[later], done.stderr[-2000:])


# -- 5. a hog takes its batch-mates with it -----------------------------------------------------------------------
def among_twenty(world, history, culprit: dict) -> int:
    """Twenty jobs of 0.8 s, then the culprit (enqueued last, so that it begins while batch-mates run: begun
    first, it stops the others before they start and touches no one), all due now, under --timeout 3; checks
    that the twenty each ran once, succeeded, and have no attempt row saying "timed out". Returns the culprit."""
    *twenty, culprit_id = enqueue(world, [fault(history, "ok", ms=800)] * 20 + [culprit])
    done = script(world, "run_due.py", "--for", "20", "--concurrency", "8", "--timeout", "3", check=None)
    ran, rows, tries = runs(history), jobs(world), attempt_rows(world)
    timed_out = [job for job in twenty if any("timed out" in error for _, _, error in tries[job])]
    assert timed_out == [], {job: tries[job] for job in timed_out}
    assert {job: (len(ran[job]), rows[job]["status"]) for job in twenty} == {job: (1, "succeeded") for job in twenty}
    assert done.returncode == 0, done.stderr[-2000:]
    return culprit_id


@ON_MARIADB_REDIS
def test_a_memory_hog_is_timed_out_alone(chaos, tmp_path):
    """Issue 21, reproduction 5: a job touching 2 GB under --timeout 3, among twenty jobs of 0.8 s.

    Touching the pages holds the hog's interpreter (the GIL) 0.8-4 s on this small VM (about 5 s where the issue
    was found), so it keeps them 3 s after (with 1 s, as in the issue, it ends within its 3 s about half the
    time here).

    Right answer: the hog's attempt row says "timed out after 3s"; the twenty each ran once and succeeded, and
    none of their attempt rows says "timed out" (a job's time limit counts its own running time).
    """
    history = tmp_path / "history.jsonl"
    hog = among_twenty(chaos, history, fault(history, "hog", mb=2048, seconds=3, ladder="60"))
    tries = attempt_rows(chaos)[hog]
    assert tries and tries[0][2].startswith("timed out after 3s"), tries


@ON_MARIADB_REDIS
def test_a_job_holding_the_interpreter_in_c_touches_no_batch_mate(chaos, tmp_path):
    """Issue 21, reproduction 5, the harm made certain: the culprit holds the GIL 5 s (block_c) where the memory
    hog holds it 0.8-4 s, so the twenty's time limits would see 5 s of a stall that is not theirs.

    Right answer: the twenty each ran once and succeeded, no attempt row of theirs says "timed out"; the culprit's
    run has its attempt row. Its own outcome is left to the design: it sleeps in C (no CPU time to tell it by)
    and cannot be stopped without killing the batch-mates waiting behind it.
    """
    history = tmp_path / "history.jsonl"
    culprit = among_twenty(chaos, history, fault(history, "block_c", seconds=5, ladder="60"))
    assert attempt_rows(chaos)[culprit] and unrecorded(chaos, history) == []


@ON_MARIADB_REDIS
def test_an_outcome_is_durable_while_a_batch_mate_holds_the_interpreter(chaos, tmp_path):
    """Issue 21, invariant 3 (the long fault check's event a): a job ends, then a batch-mate holds the worker's
    interpreter (a C call holding the GIL, as a memory hog touching its pages does), so the worker cannot commit
    the outcome waiting for its group commit; had the supervisor been killed then, nobody would keep the lease,
    and compensate would run the ended job again.

    Right answer: the supervisor writes the ended job's outcome while the batch-mate still blocks (the job's row
    says succeeded before the batch-mate's run ends); when the worker moves again, its own commit adds no second
    attempt row; each job ran once and has one attempt row."""
    history = tmp_path / "history.jsonl"
    quick, blocker = enqueue(chaos, [fault(history, "ok", ms=100), fault(history, "block_c", ms=600, seconds=8)])
    proc = runner(chaos, "--for", "12", "--concurrency", "4", "--timeout", "30")
    try:
        seen = {}

        def settled():     # the batch-mate's end is read first: a success seen after it does not count
            seen["blocker ended"] = any(run["end"] is not None for run in runs(history).get(blocker, []))
            seen["quick succeeded"] = jobs(chaos)[quick]["status"] == "succeeded"
            return any(seen.values())
        until(settled, timeout=30)
        assert seen == {"blocker ended": False, "quick succeeded": True}, "the outcome waited for the batch-mate"
        assert proc.wait(timeout=60) == 0, proc.stderr.read()[-2000:]
    finally:
        end_processes(chaos, proc)
    ran, tries = runs(history), attempt_rows(chaos)
    assert [len(ran[quick]), len(ran[blocker])] == [1, 1], ran
    assert [[t[:2] for t in tries[quick]], [t[:2] for t in tries[blocker]]] == [[(1, "succeeded")], [(1, "succeeded")]], tries
    assert jobs(chaos)[blocker]["status"] == "succeeded"


@ON_MARIADB_REDIS
@pytest.mark.parametrize("reader", ["run_due.py", "compensate.py"])
def test_a_runner_killed_whole_leaves_its_ledgers_to_the_next_runner(chaos, tmp_path, reader):
    """Issue 21, invariants 3, 4 and 7: kill -9 of a runner's supervisor and of its workers at once (the OOM
    killer taking the group, a container stopped, a runner that exits 1 because its database stopped answering)
    while one job's outcome waits for its worker's group commit and another job runs. The default lease (300 s):
    compensate would recover them only in five minutes, and the ended job would run again.

    Right answer: the next run-due on the host, or the next compensate there (whichever comes first: after a
    database pause, compensate often does), reads the ledger the dead runner left (its lock free: nobody has it
    open): the ended job keeps its success (one run, one attempt row), the running one is recovered at once as
    interrupted (pending again, attempt row `interrupted`) and runs again in the next run-due; no ledger file is
    left."""
    history = tmp_path / "history.jsonl"
    quick, slow = enqueue(chaos, [fault(history, "ok", ms=5), fault(history, "sleep", seconds=2)])
    proc = runner(chaos, "--for", "60", "--concurrency", "4")
    try:
        def both_in():           # the quick job ended, the slow one runs: the quick outcome waits up to 1 s
            ran = runs(history)
            return bool(ran.get(quick) and ran[quick][0]["end"] and ran.get(slow))
        until(both_in, timeout=30, every=0.005)
        time.sleep(0.2)       # the job wrote its own end just before its thread marks it ended in the ledger; the
                              # outcome then waits for the group commit, up to a second: the kill lands inside it
        whole = [proc.pid, *descendants(proc.pid)]
        for pid in whole:     # all stopped first: a worker must not see its supervisor die and commit
            os.kill(pid, signal.SIGSTOP)
        kill(*whole)
        proc.wait(timeout=10)
    finally:
        end_processes(chaos, proc)
    assert jobs(chaos)[quick]["status"] == "running", "the outcome was committed before the kill: nothing to test"
    if reader == "compensate.py":
        said = json.loads(script(chaos, "compensate.py", "--json", check=0).stdout)
        assert said["from_ledgers"] == 2 and said["requeued"] == 0, said
        assert (jobs(chaos)[quick]["status"], jobs(chaos)[slow]["status"]) == ("succeeded", "pending")
    done = script(chaos, "run_due.py", "--for", "3", check=0)
    ran, rows, tries = runs(history), jobs(chaos), attempt_rows(chaos)
    assert (len(ran[quick]), rows[quick]["status"], [t[:2] for t in tries[quick]]) == (1, "succeeded", [(1, "succeeded")])
    assert [run["end"] is not None for run in ran[slow]] == [False, True], (ran[slow], done.stderr[-2000:])
    assert rows[slow]["status"] == "succeeded"
    assert [t[:2] for t in tries[slow]] == [(1, "interrupted"), (2, "succeeded")], tries[slow]
    assert not os.path.exists(orphans.directory(open_store(chaos.database_url, chaos.prefix), make=False))


# -- 6. a paused server is bounded --------------------------------------------------------------------------------
@pytest.mark.parametrize("which, backend, bound", [("mariadb", "MySQL", 3.0), ("redis", "Redis", 2.0)])
def test_a_server_paused_under_running_jobs_ends_the_runner_within_its_bound(private_world, mariadb, redis_server,
                                                                           tmp_path, which, backend, bound):
    """Issue 21, reproduction 6: SIGSTOP of MariaDB (DELAYQ_DB_TIMEOUT=3), or of Redis (DELAYQ_REDIS_TIMEOUT=2),
    under `run_due.py --for 60` with jobs running, half of them at most once (the issue's traceback came from
    begin(), an at-most-once job's write in a worker).

    Right answer: the runner exits 1 within the bound + 4 s of the pause, with one line on stderr naming the
    backend and that it timed out, and no traceback.
    """
    world = private_world
    history = tmp_path / "history.jsonl"
    enqueue(world, [fault(history, "ok", once=n % 2 == 0, ms=300) for n in range(400)])    # begin() waits too
    server = mariadb if which == "mariadb" else redis_server
    proc = runner(world, "--for", "60", "--concurrency", "8", DELAYQ_DB_TIMEOUT=3, DELAYQ_REDIS_TIMEOUT=2)
    try:
        until(lambda: started(history) >= 16, timeout=30, detail=proc.poll)
        os.kill(server.proc.pid, signal.SIGSTOP)
        paused = time.monotonic()
        until(lambda: proc.poll() is not None, timeout=bound + 60)
        seconds = time.monotonic() - paused
    finally:
        resume(server.proc)
        end_processes(world, proc)
    err = proc.communicate()[1]
    said = [line for line in err.splitlines() if line.strip()]
    print(f"paused {which} under run_due.py --for 60: exit {proc.returncode} after {seconds:.1f} s: {said[-3:]}")
    assert proc.returncode == 1 and seconds < bound + 4, (proc.returncode, seconds, err[-3000:])
    assert "Traceback" not in err, err[-3000:]
    assert len(said) == 1 and f"{backend} at " in said[0] and "timed out" in said[0], said


# -- 7. kill -9 on a loaded machine -------------------------------------------------------------------------------
SLOTS = 16                # the runner's job threads (--concurrency; one worker process)
# Invariant 7: an outcome is durable before its thread takes the next job, so a kill finds each thread either
# running a job (its run has no end record) or writing the outcome of the one that just ended (an end record,
# no outcome yet): one job a thread runs again. A design that states another bound changes this figure.
RERUNS_PER_KILL = SLOTS


@ON_MARIADB_REDIS
def test_kill_9_on_a_loaded_machine_strands_nothing(chaos, tmp_path):
    """Issue 21, reproduction 7: 1,500 jobs of 2 ms, DELAYQ_LEASE=3, three busy CPU loops beside the runner;
    the runner (`--for 30 --batch 200`) killed with SIGKILL 12 times, compensate.py after each kill; then rounds
    of compensate.py + `run_due.py --for 3`. Each kill comes at random 0.3-1.2 s after the runner has started its
    worker processes (0.3-1.2 s after its process starts finds it still importing, on a small loaded machine),
    and the jobs fall due over the kills, so that each runner has jobs to claim.

    Right answer: within lease + 60 s of the last kill, all 1,500 jobs succeeded; a job ran again only after a
    run in a process that a kill took down, and a kill causes at most RERUNS_PER_KILL runs again. The extra runs
    per kill are printed for the record.
    """
    history, lease = tmp_path / "history.jsonl", 3
    enqueue(chaos, [fault(history, "ok", ms=2, delay=round(n * 30 / 1500, 3)) for n in range(1500)])
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    killed: list[set[int]] = []               # each kill's process tree: the runner and what ran under it
    holding = 0                               # kills that found jobs claimed (running in the table)
    proc = None
    try:
        for _ in range(12):
            proc = runner(chaos, "--for", "30", "--batch", "200", "--concurrency", str(SLOTS), DELAYQ_LEASE=lease)
            until(lambda: descendants(proc.pid), timeout=10)
            time.sleep(rng.uniform(0.3, 1.2))        # the fault schedule: when the kill comes, not a wait for anything
            holding += statuses(chaos)["running"] > 0
            killed.append(descendants(proc.pid) | {proc.pid})
            proc.kill()
            proc.communicate()
            kill(*(int(pid) for pid in leftovers(chaos)))    # nothing of a killed runner goes on running jobs
            script(chaos, "compensate.py", check=0, DELAYQ_LEASE=lease)
        last_kill = time.monotonic()
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
        end_processes(chaos, *([proc] if proc else []))
    print(f"seed {seed}: {holding} of 12 kills found jobs claimed")
    deadline, done_at = last_kill + lease + 60, None
    while done_at is None and time.monotonic() < deadline:
        for name, *args in (("compensate.py",), ("run_due.py", "--for", "3")):
            script(chaos, name, *args, check=0, DELAYQ_LEASE=lease)
            if statuses(chaos) == Counter(succeeded=1500):
                done_at = time.monotonic()
                break
    print(f"seed {seed}: all succeeded {done_at - last_kill:.1f} s after the last kill" if done_at else
          f"seed {seed}: not done within lease + 60 s: {dict(statuses(chaos))}")
    per_kill, unexplained = [Counter() for _ in killed], []
    for job, its in runs(history).items():
        for before in its[:-1]:                      # every run that was followed by another
            hit = next((n for n, tree in enumerate(killed) if before["pid"] in tree), None)
            if hit is None:
                unexplained.append((job, its))
            else:
                per_kill[hit]["died running" if before["end"] is None else "ended, outcome not yet written"] += 1
    print("extra runs per kill:", [sum(c.values()) for c in per_kill], "in all:", dict(sum(per_kill, Counter())))
    assert done_at is not None and done_at <= deadline, dict(statuses(chaos))
    assert unexplained == [], unexplained[:5]
    assert max(sum(c.values()) for c in per_kill) <= RERUNS_PER_KILL, per_kill
