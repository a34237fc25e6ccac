"""validate.py: raw input to a valid job or one precise error (the one validation boundary)."""

import os
import time
from datetime import datetime, timedelta, timezone

import pytest

from delayq import validate
from delayq.errors import InvalidInput
from delayq.registry import Registry

NOW = 1_800_000_000.0          # 2027-01-15T08:00:00Z
REGISTRY = Registry(("examples",))


def build(**raw):
    return validate.job({"call": "examples.shop:noop", **raw}, NOW, REGISTRY)


@pytest.fixture
def shanghai():
    """The local time zone set to UTC+8, as on the users' hosts; restored after."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Shanghai"
    time.tzset()
    yield
    if before is None:
        os.environ.pop("TZ")
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_delay_makes_an_absolute_due_time():
    spec = build(delay="86400", ext="order:123")
    assert spec.due_at == NOW + 86400 and spec.ext == "order:123" and spec.queue == "default"
    assert spec.max_attempts == 16 and spec.ladder == "wechat"


@pytest.mark.parametrize("delay, seconds", [("90", 90), ("90s", 90), ("15m", 900), ("2h", 7200), ("1d", 86400),
                                            ("1.5h", 5400), (30, 30), (timedelta(days=7), 7 * 86400)])
def test_delay_accepts_units_and_timedelta(delay, seconds):
    assert build(delay=delay).due_at == NOW + seconds


def test_at_accepts_iso_with_zone_epoch_and_small_past():
    assert build(at="2027-01-15T17:00:00+08:00").due_at == NOW + 3600
    assert build(at="2027-01-15T09:00:00Z").due_at == NOW + 3600
    assert build(at=NOW - 30).due_at == NOW
    assert build(at=str(int(NOW) + 5)).due_at == NOW + 5    # epoch seconds, as the CLI passes them
    assert build(at=datetime(2027, 1, 15, 9, tzinfo=timezone.utc)).due_at == NOW + 3600


def test_a_naive_time_is_local_time(shanghai):
    # 17:00 in Shanghai is 09:00 UTC: one hour after NOW, not nine (as reading it as UTC would give)
    assert build(at="2027-01-15T17:00:00").due_at == NOW + 3600
    assert build(at=datetime(2027, 1, 15, 17)).due_at == NOW + 3600
    assert build(delay=10, deadline="2027-01-15T18:00:00").deadline == NOW + 7200


def test_deadline_is_relative_to_now_or_a_time():
    assert build(deadline=180).deadline == NOW + 180
    assert build(deadline=datetime(2027, 1, 15, 9, tzinfo=timezone.utc)).deadline == NOW + 3600
    assert build(deadline="3m").deadline == NOW + 180
    assert build(deadline="2027-01-15T09:00:00Z").deadline == NOW + 3600


def test_args_must_fit_the_functions_signature():
    spec = validate.job({"call": "examples.shop:flaky_sync", "args": {"order_id": 1}}, NOW, REGISTRY)
    assert spec.args_json == '{"order_id":1}'
    with pytest.raises(InvalidInput, match=r"args do not fit examples.shop:flaky_sync\(order_id: int.*missing a "
                                           r"required argument: 'order_id'") as err:
        validate.job({"call": "examples.shop:flaky_sync", "args": {"order": 1}}, NOW, REGISTRY)
    assert err.value.field == "args"
    with pytest.raises(InvalidInput, match="unexpected keyword argument 'x'"):
        build(args={"x": 1})


def test_a_fit_is_remembered_for_its_names_only():
    """Binding is checked once per callable and set of names: the same names fit again (as text or a dict),
    other names are checked afresh, and a refusal is never remembered as a fit."""
    call = "examples.shop:flaky_sync"
    for _ in range(2):
        validate.job({"call": call, "args": {"order_id": 1}}, NOW, REGISTRY)
        validate.job({"call": call, "args": '{"order_id": 2}'}, NOW, REGISTRY)
        for wrong in ({"order_id": 1, "x": 2}, {}, '{"order": 1}'):
            with pytest.raises(InvalidInput, match="args do not fit"):
                validate.job({"call": call, "args": wrong}, NOW, REGISTRY)


def test_each_step_of_a_multi_step_job_must_fit():
    good = {"call": "examples.shop:SendGift", "args": {"path": "/tmp/x", "star_failures": 1}}
    assert validate.job(good, NOW, REGISTRY).call == "examples.shop:SendGift"
    with pytest.raises(InvalidInput, match="SendGift step add_week_star.*unexpected keyword argument 'user_id'"):
        validate.job({**good, "args": {"path": "/tmp/x", "user_id": 1}}, NOW, REGISTRY)


@pytest.mark.parametrize("raw, field, message", [
    ({"args": "{bad json"}, "args", "not valid JSON"),
    ({"args": "[1, 2]"}, "args", "must be a JSON object"),
    ({"call": "examples.shop.noop"}, "call", "not of the form"),
    ({"call": "os:system; rm -rf /"}, "call", "not of the form"),
    ({"call": "examples.__init__:noop"}, "call", "dunder"),
    ({"delay": -1}, "delay", "between 0 s and 100 years"),
    ({"delay": "soon"}, "delay", "not a duration"),
    ({"delay": "nan"}, "delay", "not a duration"),
    ({"delay": 1e20}, "delay", "between"),
    ({"delay": "5w"}, "delay", "not a duration"),
    ({"at": NOW - 3600}, "at", "in the past"),
    ({"at": "tomorrow"}, "at", "ISO-8601"),
    ({"at": "9999-12-31T23:59:59-12:00"}, "at", "out of range"),
    ({"delay": 1, "at": NOW}, "at", "not both"),
    ({"deadline": 0}, "deadline", "not after the job's first due time"),
    ({"delay": 3600, "deadline": 60}, "deadline", "not after the job's first due time"),
    ({"delay": 3600, "deadline": "2027-01-15T08:30:00Z"}, "deadline", "not after"),
    ({"ext": "x" * 192}, "ext", "at most 191"),
    ({"ext": "order:1\n"}, "ext", "control characters"),
    ({"ext": "order:\udc80"}, "ext", "not valid UTF-8"),
    ({"ladder": "weekly"}, "ladder", "unknown ladder"),
    ({"ladder": "1e400"}, "ladder", "not a duration"),
    ({"ladder": "400d"}, "ladder", "between 0 and 366 days"),
    ({"ladder": "15,-5"}, "ladder", "between 0 and 366 days"),
    ({"unique": True}, "unique", "unique needs ext"),
    ({"queue": "a b"}, "queue", "queue"),
    ({"priority": "high"}, "priority", "integer"),
    ({"max_attempts": 0}, "max_attempts", "from 1 to 10000"),
    ({"max_attempts": 1e9}, "max_attempts", "from 1 to 10000"),
    ({"lease": 0.5}, "lease", "between 1 s and 7 days"),
    ({"timeout": "8d"}, "timeout", "between 1 s and 7 days"),
    ({"colour": "red"}, None, "unknown key"),
    ({"args": {"blob": "x" * 70_000}}, "args", "at most 65535"),
    ({"args": {"k": "\ud800"}}, "args", "lone surrogate"),
    ({"delay": 10 ** 400}, "delay", "between 0 s and 100 years"),
    ({"at": 10 ** 400}, "at", "out of range"),
    ({"priority": 10 ** 5000}, "priority", "too large to print"),
    ({"deadline": datetime(1960, 1, 1, tzinfo=timezone.utc)}, "deadline", "out of range"),
    ({"ladder": ",".join(["15"] * 100)}, "ladder", "at most 255"),
    ({"ladder": [15] * 100}, "ladder", "at most 255"),
    ({"colour\nred": 1}, None, r"unknown key\(s\) 'colour\\nred'"),
])
def test_bad_input_is_refused_naming_the_field(raw, field, message):
    with pytest.raises(InvalidInput, match=message) as err:
        build(**raw)
    assert err.value.field == field


def test_deep_nesting_is_refused_without_a_recursion_error():
    deep = nested = {}
    for _ in range(5000):
        nested["a"] = {}
        nested = nested["a"]
    with pytest.raises(InvalidInput, match="nested more than 64 deep"):
        build(args=deep)
    with pytest.raises(InvalidInput, match="nested more than 64 deep"):
        build(args='{"a":' * 5000 + "1" + "}" * 5000)


def test_args_are_stored_as_canonical_json():
    spec = build(call="examples.shop:record", args={"tag": 1, "path": "订单"})
    assert spec.args_json == '{"tag":1,"path":"订单"}'


def test_a_ladder_may_be_a_list_of_steps():
    spec = build(ladder=[15, "30s", timedelta(minutes=3)])
    assert spec.ladder == "15.0,30.0,180.0" and spec.max_attempts == 4


def test_queue_defaults_are_checked_like_enqueue():
    checked = validate.queue_defaults({"sms": {"ladder": "15,30", "max_attempts": 4, "timeout": "30s"}})
    assert checked == {"sms": {"ladder": "15,30", "max_attempts": 4, "timeout": 30.0}}
    with pytest.raises(InvalidInput, match=r"DELAYQ_QUEUES\['sms'\].max_attempts must be an integer"):
        validate.queue_defaults({"sms": {"max_attempts": 1e9}})
    spec = validate.job({"call": "examples.shop:noop", "queue": "sms"}, NOW, REGISTRY, checked)
    assert (spec.ladder, spec.max_attempts, spec.timeout) == ("15,30", 4, 30.0)


def test_a_jobs_own_time_limit_sits_between_the_flag_and_the_queue():
    queues = {"default": {"timeout": 10.0}}
    assert validate.job({"call": "examples.shop:slow", "args": {"path": "x"}}, NOW, REGISTRY, queues).timeout == 120
    assert validate.job({"call": "examples.shop:slow", "args": {"path": "x"}, "timeout": "5s"}, NOW, REGISTRY,
                        queues).timeout == 5
    assert validate.job({"call": "examples.shop:noop"}, NOW, REGISTRY, queues).timeout == 10


def test_deeper_than_counts_brackets_outside_strings_without_parsing():
    from delayq.validate import deeper_than
    assert deeper_than("[" * 5000 + "]" * 5000, 64) and not deeper_than("[" * 64 + "]" * 64, 64)
    assert not deeper_than('{"a": "' + "[" * 500 + '"}', 64)               # brackets inside a string
    assert not deeper_than('{"a": "\\"' + "{" * 500 + '"}', 64)            # after an escaped quote, still a string
    assert deeper_than('{"a": ' + '{"b": ' * 70 + "1" + "}" * 71, 64)
    assert not deeper_than("[" + "[1]," * 200 + "[]]", 64)
