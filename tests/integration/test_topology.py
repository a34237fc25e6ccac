"""Redis Cluster and Sentinel as redis-py 8 sees them, on private servers (scripts/redis_topology.py).

What delayq's redis+cluster:// and redis+sentinel:// support will lean on: the claim script routed by its
hash-tagged keys, scans and pipelines over every primary, and what a client sees when a master fails over.
A cluster whose master dies leaves a bare RedisCluster raising ConnectionError (its retries do not wait, so
they are spent before the replica is promoted): the caller has to retry with a backoff. A Sentinel client
with a Retry that backs off rides over the same failure, except for a command in flight at the kill, which
redis-py retries on the dead address. Graceful failovers lose nothing. Each failover is measured.
"""

from __future__ import annotations

import pathlib
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
import redis
from redis.backoff import ExponentialBackoff
from redis.cluster import RedisCluster
from redis.exceptions import ClusterDownError, RedisClusterException, TryAgainError
from redis.retry import Retry
from redis.sentinel import MasterNotFoundError
from redis.sentinel import Sentinel as SentinelClient

from scripts.redis_topology import Cluster, Sentinel

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLAIM = (ROOT / "lib" / "delayq" / "index" / "lua" / "claim.lua").read_text()
PASSWORD = "node-secret"
SENTINEL_PASSWORD = "sentinel-secret"
DUE, INFLIGHT, RECORD = "{delayq:sms}:due", "{delayq:sms}:inflight", "{delayq:sms}:claim:"

if not shutil.which("redis-server") or not shutil.which("redis-cli"):
    pytest.fail("redis-server and redis-cli >= 7.0 are needed: apt-get install redis-server", pytrace=False)


@pytest.fixture(scope="module")
def cluster():
    with Cluster(masters=3, replicas=1, password=PASSWORD) as c:
        yield c


@pytest.fixture(scope="module")
def sentinels():
    with Sentinel(password=PASSWORD, sentinel_password=SENTINEL_PASSWORD) as s:
        yield s


def cluster_client(c: Cluster, **kw) -> RedisCluster:
    return RedisCluster(startup_nodes=c.startup_nodes, password=c.password, decode_responses=True,
                        socket_timeout=1, socket_connect_timeout=1, **kw)


def sentinel_master(s: Sentinel, **kw) -> redis.Redis:
    client = SentinelClient(s.sentinels, sentinel_kwargs={"password": s.sentinel_password, "socket_timeout": 0.5},
                            password=s.password, socket_timeout=1, socket_connect_timeout=1)
    return client.master_for(s.master_name, db=0, decode_responses=True, **kw)


def with_backoff(call, budget: float = 15):
    """Retry a cluster call on the errors a failover raises, 0.05 s doubling to 0.5 s, for budget seconds."""
    delay, deadline = 0.05, time.monotonic() + budget
    while True:
        try:
            return call()
        except (redis.ConnectionError, ClusterDownError, TryAgainError):
            if time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


class Writer(threading.Thread):
    """RPUSHes 1, 2, 3... to one key every 10 ms through one client; keeps what was acknowledged and raised."""

    def __init__(self, client, key: str):
        super().__init__(daemon=True)
        self.client, self.key, self.halt = client, key, threading.Event()
        self.acked: list[int] = []
        self.acked_at: list[float] = []
        self.errors: list[Exception] = []

    def run(self) -> None:
        n = 0
        while not self.halt.is_set():
            n += 1
            try:
                self.client.rpush(self.key, n)
                self.acked.append(n)
                self.acked_at.append(time.monotonic())
            except redis.RedisError as exc:
                self.errors.append(exc)
            time.sleep(0.01)

    def stop_after_more_writes(self, more: int = 20) -> None:
        target = len(self.acked) + more
        deadline = time.monotonic() + 15
        while len(self.acked) < target and time.monotonic() < deadline and self.is_alive():
            time.sleep(0.01)
        self.halt.set()
        self.join()

    def first_ack_after(self, moment: float) -> float:
        return next(t for t in self.acked_at if t > moment) - moment

    def lost(self) -> set[int]:
        return set(self.acked) - set(map(int, self.client.lrange(self.key, 0, -1)))


def test_cluster_has_a_replica_per_master_and_a_url_naming_every_node(cluster):
    roles = sorted(n.role for n in cluster.nodes)
    assert roles == ["master"] * 3 + ["replica"] * 3
    assert cluster.url == f"redis+cluster://:{PASSWORD}@" + ",".join(f"127.0.0.1:{p}" for p in cluster.ports)
    assert len(cluster.startup_nodes) == 6


def test_cluster_routes_the_claim_script_by_its_hash_tagged_keys(cluster):
    rc = cluster_client(cluster)
    rc.delete(DUE, INFLIGHT)
    rc.zadd(DUE, {"1": 100, "2": 200, "3": 300})
    claim = rc.register_script(CLAIM)
    assert claim(keys=[DUE, INFLIGHT, RECORD + "a"], args=[250, 10, 999, 2 ** 35, 60]) == ["1", "2"]
    assert rc.zrange(INFLIGHT, 0, -1, withscores=True) == [("1", 999.0), ("2", 999.0)]
    assert rc.zmscore(DUE, ["1", "3"]) == [None, 300.0]
    with pytest.raises(RedisClusterException, match="same key slot"):
        claim(keys=[DUE, "{delayq:email}:inflight", RECORD + "b"], args=[250, 10, 999, 2 ** 35, 60])


def test_cluster_scan_pipeline_and_counts_cover_every_primary(cluster):
    rc = cluster_client(cluster)
    keys = [f"{{delayq-scan:q{i}}}:due" for i in range(30)]
    pipe = rc.pipeline(transaction=False)        # keys in 30 slots: one batch per node
    for i, key in enumerate(keys):
        pipe.zadd(key, {f"j{i}": i})
    assert pipe.execute() == [1] * 30
    assert len({rc.get_node_from_key(k).name for k in keys}) == 3
    assert sorted(rc.scan_iter(match="{delayq-scan:*}:*", count=5)) == sorted(keys)
    assert len(rc.keys("{delayq-scan:*}:*", target_nodes=RedisCluster.PRIMARIES)) == 30
    assert rc.delete(*keys) == 30                # multi-key DELETE is split per slot by the client


def test_cluster_master_killed_bare_client_raises_and_a_backoff_rides_over(cluster):
    rc = cluster_client(cluster)
    rc.delete(DUE, INFLIGHT)
    rc.zadd(DUE, {"7": 100})
    rc.wait(1, 1000, target_nodes=rc.get_node_from_key(DUE))   # the replica has it before the kill
    claim = rc.register_script(CLAIM)
    dead = cluster.owner(DUE)
    took: list[float] = []

    def kill() -> None:
        took.append(cluster.kill_master(DUE))
        took.append(time.monotonic() - took[0])   # the moment of the SIGKILL
    killer = threading.Thread(target=kill)
    start = time.monotonic()
    killer.start()
    with pytest.raises(redis.ConnectionError, match=f"127.0.0.1:{dead}"):
        while time.monotonic() - start < 10:
            rc.zadd(DUE, {"8": 100})              # succeeds until the SIGKILL lands, then raises at once
    with_backoff(lambda: rc.zadd(DUE, {"8": 100}))
    written = time.monotonic()
    killer.join()
    assert cluster.owner(DUE) != dead and written - took[1] < 10
    assert claim(keys=[DUE, INFLIGHT, RECORD + "c"], args=[250, 10, 999, 2 ** 35, 60]) == ["7", "8"]   # NOSCRIPT: reloaded
    print(f"cluster: promoted {took[0]:.2f} s after SIGKILL; first write on the new master at {written - took[1]:.2f} s")


def test_cluster_graceful_failover_rides_over_with_default_settings(cluster):
    key = next(f"{{delayq:q{i}}}:due" for i in range(100) if cluster.replicas_of(cluster.owner(f"{{delayq:q{i}}}:due")))
    rc = cluster_client(cluster)
    rc.delete(key)
    writer = Writer(rc, key)
    writer.start()
    time.sleep(0.2)
    old = cluster.owner(key)
    took = cluster.failover(key)
    writer.stop_after_more_writes()
    assert cluster.owner(key) != old
    assert writer.errors == [] and writer.lost() == set()   # MOVED followed; CLUSTER FAILOVER loses nothing
    print(f"cluster: CLUSTER FAILOVER done in {took:.2f} s")


def test_sentinel_url_and_master_for_reads_and_writes(sentinels):
    hosts = ",".join(f"127.0.0.1:{p}" for _, p in sentinels.sentinels)
    assert sentinels.url == f"redis+sentinel://:{PASSWORD}@{hosts}/mymaster/0"
    master = sentinel_master(sentinels)
    master.set("delayq-topology", "ok")
    assert master.get("delayq-topology") == "ok"
    assert master.connection_pool.get_master_address() == ("127.0.0.1", sentinels.master_address()[1])


def test_sentinel_password_is_not_the_node_password(sentinels):
    unauthenticated = SentinelClient(sentinels.sentinels, password=PASSWORD, socket_timeout=1)  # no sentinel_kwargs
    with pytest.raises(MasterNotFoundError, match="AuthenticationError"):   # each sentinel, passwords <REDACTED>
        unauthenticated.master_for(sentinels.master_name).ping()


def test_sentinel_failover_command_rides_over_with_no_retries(sentinels):
    master = sentinel_master(sentinels)
    master.delete("delayq-failover")
    writer = Writer(master, "delayq-failover")
    writer.start()
    time.sleep(0.2)
    old = sentinels.master_address()
    took = sentinels.failover()
    writer.stop_after_more_writes()
    assert sentinels.master_address() != old
    assert writer.errors == [] and writer.lost() == set()
    print(f"sentinel: SENTINEL FAILOVER agreed in {took:.2f} s")


def test_sentinel_master_killed_idle_connections_ride_over_a_command_in_flight_raises():
    """Retry(backoff) rides over for a connection idle at the kill: the pool reconnects through the sentinels.
    A command in flight is retried on the connection's own address, the dead master's (redis-py issue #3874),
    so it raises ConnectionError naming that address once its retries are spent; the next call finds the new
    master. With master_for's default Retry(NoBackoff(), 0), every call in the window raises."""
    backoff = Retry(ExponentialBackoff(cap=0.5, base=0.05), 10)      # sleeps 4.2 s in all: more than a failover
    with Sentinel(password=PASSWORD, sentinel_password=SENTINEL_PASSWORD) as s:
        dead = f"127.0.0.1:{s.master_address()[1]}"
        riding, bare = Writer(sentinel_master(s, retry=backoff), "riding"), Writer(sentinel_master(s), "bare")
        blocked = sentinel_master(s, retry=backoff, socket_timeout=5)
        in_flight: list[Exception] = []

        def wait_on_empty_list() -> None:
            try:
                blocked.blpop("delayq-nothing", timeout=3)
            except redis.ConnectionError as exc:
                in_flight.append(exc)
        threads = [riding, bare, threading.Thread(target=wait_on_empty_list)]
        for thread in threads:
            thread.start()
        time.sleep(0.2)
        took = s.kill_master()
        killed_at = time.monotonic() - took
        before = len(riding.acked)
        riding.stop_after_more_writes()
        bare.stop_after_more_writes()
        threads[2].join()
        assert len(riding.acked) > before and riding.lost() == set()
        assert all(dead in str(e) for e in riding.errors) and len(riding.errors) <= 1   # 0 unless one was in flight
        assert [type(e) for e in in_flight] == [redis.ConnectionError] and dead in str(in_flight[0])
        assert blocked.set("delayq-after", 1) and blocked.connection_pool.get_master_address() == s.master_address()
        assert bare.errors and {type(e) for e in bare.errors} <= {redis.ConnectionError, MasterNotFoundError}
        print(f"sentinel: promoted {took:.2f} s after SIGKILL; first write on the new master at "
              f"{riding.first_ack_after(killed_at):.2f} s")


def test_startup_failing_halfway_leaves_no_process_and_no_directory(monkeypatch):
    started: list[Cluster] = []

    def fail(self, replicas):
        started.append(self)
        raise RuntimeError("redis-cli failed")
    monkeypatch.setattr(Cluster, "_create", fail)
    with pytest.raises(RuntimeError):
        Cluster(masters=3, replicas=0)
    (c,) = started
    assert len(c.procs) == 3 and all(p.poll() is not None for p in c.procs.values())
    assert not pathlib.Path(c.dir).exists()


def test_cli_prints_the_url_and_stops_everything_on_sigterm():
    cli = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "redis_topology.py"), "sentinel"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = cli.stdout.readline().strip()
        assert url.startswith("redis+sentinel://127.0.0.1:") and url.endswith("/mymaster/0")
        port = int(url.split("//")[1].split(",")[0].split(":")[1])
        assert redis.Redis(port=port).ping()
        children = subprocess.run(["pgrep", "-P", str(cli.pid)], capture_output=True, text=True).stdout.split()
        assert len(children) == 5
        cli.send_signal(signal.SIGTERM)
        assert cli.wait(timeout=15) == 0
        assert all(not pathlib.Path(f"/proc/{pid}").exists() for pid in children)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
