"""DELAYQ_REDIS_URL forms (index/redis_client.py) and the failover retry, without a server."""

from __future__ import annotations

import pytest
import redis

from delayq import config
from delayq.errors import ConfigError
from delayq.index.redis_client import CLUSTER, SENTINEL, SERVER, Failover, RedisUrlError, connect, parse


def test_sentinel_form_names_hosts_master_db_and_keeps_both_passwords_out_of_sight():
    t = parse("redis+sentinel://:n%40de@10.0.0.1:26379,10.0.0.2/orders/3?sentinel_password=s3nt")
    assert (t.form, t.tls, t.hosts, t.master, t.db) == (SENTINEL, False, (("10.0.0.1", 26379), ("10.0.0.2", 26379)),
                                                        "orders", 3)
    assert t.password == "n@de" and t.options["sentinel_password"] == "s3nt"
    assert t.describe() == "redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/orders/3"
    assert "n@de" not in repr(t) and "s3nt" not in repr(t)


def test_cluster_form_with_tls_and_ipv6():
    t = parse("rediss+cluster://app:pw@[::1]:7000,node2:7001?ssl_cert_reqs=none")
    assert (t.form, t.tls, t.hosts, t.username) == (CLUSTER, True, (("::1", 7000), ("node2", 7001)), "app")
    assert t.describe() == "rediss+cluster://[::1]:7000,node2:7001"


def test_one_server_forms_are_redis_pys_own():
    assert parse("redis://:pw@h:6380/2").form == SERVER
    assert parse("rediss://h/0").tls and parse("unix:///run/redis.sock?db=1").form == SERVER
    assert parse("redis://:pw@h:6380/2").describe() == "redis://h:6380/2"


@pytest.mark.parametrize("url, says", [
    ("redis+sentinel://:secret@h1,h2", "needs the master's name"),
    ("redis+cluster://:secret@h1:7000/0", "has a path"),
    ("redis+cluster://:secret@h1:99999", "not a port number"),
    ("redis+cluster://:secret@h1:7000,,h2", "cannot read"),
    ("redis+cluster://:secret@h1?password=x", "unknown option"),
    ("redis+sentinel://:secret@h1/m/zero", "must be a number"),
    ("rediss+cluster://:secret@h1?ssl_cert_reqs=maybe", "ssl_cert_reqs"),
    ("redis+memcache://:secret@h1", "not a supported form"),
    ("http://:secret@h1", "not a supported form"),
])
def test_a_bad_url_is_one_line_naming_the_form_never_the_password(url, says):
    with pytest.raises(RedisUrlError, match=says) as err:
        parse(url)
    with pytest.raises(ConfigError) as bad:
        config.Config(redis_url=url)
    for text in (str(err.value), str(bad.value)):
        assert "secret" not in text and "\n" not in text
    assert str(bad.value).startswith("DELAYQ_REDIS_URL ")


def test_config_accepts_every_form_and_a_failover_wait():
    for url in ("redis://h:6379/0", "redis+sentinel://h:26379/m/0", "rediss+cluster://h:7000"):
        assert config.Config(redis_url=url).redis_url == url
    assert config.load({"DELAYQ_REDIS_FAILOVER_WAIT": "12.5"}, None).redis_failover_wait == 12.5
    with pytest.raises(ConfigError, match="0 to 600"):
        config.load({"DELAYQ_REDIS_FAILOVER_WAIT": "-1"}, None)


def test_clients_are_redis_pys_own_with_the_timeouts_given():
    server = connect(parse("redis://:pw@127.0.0.1:1/0"), socket_timeout=2.5, connect_timeout=1.5)
    kwargs = server.connection_pool.connection_kwargs
    assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"], kwargs["password"]) == (2.5, 1.5, "pw")
    master = connect(parse("rediss+sentinel://:pw@127.0.0.1:1/orders/2?sentinel_password=sp"))
    pool = master.connection_pool
    assert (pool.service_name, pool.connection_kwargs["db"], pool.connection_kwargs["password"]) == ("orders", 2, "pw")
    assert pool.connection_class.__name__ == "SentinelManagedSSLConnection"
    sentinel = pool.sentinel_manager.sentinels[0].connection_pool.connection_kwargs
    assert (sentinel["password"], sentinel["socket_timeout"]) == ("sp", 10.0)
    with pytest.raises(redis.ConnectionError, match="127.0.0.1:1"):   # RedisCluster asks its nodes at once
        connect(parse("redis+cluster://127.0.0.1:1"), connect_timeout=0.5)


class Flaky:
    def __init__(self, failures, exc=redis.ConnectionError("Error 111 connecting to 10.0.0.1:6379")):
        self.failures, self.exc, self.calls = failures, exc, 0

    def __call__(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.exc
        return "ok"


def test_failover_retries_with_a_growing_backoff_then_reports_recovery():
    slept, recovered = [], []
    f = Failover(30, recovered.append, sleep=slept.append)
    assert f.call(Flaky(6)) == "ok"
    assert len(slept) == 6 and slept[0] < 0.07 and slept[-1] > slept[0] * 8 and max(slept) <= 1.25
    assert len(recovered) == 1 and f.retried == 1


def test_failover_gives_up_after_its_wait_and_never_retries_bad_credentials():
    with pytest.raises(redis.ConnectionError):
        Failover(0.0, sleep=lambda s: None).call(Flaky(1))
    auth = Flaky(5, redis.AuthenticationError("invalid password"))
    with pytest.raises(redis.AuthenticationError):
        Failover(30, sleep=lambda s: None).call(auth)
    assert auth.calls == 1
    bug = Flaky(5, redis.ResponseError("WRONGTYPE"))
    with pytest.raises(redis.ResponseError):
        Failover(30, sleep=lambda s: None).call(bug)
    assert bug.calls == 1
