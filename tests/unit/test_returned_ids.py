"""A bulk enqueue's ids from the reply of its INSERT ... RETURNING (store/sql_jobs.returned_ids), including the reply
Galera gives when it ran the statement twice itself (wsrep_retry_autocommit): the ids of both runs, the first run's
rolled back. The function alone, on replies as the server sends them; tests/integration/test_multihost.py and the
store contract suite run the path on a real server."""

import logging

import pytest

from delayq.store import sql_jobs
from delayq.store.sql_jobs import returned_ids


@pytest.fixture(autouse=True)
def not_warned_yet(monkeypatch):
    monkeypatch.setattr(sql_jobs, "_warned_extra_ids", False)


def test_one_run_gives_its_ids_in_the_rows_order_whatever_the_reply_order(caplog):
    with caplog.at_level(logging.WARNING, logger="delayq.store.sql_jobs"):
        assert returned_ids([12, 10, 11], 3) == [10, 11, 12]
        assert returned_ids([7], 1) == [7]
    assert caplog.records == []


def test_a_statement_the_server_ran_twice_gives_the_last_runs_ids_and_warns_once(caplog):
    # three rows; the first run (ids 4, 7, 10 on a node whose auto-increment steps by 3) rolled back at
    # certification, the second committed: 13, 16, 19. In the reply's order, or not.
    with caplog.at_level(logging.WARNING, logger="delayq.store.sql_jobs"):
        assert returned_ids([4, 7, 10, 13, 16, 19], 3) == [13, 16, 19]
        assert returned_ids([19, 13, 7, 16, 4, 10], 3) == [13, 16, 19]
        assert returned_ids([1, 2, 3, 4, 5, 6, 7, 8, 9], 3) == [7, 8, 9]     # run three times: the last run's
    [warning] = caplog.records
    assert warning.levelname == "WARNING" and "returned 6 ids" in warning.getMessage()
    assert "last 3" in warning.getMessage()
