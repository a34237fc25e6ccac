"""Pull mode (seed 002) on every backend, and the seed's own list of flaws, each shown not to happen here."""

from __future__ import annotations

import threading

import pytest

from delayq.errors import InvalidInput, NotFound
from delayq.pull import Queue


def run_together(target, count: int = 4) -> None:
    """`count` threads at once, each with its own connections: like `count` processes."""
    threads = [threading.Thread(target=target) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.fixture
def tube(q):
    return Queue(q, ttr=30)


def test_put_reserve_delete(tube, clock):
    first = tube.put("sms", {"to": "+86 138", "text": "hi"})
    later = tube.put("sms", "plain text", delay=10)
    msg = tube.reserve("sms")
    assert (msg.id, msg.data, msg.reserves) == (first, {"to": "+86 138", "text": "hi"}, 1)
    assert tube.reserve("sms") is None                      # the other is not due yet
    tube.delete(msg)
    assert tube.m.store.get(first).status == "succeeded"
    got = tube.reserve("sms", timeout=15)                   # waits (on the injected clock) until it is due
    assert got.id == later and got.data == "plain text"
    assert tube.tubes() == ["sms"] and [j["id"] for j in tube.jobs("sms")] == [later]


def test_release_bury_kick(tube, clock):
    job = tube.put("email", [1, 2, 3])
    msg = tube.reserve("email")
    tube.release(msg, delay=60)
    assert tube.reserve("email") is None
    clock.advance(60)
    msg = tube.reserve("email")
    assert msg.reserves == 2
    tube.bury(msg, "template missing")
    assert tube.reserve("email") is None
    assert tube.m.store.get(job).last_error == "buried: template missing"
    assert tube.kick("email", 5) == 1
    assert tube.reserve("email").id == job
    assert [a.outcome for a in tube.m.reports.attempts(job)] == ["released", "buried"]


def test_flaw_reserve_race_two_consumers_never_get_the_same_message(backend, clock):
    producer = Queue(backend.manager())
    ids = {producer.put("race", {"n": i}) for i in range(200)}
    got: list[int] = []
    lock = threading.Lock()

    def consume():
        consumer = Queue(backend.manager())               # its own connections, like another process
        while (msg := consumer.reserve("race")) is not None:
            with lock:
                got.append(msg.id)
            consumer.delete(msg)

    run_together(consume)
    assert sorted(got) == sorted(ids)                       # each message exactly once


def test_flaw_a_consumer_that_dies_loses_nothing(tube, clock):
    job = tube.put("orders", {"order_id": 7}, ttr=20)
    tube.reserve("orders")                                  # ...and the consumer is killed here
    assert tube.reserve("orders") is None                   # reserved: nobody else gets it yet
    clock.advance(21)                                       # its TTR ran out
    msg = tube.reserve("orders")
    assert (msg.id, msg.data, msg.reserves) == (job, {"order_id": 7}, 2)
    tube.delete(msg)


def test_a_late_consumer_cannot_delete_what_it_no_longer_holds(tube, clock):
    tube.put("orders", {"order_id": 8}, ttr=20)
    slow = tube.reserve("orders")
    clock.advance(21)
    fast = tube.reserve("orders")
    with pytest.raises(NotFound, match="reservation was lost"):
        tube.delete(slow)
    tube.delete(fast)


def test_flaw_ids_are_never_reused(backend, clock):
    tube = Queue(backend.manager())
    a, b = tube.put("ids", 1), tube.put("ids", 2)
    tube.delete(tube.reserve("ids"))
    c = tube.put("ids", 3)                                  # a list length would give 2 again here
    assert len({a, b, c}) == 3 and c > b
    made: list[int] = []
    lock = threading.Lock()

    def produce():
        mine = Queue(backend.manager())
        for i in range(50):
            job = mine.put("ids", i)
            with lock:
                made.append(job)

    run_together(produce)
    assert len(set(made)) == 200 and not set(made) & {a, b, c}


def test_bad_messages_are_refused(tube):
    with pytest.raises(InvalidInput):
        tube.put("sms", {"x": float("nan")})
    with pytest.raises(InvalidInput):
        tube.put("bad tube", 1)
    with pytest.raises(InvalidInput):
        tube.put("sms", "x" * 70_000)
