"""The application developer's side (issue 22): a job function's typed methods, the default client (from the
environment and .env, or in code) and the testing mode. Real SQLite, MariaDB and Redis, every backend."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import sqlite3
import subprocess
import sys
import threading
from urllib.parse import urlsplit

import pymysql
import pytest

import delayq
from delayq import default, testing
from delayq.client import Client
from examples.shop import auto_confirm, flaky_sync, noop, refund_rejected
from tests import developer_jobs
from tests.conftest import ROOT
from tests.developer_jobs import RAN, add, chain, notify, positional_only, remember
from tests.helpers import drain

ALLOWED = ("examples", "tests.developer_jobs")
QUEUES = ("default", "erp", "sms")          # the queues the tests below enqueue to: drain() runs them all


@pytest.fixture(autouse=True)
def no_default_client(tmp_path, monkeypatch):
    """Each test starts with no default client and no settings, in a directory without a .env; what it made is
    closed and the process's state put back after it."""
    monkeypatch.chdir(tmp_path)
    saved = default._config, default._client
    default._config = default._client = None
    RAN.clear()
    yield
    if default._client is not None:
        default._client.close()
    default._config, default._client = saved


def settings(backend, **more) -> delayq.Config:
    return delayq.Config(database_url=backend.database_url, redis_url=backend.redis_url, prefix=backend.prefix,
                         allowed_modules=ALLOWED, **more)


@pytest.fixture
def client(backend, clock) -> Client:
    manager = delayq.open_manager(settings(backend), clock)
    backend.managers.append(manager)          # closed, and its tables dropped, by the backend fixture
    return Client(manager)


def stored(backend) -> list[tuple]:
    return backend.sql("SELECT callable, args, queue, ext, priority, due_at, status FROM {jobs} ORDER BY id")


# -- typed methods -------------------------------------------------------------------------------------------------
def test_a_job_function_enqueues_itself_with_its_own_arguments(client, backend, clock):
    first = auto_confirm.options(client=client).enqueue(123)
    assert first.created and first.status == "pending" and first.due_at == clock.now()
    flaky_sync.options(client=client, delay="7d", ext="order:123", queue="erp", priority=5).enqueue(9, fail_times=2)
    erp = flaky_sync.options(client=client, queue="erp")
    erp.options(ext="order:124").enqueue(order_id=10)            # options add up; the first JobCall is unchanged
    erp.enqueue(order_id=11)
    rows = [(call, json.loads(args), queue, ext, priority, float(due) - clock.now(), status)
            for call, args, queue, ext, priority, due, status in stored(backend)]
    assert rows == [
        ("examples.shop:auto_confirm", {"order_id": 123}, "default", None, 0, 0, "pending"),
        ("examples.shop:flaky_sync", {"order_id": 9, "fail_times": 2}, "erp", "order:123", 5, 7 * 86400, "pending"),
        ("examples.shop:flaky_sync", {"order_id": 10}, "erp", "order:124", 0, 0, "pending"),
        ("examples.shop:flaky_sync", {"order_id": 11}, "erp", None, 0, 0, "pending"),
    ]


def test_a_jobs_parameters_named_like_options_stay_the_jobs(client, backend, clock):
    notify.options(client=client, queue="sms").enqueue(queue="email", delay=3, ext="x")
    [(_, args, queue, ext, _, due, _)] = stored(backend)
    assert (json.loads(args), queue, ext, float(due)) == ({"queue": "email", "delay": 3, "ext": "x"}, "sms", None,
                                                          clock.now())
    assert drain(client.manager, QUEUES, batch=500) == 1
    assert [value for tag, _, _, value in RAN] == [["email", 3, "x"]]


@pytest.mark.parametrize("call, message", [
    (lambda: auto_confirm.enqueue(), "missing a required argument: 'order_id'"),
    (lambda: auto_confirm.enqueue(1, 2), "too many positional arguments"),
    (lambda: auto_confirm.enqueue(order=1), "order_id"),
    (lambda: auto_confirm.enqueue({1, 2}), "args"),                                     # not JSON
    (lambda: positional_only.enqueue(1), "cannot be passed by name"),
    (lambda: auto_confirm.options(delay="7 weeks").enqueue(1), "delay"),
])
def test_wrong_arguments_raise_one_line_and_write_nothing(backend, client, call, message):
    delayq.configure(settings(backend))
    with pytest.raises(delayq.InvalidInput, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)
    assert stored(backend) == []


def test_a_plain_call_still_just_runs_the_function_and_enqueue_by_dict_still_works(client, backend):
    assert add(2, 3) == 5 and add(a=1, b=1) == 2 and stored(backend) == []
    assert developer_jobs.add is add and pickle.loads(pickle.dumps(add)) is add     # the same function object
    assert client.enqueue(add, {"a": 1, "b": 2}).created                            # the existing form, unchanged
    assert client.enqueue("tests.developer_jobs:add", {"a": 3, "b": 4}).created
    assert drain(client.manager, QUEUES, batch=500) == 2


def app_connection(backend, client):
    """The application's own connection to the same database (not delayq's), in a transaction."""
    if backend.database_url.startswith("sqlite"):
        client.manager.store.ready()
        conn = sqlite3.connect(client.manager.store.path, isolation_level=None)
        conn.execute("BEGIN")
        return conn
    u = urlsplit(backend.database_url)
    return pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root",
                           password=u.password or "", database=u.path.lstrip("/"), autocommit=False)


def test_enqueue_with_connection_joins_the_applications_transaction(client, backend):
    conn = app_connection(backend, client)
    remember.options(client=client, connection=conn, ext="lost").enqueue("rolled back")
    conn.rollback()
    conn.close()
    conn = app_connection(backend, client)
    kept = remember.options(client=client, connection=conn, ext="kept").enqueue("committed")
    assert client.get(kept.id) is None                     # not visible before the application commits
    conn.commit()
    conn.close()
    assert [ext for _, _, _, ext, _, _, _ in stored(backend)] == ["kept"]
    assert drain(client.manager, QUEUES, batch=500) == 1 and [tag for tag, *_ in RAN] == ["committed"]


# -- the default client ------------------------------------------------------------------------------------------
def test_the_default_client_is_configured_in_code(backend):
    config = delayq.configure(database_url=backend.database_url, redis_url=backend.redis_url, prefix=backend.prefix,
                              allowed_modules=list(ALLOWED), event_modules=["examples.events"])
    assert config.allowed_modules == ALLOWED                # a list is taken, and kept as a tuple
    auto_confirm.enqueue(7)
    delayq.emit("order.completed", {"order_id": 8, "path": "unused"})    # emit uses it too: a job per handler
    assert delayq.default_client() is delayq.default_client()
    assert sorted((call, json.loads(args)["order_id"]) for call, args, *_ in stored(backend)) == [
        ("examples.events:send_email", 8), ("examples.events:sync_to_erp", 8),
        ("examples.events:upgrade_to_diamond", 8), ("examples.shop:auto_confirm", 7)]


def test_the_default_client_reads_the_environment_and_dotenv_on_first_use(tmp_path, monkeypatch):
    monkeypatch.setenv("DELAYQ_DATABASE_URL", f"sqlite:///{tmp_path}/env.db")
    monkeypatch.setenv("DELAYQ_ALLOWED_MODULES", "examples")
    monkeypatch.delenv("DELAYQ_PREFIX", raising=False)
    monkeypatch.delenv("DELAYQ_REDIS_URL", raising=False)
    (tmp_path / ".env").write_text("DELAYQ_PREFIX=fromdotenv\nDELAYQ_DATABASE_URL=sqlite:///ignored.db\n")
    auto_confirm.enqueue(1)
    assert not (tmp_path / "ignored.db").exists()           # the environment wins over .env
    with sqlite3.connect(tmp_path / "env.db") as db:
        assert db.execute("SELECT callable, args FROM fromdotenv_jobs").fetchall() == [
            ("examples.shop:auto_confirm", '{"order_id":1}')]


def test_the_default_client_is_made_once_whichever_threads_ask_first(tmp_path):
    delayq.configure(database_url=f"sqlite:///{tmp_path}/threads.db", allowed_modules=ALLOWED)
    barrier, clients, errors = threading.Barrier(32), [], []

    def work(n: int) -> None:
        try:
            barrier.wait()
            clients.append(delayq.default_client())
            remember.enqueue(f"t{n}")
        except Exception as exc:                          # reported below: a thread's failure fails the test
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len({id(c) for c in clients}) == 1 and len(clients) == 32
    with sqlite3.connect(tmp_path / "threads.db") as db:
        assert db.execute("SELECT COUNT(*) FROM delayq_jobs").fetchone() == (32,)


def test_configure_again_replaces_the_default_client(tmp_path):
    delayq.configure(database_url=f"sqlite:///{tmp_path}/one.db", allowed_modules=ALLOWED)
    first = delayq.default_client()
    delayq.configure(delayq.Config(database_url=f"sqlite:///{tmp_path}/two.db", allowed_modules=ALLOWED),
                     prefix="second")
    noop.enqueue()
    assert delayq.default_client() is not first
    with sqlite3.connect(tmp_path / "two.db") as db:
        assert db.execute("SELECT COUNT(*) FROM second_jobs").fetchone() == (1,)


@pytest.mark.parametrize("settings, message", [
    ({"database_url": "mysql://app:hunter2@bad host:3306/db"}, "DELAYQ_DATABASE_URL"),
    ({"database_url": "mysql://app:hunter2@db:99999/db"}, "Port out of range"),
    ({"redis_url": "redis://:hunter2@cache:6379/0?decode_responses=true"}, "decode_responses"),
    ({"allowed_modules": "shop"}, "a tuple of names"),
    ({"prefix": "my-app"}, "DELAYQ_PREFIX"),
    ({"lease": "forever"}, "DELAYQ_LEASE"),
    ({"timeout": 0}, "DELAYQ_TIMEOUT"),
    ({"queues": {"sms": {"max_attempts": 0}}}, "DELAYQ_QUEUES"),
    ({"databse_url": "sqlite:///x.db"}, "no setting 'databse_url'"),
])
def test_a_bad_setting_in_code_is_one_line_without_the_password(settings, message):
    with pytest.raises(delayq.ConfigError, match=message) as caught:
        delayq.configure(**settings)
    assert "\n" not in str(caught.value) and "hunter2" not in str(caught.value)
    assert default._config is None                          # nothing half-configured


def test_a_config_never_shows_its_passwords():
    config = delayq.Config(database_url="mysql://app:hunter2@db:3306/shop", redis_url="redis://:hunter3@cache:6379/0",
                           web_password="hunter4", alert_secret="hunter5")
    assert "hunter" not in repr(config) and "hunter" not in str(config)
    assert "mysql://app:***@db:3306/shop" in repr(config)


# -- the testing mode --------------------------------------------------------------------------------------------
def test_inline_runs_the_job_at_once_in_the_callers_thread_through_json():
    delayq.configure(allowed_modules=ALLOWED)
    with testing.inline() as jobs:
        remember.options(delay="7d").enqueue("now", value=(1, "a", {"b": None}))    # the delay is not waited for
        assert RAN == [("now", threading.get_ident(), 1, [1, "a", {"b": None}])]     # ran before enqueue returned
        assert [(job.call, job.status, job.attempts) for job in jobs.jobs()] == [
            ("tests.developer_jobs:remember", "succeeded", 1)]
    assert not os.path.exists("delayq.db")                  # the private store lives in a temporary directory


def test_inline_records_a_failing_first_attempt_and_its_retry_waits_for_the_ladder():
    delayq.configure(allowed_modules=ALLOWED)
    with testing.inline() as jobs:
        flaky_sync.options(ladder="10,20").enqueue(order_id=1)
        refund_rejected.enqueue(2)
        sync, refund = jobs.jobs()
        assert (sync.status, sync.attempts, sync.last_error.split(":")[0]) == ("pending", 1, "ConnectionError")
        assert (refund.status, refund.attempts) == ("failed", 1)          # Permanent: no retry
        assert jobs.advance("9s") == 0 and jobs.jobs(flaky_sync)[0].status == "pending"
        assert jobs.advance("1s") == 1 and jobs.jobs(flaky_sync)[0].status == "succeeded"
        assert [a.outcome for a in jobs.attempts(sync)] == ["retry", "succeeded"]


def test_inline_checks_as_production_does():
    delayq.configure(allowed_modules=("tests",))              # examples is not allowed here
    with testing.inline() as jobs:
        with pytest.raises(delayq.CallableRefused, match="DELAYQ_ALLOWED_MODULES"):
            auto_confirm.enqueue(1)
        with pytest.raises(delayq.InvalidInput, match="args"):
            remember.enqueue("x", value=object())                         # JSON payloads only
        with pytest.raises(delayq.InvalidInput, match="missing a required argument"):
            notify.enqueue()
        assert jobs.jobs() == []


def test_inline_runs_emitted_events_and_many_jobs_at_once(tmp_path):
    delayq.configure(allowed_modules=ALLOWED, event_modules=("examples.events",))
    log = tmp_path / "effects.log"
    with testing.inline() as jobs:
        delayq.emit("order.completed", {"order_id": 1, "path": str(log), "total": 600})
        assert sorted(line.split()[0] for line in log.read_text().splitlines()) == ["diamond", "email", "erp"]
        jobs.client.enqueue_many([{"call": remember, "args": {"tag": "one"}}, {"call": remember, "args": {"tag": "two"},
                                                                              "delay": 60}])
        assert sorted(tag for tag, *_ in RAN) == ["one", "two"]
        assert {job.status for job in jobs.jobs()} == {"succeeded"} and len(jobs.jobs()) == 5


def test_inline_runs_a_job_that_a_job_enqueues_inside_it():
    delayq.configure(allowed_modules=ALLOWED)
    with testing.inline() as jobs:
        chain.enqueue("a")
        assert [tag for tag, *_ in RAN] == ["a:inner", "a:outer"]
        assert [job.status for job in jobs.jobs()] == ["succeeded", "succeeded"]


def test_explicit_runs_what_is_due_on_the_fake_clock_through_the_ladder():
    delayq.configure(allowed_modules=ALLOWED)
    with testing.explicit() as jobs:
        start = jobs.clock.now()
        flaky_sync.options(ladder="10,20,30").enqueue(order_id=1, fail_times=3)
        auto_confirm.options(delay="7d").enqueue(2)
        assert jobs.run_due() == 1                                       # the sync's first attempt only
        assert jobs.advance("59s") == 2                                  # its retries at 10 s and 30 s
        assert jobs.advance("1s") == 1                                   # and at 60 s: the fourth succeeds
        sync = jobs.jobs(flaky_sync)[0]
        assert (sync.status, sync.attempts) == ("succeeded", 4)
        assert [round(a.started_at - start) for a in jobs.attempts(sync)] == [0, 10, 30, 60]
        assert jobs.advance("6d") == 0 and jobs.jobs(auto_confirm)[0].status == "pending"
        assert jobs.advance("1d") == 1 and jobs.jobs(auto_confirm)[0].status == "succeeded"


def test_the_testing_mode_is_every_threads_default_client_until_its_block_ends(tmp_path):
    delayq.configure(database_url=f"sqlite:///{tmp_path}/app.db", allowed_modules=ALLOWED)
    configured = delayq.default_client()
    with testing.explicit() as jobs:
        seen: list[Client] = []
        thread = threading.Thread(target=lambda: seen.append(delayq.default_client()))
        thread.start()
        thread.join()
        assert seen == [jobs.client] and delayq.default_client() is jobs.client
        remember.enqueue("in the test")
        assert len(jobs.jobs()) == 1
        store = jobs.manager.store.path
    assert delayq.default_client() is configured and not os.path.exists(store)
    noop.enqueue()
    with sqlite3.connect(tmp_path / "app.db") as db:                      # the app's own store: only the job after
        assert db.execute("SELECT callable FROM delayq_jobs").fetchall() == [("examples.shop:noop",)]


def test_the_private_store_writes_a_job_given_a_connection_at_once():
    delayq.configure(allowed_modules=ALLOWED)
    other = sqlite3.connect(":memory:")
    with testing.inline() as jobs:
        remember.options(connection=other).enqueue("written")          # another database: not joined
        other.rollback()
        assert [tag for tag, *_ in RAN] == ["written"] and jobs.jobs()[0].status == "succeeded"


@pytest.mark.parametrize("mode", [testing.inline, testing.explicit])
def test_with_a_configured_store_the_testing_mode_keeps_the_callers_transaction(backend, client, mode):
    with mode(settings(backend)) as jobs:
        conn = app_connection(backend, client)
        remember.options(connection=conn).enqueue("rolled back")
        conn.rollback()
        conn.close()
        conn = app_connection(backend, client)
        remember.options(connection=conn).enqueue("committed")
        assert RAN == []                                                 # nothing runs what is not committed
        conn.commit()
        conn.close()
        assert jobs.run_due() == 1
        assert [tag for tag, *_ in RAN] == ["committed"]
        assert [job.status for job in jobs.jobs()] == ["succeeded"]


# -- a type checker reads the job's signature ------------------------------------------------------------------
TYPED = '''
import delayq


@delayq.job
def auto_confirm(order_id: int, queue: str = "") -> None: ...


auto_confirm(1)
auto_confirm.enqueue(1, queue="sms")
auto_confirm.options(delay="7d", ext="order:1", queue="default").enqueue(order_id=1)
'''
WRONG = {
    'auto_confirm.enqueue("one")': 'incompatible type "str"; expected "int"',
    "auto_confirm.enqueue(orderid=1)": 'Unexpected keyword argument "orderid"',
    'auto_confirm.options(delay="7d").enqueue()': 'Missing positional argument "order_id"',
    'auto_confirm.options(dealy="7d")': 'Unexpected keyword argument "dealy"',
}


def test_a_type_checker_reports_wrong_arguments_of_enqueue(tmp_path):
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is needed: pip install -e '.[dev]' (or run `make install`)", pytrace=False)
    (tmp_path / "good.py").write_text(TYPED)
    (tmp_path / "bad.py").write_text(TYPED + "\n".join(WRONG) + "\n")
    lines = len(TYPED.splitlines())

    def mypy(name: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
                               "--no-error-summary", name], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              check=False, env={**os.environ, "MYPYPATH": os.path.join(ROOT, "lib")})

    good = mypy("good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = mypy("bad.py")
    for number, (line, error) in enumerate(WRONG.items(), lines + 1):
        assert f"bad.py:{number}: error: " in bad.stdout and error in bad.stdout, (line, bad.stdout)
    assert bad.stdout.count(": error: ") == len(WRONG)


def test_a_per_key_limit_is_computed_from_the_arguments_at_enqueue_and_one_missing_is_refused(client, backend):
    from examples.limits import confirm_order
    done = confirm_order.options(client=client).enqueue(order_id=7)
    [[key, most]] = backend.sql("SELECT limit_key, limit_max FROM {jobs} WHERE id = ?", done.id)
    assert (key, most) == ("order:7", 1)
    with pytest.raises(delayq.InvalidInput, match="missing a required argument: 'order_id'"):
        client.enqueue("examples.limits:confirm_order", {"id": 7})
    assert backend.sql("SELECT COUNT(*) FROM {jobs}")[0][0] == 1      # nothing half-written
