import pytest

from delayq import jobs
from delayq.errors import InvalidInput

NOW = 1_800_000_000.0


def build(**raw):
    return jobs.build({"call": "examples.shop:noop", **raw}, NOW)


def test_delay_makes_an_absolute_due_time():
    spec = build(delay="86400", ext="order:123")
    assert spec.due_at == NOW + 86400 and spec.ext == "order:123" and spec.queue == "default"
    assert spec.max_attempts == 16 and spec.ladder == "wechat"


def test_at_accepts_iso_with_zone_and_small_past():
    assert build(at="2027-01-15T17:00:00+08:00").due_at == NOW + 3600   # NOW is 08:00 UTC
    assert build(at="2027-01-15T09:00:00Z").due_at == NOW + 3600
    assert build(at=NOW - 30).due_at == NOW
    assert build(at=str(int(NOW) + 5)).due_at == NOW + 5    # epoch seconds, as the CLI passes them


def test_deadline_is_relative_to_now():
    assert build(deadline=180).deadline == NOW + 180


@pytest.mark.parametrize("raw, message", [
    ({"args": "{bad json"}, "not valid JSON"),
    ({"args": "[1, 2]"}, "must be a JSON object"),
    ({"call": "examples.shop.noop"}, "not of the form"),
    ({"call": "os:system; rm -rf /"}, "not of the form"),
    ({"delay": -1}, ">= 0"),
    ({"delay": "soon"}, "number of seconds"),
    ({"delay": "nan"}, "finite"),
    ({"at": NOW - 3600}, "in the past"),
    ({"at": "tomorrow"}, "ISO-8601"),
    ({"delay": 1, "at": NOW}, "not both"),
    ({"ext": "x" * 192}, "at most 191"),
    ({"ext": "order:1\n"}, "control characters"),
    ({"ladder": "weekly"}, "unknown ladder"),
    ({"unique": True}, "unique needs ext"),
    ({"queue": "a b"}, "queue"),
    ({"priority": "high"}, "integer"),
    ({"max_attempts": 0}, "between 1"),
    ({"colour": "red"}, "unknown key"),
    ({"args": {"blob": "x" * 70_000}}, "at most 65535"),
])
def test_bad_input_is_refused_with_a_clear_message(raw, message):
    with pytest.raises(InvalidInput, match=message):
        build(**raw)


def test_args_are_stored_as_canonical_json():
    assert build(args={"b": 1, "a": "订单"}).args_json == '{"b":1,"a":"订单"}'
