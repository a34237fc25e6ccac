"""Cron expressions and intervals (cron.py): fields, cron's day rule, and daylight-saving time as Debian's
cron(8) has it, in Europe/Berlin and America/New_York; and what one look at a schedule does (schedules.plan)."""

from datetime import datetime, timezone
from itertools import islice

import pytest

from delayq.cron import Cron, Every, zone
from delayq.errors import InvalidInput
from delayq.schedules import ON_TIME, Schedule, State, plan

UTC = timezone.utc
BERLIN, NEW_YORK = zone("Europe/Berlin"), zone("America/New_York")


def at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def slots(expr: str, after: str, tz, n: int) -> list[str]:
    return [datetime.fromtimestamp(s, tz).isoformat() for s in islice(Cron.parse(expr).after(at(after), tz), n)]


# -- the fields ----------------------------------------------------------------------------------
def test_fields_ranges_lists_steps_names_and_macros():
    c = Cron.parse("*/15 9-17/4 * jan,jul mon-fri")
    assert c.minutes == (0, 15, 30, 45) and c.hours == (9, 13, 17)
    assert c.months == {1, 7} and c.weekdays == {1, 2, 3, 4, 5}
    assert Cron.parse("0 0 * * 7").weekdays == {0} == Cron.parse("0 0 * * sun").weekdays
    daily, midnight, hourly = Cron.parse("@daily"), Cron.parse("@midnight"), Cron.parse("@hourly")
    assert (daily.minutes, daily.hours, daily.fixed) == (midnight.minutes, midnight.hours, True) == ((0,), (0,), True)
    assert hourly.hours == tuple(range(24)) and not hourly.fixed       # '*' in its hour field: a wildcard
    assert Cron.parse("5/20 * * * *").minutes == (5, 25, 45)


@pytest.mark.parametrize("expr, says", [
    ("* * * *", "5 fields"), ("61 * * * *", "minute '61' is not 0-59"), ("* 24 * * *", "hour '24'"),
    ("*/0 * * * *", "step"), ("5-1 * * * *", "out of order"), ("0 0 30 2 *", "never runs"),
    ("0 0 * foo *", "month 'foo'"), ("0 0 * * 8", "day of week '8'"), ("@reboot", "5 fields"), ("a b c d e", "minute"),
])
def test_a_bad_expression_is_one_clear_error(expr, says):
    with pytest.raises(InvalidInput, match=says):
        Cron.parse(expr)


def test_a_day_matching_either_restricted_day_field_runs_as_in_cron():
    # "0 0 13 * fri": the 13th of every month, and every Friday (cron ORs the two day fields when both are set)
    got = slots("0 0 13 * fri", "2026-11-01T00:00:00+00:00", UTC, 4)
    assert got == ["2026-11-06T00:00:00+00:00", "2026-11-13T00:00:00+00:00", "2026-11-20T00:00:00+00:00",
                   "2026-11-27T00:00:00+00:00"]
    assert slots("0 0 * * fri", "2026-11-01T00:00:00+00:00", UTC, 1) == ["2026-11-06T00:00:00+00:00"]
    assert slots("0 0 29 2 *", "2026-01-01T00:00:00+00:00", UTC, 1) == ["2028-02-29T00:00:00+00:00"]


def test_slots_are_strictly_after_the_time_given_and_in_a_zone():
    assert slots("0 3 * * *", "2026-11-26T02:00:00+00:00", BERLIN, 2) == ["2026-11-27T03:00:00+01:00",
                                                                          "2026-11-28T03:00:00+01:00"]
    assert slots("0 3 * * *", "2026-11-27T02:00:00+00:00", BERLIN, 1) == ["2026-11-28T03:00:00+01:00"]


# -- daylight-saving time ------------------------------------------------------------------------
def test_berlin_spring_forward_a_fixed_time_in_the_skipped_hour_runs_once_at_the_change():
    # 2026-03-29: 02:00 CET -> 03:00 CEST. 02:30 does not exist: it runs at 03:00 CEST, soon after the change.
    assert slots("30 2 * * *", "2026-03-28T12:00:00+00:00", BERLIN, 2) == [
        "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]
    # two fixed slots in the gap, and one at the change itself: once, not three times
    assert slots("0,30 2 * * *", "2026-03-28T12:00:00+00:00", BERLIN, 2) == [
        "2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00"]


def test_berlin_spring_forward_a_wildcard_schedule_skips_the_hour_that_did_not_happen():
    assert slots("*/30 * * * *", "2026-03-29T00:00:00+00:00", BERLIN, 4) == [
        "2026-03-29T01:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00",
        "2026-03-29T04:00:00+02:00"]


def test_berlin_fall_back_a_fixed_time_in_the_repeated_hour_runs_once_a_wildcard_twice():
    # 2026-10-25: 03:00 CEST -> 02:00 CET; 02:30 happens twice
    assert slots("30 2 * * *", "2026-10-24T12:00:00+00:00", BERLIN, 2) == [
        "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]
    assert slots("30 * * * *", "2026-10-24T23:00:00+00:00", BERLIN, 4) == [
        "2026-10-25T01:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00",
        "2026-10-25T03:30:00+01:00"]


def test_new_york_spring_forward_and_fall_back():
    # 2026-03-08: 02:00 EST -> 03:00 EDT; 2026-11-01: 02:00 EDT -> 01:00 EST (01:30 happens twice)
    assert slots("30 2 * * *", "2026-03-07T12:00:00+00:00", NEW_YORK, 2) == [
        "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"]
    assert slots("30 1 * * *", "2026-10-31T12:00:00+00:00", NEW_YORK, 2) == [
        "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"]
    assert slots("30 * * * *", "2026-11-01T04:00:00+00:00", NEW_YORK, 3) == [
        "2026-11-01T00:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00"]


def test_an_interval_counts_on_the_utc_clock_and_knows_no_daylight_saving_time():
    every = Every(3600)
    got = list(islice(every.after(at("2026-10-24T23:10:00+00:00")), 3))
    assert [datetime.fromtimestamp(s, BERLIN).isoformat() for s in got] == [
        "2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00"]


def test_an_unknown_zone_is_one_clear_error():
    with pytest.raises(InvalidInput, match="not a time zone"):
        zone("Mars/Olympus")


# -- one look at a schedule (schedules.plan) --------------------------------------------------
T = 1_800_000_000     # a multiple of 60: a slot of an every-minute schedule


def minutely(**kw) -> Schedule:
    return Schedule("m", "examples.shop:noop", Every(60), zone("UTC"), **kw)


def test_on_time_the_one_due_slot_runs():
    assert plan(minutely(), State(T), T + 61).run == (T + 60,)
    assert plan(minutely(), State(T), T + 59).run == ()


def test_after_ten_minutes_down_the_latest_slot_runs_by_default_and_the_rest_are_missed():
    decided = plan(minutely(), State(T), T + 600 + 5)
    assert decided.run == (T + 600,) and decided.missed == 9 and decided.last_slot == T + 600


def test_catch_up_none_runs_no_missed_slot_but_one_just_due():
    assert plan(minutely(catch_up="none"), State(T), T + 605).run == (T + 600,)    # 5 s old: simply due
    hourly = Schedule("h", "examples.shop:noop", Every(3600), zone("UTC"), catch_up="none")
    decided = plan(hourly, State(T), T + 3 * 3600 + ON_TIME + 1)     # down three hours: its newest slot is stale too
    assert decided.run == () and decided.missed == 3


def test_catch_up_all_runs_each_missed_slot_up_to_its_limit():
    decided = plan(minutely(catch_up="all", catch_up_limit=3), State(T), T + 605)
    assert decided.run == (T + 480, T + 540, T + 600) and decided.missed == 7


def test_no_overlap_skips_while_the_previous_job_is_pending_or_running():
    for status in ("pending", "running"):
        decided = plan(minutely(), State(T, 7, status), T + 61)
        assert decided.run == () and decided.skipped == 1 and decided.last_slot == T + 60
    assert plan(minutely(), State(T, 7, "failed"), T + 61).run == (T + 60,)
    assert plan(minutely(overlap=True), State(T, 7, "running"), T + 61).run == (T + 60,)


def test_a_look_a_few_seconds_late_runs_every_slot_it_finds_on_time_with_overlap_and_the_newest_without():
    every_second = Schedule("s", "examples.shop:noop", Every(1), zone("UTC"), overlap=True)
    assert plan(every_second, State(T), T + 3.5).run == (T + 1, T + 2, T + 3)
    decided = plan(minutely(), State(T), T + 125)             # two minutes on time (ON_TIME = 10 s: only one)
    assert decided.run == (T + 120,) and decided.missed == 1
    decided = plan(Schedule("s", "examples.shop:noop", Every(1), zone("UTC")), State(T), T + 3.5)
    assert decided.run == (T + 3,) and decided.skipped == 2 and decided.missed == 0


def test_each_due_slot_is_run_skipped_or_missed_exactly_once():
    for catch_up in ("latest", "none", "all"):
        for overlap in (False, True):
            for status in (None, "running", "succeeded"):
                for now in (T + 1, T + 61, T + 605, T + 7 * 3600 + 3):
                    s = minutely(catch_up=catch_up, overlap=overlap, catch_up_limit=4)
                    decided = plan(s, State(T, 1, status), now)
                    due = (int(now) - T) // 60
                    assert len(decided.run) + decided.skipped + decided.missed == due, (catch_up, overlap, status, now)


def test_a_paused_schedule_moves_on_without_jobs_or_counts():
    decided = plan(minutely(), State(T, paused=True), T + 605)
    assert (decided.run, decided.skipped, decided.missed, decided.last_slot) == ((), 0, 0, T + 600)


def test_a_day_field_starting_with_a_star_is_unrestricted_as_in_cron():
    # "0 0 */2 * 1": cron(8) reads a day-of-month starting with '*' as unrestricted: odd days AND Mondays
    assert slots("0 0 */2 * 1", "2026-11-01T00:00:00+00:00", UTC, 2) == ["2026-11-09T00:00:00+00:00",
                                                                          "2026-11-23T00:00:00+00:00"]
    assert Cron.parse("0,*/30 3 * * *").fixed and not Cron.parse("*/30 3 * * *").fixed    # the first character


def test_a_monthly_schedule_down_longer_than_the_look_back_moves_on_instead_of_looking_again_each_tick():
    from delayq.schedules import LOOK_BACK
    monthly = Schedule("mo", "examples.shop:noop", Cron.parse("@monthly"), zone("UTC"))
    down_since, now = at("2026-01-01T00:00:00+00:00"), at("2026-02-20T00:00:00+00:00")
    decided = plan(monthly, State(down_since), now)
    assert decided.run == () and decided.last_slot == now - LOOK_BACK
    assert monthly.next_slot(decided.last_slot) > now                # its next look: March 1st, not now
