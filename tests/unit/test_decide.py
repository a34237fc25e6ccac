from delayq import Permanent
from delayq.clock import FakeClock, ServerClock
from delayq.jobs import Job
from delayq.runner import decide, describe_error


def job(**kw):
    base = dict(id=1, queue="default", call="examples.shop:noop", args_json="{}", status="running",
                attempts=1, max_attempts=3, ladder="10,20", due_at=0.0)
    return Job(**{**base, **kw})


def test_success_and_permanent():
    assert decide(job(), None, 100.0) == ("succeeded", None)
    assert decide(job(), Permanent("no"), 100.0) == ("failed", None)


def test_retry_follows_the_ladder_by_attempt():
    assert decide(job(attempts=1), ValueError(), 100.0) == ("pending", 110.0)
    assert decide(job(attempts=2), ValueError(), 100.0) == ("pending", 120.0)
    assert decide(job(attempts=3), ValueError(), 100.0) == ("failed", None)


def test_deadline_ends_retries():
    assert decide(job(deadline=105.0), ValueError(), 100.0) == ("timed_out", None)
    assert decide(job(deadline=110.0), ValueError(), 100.0) == ("pending", 110.0)


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
