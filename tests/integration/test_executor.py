"""The worker-process executor, driven directly: what it hands back and what it reports when asked to stop."""

from __future__ import annotations

import time

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
