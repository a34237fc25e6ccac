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


class Interrupted(Exception):
    """What a signal handler raises in the main thread (as KeyboardInterrupt would), in a test."""


def test_an_interrupted_waiting_caller_withdraws_its_item_and_the_group_goes_on():
    import signal

    store = Store()
    group = Group(store.write)
    first = threading.Thread(target=group.submit, args=(1,))
    first.start()
    while not store.writes:
        threading.Event().wait(0.001)

    def interrupt(*_):
        raise Interrupted()

    before = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Interrupted):
            group.submit(2)                       # waits behind the held write, then is interrupted
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    got = {}
    later = threading.Thread(target=lambda: got.setdefault(3, group.submit(3)))
    later.start()
    while len(group._waiting) < 1:
        threading.Event().wait(0.001)
    store.gate.set()
    first.join(5)
    later.join(5)
    assert got == {3: "row-3"} and store.writes == [[1], [3]]      # 2 was withdrawn; nothing hangs
    assert group._writing == 0 and group._waiting == []


def test_a_batch_handed_to_a_caller_that_is_interrupted_goes_to_the_next_one():
    from delayq.grouping import _Slot

    group = Group(lambda items: items)
    slots = [_Slot(2), _Slot(3)]
    group._writing, group._waiting = 1, list(slots)          # one write under way, two callers waiting
    group._release()                                         # it ends: the oldest is handed both items
    assert slots[0].batch == slots and slots[0].wake.is_set()
    group._abandon(slots[0])                                 # ... and is interrupted before it writes
    assert slots[1].batch == [slots[1]] and slots[1].wake.is_set() and group._writing == 1


def test_the_writers_interrupt_is_its_own_and_the_others_learn_their_write_was_cut_short():
    from delayq.errors import BackendError

    store = Store()
    gate_passed = threading.Event()

    def write(items):
        if len(store.writes) == 0:
            store.writes.append(items)
            store.gate.wait(5)
            return [f"row-{i}" for i in items]
        gate_passed.set()
        raise KeyboardInterrupt                    # the writer of the second group is interrupted

    group = Group(write)
    got: dict[int, object] = {}

    def call(i):
        try:
            got[i] = group.submit(i)
        except BaseException as exc:
            got[i] = exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    threads[0].start()
    while not store.writes:
        threading.Event().wait(0.001)
    for t in threads[1:]:
        t.start()
    while len(group._waiting) < 3:
        threading.Event().wait(0.001)
    store.gate.set()
    for t in threads:
        t.join(5)
    assert got[0] == "row-0"
    kinds = sorted(type(got[i]).__name__ for i in (1, 2, 3))
    assert kinds == ["BackendError", "BackendError", "KeyboardInterrupt"]
    assert all("interrupted (KeyboardInterrupt)" in str(got[i]) for i in (1, 2, 3) if isinstance(got[i], BackendError))


def test_a_write_that_returns_too_few_results_fails_its_callers():
    group = Group(lambda items: items[:-1])
    with pytest.raises(RuntimeError, match="returned 0 results for 1 items"):
        group.submit(1)
    with pytest.raises(ValueError):
        Group(lambda items: items, writers=0)
