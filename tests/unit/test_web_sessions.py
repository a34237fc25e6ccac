"""The dashboard's server-side sessions and its password throttle, on an injected clock (issue 24)."""

from __future__ import annotations

from delayq.web import security
from delayq.web.sessions import ABSOLUTE, IDLE, Sessions


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_session_ends_when_idle_after_its_lifetime_at_logout_and_with_another_password():
    clock = Clock()
    sessions = Sessions(clock)
    idle = sessions.start("pw")
    assert sessions.check(idle, "pw")
    clock.t += IDLE + 1
    assert not sessions.check(idle, "pw") and not sessions.check(idle, "pw")     # forgotten for good
    used, begun = sessions.start("pw"), clock.t
    while sessions.check(used, "pw"):
        clock.t += IDLE / 2                  # used every half hour: never idle, but not forever
    assert begun + ABSOLUTE < clock.t <= begun + ABSOLUTE + IDLE / 2
    other = sessions.start("pw")
    assert not sessions.check(other, "new password")          # a password change ends it
    ended = sessions.start("pw")
    sessions.end(ended)
    assert not sessions.check(ended, "pw") and not sessions.check(None, "pw") and not sessions.check("", "pw")


def test_a_page_s_live_refresh_does_not_keep_an_idle_session_alive():
    """Review of issue 24: live.js fetches the page every 5 s; a tab left open must still sign out when idle."""
    clock = Clock()
    sessions = Sessions(clock)
    sid = sessions.start("pw")
    for _ in range(int(IDLE // 5)):
        clock.t += 5
        assert sessions.check(sid, "pw", use=False)          # a refresh: still signed in, not "used"
    clock.t += 10
    assert not sessions.check(sid, "pw", use=False)
    kept = sessions.start("pw")
    clock.t += IDLE - 1
    assert sessions.check(kept, "pw")                         # a person's request is use
    clock.t += IDLE - 1
    assert sessions.check(kept, "pw", use=False)


def test_the_throttle_counts_each_address_and_all_of_them_together():
    clock = Clock()
    throttle = security.Throttle(clock)
    for _ in range(security.THROTTLE_FAILURES):
        assert not throttle.blocked("10.0.0.1")
        throttle.failed("10.0.0.1")
    assert throttle.blocked("10.0.0.1") and not throttle.blocked("10.0.0.2")
    for n in range(security.THROTTLE_ALL):      # many addresses, a few guesses each: all logins wait
        throttle.failed(f"10.1.{n // 250}.{n % 250}")
    assert throttle.blocked("10.0.0.2")
    clock.t += security.THROTTLE_WINDOW + 1
    assert not throttle.blocked("10.0.0.1") and not throttle.blocked("10.0.0.2")
