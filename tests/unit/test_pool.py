"""The connection pool (store/pool.py) on real SQLite connections: what close() does to connections in use."""

from __future__ import annotations

import sqlite3

import pytest

from delayq.store.pool import Pool


@pytest.fixture
def pool(tmp_path):
    made: list[sqlite3.Connection] = []

    def connect() -> sqlite3.Connection:
        made.append(sqlite3.connect(tmp_path / "pool.db", check_same_thread=False))
        return made[-1]

    p = Pool(connect, lambda conn: conn.close())
    p.made = made
    yield p
    p.close()


def _is_open(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
        return True
    except sqlite3.ProgrammingError:       # "Cannot operate on a closed database."
        return False


def test_a_released_connection_is_reused(pool):
    first = pool.acquire()
    pool.release(first)
    assert pool.acquire() is first and len(pool.made) == 1


def test_close_closes_idle_connections_and_those_in_use_when_they_come_back(pool):
    idle, busy = pool.acquire(), pool.acquire()
    pool.release(idle)
    pool.close()
    assert not _is_open(idle) and _is_open(busy)
    pool.release(busy)                     # taken before close(): closed, not kept
    assert not _is_open(busy)
    again = pool.acquire()                 # the pool still works after close(): a new connection
    assert again is not busy and again is not idle and _is_open(again)
    pool.release(again)
    assert pool.acquire() is again


def test_a_broken_connection_is_closed_not_kept(pool):
    conn = pool.acquire()
    pool.release(conn, broken=True)
    assert not _is_open(conn) and pool.acquire() is not conn
