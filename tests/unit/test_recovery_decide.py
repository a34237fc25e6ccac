from delayq import recovery
from delayq.config import load
from delayq.store.base import Expired

NOW = 1000.0


def expired(**kw):
    base = dict(id=1, queue="q", priority=0, token="t", attempts=1, max_attempts=3, at_most_once=False,
                started_at=900.0, crashes=0, manual_running=0)
    return Expired(**{**base, **kw})


def test_ordinary_job_runs_again_now_and_the_attempt_counts():
    r = recovery.decide(expired(), NOW)
    assert (r.status, r.due_at, r.counts) == ("pending", NOW, True)


def test_no_attempts_left_fails():
    assert recovery.decide(expired(attempts=3), NOW).status == "failed"


def test_at_most_once_begun_or_manual_step_running_is_unknown_and_fails():
    for e in (expired(at_most_once=True, max_attempts=1), expired(manual_running=1)):
        r = recovery.decide(e, NOW)
        assert (r.status, r.error) == ("failed", recovery.UNKNOWN)


def test_at_most_once_never_begun_runs_again_without_counting():
    r = recovery.decide(expired(at_most_once=True, started_at=None, max_attempts=1), NOW)
    assert (r.status, r.counts) == ("pending", False)


def test_queue_defaults_and_secrets_stay_out_of_repr():
    settings = load({"DELAYQ_QUEUES": '{"report": {"lease": 3600}, "sms.fast": {"ladder": "15,30", "max_attempts": 3}}',
                     "DELAYQ_ALERT_WEBHOOK": "https://h/x?token=abc", "DELAYQ_ALERT_SECRET": "s3cret"}, None)
    assert settings.queues["report"] == {"lease": 3600}
    assert settings.queues["sms.fast"]["max_attempts"] == 3
    assert "abc" not in repr(settings) and "s3cret" not in repr(settings)


def test_a_job_whose_runner_died_three_times_is_a_poison_pill_and_fails():
    assert recovery.decide(expired(crashes=1, max_attempts=9), NOW).status == "pending"
    r = recovery.decide(expired(crashes=2, max_attempts=9), NOW)
    assert (r.status, r.crashed) == ("failed", True) and r.error.startswith(recovery.POISON)


def test_a_claim_never_begun_does_not_count_as_a_crash():
    r = recovery.decide(expired(at_most_once=True, started_at=None, max_attempts=1, crashes=2), NOW)
    assert (r.status, r.crashed) == ("pending", False)
