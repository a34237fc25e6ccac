"""DELAYQ_REDIS_URL forms and query options (index/redis_client.py) and the failover retry, without a server.

Issue 21, invariant 8: every query option is either taken (and reaches redis-py's client as it should) or refused
with one line that says why and lists what the form takes: never a TypeError or an AttributeError later on.
"""

from __future__ import annotations

import pytest
import redis

from delayq import config
from delayq.errors import ConfigError
from delayq.index.redis_client import Failover, _Bounded, connect
from delayq.redis_urls import CLUSTER, SENTINEL, SERVER, RedisUrlError, parse


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
    ("redis+cluster://:secret@h1?password=x", "password is not taken: give it before the host"),
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


REFUSED = [
    # the three: a TLS option on a plain URL, redis-py's ssl flag, replies decoded to str
    ("redis://:secret@h:6379/0?ssl_cert_reqs=required", "option ssl_cert_reqs is for TLS: use the rediss scheme"),
    ("redis://:secret@h:6379/0?ssl=true", "option ssl is not taken: use the rediss scheme"),
    ("rediss://:secret@h:6379/0?ssl=false", "option ssl is not taken: use the rediss scheme"),
    ("redis://:secret@h:6379/0?decode_responses=1", "option decode_responses is not taken: delayq reads replies as bytes"),
    ("redis://:secret@h:6379/0?encoding=latin-1", "option encoding is not taken"),
    ("redis://:secret@h:6379/0?timeout=5", "set DELAYQ_REDIS_TIMEOUT instead"),
    ("redis://:secret@h:6379/0?retry_on_timeout=yes", "delayq retries itself, for DELAYQ_REDIS_FAILOVER_WAIT"),
    ("redis://:secret@h:6379/0?protocol=3", "delayq reads RESP2 replies"),
    ("redis://:secret@h:6379/0?max_connections=5", "each thread of a runner needs a connection"),
    ("redis://h:6379/0?password=secret", "option password is not taken: give it before the host"),
    ("redis://:secret@h:6379/0?lib_name=x", "unknown option 'lib_name'"),
    ("redis://:secret@h:6379/0?db=1&db=2", "option db is given twice"),
    ("redis://:secret@h:6379/0?client_name=", "option client_name has no value"),
    ("redis://:secret@h:6379/0?client_name=two%20words", "option client_name must be 1 to 64 printable"),
    ("redis://:secret@h:6379/0?health_check_interval=-1", "option health_check_interval must be a whole number of seconds, 0 to 3600, not '-1'"),
    ("redis://:secret@h:6379/0?socket_keepalive=maybe", "option socket_keepalive must be true or false"),
    ("rediss://:secret@h:6379/0?ssl_cert_reqs=maybe", "option ssl_cert_reqs must be required, optional or none"),
    ("rediss://:secret@h:6379/0?ssl_ca_certs=/no/such/ca.pem", "option ssl_ca_certs must name a file, not '/no/such/ca.pem'"),
    ("rediss://:secret@h:6379/0?ssl_ca_path=/no/such/dir", "option ssl_ca_path must name a directory"),
    ("unix://:secret@/run/redis.sock?socket_keepalive=true", "option socket_keepalive is not taken by unix://"),
    ("redis+cluster://:secret@h1:7000?health_check_interval=5", "not taken by redis+cluster://"),
    ("redis+cluster://:secret@h1:7000?sentinel_password=x", "option sentinel_password is not taken by redis+cluster"),
    ("redis+cluster://:secret@h1:7000?db=0", "option db is not taken: a cluster has one database"),
    ("redis+sentinel://:secret@h1/m/0?db=3", "option db is not taken: the db follows the master's name"),
    ("redis+sentinel://:secret@h1/m/0?ssl_ca_certs=/etc/hosts", "is for TLS: use the rediss scheme"),
    ("redis+sentinel://:secret@h1/m/0?decode_responses=true", "delayq reads replies as bytes"),
]


@pytest.mark.parametrize("url, says", REFUSED, ids=[f"{url.split(':')[0]}-{url.split('?')[1][:40]}" for url, _ in REFUSED])
def test_every_refused_option_is_one_line_saying_why_and_what_the_form_takes(url, says):
    with pytest.raises(ConfigError) as refused:
        config.Config(redis_url=url)
    text = str(refused.value)
    assert says in text and text.startswith("DELAYQ_REDIS_URL ") and "\n" not in text, text
    assert "secret" not in text and "password=x" not in text


@pytest.mark.parametrize("url, takes", [
    ("redis://h/0?foo=1", "db, client_name, health_check_interval, socket_keepalive"),
    ("rediss://h/0?foo=1", ("db, client_name, health_check_interval, socket_keepalive, ssl_ca_certs, ssl_ca_path, "
                            "ssl_cert_reqs, ssl_check_hostname, ssl_certfile, ssl_keyfile")),
    ("unix:///run/redis.sock?foo=1", "db, client_name, health_check_interval"),
    ("redis+sentinel://h/m/0?foo=1", ("sentinel_password, sentinel_username, client_name, health_check_interval, "
                                      "socket_keepalive")),
    ("redis+cluster://h?foo=1", "client_name, socket_keepalive"),
])
def test_an_option_not_taken_is_answered_with_the_options_the_form_takes(url, takes):
    with pytest.raises(RedisUrlError) as refused:
        parse(url)
    assert str(refused.value).endswith(f"unknown option 'foo'; the options it takes: {takes}"), str(refused.value)


def test_options_taken_reach_redis_pys_client_of_one_server(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("not read until a connection is made")
    url = (f"rediss://:pw@127.0.0.1:1/3?client_name=delayq-shop&health_check_interval=15&socket_keepalive=no"
           f"&ssl_cert_reqs=none&ssl_check_hostname=false&ssl_ca_certs={ca}")
    config.Config(redis_url=url)
    pool = connect(parse(url), socket_timeout=2.5, connect_timeout=1.5).connection_pool
    kwargs = pool.connection_kwargs
    assert (kwargs["client_name"], kwargs["health_check_interval"], kwargs["socket_keepalive"], kwargs["db"]) == \
        ("delayq-shop", 15, False, 3)
    assert (kwargs["ssl_cert_reqs"], kwargs["ssl_check_hostname"], kwargs["ssl_ca_certs"]) == ("none", False, str(ca))
    assert issubclass(pool.connection_class, redis.SSLConnection) and issubclass(pool.connection_class, _Bounded)
    unix = connect(parse("unix://:pw@/run/redis.sock?db=2&client_name=x")).connection_pool
    assert issubclass(unix.connection_class, redis.UnixDomainSocketConnection) and unix.connection_kwargs["db"] == 2


def test_options_taken_reach_the_master_and_the_sentinels(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("not read until a connection is made")
    url = (f"rediss+sentinel://:pw@127.0.0.1:1/orders/2?sentinel_password=sp&client_name=shop&socket_keepalive=yes"
           f"&health_check_interval=5&ssl_ca_certs={ca}&ssl_check_hostname=false")
    master = connect(parse(url)).connection_pool
    kwargs = master.connection_kwargs
    assert (kwargs["client_name"], kwargs["socket_keepalive"], kwargs["health_check_interval"]) == ("shop", True, 5)
    assert (kwargs["ssl_ca_certs"], kwargs["ssl_check_hostname"], kwargs["ssl_cert_reqs"]) == (str(ca), False, "required")
    assert issubclass(master.connection_class, _Bounded)
    sentinel = master.sentinel_manager.sentinels[0].connection_pool
    assert sentinel.connection_kwargs["ssl_ca_certs"] == str(ca) and sentinel.connection_kwargs["client_name"] is None
    assert issubclass(sentinel.connection_class, redis.SSLConnection) and issubclass(sentinel.connection_class, _Bounded)


def test_clients_are_redis_pys_own_with_the_timeouts_given():
    server = connect(parse("redis://:pw@127.0.0.1:1/0"), socket_timeout=2.5, connect_timeout=1.5)
    kwargs = server.connection_pool.connection_kwargs
    assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"], kwargs["password"]) == (2.5, 1.5, "pw")
    master = connect(parse("rediss+sentinel://:pw@127.0.0.1:1/orders/2?sentinel_password=sp"))
    pool = master.connection_pool
    assert (pool.service_name, pool.connection_kwargs["db"], pool.connection_kwargs["password"]) == ("orders", 2, "pw")
    assert pool.connection_class.__name__ == "SentinelManagedSSLConnection" and issubclass(pool.connection_class, _Bounded)
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


def test_a_call_inside_another_keeps_the_outer_bound_and_makes_no_retry_past_it():
    """The client made on first use is a call inside the call that needs it: its retries stop at the outer call's
    bound (here none is left: a single server's call with no failover wait), whatever its own wait."""
    slept = []
    inner = Failover(30, sleep=slept.append)
    flaky = Flaky(1)
    with pytest.raises(redis.ConnectionError):
        Failover(0.0, sleep=slept.append, timeout=0.0).call(lambda: inner.call(flaky))
    assert flaky.calls == 1 and slept == []
    assert inner.call(Flaky(1)) == "ok"          # on its own, its 30 s ride over the same failure
