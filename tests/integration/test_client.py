"""The application's client: shared by many threads, used in forked children, and enqueueing inside the
application's own transaction. Real servers, every backend."""

from __future__ import annotations

import os
import sqlite3
import threading
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import pymysql
import pytest

import delayq
from delayq.client import Client
from delayq.errors import InvalidInput
from delayq.index.redis import RedisIndex
from examples.shop import flaky_sync, noop, record
from tests.helpers import drain


@pytest.fixture
def client(backend):
    return Client(backend.manager())


def test_32_threads_share_one_client_and_write_every_job_once(client, backend):
    threads, per_thread, errors = 32, 500, []
    barrier = threading.Barrier(threads)

    def work(n):
        try:
            barrier.wait()
            for i in range(per_thread):
                client.enqueue(noop, ext=f"t{n}:{i}")
        except Exception as exc:        # reported below: a thread's failure must fail the test
            errors.append(repr(exc))

    pool = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert errors == []
    total = threads * per_thread
    assert backend.sql("SELECT COUNT(*), COUNT(DISTINCT ext) FROM {jobs}")[0] == (total, total)
    index = client.manager.index
    if isinstance(index, RedisIndex):
        assert index.r.zcard(index.keys("default")[0]) == total
    assert drain(client.manager, batch=500) == total


def test_a_client_keeps_working_in_forked_children_and_in_its_parent(client, backend):
    client.enqueue(noop, ext="parent:before")           # the parent's pooled connections exist now
    children = []
    for n in range(4):
        pid = os.fork()
        if pid == 0:                                     # the child: use the inherited client, report by exit code
            code = 1
            try:
                for i in range(50):
                    client.enqueue(noop, ext=f"child{n}:{i}")
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    statuses = [os.waitpid(pid, 0)[1] for pid in children]
    assert statuses == [0, 0, 0, 0]
    client.enqueue(noop, ext="parent:after")             # the parent's connections were not broken by the children
    assert backend.sql("SELECT COUNT(DISTINCT ext) FROM {jobs}")[0][0] == 4 * 50 + 2
    assert drain(client.manager, batch=500) == 4 * 50 + 2


def app_connection(backend):
    """The application's own connection to the same database (not delayq's)."""
    if backend.database_url.startswith("sqlite"):
        client_store = backend.managers[0].store
        client_store.ready()
        return sqlite3.connect(client_store.path, isolation_level=None)
    u = urlsplit(backend.database_url)
    return pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root", password=u.password or "",
                           database=u.path.lstrip("/"), autocommit=False)


def test_enqueue_in_the_applications_transaction(client, backend, tmp_path):
    log = tmp_path / "effects.log"
    conn = app_connection(backend)
    cur = conn.cursor()
    cur.execute("BEGIN")
    client.enqueue(record, {"path": str(log), "tag": "rolled-back"}, connection=conn, ext="lost")
    conn.rollback()                                      # the business write failed: the job must not exist
    cur.execute("BEGIN")
    kept = client.enqueue(record, {"path": str(log), "tag": "committed"}, connection=conn, ext="kept")
    assert client.get(kept.id) is None                  # not visible before the application commits
    conn.commit()
    conn.close()
    assert client.manager.store.by_ext("lost") == []     # (SQLite may hand its id to the next job: look by key)
    # no rebuild: the next runner pass adds the committed job's index entry, then runs it
    assert drain(client.manager, batch=500) == 1
    assert log.read_text().split()[0] == "committed"
    assert client.get(kept.id).status == "succeeded"


def test_the_client_takes_python_values(client, clock):
    job = client.enqueue(flaky_sync, {"order_id": 1}, delay=timedelta(minutes=5), ladder=[10, "1m"], deadline="1h")
    stored = client.get(job.id)
    assert stored.call == "examples.shop:flaky_sync" and stored.due_at == clock.now() + 300
    assert stored.ladder == "10.0,60.0" and stored.deadline == clock.now() + 3600
    at = datetime.fromtimestamp(clock.now() + 7200).astimezone()
    assert client.get(client.enqueue(noop, at=at).id).due_at == pytest.approx(clock.now() + 7200)
    with pytest.raises(InvalidInput, match="args do not fit"):
        client.enqueue(flaky_sync, {"order": 1})
    with pytest.raises(InvalidInput, match="not marked with @delayq.job"):
        client.enqueue("examples.shop:not_a_job")
    assert client.cancel(id=job.id).cancelled == [(job.id, "default")]


def test_connect_is_a_context_manager(backend):
    config = delayq.Config(database_url=backend.database_url, redis_url=backend.redis_url, prefix=backend.prefix,
                           allowed_modules=("examples",))
    with delayq.connect(config) as client:
        assert client.enqueue("examples.shop:noop").created
