"""Recurring schedules through the manager on every backend, on the fake clock: what a runner's ticks enqueue
(scheduler.Scheduler), after downtime, with overlap, paused, and as `delayq schedules` reads them."""

from __future__ import annotations

from delayq import scheduler
from delayq.cron import Every, zone
from delayq.schedules import Schedule
from tests.helpers import drain

EVERY_MINUTE = Schedule("tick", "examples.shop:noop", Every(60), zone("UTC"))


def slots_taken(backend, name="tick") -> list[str]:
    return [row[0] for row in backend.sql("SELECT ext FROM {jobs} WHERE ext LIKE ? ORDER BY id", f"schedule:{name}:%")]


def test_after_ten_minutes_down_one_slot_runs_by_default_and_nine_are_counted_missed(backend, q, clock):
    clock.advance(60 - clock.now() % 60)                       # on a minute
    ticks = scheduler.Scheduler(q, {"tick": EVERY_MINUTE})
    assert ticks.tick() == 0                                  # first seen: its slots count from now
    clock.advance(61)
    assert ticks.tick() == 1 and drain(q) == 1
    clock.advance(600)                                        # ten minutes without a runner
    assert ticks.tick() == 1 and (ticks.missed, ticks.skipped) == (9, 0)
    [row] = [r for r in scheduler.status(q, {"tick": EVERY_MINUTE}) if r["name"] == "tick"]
    assert (row["ran"], row["missed"], row["skipped"], row["last_status"]) == (2, 9, 0, "pending")
    assert len(slots_taken(backend)) == 2


def test_two_runners_ticking_the_same_slots_enqueue_each_once(backend, q, clock):
    clock.advance(60 - clock.now() % 60)
    overlapping = Schedule("tick", "examples.shop:noop", Every(60), zone("UTC"), overlap=True)
    first, second = scheduler.Scheduler(q, {"tick": overlapping}), scheduler.Scheduler(backend.manager(), {"tick": overlapping})
    first.tick(), second.tick()
    for _ in range(5):
        clock.advance(60)
        assert first.tick() + second.tick() == 1
    assert len(set(slots_taken(backend))) == len(slots_taken(backend)) == 5


def test_a_paused_schedule_enqueues_nothing_until_resumed_and_its_paused_slots_do_not_catch_up(backend, q, clock):
    clock.advance(60 - clock.now() % 60)
    ticks = scheduler.Scheduler(q, {"tick": EVERY_MINUTE})
    ticks.tick()
    assert scheduler.pause(q, {"tick": EVERY_MINUTE}, "tick") and not scheduler.pause(q, {"tick": EVERY_MINUTE}, "tick")
    clock.advance(300)
    assert ticks.tick() == 0
    assert scheduler.resume(q, {"tick": EVERY_MINUTE}, "tick")
    assert ticks.tick() == 0                                  # the slots that passed while paused: none
    clock.advance(60)
    assert ticks.tick() == 1 and ticks.missed == 0


def test_a_schedule_whose_job_is_refused_is_logged_once_and_takes_no_slot(backend, q, clock, caplog):
    refused = Schedule("bad", "os:system", Every(60), zone("UTC"))
    ticks = scheduler.Scheduler(q, {"bad": refused})
    clock.advance(60 - clock.now() % 60)
    ticks.tick()
    for _ in range(3):
        clock.advance(60)
        assert ticks.tick() == 0
    assert sum("its job is refused" in r.getMessage() for r in caplog.records) == 1
    assert slots_taken(backend, "bad") == []
