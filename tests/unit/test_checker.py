"""The fault checker (tests/chaos/checker.py) on small crafted histories: each check flags its violation and
accepts a clean history. Times are plain numbers (seconds); no server, no process."""

import json

from tests.chaos.checker import AttemptRow, Fault, Limits, Row, RunnerLife, Worker, check, problem_lines

LIMITS = Limits(lease=5, compensate_every=5, time_limit=5, db_timeout=3, redis_timeout=2)
RUN, ONCE = "tests.chaos.faultjobs:run", "tests.chaos.faultjobs:once"


def start(job, attempt=1, pid=500, t=10.0, kind="ok"):
    return {"e": "start", "job": job, "attempt": attempt, "pid": pid, "t": t, "kind": kind}


def end(job, attempt=1, pid=500, t=10.5, kind="ok"):
    return {"e": "end", "job": job, "attempt": attempt, "pid": pid, "t": t, "kind": kind}


def row(job=1, status="succeeded", attempts=1, once=False, kind="ok", **kw):
    args = {"path": "/h", "kind": kind, **kw.pop("args", {})}
    base = dict(started_at=10.0, finished_at=10.6)
    return Row(job, ONCE if once else RUN, args, status, attempts, **{**base, **kw})


def attempt(job=1, n=1, outcome="succeeded", error=None, t=10.0):
    return AttemptRow(job, n, outcome, error, t, t + 0.6)


def life(name="r1", pid=100, started=0.0, exited=60.0, code=0, workers=(500,), **kw):
    base = dict(for_seconds=60, grace=3, eof=exited, workers={p: Worker(p, started + 0.5) for p in workers})
    return RunnerLife(name, pid, started, exited, code, **{**base, **kw})


def report(history, rows, attempts=(), faults=(), lives=None):
    return check(list(history), list(rows), list(attempts), list(faults), [life()] if lives is None else list(lives),
                 LIMITS)


def reasons(rep, invariant):
    return " | ".join(v.reason for v in rep.of(invariant))


def test_a_clean_history_has_no_violation():
    rep = report([start(1), end(1), start(2, kind="raise", t=11), start(2, 2, t=13, kind="raise")],
                 [row(1), row(2, "failed", 2, kind="raise", last_error="RuntimeError: this job fails on purpose")],
                 [attempt(1), attempt(2, 1, "retry", "RuntimeError"), attempt(2, 2, "failed", "RuntimeError")])
    assert rep.violations == []
    assert (rep.figures["runs"], rep.figures["jobs"], rep.figures["runs_died"]) == (3, 2, 0)


# 1 -------------------------------------------------------------------------------------------------------------
def test_an_at_most_once_job_with_two_starts_is_flagged_one_start_is_not():
    twice = report([start(1, pid=500), start(1, 2, pid=501, t=20)], [row(1, "failed", 2, once=True)],
                   [attempt(1), attempt(1, 2)])
    assert twice.count(1) == 1 and "ran 2 times" in reasons(twice, 1)
    once = report([start(1), end(1)], [row(1, once=True)], [attempt(1)])
    assert once.count(1) == 0


# 2 -------------------------------------------------------------------------------------------------------------
def test_a_run_without_its_attempt_row_is_flagged():
    rep = report([start(1), end(1)], [row(1)], [])
    assert "has no attempt row" in reasons(rep, 2)


def test_a_job_that_ran_but_shows_attempts_0_or_no_started_at_is_flagged():
    rep = report([start(1), end(1), start(2), end(2)],
                 [row(1, "pending", 0, started_at=None), row(2, started_at=None)], [attempt(1), attempt(2)])
    assert "attempts 0" in reasons(rep, 2) and "started_at is empty" in reasons(rep, 2)


def test_an_attempt_number_used_twice_is_flagged():
    rep = report([start(1, 1, pid=500, t=10), start(1, 1, pid=501, t=20), end(1, 1, pid=501, t=21)], [row(1)],
                 [attempt(1)])
    assert "started 2 times" in reasons(rep, 2)


# 3 -------------------------------------------------------------------------------------------------------------
def test_an_innocent_with_crashes_or_failed_is_flagged():
    rep = report([start(1), end(1), start(2, kind="ok"), end(2)],
                 [row(1, crashes=1), row(2, "failed", last_error="killed its runner: exit 1")],
                 [attempt(1), attempt(2)])
    assert "crashes=1" in reasons(rep, 3) and "ended failed" in reasons(rep, 3)


def test_a_crash_counted_for_a_run_killed_by_kill9_is_not_held_against_an_innocent():
    rows = [row(1, "failed", 3, crashes=3, last_error="killed its runner: its runner died 3 times")]
    history = [start(1, 1, pid=500, t=10), start(1, 2, pid=501, t=20), start(1, 3, pid=502, t=30)]
    attempts = [attempt(1, n, "failed", t=t) for n, t in ((1, 10), (2, 20), (3, 30))]
    kills = [Fault("kill9_worker", 10.5, 500), Fault("kill9_worker", 20.5, 501), Fault("kill9_supervisor", 30.5, 100)]
    lives = [life(workers=(500, 501, 502))]
    assert report(history, rows, attempts, kills, lives).count(3) == 0
    two = report(history, rows, attempts, kills[:2], lives)
    assert "crashes=3 (2 after a kill -9)" in reasons(two, 3)


def test_an_innocent_may_use_up_its_attempts_on_the_harness_kills_but_not_on_a_batch_mates_crash():
    rows = [row(1, "failed", 2, last_error="interrupted: lease ran out; no attempts left")]
    history = [start(1, 1, pid=500, t=10), start(1, 2, pid=501, t=20)]
    attempts = [attempt(1, n, "interrupted", t=t) for n, t in ((1, 10), (2, 20))]
    lives = [life(workers=(500, 501))]
    lives[0].workers[500].gone_at, lives[0].workers[501].gone_at = 10.5, 20.5
    kills = [Fault("kill9_worker", 10.5, 500), Fault("kill9_worker", 20.5, 501)]
    killed = report(history, rows, attempts, kills, lives)
    assert killed.count(3) == 0
    assert killed.figures["allowances"] == {"innocent_failed_after_harness_interruptions": 1}
    crashed = report(history, rows, attempts, kills[:1], lives)       # the second death: a batch-mate's crash
    assert "ended failed" in reasons(crashed, 3)


def test_an_outcome_lost_when_the_harness_ends_an_orphan_of_a_killed_runner_is_counted_not_flagged():
    lives = [life(pid=100, exited=14.9, code=-9, killed=14.9, workers=(500,)), life("r2", 200, workers=(501,))]
    lives[0].workers[500].gone_at = 16.0
    rep = report([start(1, 1, t=10), end(1, 1, t=15.8), start(1, 2, pid=501, t=25), end(1, 2, pid=501, t=25.5)],
                 [row(1, attempts=2, finished_at=25.6)], [attempt(1, 1, "interrupted"), attempt(1, 2)],
                 [Fault("kill9_supervisor", 14.9, 100)], lives)
    assert rep.count(3) == 0 and rep.figures["reruns_after_lost_outcome"] == 1


def test_two_runs_at_once_are_flagged_even_across_a_failover():
    rep = report([start(1, 1, t=15.6), start(1, 1, t=16.1), end(1, 1, t=16.6), end(1, 1, t=17.1)], [row(1)],
                 [attempt(1)], [Fault("failover_cluster", 15.0, until=16.5)])
    assert "while attempt 1 still ran" in reasons(rep, 3)


def test_a_culprit_may_crash_time_out_and_fail():
    rep = report([start(1, kind="exit"), start(2, kind="sleep", t=11)],
                 [row(1, "failed", crashes=1, kind="exit", last_error="killed its runner"),
                  row(2, "failed", kind="sleep", args={"seconds": 8}, last_error="timed out after 5s")],
                 [attempt(1, error="crashed"), attempt(2, outcome="failed", error="timed out after 5s")],
                 lives=[life(workers=(500,))])
    assert rep.count(3) == 0
    assert rep.figures["faults"] == {"job_exit": 1, "job_hang": 1}


def test_an_innocents_attempt_row_saying_timed_out_is_flagged():
    rep = report([start(1), end(1, t=12)], [row(1)], [attempt(1, outcome="retry", error="timed out after 5s")])
    assert "timed out after" in reasons(rep, 3)


def test_an_innocent_at_most_once_whose_run_died_may_fail_as_outcome_unknown():
    lives = [life(workers={}, exited=60), life("r2", 200, started=0, exited=11, code=-9, killed=11.0)]
    lives[1].workers = {500: Worker(500, 1.0, 11.2)}
    rep = report([start(1, pid=500)], [row(1, "failed", once=True, last_error="x; outcome unknown: check by hand")],
                 [attempt(1, outcome="failed", error="outcome unknown")], [Fault("kill9_supervisor", 11.0, 200)], lives)
    assert rep.count(3) == 0 and rep.count(4) == 0


def test_an_at_most_once_failed_as_unknown_after_its_run_ended_is_flagged_unless_a_death_followed():
    history = [start(1, pid=500), end(1, pid=500, t=10.5)]
    rows = [row(1, "failed", once=True, last_error="outcome unknown: check by hand")]
    calm = report(history, rows, [attempt(1, outcome="failed")])
    assert "though its run ended" in reasons(calm, 3)
    killed = report(history, rows, [attempt(1, outcome="failed")], [Fault("kill9_worker", 11.0, 500)])
    assert killed.count(3) == 0 and killed.figures["at_most_once_lost_outcomes"] == 1


def test_an_at_most_once_failed_as_unknown_that_never_started_is_flagged_unless_it_died_at_its_begin():
    rows = [row(1, "failed", once=True, last_error="outcome unknown")]
    assert "never started" in reasons(report([], rows, [attempt(1, outcome="failed", t=10.0)]), 3)
    later = report([], rows, [attempt(1, outcome="failed", t=10.0)], [Fault("kill9_worker", 10.6, 500)])
    assert later.count(3) == 1
    killed = report([], rows, [attempt(1, outcome="failed", t=10.0)], [Fault("kill9_worker", 10.1, 500)])
    assert killed.count(3) == 0 and killed.figures["allowances"] == {"once_died_before_its_first_line": 1}


def test_an_ordinary_innocent_running_again_after_its_run_ended_is_flagged():
    rep = report([start(1, 1, t=10), end(1, 1, t=10.5), start(1, 2, t=20), end(1, 2, t=20.5)], [row(1, attempts=2)],
                 [attempt(1, 1, "retry"), attempt(1, 2)])
    assert "ran again" in reasons(rep, 3)


def test_a_rerun_after_a_died_run_is_allowed_and_after_a_lost_outcome_is_counted_per_kill():
    died = report([start(1, 1, t=10), start(1, 2, pid=501, t=12), end(1, 2, pid=501, t=12.5)], [row(1, attempts=2)],
                  [attempt(1, 1, "retry"), attempt(1, 2)], [Fault("kill9_worker", 11.0, 500)],
                  [life(workers=(500, 501))])
    assert died.violations == [] and died.figures["reruns_after_lost_outcome"] == 0
    lost = report([start(1, 1, t=10), end(1, 1, t=10.5), start(1, 2, pid=501, t=12), end(1, 2, pid=501, t=12.5)],
                  [row(1, attempts=2)], [attempt(1, 1, "retry"), attempt(1, 2)], [Fault("kill9_worker", 11.0, 500)],
                  [life(workers=(500, 501))])
    assert lost.violations == []
    assert (lost.figures["reruns_after_lost_outcome"], lost.figures["reruns_per_kill9"]) == (1, 1.0)


def test_an_ordinary_innocent_running_again_beside_its_running_run_is_flagged():
    lives = [life(workers=(500, 501))]
    lives[0].workers[500].gone_at = 20.0
    rep = report([start(1, 1, t=10), start(1, 2, pid=501, t=15), end(1, 2, pid=501, t=15.5)],
                 [row(1, attempts=2, finished_at=15.6)], [attempt(1, 1, "retry"), attempt(1, 2)], lives=lives)
    assert "while attempt 1 still ran" in reasons(rep, 3)
    ended = report([start(1, 1, t=10), end(1, 1, t=12), start(1, 2, pid=501, t=11), end(1, 2, pid=501, t=11.5)],
                   [row(1, attempts=2)], [attempt(1, 1, "retry"), attempt(1, 2)], [Fault("kill9_worker", 12.1, 500)],
                   [life(workers=(500, 501))])
    assert "while attempt 1 still ran" in reasons(ended, 3) and ended.figures["reruns_after_lost_outcome"] == 0


# 4 -------------------------------------------------------------------------------------------------------------
def test_a_job_not_final_at_the_end_is_flagged():
    rep = report([], [row(1, "running", 1)], [])
    assert "still running" in reasons(rep, 4)


def test_a_died_run_recovered_past_lease_plus_compensate_is_flagged_within_it_is_not():
    lives = [life(workers=(500, 501))]
    lives[0].workers[500].gone_at = 11.0
    def rep_with(again: float, faults=()):
        return report([start(1, 1, t=10), start(1, 2, pid=501, t=again), end(1, 2, pid=501, t=again + 0.5)],
                      [row(1, attempts=2, finished_at=again + 0.6)], [attempt(1, 1, "retry"), attempt(1, 2, t=again)],
                      faults, lives)
    assert "bound 15.0 s" in reasons(rep_with(40.0), 4)
    assert rep_with(24.0).violations == []
    paused = rep_with(40.0, [Fault("stop_mariadb", 12.0, until=32.0)])
    assert paused.count(4) == 0
    two = [Fault("stop_mariadb", 12.0, until=20.0), Fault("stop_redis", 24.0, until=40.0)]   # one after the other
    assert rep_with(48.0, two).count(4) == 0 and rep_with(52.0, two).count(4) == 1


def test_a_died_run_claimed_again_in_time_is_recovered_even_if_that_claim_was_cut_short_before_it_began():
    """Attempt 2 was claimed at 20 (its attempt row says so) and its runner killed before the job began (no
    history record): the job was recovered in time; attempt 3 ran at 40."""
    lives = [life(workers=(500, 501))]
    lives[0].workers[500].gone_at = 11.0
    rep = report([start(1, 1, t=10), start(1, 3, pid=501, t=40.0), end(1, 3, pid=501, t=40.5)],
                 [row(1, attempts=3, finished_at=40.6)],
                 [attempt(1, 1, "interrupted"), attempt(1, 2, "interrupted", t=20.0), attempt(1, 3, t=40.0)], [], lives)
    assert rep.count(4) == 0


# 5 -------------------------------------------------------------------------------------------------------------
def test_a_runner_ending_in_time_after_sigterm_is_clean():
    assert report([], [], lives=[life(sigterm=50.0, exited=54.0, eof=54.0)]).violations == []


def test_a_runner_late_or_nonzero_or_with_open_stdout_after_sigterm_is_flagged():
    late = report([], [], lives=[life(sigterm=50.0, exited=70.0, eof=70.0, forced=True, code=-9)])
    assert "after SIGTERM" in reasons(late, 5) and "had to kill it" in reasons(late, 5)
    code = report([], [], lives=[life(sigterm=50.0, exited=52.0, code=1, stderr=["run_due.py: error: boom"])])
    assert "exit code 1 after SIGTERM" in reasons(code, 5)
    stdout = report([], [], lives=[life(sigterm=50.0, exited=52.0, eof=None)])
    assert "stdout still open forever" in reasons(stdout, 5)


def test_a_sigterm_in_the_interpreters_start_up_is_an_allowance_but_later_or_after_a_run_it_is_flagged():
    # the fault check's long run at 7c26f6e: exit -15, no line, SIGTERM a moment after the spawn
    early = life(started=10.0, sigterm=10.05, exited=10.06, eof=10.06, code=-15, workers=())
    rep = report([], [], lives=[early])
    assert rep.violations == [] and rep.figures["allowances"] == {"runner_ended_by_sigterm_before_its_first_statement": 1}
    late = life(started=10.0, sigterm=12.0, exited=12.01, eof=12.01, code=-15, workers=())
    assert "exit code -15 after SIGTERM" in reasons(report([], [], lives=[late]), 5)
    ran = life(started=10.0, sigterm=10.5, exited=10.6, eof=10.6, code=-15, workers=())
    history = [start(1, pid=100, t=10.2), end(1, pid=100, t=10.3)]
    assert "exit code -15 after SIGTERM" in reasons(report(history, [row(1)], [attempt(1, t=10.2)], lives=[ran]), 5)
    spoke = life(started=10.0, sigterm=10.05, exited=10.06, eof=10.06, code=-15, workers=(), stderr=["Traceback"])
    assert "exit code -15 after SIGTERM" in reasons(report([], [], lives=[spoke]), 5)


def test_descendants_left_alive_are_flagged_except_after_kill9_where_they_are_a_figure():
    left = report([], [], lives=[life(left=[777])])
    assert "outlived it" in reasons(left, 5)
    killed = report([], [], [], [Fault("kill9_supervisor", 30.0, 100)], [life(exited=30.0, code=-9, killed=30.0,
                                                                                 left=[777])])
    assert killed.count(5) == 0 and killed.figures["left_by_kill9_supervisor"] == 1


def test_a_runner_ending_by_itself_nonzero_or_past_its_for_is_flagged():
    code = report([], [], lives=[life(code=1, stderr=["run_due.py: internal error: TypeError"])])
    assert "exited 1 with no signal" in reasons(code, 5)
    long = report([], [], lives=[life(for_seconds=10, exited=80.0)])
    assert "with --for 10" in reasons(long, 5)


# 6 -------------------------------------------------------------------------------------------------------------
PAUSE = Fault("stop_mariadb", 100.0, 9999, until=115.0)   # bound: 3 s timeout + 5 s time limit + 4 s slack


def test_a_runner_exiting_1_with_one_line_in_a_pause_is_clean():
    outcome = json.dumps({"time": 101.0, "level": "warning", "job": 3, "outcome": "failed"})
    crash = json.dumps({"time": 101.5, "level": "warning", "msg": "worker 77 was killed by signal 11"})
    lines = [outcome, crash, "run_due.py: error: MySQL at 127.0.0.1 timed out after 3 s (DELAYQ_DB_TIMEOUT)"]
    rep = report([], [], [], [PAUSE], [life(exited=104.0, code=1, stderr=lines)])
    assert rep.violations == []


def test_a_runner_still_running_or_exiting_0_in_a_pause_is_flagged():
    running = report([], [], [], [PAUSE], [life(exited=150.0, code=0)])
    assert "into a MariaDB pause (bound 12.0 s)" in reasons(running, 6)
    zero = report([], [], [], [PAUSE], [life(exited=104.0, code=0, stderr=["x"])])
    assert "want 1" in reasons(zero, 6)


def test_a_traceback_or_several_lines_after_a_pause_is_flagged():
    trace = report([], [], [], [PAUSE], [life(exited=104.0, code=1, stderr=["Traceback (most recent call last):",
                                                                             "  File x", "BackendError: y"])])
    assert "traceback" in reasons(trace, 6)
    two = report([], [], [], [Fault("stop_redis", 100.0, 9999, until=107.0)],
                 [life(exited=103.0, code=1, stderr=[json.dumps({"time": 101.0, "level": "warning",
                                                                 "msg": "a claim failed: Redis timed out"}),
                                                     "run_due.py: error: Redis timed out"])])
    assert "2 lines on stderr" in reasons(two, 6)


def test_a_runner_that_logged_the_error_must_exit_soon_after_even_if_the_long_bound_is_not_reached():
    said = json.dumps({"time": 101.0, "level": "warning", "msg": "claim failed: MySQL timed out"})
    rep = report([], [], [], [Fault("stop_mariadb", 100.0, 9999, until=108.0)],
                 [life(exited=108.5, code=1, stderr=[said, "run_due.py: error: MySQL timed out"])])
    assert "after it logged the error" in reasons(rep, 6)


def test_a_runner_started_near_the_end_of_a_pause_is_not_held_to_the_bound():
    rep = report([], [], [], [PAUSE], [life(started=106.0, exited=160.0, code=0)])
    assert rep.count(6) == 0


def test_a_failover_may_end_a_runner_with_one_line_but_not_a_traceback():
    failover = Fault("failover_sentinel", 100.0, until=102.0)
    ok = report([], [], [], [failover], [life(exited=101.0, code=1, stderr=["run_due.py: error: Redis failover"])])
    assert ok.violations == []
    bad = report([], [], [], [failover], [life(exited=101.0, code=1, stderr=["Traceback (most recent call last):"])])
    assert bad.count(6) == 1


# figures -------------------------------------------------------------------------------------------------------
def test_faults_count_only_hits_and_culprit_runs():
    faults = [Fault("kill9_worker", 11.0, 500), Fault("kill9_worker", 12.0, 501, hit=False),
              Fault("sigterm", 13.0, 100)]
    rep = report([start(1, kind="segv")], [row(1, "failed", kind="segv", crashes=1)], [attempt(1, outcome="failed")],
                 faults, [life(workers=(500,), sigterm=13.0, exited=14.0)])
    assert rep.figures["faults"] == {"job_segv": 1, "kill9_worker": 1, "sigterm": 1}
    assert rep.figures["kill9"] == 1


def test_problem_lines_skip_job_outcomes_in_either_log_format():
    lines = ['time=2026-01-01T00:00:00 level=warning job=3 outcome=failed', json.dumps({"job": 4}),
             "run_due.py: error: x"]
    assert problem_lines(lines) == ["run_due.py: error: x"]
