"""Group commit of single enqueues (grouping.py): concurrent callers share writes, each gets its own result."""

from __future__ import annotations

import os
import threading

import pytest

from delayq.grouping import Group


class Store:
    """A write that takes a while (as a commit does): callers arriving meanwhile queue up for the next one."""

    def __init__(self, fail_on=None):
        self.writes: list[list[int]] = []
        self.gate = threading.Event()
        self.fail_on = fail_on

    def write(self, items: list[int]) -> list[str]:
        self.writes.append(list(items))
        if len(self.writes) == 1:
            self.gate.wait(5)            # the first write is held until every other caller has arrived
        if self.fail_on is not None and self.fail_on in items:
            raise ConnectionError(f"write of {items} failed")
        return [f"row-{i}" for i in items]


def run_callers(group: Group, items: list[int], store: Store, waiting: int) -> dict[int, object]:
    got: dict[int, object] = {}

    def call(i: int) -> None:
        try:
            got[i] = group.submit(i)
        except ConnectionError as exc:
            got[i] = exc

    first = threading.Thread(target=call, args=(items[0],))
    first.start()
    while not store.writes:
        threading.Event().wait(0.001)
    others = [threading.Thread(target=call, args=(i,)) for i in items[1:]]
    for t in others:
        t.start()
    while len(group._waiting) < waiting:        # every other caller queued behind the held write
        threading.Event().wait(0.001)
    store.gate.set()
    for t in [first, *others]:
        t.join(10)
    return got


def test_callers_that_arrive_during_a_write_share_the_next_one_and_each_gets_its_own_result():
    store = Store()
    group = Group(store.write)
    got = run_callers(group, list(range(10)), store, waiting=9)
    assert got == {i: f"row-{i}" for i in range(10)}
    assert store.writes[0] == [0] and sorted(store.writes[1]) == list(range(1, 10))
    assert len(store.writes) == 2                 # ten callers, two writes


def test_a_failed_write_fails_exactly_its_own_callers():
    store = Store(fail_on=0)
    group = Group(store.write)
    got = run_callers(group, list(range(6)), store, waiting=5)
    assert isinstance(got[0], ConnectionError)
    assert all(got[i] == f"row-{i}" for i in range(1, 6))          # the next group was not affected


def test_every_caller_of_a_failed_group_gets_the_error_and_no_result():
    store = Store(fail_on=3)
    group = Group(store.write)
    got = run_callers(group, list(range(6)), store, waiting=5)
    assert got[0] == "row-0"
    assert all(isinstance(got[i], ConnectionError) and "failed" in str(got[i]) for i in range(1, 6))
    assert len({id(got[i]) for i in range(1, 6)}) == 5              # each thread raised its own copy


def test_the_second_stage_overlaps_the_next_write_and_its_failure_fails_its_group():
    order: list[str] = []
    second_stage_started, next_written = threading.Event(), threading.Event()

    def write(items):
        order.append(f"write {items}")
        if items != [0]:
            next_written.set()
        return items

    def then(items, results):
        if items == [0]:
            second_stage_started.set()
            assert next_written.wait(5), "the next write waited for this stage"
            raise ConnectionError("index down")

    group = Group(write, then=then)
    got: dict[int, object] = {}

    def call(i):
        try:
            got[i] = group.submit(i)
        except ConnectionError as exc:
            got[i] = exc

    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert second_stage_started.wait(5)
    call(1)
    first.join(5)
    assert isinstance(got[0], ConnectionError) and got[1] == 1


def test_a_lone_caller_writes_at_once():
    writes = []
    group = Group(lambda items: writes.append(items) or items)
    assert [group.submit(i) for i in range(3)] == [0, 1, 2]
    assert writes == [[0], [1], [2]]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_child_forked_during_a_write_starts_with_an_empty_group():
    release, parent = threading.Event(), os.getpid()

    def write(items):
        if os.getpid() == parent:                 # the parent's write is held while the child is forked
            release.wait(5)
        return items

    group = Group(write)
    writer = threading.Thread(target=group.submit, args=(1,))
    writer.start()
    while not group._writing:
        threading.Event().wait(0.001)
    pid = os.fork()
    if pid == 0:                                  # the child: its parent's write is not its own
        code = 0 if group._writing == 0 and group.submit(7) == 7 else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    release.set()
    writer.join(5)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
