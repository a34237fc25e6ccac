"""Scale-out on the Redis that production runs: several runner processes on the private Cluster and
Sentinel set (tests/conftest.py starts them once a session), and what a bad URL or password looks like."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter

import pytest

from delayq.clock import SystemClock
from tests.conftest import ROOT, SENTINEL_PASSWORD, TOPOLOGY_PASSWORD, make_backend
from tests.helpers import command, script, until

QUEUES = [f"q{i}" for i in range(6)]


@pytest.fixture(params=["mysql+cluster"])
def cluster(request, tmp_path):
    backend = make_backend(request.param, tmp_path, SystemClock())
    yield backend
    backend.cleanup()


def runner(backend, *args) -> subprocess.Popen:
    return subprocess.Popen(command("run_due.py", *args), env=backend.env(), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_3000_jobs_over_6_queues_on_the_cluster_with_2_runners_each_run_once(cluster, tmp_path):
    log = tmp_path / "effects.log"
    q = cluster.manager()
    slots = {q.index.r.get_node_from_key(q.index.keys(queue)[0]).name for queue in QUEUES}
    assert len(slots) == 3                                   # the six queues live on all three masters
    q.enqueue_many({"call": "examples.shop:record", "args": {"path": str(log), "tag": "run"},
                    "queue": QUEUES[i % 6], "delay": 1} for i in range(3000))
    runners = [runner(cluster, "--for", "120", "--queue", ",".join(QUEUES), "--batch", "100", "--interval", "0.1",
                      "--quiet", "--json") for _ in range(2)]
    try:
        until(lambda: cluster.sql("SELECT COUNT(*) FROM {jobs} WHERE status <> 'succeeded'")[0][0] == 0, timeout=120,
              every=0.2)
    finally:
        for r in runners:
            r.send_signal(signal.SIGTERM)
        outs = [r.communicate(timeout=60) for r in runners]
    assert [r.returncode for r in runners] == [0, 0], outs
    runs = Counter(int(line.split()[1]) for line in log.read_text().splitlines())
    assert len(runs) == 3000 and set(runs.values()) == {1}
    claimed = [int(out.split('"claimed": ')[1].split(",")[0]) for out, _ in outs]
    assert sum(claimed) == 3000 and min(claimed) > 0, claimed          # both runners took a share
    assert q.index.sizes() == 0


@pytest.mark.parametrize("kind", ["mysql+cluster", "mysql+sentinel"])
def test_a_wrong_password_exits_1_with_one_line_naming_the_form_and_host(kind, tmp_path):
    backend = make_backend(kind, tmp_path, SystemClock())
    try:
        env = backend.env()
        env["DELAYQ_REDIS_URL"] = env["DELAYQ_REDIS_URL"].replace(TOPOLOGY_PASSWORD, "not-" + TOPOLOGY_PASSWORD)
        if kind == "mysql+sentinel":   # the sentinels' own password wrong as well
            env["DELAYQ_REDIS_URL"] = env["DELAYQ_REDIS_URL"].replace(SENTINEL_PASSWORD, "nope-" + SENTINEL_PASSWORD)
        started = time.monotonic()
        done = script(env, "run_due.py", timeout=60)
        assert done.returncode == 1 and time.monotonic() - started < 10      # no waiting: a password is not a failover
        line = done.stderr.strip()
        form = "redis+cluster://" if kind == "mysql+cluster" else "redis+sentinel://"
        assert line.count("\n") == 0 and form + "127.0.0.1:" in line and "Traceback" not in line, line
        assert TOPOLOGY_PASSWORD not in line and SENTINEL_PASSWORD not in line
    finally:
        backend.cleanup()


def test_a_bad_url_form_exits_2_naming_it():
    env = dict(os.environ, DELAYQ_REDIS_URL="redis+cluster://:hunter2@10.0.0.1:7000/3", PYTHONPATH=ROOT)
    done = script(env, "run_due.py", timeout=60)
    assert done.returncode == 2 and "redis+cluster://10.0.0.1:7000" in done.stderr and "hunter2" not in done.stderr


@pytest.mark.parametrize("kind", ["cluster", "sentinel"])
def test_tls_forms_claim_count_and_scan_over_tls_only_servers(kind, tmp_path):
    """rediss+cluster:// and rediss+sentinel:// against servers that listen on TLS alone (self-signed CA)."""
    from delayq.errors import BackendError
    from delayq.index.redis import RedisIndex
    from delayq.jobs import JobSpec
    from scripts.redis_topology import Cluster, Sentinel

    topology = Cluster(masters=3, replicas=0, password="tls-pw", tls=True) if kind == "cluster" else \
        Sentinel(replicas=0, sentinels=1, password="tls-pw", tls=True)
    try:
        assert topology.url.startswith(f"rediss+{kind}://")
        backend = make_backend("mysql", tmp_path, SystemClock())
        try:
            q = backend.manager(redis_url=topology.url)
            store, index = q.store, q.index
            rows = store.insert_jobs([JobSpec("examples.shop:noop", "{}", 1.0, queue=f"q{i}") for i in range(6)], 1.0)
            index.add([(r.id, f"q{i}", 1.0, 0) for i, r in enumerate(rows)])
            assert index.sizes() == 6 and len(list(index.members())) == 6
            assert sorted(j.id for j in index.claim(QUEUES, 2.0, 10, "tls-token", 60)) == [r.id for r in rows]
            plain = topology.url.replace("rediss+", "redis+").split("?")[0]     # plain text to a TLS port
            with pytest.raises(BackendError, match=f"redis\\+{kind}://127.0.0.1:") as failed:
                RedisIndex(plain, backend.prefix, store, socket_timeout=1, connect_timeout=1, failover_wait=0).sizes()
            assert "tls-pw" not in str(failed.value)
        finally:
            backend.cleanup()
    finally:
        topology.stop()


def test_redis_down_longer_than_the_failover_wait_exits_1_then_the_next_run_carries_on(cluster):
    """No node answers for longer than DELAYQ_REDIS_FAILOVER_WAIT: the runner retried, then exits 1 with one line
    naming the form and the host; the next cron run, with the cluster back, runs the job."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    q = cluster.manager()
    job = q.enqueue("examples.shop:noop")
    env = dict(cluster.env(), DELAYQ_REDIS_URL=f"redis+cluster://:pw@127.0.0.1:{dead}", DELAYQ_REDIS_FAILOVER_WAIT="1.5")
    started = time.monotonic()
    down = script(env, "run_due.py", timeout=60)
    waited = time.monotonic() - started
    assert down.returncode == 1 and down.stderr.count("\n") == 1, down.stderr
    assert f"Redis at redis+cluster://127.0.0.1:{dead} is unreachable" in down.stderr and ":pw@" not in down.stderr
    assert 1.5 <= waited < 15
    again = script(cluster, "run_due.py", "--json", timeout=60)
    assert again.returncode == 0 and q.reports.get(job.id).status == "succeeded", again.stderr
