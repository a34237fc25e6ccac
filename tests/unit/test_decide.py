from delayq import Permanent, Snooze
from delayq.clock import FakeClock, ServerClock
from delayq.jobs import Job
from delayq.runner import decide, describe_error


def job(**kw):
    base = dict(id=1, queue="default", call="examples.shop:noop", args_json="{}", status="running",
                attempts=1, max_attempts=3, ladder="10,20", due_at=0.0)
    return Job(**{**base, **kw})


def test_success_and_permanent():
    assert decide(job(), None, 100.0) == ("succeeded", None, False)
    assert decide(job(), Permanent("no"), 100.0) == ("failed", None, False)


def test_retry_follows_the_ladder_by_attempt():
    assert decide(job(attempts=1), ValueError(), 100.0) == ("pending", 110.0, False)
    assert decide(job(attempts=2), ValueError(), 100.0) == ("pending", 120.0, False)
    assert decide(job(attempts=3), ValueError(), 100.0) == ("failed", None, False)


def test_deadline_ends_retries_of_failures_as_failed_and_polling_as_timed_out():
    assert decide(job(deadline=105.0), ValueError(), 100.0) == ("failed", None, True)
    assert decide(job(deadline=110.0), ValueError(), 100.0) == ("pending", 110.0, False)
    assert decide(job(deadline=105.0), Snooze(), 100.0) == ("timed_out", None, True)
    assert decide(job(deadline=500.0, attempts=9), Snooze(30), 100.0) == ("pending", 130.0, False)


def test_polling_without_a_deadline_ends_timed_out_at_max_attempts():
    assert decide(job(attempts=3), Snooze(), 100.0) == ("timed_out", None, False)


def test_error_text_starts_with_type_and_message():
    try:
        raise KeyError("order 9")
    except KeyError as exc:
        text = describe_error(exc)
    assert text.startswith("KeyError: 'order 9'")


def test_server_clock_applies_the_offset():
    clock = ServerClock(lambda: 5_000_000_000.0, refresh=3600)
    assert abs(clock.now() - 5_000_000_000.0) < 1.0


def test_fake_clock_sleep_advances():
    clock = FakeClock(10)
    clock.sleep(2.5)
    assert clock.now() == 12.5
