"""Several hosts in DELAYQ_DATABASE_URL (issue 26): mysql://user:pass@host1:port,host2:port/db. A connect tries the
hosts in turn from the one that last answered, passing over a host with no server; when the host in use dies, the
next operation runs on the next one; when none answers, one line names every host and never the password. Real
servers: the test MariaDB, and two private mariadbd (tests/chaos/servers.py) of which one is killed by its pid."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit, urlunsplit

import pymysql
import pytest

from delayq import config
from delayq.errors import BackendError, ConfigError
from delayq.jobs import JobSpec
from delayq.store.mysql import MySQLStore
from tests.chaos.servers import PrivateMariaDB, free_port, wait_port
from tests.conftest import MYSQL_URL, ROOT, drop_mysql, new_prefix, require

NOW = 1_800_000_000.0
_test = urlsplit(MYSQL_URL)
TEST_HOST = f"{_test.hostname}:{_test.port or 3306}"


def with_hosts(url: str, *hosts: str) -> str:
    """The URL with its host part replaced by a list of hosts (its login and database kept)."""
    parts = urlsplit(url)
    login = parts.netloc.rpartition("@")[0]
    return urlunsplit(parts._replace(netloc=(login + "@" if login else "") + ",".join(hosts)))


def port_of(store: MySQLStore) -> int:
    with store.tx(write=False) as cur:
        cur.execute("SELECT @@port")
        return int(cur.fetchone()[0])


def test_a_closed_port_first_then_the_test_server_works_and_stays_the_first_tried():
    require("mysql")
    closed = f"127.0.0.1:{free_port()}"
    store = MySQLStore(with_hosts(MYSQL_URL, closed, TEST_HOST), new_prefix())
    try:
        store.migrate(NOW)
        [job] = store.insert_jobs([JobSpec(call="examples.shop:noop", args_json="{}", due_at=NOW)], NOW)
        assert store.get(job.id).status == "pending"
        assert port_of(store) == (_test.port or 3306)
        assert store.where == f"mysql://{closed},{TEST_HOST}{_test.path}"
        assert store._hosts.hosts[store._hosts.current] == (_test.hostname, _test.port or 3306)  # next: from there
    finally:
        store.close()
        drop_mysql(store.prefix)


def test_a_bulk_enqueue_through_a_list_of_hosts_returns_each_jobs_own_id():
    """One INSERT ... RETURNING on MariaDB, its reply's ids mapped to the rows by store/sql_jobs.returned_ids (the
    reply of a statement Galera ran twice: tests/unit/test_returned_ids.py)."""
    require("mysql")
    store = MySQLStore(with_hosts(MYSQL_URL, TEST_HOST, f"127.0.0.1:{free_port()}"), new_prefix())
    try:
        store.migrate(NOW)
        specs = [JobSpec(call="examples.shop:noop", args_json="{}", due_at=NOW + i, ext=f"bulk:{i}") for i in range(40)]
        inserted = store.insert_jobs(specs, NOW)
        assert store.returning and len({r.id for r in inserted}) == 40
        assert [store.get(r.id).ext for r in inserted] == [spec.ext for spec in specs]
    finally:
        store.close()
        drop_mysql(store.prefix)


def test_deadlock_retries_are_five_and_keep_to_one_db_timeout():
    """A transaction the server rolls back as a deadlock's victim (a certification failure on Galera) is run again,
    five tries in all, with short pauses; every try and pause within the operation's one DELAYQ_DB_TIMEOUT."""
    require("mysql")
    store = MySQLStore(MYSQL_URL, "unused", timeout=1)
    tries: list[float] = []

    def victim(slow: float):
        def body(cur):
            cur.execute("SELECT 1")
            tries.append(time.monotonic())
            time.sleep(slow)
            error = BackendError("MySQL at ... failed: (1213) Deadlock found (as the server says it)")
            error.retryable = True
            raise error
        return body
    try:
        with pytest.raises(BackendError, match="1213"):
            store.retried(victim(0.0))
        assert len(tries) == 5 and tries[-1] - tries[0] < 0.3          # 5 tries; pauses of at most 5+10+20+40 ms
        tries.clear()
        started = time.monotonic()
        with pytest.raises(BackendError, match="1213"):
            store.retried(victim(0.4))                                   # 0.4 s a try: 5 would take 2 s
        assert 2 <= len(tries) <= 3 and time.monotonic() - started < 1.0 + 0.4 + 0.3, tries
    finally:
        store.close()


@pytest.fixture(scope="module")
def two_servers():
    """Two private mariadbd (not replicated: each answers for itself), started side by side."""
    require("mysql")
    servers: list[PrivateMariaDB] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            servers.append(PrivateMariaDB())
        except BaseException as exc:       # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        if errors:
            raise errors[0]
        yield servers
    finally:
        for server in servers:       # each one ours, ended by its pid whatever happened to the other
            try:
                server.remove()
            except subprocess.TimeoutExpired:
                server.proc.kill()
                server.proc.wait()
                shutil.rmtree(server.dir, ignore_errors=True)


def test_servers_installed_side_by_side_each_keep_their_own_tmpdir(two_servers):
    """A mariadbd starting removes the #sql* files in its tmpdir: two sharing /tmp broke each other's bootstrap
    (CI, stop 32: mariadb-install-db exit 1). Each private server's tmpdir is its own."""
    for server in two_servers:
        with pymysql.connect(host="127.0.0.1", port=server.port, user="root") as conn, conn.cursor() as cur:
            cur.execute("SELECT @@tmpdir")
            assert cur.fetchone()[0].rstrip("/") == os.path.join(server.dir, "tmp")


def kill(server: PrivateMariaDB) -> None:
    """SIGKILL of that server's mariadbd, by its pid: its sockets close, as when a host's database dies."""
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait()
    wait_port(server.port, up=False)


def restart(server: PrivateMariaDB, timeout: float = 30) -> None:
    """Start it again and wait until it answers a query: its port opens before it is ready, and a SIGTERM in
    between (the fixture's stop) is lost, which would leave stop() waiting."""
    server.start()
    deadline = time.monotonic() + timeout
    while True:
        try:
            pymysql.connect(host="127.0.0.1", port=server.port, user="root", connect_timeout=2).close()
            return
        except pymysql.err.Error:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_when_the_host_in_use_dies_the_next_operation_runs_on_the_next_host_and_back_again(two_servers):
    a, b = two_servers
    store = MySQLStore(f"mysql://root@127.0.0.1:{a.port},127.0.0.1:{b.port}/test", "unused", timeout=5)
    try:
        assert port_of(store) == a.port
        with store.statement() as cur:              # the autocommit pool too holds a session on a
            cur.execute("SELECT 1")
        kill(a)
        assert port_of(store) == b.port             # its idle session on a was dead: a new one, on b
        with store.statement() as cur:
            cur.execute("SELECT @@port")
            assert cur.fetchone()[0] == b.port
        restart(a)
        assert port_of(store) == b.port             # b still answers: sessions stay there
        kill(b)
        assert port_of(store) == a.port             # from the last host round to the first
    finally:
        store.close()
        for server in (a, b):
            if server.proc.poll() is not None:
                restart(server)


def test_a_session_lost_mid_transaction_fails_that_operation_alone(two_servers):
    a, b = two_servers
    store = MySQLStore(f"mysql://root@127.0.0.1:{a.port},127.0.0.1:{b.port}/test", "unused", timeout=5)
    try:
        assert port_of(store) == a.port
        with pytest.raises(BackendError) as lost:
            with store.tx() as cur:
                cur.execute("SELECT 1")
                kill(a)
                cur.execute("SELECT 2")             # the server went away under this transaction
        assert "(2013)" in str(lost.value) or "(2006)" in str(lost.value), lost.value
        assert not lost.value.retryable             # not the server's verdict: the caller decides
        assert port_of(store) == b.port
    finally:
        store.close()
        if a.proc.poll() is not None:
            restart(a)


def test_no_host_answering_is_one_line_naming_every_host_and_not_the_password():
    hosts = [f"127.0.0.1:{free_port()}", f"localhost:{free_port()}"]
    url = f"mysql://shop:s3cret-pw@{','.join(hosts)}/shop"
    store = MySQLStore(url, "unused", timeout=2)
    with pytest.raises(BackendError) as failed:
        store.get(1)
    message = str(failed.value)
    assert "\n" not in message and "s3cret" not in message, message
    assert message.startswith(f"MySQL at mysql://{hosts[0]},{hosts[1]}/shop is unreachable: no host answered: ")
    assert all(f"{host} (2003)" in message for host in hosts), message
    # and as a command says it: exit 1, one line on stderr
    env = dict(os.environ, DELAYQ_DATABASE_URL=url, DELAYQ_DB_TIMEOUT="2", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-m", "delayq", "stats"], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1, done
    assert len(done.stderr.strip().splitlines()) == 1 and "s3cret" not in done.stderr, done.stderr
    assert all(host in done.stderr for host in hosts), done.stderr


@pytest.mark.parametrize("login, hostlist, hosts", [
    ("u:s3cret", "db1:3306,db2:3307,db3", (("db1", 3306), ("db2", 3307), ("db3", 3306))),
    ("u", "10.0.0.1,10.0.0.2", (("10.0.0.1", 3306), ("10.0.0.2", 3306))),
    ("u:s3cret", "db1:3306,[::1]:3307", (("db1", 3306), ("::1", 3307))),
    ("u:s3cret%40,x", "db1,db2", (("db1", 3306), ("db2", 3306))),    # a comma in the password is no host
])
def test_the_settings_accept_a_list_of_hosts(login, hostlist, hosts):
    url = f"mysql://{login}@{hostlist}/shop"
    settings = config.load({"DELAYQ_DATABASE_URL": url}, None)
    target = config.mysql_target(settings.database_url)
    assert target.hosts == hosts and target.database == "shop" and target.user == "u"
    assert config.redact(url) == f"mysql://{'u:***' if ':' in login else 'u'}@{hostlist}/shop"
    assert config.describe(url) == "mysql://" + ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}"
                                                         for h, p in hosts) + "/shop"
    assert "s3cret" not in repr(settings)


def test_a_password_never_shows_in_the_redacted_list():
    assert config.redact("mysql://shop:s3cret@db1:3306,db2:3306/shop") == "mysql://shop:***@db1:3306,db2:3306/shop"
    assert config.mysql_target("mysql://shop:p%40ss@db1,db2/shop").password == "p@ss"
    assert "p@ss" not in repr(config.mysql_target("mysql://shop:p%40ss@db1,db2/shop"))


@pytest.mark.parametrize("url, reason", [
    ("mysql://u:s3cret@db1,,db2/shop", "has an empty host in its list"),
    ("mysql://u:s3cret@db1,/shop", "has an empty host in its list"),
    ("mysql://u:s3cret@db1,db2:0/shop", "gives host db2 the port '0': a port is 1-65535"),
    ("mysql://u:s3cret@db1,db2:99999/shop", "gives host db2 the port '99999'"),
    ("mysql://u:s3cret@db1,db2:x/shop", "gives host db2 the port 'x'"),
    ("mysql://u:s3cret@db1,db 2/shop", "neither an IP address nor a DNS name"),
    ("mysql://u:s3cret@db1,é.example/shop", "neither an IP address nor a DNS name"),
    ("mysql://u:s3cret@db1,[::1/shop", "a host it cannot read"),
    ("mysql://u:s3cret@db1,db1:3306/shop", "names a host twice"),
])
def test_the_settings_refuse_a_malformed_list_with_one_line(url, reason):
    with pytest.raises(ConfigError) as refused:
        config.load({"DELAYQ_DATABASE_URL": url}, None)
    message = str(refused.value)
    assert reason in message and "\n" not in message and "s3cret" not in message, message
    assert message.startswith("DELAYQ_DATABASE_URL 'mysql://u:***@") and "host1:3306,host2:3306" in message
