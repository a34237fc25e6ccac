"""The store's retries of a transaction the server rolled back as a deadlock's victim (store/sql.py, retried):
five tries, spread by short random pauses that grow (under multi-writer Galera a claim meets the same claims again
at once otherwise), none of them past the operation's one deadline (mysql.py's _Bound: DELAYQ_DB_TIMEOUT). The
whole on a real server: tests/integration/test_multihost.py."""

import pytest

from delayq.store import sql
from delayq.store.mysql import _Bound
from delayq.store.sql import DEADLOCK_PAUSE, DEADLOCK_TRIES, _paused


@pytest.fixture
def slept(monkeypatch):
    pauses: list[float] = []
    monkeypatch.setattr(sql.time, "sleep", pauses.append)
    return pauses


def test_five_tries_spread_by_random_pauses_that_grow(slept):
    assert DEADLOCK_TRIES == 5
    assert all(_paused(attempt, None) for attempt in range(DEADLOCK_TRIES - 1))    # no deadline (SQLite)
    assert len(slept) == DEADLOCK_TRIES - 1
    assert all(0 <= pause <= DEADLOCK_PAUSE * 2 ** n for n, pause in enumerate(slept)), slept
    for _ in range(200):
        _paused(3, None)
    assert max(slept) > DEADLOCK_PAUSE * 4 and len(set(slept)) > 100         # random, up to 40 ms on the 4th


def test_no_pause_is_taken_past_the_operations_deadline(slept):
    with _Bound(0.0) as bound:              # its deadline is now: no pause, no try after it
        assert bound.left() <= 0 and not _paused(0, bound)
    with _Bound(20.0) as bound:
        assert _paused(3, bound)
        with _Bound(60.0) as inner:         # an operation inside another keeps the outer's deadline
            assert abs(inner.left() - bound.left()) < 0.05 and bound.left() <= 20.0
    assert len(slept) == 1
