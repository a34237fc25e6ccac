"""The ledger: what a worker writes survives the worker's death at any instant (a real fork, a real SIGKILL)."""

import os
import signal
import time

from delayq.runner.ledger import ENDED, QUEUED, RUNNING, STOP, Ledger


def test_a_killed_writer_leaves_each_job_as_it_was_at_the_kill():
    ledger = Ledger(8, 2)
    pid = os.fork()
    if pid == 0:                                   # the worker: claims 3, starts 2, ends 1, then dies mid-run
        a, b, _c = ledger.take(11), ledger.take(12), ledger.take(13)
        ledger.start(a, 0, 100.0, 30.0, 4242, 0xBEEF)
        ledger.end(a, "ok", 1000.0, 1001.0, None)
        ledger.idle(0)
        ledger.start(b, 1, 101.0, 5.0, 4243, 0xCAFE)
        ledger.blame(b)
        os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)
    known = ledger.known()
    assert {i: k.state for i, k in known.items()} == {11: ENDED, 12: RUNNING, 13: QUEUED}
    assert (known[11].kind, known[11].finished) == ("ok", 1001.0)
    assert (known[12].limit, known[12].tid, known[12].ident) == (5.0, 4243, 0xCAFE)
    assert ledger.culprit() == known[12].slot
    assert [k.job_id for k in ledger.running()] == [12]
    assert ledger.held() == 3


def test_an_abandoned_job_s_late_result_is_dropped_and_orders_cross_the_fork():
    ledger = Ledger(4, 1)
    slot = ledger.take(7)
    ledger.start(slot, 0, time.monotonic(), 1.0, 1, 1)
    assert ledger.abandon(slot, 7) and not ledger.abandon(slot, 8)
    assert ledger.end(slot, "ok", 1.0, 2.0, None) is False          # the supervisor records it as timed out
    assert ledger.known()[7].abandoned
    pid = os.fork()
    if pid == 0:                          # the child sees an order written after the fork: shared, not copied
        end = time.monotonic() + 10
        while ledger.order != STOP and time.monotonic() < end:
            time.sleep(0.001)
        os._exit(0 if ledger.order == STOP else 1)
    ledger.order = STOP
    _, status = os.waitpid(pid, 0)
    ledger.fail("MySQL at h timed out", 1)
    assert ledger.fatal() == "MySQL at h timed out"
    ledger.free(slot)
    assert ledger.known() == {} and ledger.held() == 0 and ledger.available() == 4
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
