"""connection= with mysqlclient (MySQLdb), Django's default MySQL driver: taken like PyMySQL, inside the caller's
transaction, its own errors understood (a unique key met in a race, 3-byte utf8). Real MariaDB."""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

import pytest

from delayq.client import Client
from delayq.errors import InvalidInput
from examples.shop import noop, record
from tests.conftest import MYSQL_URL, make_backend


@pytest.fixture
def backend(tmp_path, clock):
    b = make_backend("mysql", tmp_path, clock)
    yield b
    b.cleanup()


def mysqlclient(charset: str = "utf8mb4", isolation: str = "READ COMMITTED"):
    """A mysqlclient connection as Django opens one (READ COMMITTED is Django's default level on MySQL)."""
    try:
        import MySQLdb
    except ImportError:
        pytest.fail("mysqlclient is not installed: run `make install` (it compiles against libmariadb-dev and "
                    "pkg-config: apt-get install libmariadb-dev pkg-config)", pytrace=False)
    u = urlsplit(MYSQL_URL)
    conn = MySQLdb.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root", password=u.password or "",
                           database=u.path.lstrip("/"), charset=charset)
    conn.cursor().execute(f"SET SESSION TRANSACTION ISOLATION LEVEL {isolation}")
    return conn


def test_a_mysqlclient_connection_writes_the_job_in_its_transaction(backend, tmp_path):
    client, log = Client(backend.manager()), tmp_path / "effects.log"
    conn = mysqlclient()
    client.enqueue(record, {"path": str(log), "tag": "rolled-back"}, connection=conn, ext="lost")
    conn.rollback()
    kept = client.enqueue(record, {"path": str(log), "tag": "committed"}, connection=conn, ext="kept")
    assert client.get(kept.id) is None                   # not visible before the caller commits
    conn.commit()
    conn.close()
    assert client.manager.store.by_ext("lost") == [] and client.get(kept.id).status == "pending"


def test_a_unique_race_between_mysqlclient_connections_returns_the_winners_job(backend):
    """The loser's INSERT meets the winner's row at the unique key: mysqlclient's IntegrityError, not PyMySQL's,
    is what it raises; the loser then returns the winner's job instead of failing."""
    client = Client(backend.manager())
    winner_conn, loser_conn = mysqlclient(), mysqlclient()
    winner = client.enqueue(noop, ext="order:7", unique=True, connection=winner_conn)
    results: list = []

    def lose() -> None:
        try:
            results.append(client.enqueue(noop, ext="order:7", unique=True, connection=loser_conn))
        except Exception as exc:      # noqa: BLE001 (asserted below)
            results.append(exc)

    loser = threading.Thread(target=lose)
    loser.start()
    loser.join(0.3)                   # blocked on the winner's uncommitted row
    winner_conn.commit()
    loser.join(10)
    loser_conn.commit()
    winner_conn.close(), loser_conn.close()
    assert len(results) == 1 and not isinstance(results[0], Exception), results
    assert (results[0].id, results[0].created) == (winner.id, False)
    assert [job.id for job in client.manager.store.by_ext("order:7")] == [winner.id]


def test_a_3_byte_utf8_connection_is_named_with_its_fix(backend):
    """Django's own default charset on MySQL is utf8 (3 bytes): an emoji in the args is one line saying what to set."""
    client = Client(backend.manager())
    conn = mysqlclient(charset="utf8")
    with pytest.raises(InvalidInput, match="utf8mb4") as caught:
        client.enqueue(record, {"path": "-", "tag": "\N{SLIGHTLY SMILING FACE}"}, connection=conn)
    assert "\n" not in str(caught.value)
    conn.rollback(), conn.close()
