"""Issue 21, invariant 8: every Redis URL option is either taken or refused, through the real scripts.

An option delayq refuses (or one no form takes) ends every command with exit 2 and one line that names it and
says why, before anything connects: never "internal error: TypeError ... unexpected keyword argument" from deep
inside redis-py, nor a client decoding replies to str that fails later on every rebuild. The options it takes
reach a real server and work, on one server and through a Sentinel set: a client name, a health check and
keepalive, and over TLS the CA, the certificate check and the host name check.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import ROOT, new_prefix, require
from tests.helpers import command, script

NOOP = ["--call", "examples.shop:noop"]
COMMANDS = [["enqueue_delayed.py", *NOOP], ["compensate.py"], ["compensate.py", "--rebuild", "now"], ["stats.py"],
            ["run_due.py"], ["list.py"], ["delayq", "stats"], ["delayq", "enqueue", *NOOP]]
REFUSED = [
    # the three: each was an internal error, or accepted and then broken for good
    ("redis://:hunter2@127.0.0.1:6379/0?ssl_cert_reqs=required", "option ssl_cert_reqs is for TLS: use the rediss"),
    ("redis://:hunter2@127.0.0.1:6379/0?ssl=true", "option ssl is not taken: use the rediss scheme for TLS"),
    ("redis://:hunter2@127.0.0.1:6379/0?decode_responses=1", "option decode_responses is not taken"),
    ("redis://:hunter2@127.0.0.1:6379/0?retry_on_timeout=true", "delayq retries itself"),
    ("redis://:hunter2@127.0.0.1:6379/0?max_connections=4", "option max_connections is not taken"),
    ("rediss://:hunter2@127.0.0.1:6379/0?ssl_ca_certs=/no/such/ca.pem", "option ssl_ca_certs must name a file"),
    ("redis+cluster://:hunter2@127.0.0.1:7000?health_check_interval=5", "not taken by redis+cluster://"),
    ("redis+sentinel://:hunter2@127.0.0.1:26379/mymaster/0?decode_responses=yes", "option decode_responses"),
]


def environment(tmp_path, redis_url: str) -> dict[str, str]:
    env = dict(os.environ, DELAYQ_DATABASE_URL=f"sqlite:///{tmp_path}/delayq.db", DELAYQ_PREFIX=new_prefix(),
               DELAYQ_ALLOWED_MODULES="examples", DELAYQ_REDIS_URL=redis_url, PYTHONPATH=ROOT)
    for name in ("DELAYQ_REDIS_TIMEOUT", "DELAYQ_REDIS_FAILOVER_WAIT", "DELAYQ_DEBUG"):
        env.pop(name, None)
    return env


@pytest.mark.parametrize("url, says", REFUSED, ids=[url.split("?")[1].split("=")[0] for url, _ in REFUSED])
def test_a_refused_option_exits_2_with_one_line_from_every_command(tmp_path, url, says):
    env = environment(tmp_path, url)
    procs = [subprocess.Popen(command(*argv), env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for argv in COMMANDS]
    for argv, proc in zip(COMMANDS, procs):
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2, (argv, out, err)
        assert err.count("\n") == 1 and err.split(": error: ", 1)[1].startswith("DELAYQ_REDIS_URL "), (argv, err)
        assert says in err and "Traceback" not in err and "internal error" not in err, (argv, err)
        assert "hunter2" not in err and out == "", (argv, out, err)
    assert not (tmp_path / "delayq.db").exists()          # refused before anything was opened
    helped = script(env, "run_due.py", "--help")     # help needs no settings
    assert helped.returncode == 0 and helped.stdout.startswith("usage: run_due.py") and helped.stderr == ""


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_options_taken_work_on_one_server_and_on_a_sentinel_set(tmp_path, tls):
    """client_name, health_check_interval and socket_keepalive, and over TLS (a server that serves TLS alone, with a
    self-signed CA for 127.0.0.1) ssl_ca_certs, ssl_cert_reqs=required and ssl_check_hostname: on the master as one
    server and through its Sentinel set, the scripts run from enqueue to the rebuild (which a client decoding
    replies to str broke for good), and the server sees the client's name. Over TLS, the same URL with the plain
    scheme is refused before it connects."""
    from delayq.index.redis import RedisIndex
    from scripts.redis_topology import Sentinel

    require("topology")
    topology = Sentinel(replicas=0, sentinels=1, password="url-pw", tls=tls)
    try:
        options = "client_name=delayq-url-test&health_check_interval=5&socket_keepalive=true"
        if tls:
            options += f"&ssl_ca_certs={topology.ca}&ssl_cert_reqs=required&ssl_check_hostname=true"
        server = f"{'rediss' if tls else 'redis'}://:url-pw@127.0.0.1:{topology.master_port}/0?{options}"
        sentinel = topology.url.split("?")[0] + "?" + options
        for url in (server, sentinel):
            env = environment(tmp_path, url)
            for argv in (["migrate.py"], COMMANDS[0], COMMANDS[2], COMMANDS[3]):
                done = script(env, *argv)
                assert done.returncode == 0 and "error" not in done.stderr, (url, argv, done.stdout, done.stderr)
            index = RedisIndex(url, env["DELAYQ_PREFIX"], None)
            assert index.sizes() == 1 and index.r.client_getname() in ("delayq-url-test", b"delayq-url-test")
            index.close()
        if tls:
            plain = script(environment(tmp_path, server.replace("rediss://", "redis://")), *COMMANDS[0])
            assert plain.returncode == 2 and "is for TLS: use the rediss scheme" in plain.stderr, plain.stderr
            assert "url-pw" not in plain.stderr
    finally:
        topology.stop()
