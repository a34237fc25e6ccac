from delayq.clock import FakeClock, ServerClock
from delayq.jobs import Job
from delayq.runner import Result, decide, describe_error, outcome


def job(**kw):
    base = dict(id=1, queue="default", call="examples.shop:noop", args_json="{}", status="running",
                attempts=1, max_attempts=3, ladder="10,20", due_at=0.0)
    return Job(**{**base, **kw})


def result(kind, snooze=None, error="E: boom"):
    return Result(1, kind, 99.0, 100.0, error=error, snooze=snooze)


def test_success_and_permanent():
    assert decide(job(), result("ok")) == ("succeeded", None, False)
    assert decide(job(), result("permanent")) == ("failed", None, False)


def test_retry_follows_the_ladder_by_attempt():
    assert decide(job(attempts=1), result("error")) == ("pending", 110.0, False)
    assert decide(job(attempts=2), result("error")) == ("pending", 120.0, False)
    assert decide(job(attempts=3), result("error")) == ("failed", None, False)


def test_deadline_ends_retries_of_failures_as_failed_and_polling_as_timed_out():
    assert decide(job(deadline=105.0), result("error")) == ("failed", None, True)
    assert decide(job(deadline=110.0), result("error")) == ("pending", 110.0, False)
    assert decide(job(deadline=105.0), result("snooze")) == ("timed_out", None, True)
    assert decide(job(deadline=500.0, attempts=9), result("snooze", 30)) == ("pending", 130.0, False)
    assert decide(job(deadline=50.0), result("late")) == ("timed_out", None, True)


def test_polling_without_a_deadline_ends_timed_out_at_max_attempts():
    assert decide(job(attempts=3), result("snooze")) == ("timed_out", None, False)


def test_a_time_limit_is_a_failure_on_the_ladder_and_unknown_for_at_most_once():
    assert decide(job(), result("timeout")) == ("pending", 110.0, False)
    done = outcome(job(at_most_once=True, max_attempts=1), result("timeout", error="timed out after 30s"))
    assert done.status == "failed" and "outcome unknown" in done.error and done.interrupted


def test_an_attempt_past_its_time_limit_says_it_timed_out_and_what_came_of_its_job():
    """Its attempt row is the time limit's (shown timed_out, words.py) and keeps the job's fate for the counters; a
    deadline's attempt stays stored as before (shown expired), its error in the deadline's word."""
    again, last = outcome(job(attempts=1), result("timeout")), outcome(job(attempts=3), result("timeout"))
    assert (again.status, again.attempt_outcome) == ("pending", "timeout_retry")
    assert (last.status, last.attempt_outcome) == ("failed", "timeout_failed")
    assert outcome(job(attempts=1, at_most_once=True), result("timeout")).attempt_outcome == "timeout_failed"
    assert outcome(job(attempts=1), result("error")).attempt_outcome == "retry"
    ended = outcome(job(attempts=3), result("snooze"))
    assert ended.attempt_outcome == "timed_out" and ended.error.startswith("expired: still not done after 3 attempt(s)")


def test_a_job_that_killed_its_runner_three_times_fails_as_killed_its_runner():
    assert decide(job(crashes=1, max_attempts=9), result("crashed")) == ("pending", 110.0, False)
    done = outcome(job(crashes=2, max_attempts=9), result("crashed", error="its worker process died"))
    assert (done.status, done.crashed) == ("failed", True) and done.error.startswith("killed its runner")


def test_an_interrupted_job_runs_again_at_once_and_is_never_failed_for_it():
    """Not its fault: not a failure on the ladder, and its attempts running out through interruptions fail nothing."""
    assert decide(job(attempts=3), result("interrupted")) == ("pending", 100.0, False)
    assert outcome(job(attempts=3), result("interrupted")).attempt_outcome == "interrupted"


def test_a_job_whose_runner_vanished_under_it_in_its_own_process_may_be_its_killer():
    """--processes 0 or a pull consumer: the runner's death may be the job's doing: counted, a poison pill at 3."""
    assert decide(job(attempts=2), result("vanished")) == ("pending", 100.0, False)
    done = outcome(job(attempts=3), result("vanished"))
    assert (done.status, done.crashed) == ("failed", True) and done.error.endswith("no attempts left")
    done = outcome(job(attempts=1, crashes=2), result("vanished"))
    assert done.status == "failed" and done.error.startswith("killed its runner")


def test_error_text_starts_with_type_and_message():
    try:
        raise KeyError("order 9")
    except KeyError as exc:
        text = describe_error(exc)
    assert text.startswith("KeyError: 'order 9'")


def test_server_clock_applies_the_offset():
    clock = ServerClock(lambda: 5_000_000_000.0, refresh=3600)
    assert abs(clock.now() - 5_000_000_000.0) < 1.0


def test_server_clock_reads_its_source_once_a_pass_at_most_once_a_second(monkeypatch):
    reads, mono = [], [1000.0]
    monkeypatch.setattr("delayq.clock.time.monotonic", lambda: mono[0])
    monkeypatch.setattr("delayq.clock.time.time", lambda: 0.0)          # this host's own clock: never used
    clock = ServerClock(lambda: reads.append(1) or 5_000_000_000.0 + len(reads) * 0.001, min_interval=1.0)
    assert clock.sync() == 5_000_000_000.001 and len(reads) == 1
    mono[0] += 0.5
    assert clock.sync() == 5_000_000_000.501 and len(reads) == 1       # extrapolated on the monotonic clock
    mono[0] += 0.6
    assert clock.sync() == 5_000_000_000.002 and len(reads) == 2       # read again: the server is the truth
    mono[0] += 29.0
    assert clock.now() == 5_000_000_029.002 and len(reads) == 2
    mono[0] += 1.5
    clock.now()
    assert len(reads) == 3                                              # refreshed after 30 s even without sync


def test_fake_clock_sleep_advances():
    clock = FakeClock(10)
    clock.sleep(2.5)
    assert clock.now() == 12.5


def test_server_clock_is_read_once_when_many_threads_need_it_at_once():
    """A worker's threads all start jobs at once: one of them reads the server, the others wait for that
    reading (the first) or extrapolate the last one (each read costs a connection and a round trip)."""
    import threading
    import time as _time

    reads, gate = [], threading.Event()

    def source():
        reads.append(1)
        gate.wait(5)                     # a slow round trip: the other threads arrive meanwhile
        return 5_000_000_000.0

    clock = ServerClock(source, refresh=3600)
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(clock.now())) for _ in range(16)]
    for thread in threads:
        thread.start()
    deadline = _time.monotonic() + 5
    while not reads and _time.monotonic() < deadline:
        _time.sleep(0.001)
    _time.sleep(0.05)                    # the other threads reach the clock while the first read is under way
    gate.set()
    for thread in threads:
        thread.join()
    assert len(seen) == 16 and all(abs(t - 5_000_000_000.0) < 1.0 for t in seen)
    assert len(reads) <= 2               # not one read a thread


def test_a_job_pickles_to_an_equal_job():
    """Jobs cross to worker processes pickled as a tuple of their values (Job.__reduce__)."""
    import dataclasses
    import pickle

    from delayq.jobs import Job

    values = {f.name: f"v-{f.name}" for f in dataclasses.fields(Job)}
    values.update(id=7, attempts=2, max_attempts=5, due_at=1.5, priority=-3, at_most_once=True, crashes=1,
                  deadline=None, lease=61.25)
    job = Job(**values)
    again = pickle.loads(pickle.dumps(job))
    assert again == job and type(again) is Job and again.__dict__ == job.__dict__
