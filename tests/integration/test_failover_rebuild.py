"""A master killed before its replica had a write it acknowledged: the due entry of a job the store says is
pending is gone from the promoted replica, which keeps the rebuild marker it copied. The next compensate, a
fresh process that never saw the failover, rebuilds the index at once (the marker names the masters it was
written under, index/lua/marker.lua) rather than --rebuild-every (10 minutes) later.

Found by the long fault check at 90273a2 (docs/RELIABILITY.md): a retried job's due entry lost right after a
kill_master, in the Sentinel and Cluster worlds, the job stuck until the periodic rebuild."""

from __future__ import annotations

import json

import pytest

from delayq.clock import SystemClock
from scripts.redis_topology import Cluster, Sentinel
from tests.conftest import make_backend
from tests.helpers import script


@pytest.fixture(params=["sentinel", "cluster"])
def world(request, tmp_path):
    topology = Sentinel() if request.param == "sentinel" else Cluster(masters=3, replicas=1)
    backend = make_backend("mysql", tmp_path, SystemClock())
    backend.redis_url = topology.url
    try:
        yield topology, backend
    finally:
        backend.cleanup()
        topology.stop()


def compensate(backend) -> dict:
    return json.loads(script(backend, "compensate.py", "--json", check=0).stdout)


def test_a_due_entry_lost_with_a_killed_master_is_restored_by_the_next_compensate(world, tmp_path):
    topology, backend = world
    q = backend.manager()
    job = q.enqueue("examples.shop:charge", {"path": str(tmp_path / "effects"), "fail": True}).id
    assert json.loads(script(backend, "run_due.py", "--json", check=0).stdout)["failed"] == 1
    assert compensate(backend)["scanned"] == 0      # the marker, written under the first master(s); the job looked at
    due_key = q.index.keys("default")[0]
    if isinstance(topology, Sentinel):
        master = topology.master_address()[1]
        assert topology.admin(master).wait(1, 5000) == 1     # the marker copied to the replica
    else:
        master = topology.owner(due_key)

    def retry_on_the_master_only() -> None:
        q.retry(job_id=job)             # the row pending again, committed; its due entry on the master only
        assert topology.admin(master).zscore(due_key, str(job)) is not None

    if isinstance(topology, Sentinel):
        topology.kill_master(lagging=retry_on_the_master_only)
    else:
        topology.kill_master(due_key, lagging=retry_on_the_master_only)
    q.close()
    fresh = backend.manager()
    assert fresh.index.r.zscore(due_key, str(job)) is None          # lost with the master: the job is stuck
    assert backend.sql("SELECT status FROM {jobs}") == [("pending",)]
    assert compensate(backend)["restored"] == 1                     # found at once, not 600 s later
    assert fresh.index.r.zscore(due_key, str(job)) is not None
    assert json.loads(script(backend, "run_due.py", "--json", check=0).stdout)["failed"] == 1   # it ran again
    assert compensate(backend)["scanned"] == 0                      # the new master's marker: no second rebuild
