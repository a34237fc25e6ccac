"""The worker-process executor, driven directly: what it hands back and what it reports when asked to stop."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from delayq.runner.processes import ProcessExecutor

NOOP = "examples.shop:noop"


@pytest.fixture
def executor(q):
    ex = ProcessExecutor(q, 1, 4, lambda job: 30.0)
    yield ex
    ex.close()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)     # the executor never touches the store
def test_results_that_arrive_while_stop_waits_for_the_workers_answer_are_kept(q, executor):
    for _ in range(10):
        q.enqueue(NOOP)
    jobs = q.claim(["default"], 10)
    executor.submit(jobs)
    end = time.monotonic() + 10
    while executor.events.qsize() == 0 and time.monotonic() < end:   # results sent, not yet polled
        time.sleep(0.005)
    assert executor.events.qsize() > 0
    handed = executor.stop()               # its first poll reads those results before the worker's answer
    got = {r.job_id for r in executor.poll(0)}
    while len(got) + len(handed) < len(jobs) and time.monotonic() < end:
        got |= {r.job_id for r in executor.poll(0.05)}
    assert got | {j.id for j in handed} == {j.id for j in jobs} and not got & {j.id for j in handed}


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_successes_not_yet_sent_when_a_job_kills_the_worker_are_kept(q, tmp_path):
    """A thread moves on from a success without waiting for its send: a death right after must not lose it."""
    log = tmp_path / "effects.log"
    executor = ProcessExecutor(q, 1, 1, lambda job: 30.0)        # one thread: the killer runs after the five
    for round_ in range(4):
        ids = [q.enqueue("examples.shop:record", {"path": str(log), "tag": f"r{round_}"}).id for _ in range(5)]
        killer = q.enqueue("examples.shop:die", {"path": str(log)}).id
        jobs = q.claim(["default"], 10)
        assert {j.id for j in jobs} == set(ids) | {killer}
        one = executor.active()[0]
        one.give(sorted(jobs, key=lambda j: j.id))             # the five successes, then the killer, in one worker
        results, end = {}, time.monotonic() + 20
        while len(results) < 6 and time.monotonic() < end:
            results.update({r.job_id: r for r in executor.poll(0.05)})
        assert {i: results[i].kind for i in ids} == {i: "ok" for i in ids}
        assert results[killer].kind == "crashed"
        assert all(results[i].finished >= results[i].started > 0 for i in ids)
    executor.close()
    runs = Counter(tag for tag, *_ in (line.split() for line in open(log)))
    assert runs.pop("die") == 4 and runs == Counter({f"r{i}": 5 for i in range(4)})   # no success ran again
