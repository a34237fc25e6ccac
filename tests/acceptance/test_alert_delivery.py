"""bin/compensate.py with alert settings and receivers as an operator meets them: subprocesses, real servers."""

from __future__ import annotations

import json

import pytest

from tests.helpers import script
from tests.hostile_http import Receiver

SECRET_PATH = "/hook/tok-secret-42"


@pytest.mark.parametrize("setting, value", [
    ("DELAYQ_ALERT_WEBHOOK", "http://[::1" + SECRET_PATH),
    ("DELAYQ_ALERT_WEBHOOK", "http://host:99999" + SECRET_PATH),
    ("DELAYQ_ALERT_WEBHOOK", "http://" + SECRET_PATH),
    ("DELAYQ_ALERT_WEBHOOK", "http://user:pw-secret@host:port" + SECRET_PATH),
    ("DELAYQ_ALERT_TIMEOUT", "ten"),
    ("DELAYQ_ALERT_TIMEOUT", "0"),
    ("DELAYQ_ALERT_TIMEOUT", "600"),
])
@pytest.mark.parametrize("world", ["sqlite"], indirect=True)
def test_a_bad_alert_setting_is_one_line_and_exit_2(world, setting, value):
    env = dict(world.env(), DELAYQ_ALERT_WEBHOOK="https://hooks.example.com" + SECRET_PATH)
    env[setting] = value
    done = script(env, "compensate.py", check=2)
    assert done.stderr.startswith(f"compensate.py: error: {setting} ") and done.stderr.count("\n") == 1
    assert "tok-secret" not in done.stderr and "pw-secret" not in done.stderr and "internal error" not in done.stderr


def test_a_trickling_receiver_costs_compensate_its_deadline_and_the_next_run_delivers(world):
    slow, good = Receiver("trickle", SECRET_PATH), Receiver("ok", SECRET_PATH)
    try:
        env = dict(world.env(), DELAYQ_ALERT_TIMEOUT="1")
        script(env, "enqueue_delayed.py", "--call", "examples.shop:refund_rejected", "--args", '{"order_id": 1}',
               check=0)
        script(env, "run_due.py", check=0)
        first = script(env, "compensate.py", "--json", check=0, DELAYQ_ALERT_WEBHOOK=slow.url)
        summary = json.loads(first.stdout)
        assert summary["alerted"] == 0 and 1.0 <= summary["seconds"] < 2.0
        assert f"alert to {slow.host} not delivered: no complete answer within 1 s" in first.stderr
        assert "tok-secret" not in first.stderr + first.stdout
        second = script(env, "compensate.py", "--json", DELAYQ_ALERT_WEBHOOK=good.url)
        assert json.loads(second.stdout)["alerted"] == 1 and second.stderr == ""
        assert slow.keys == good.keys and len(good.keys) == 1       # the same digest, the same key
    finally:
        slow.close()
        good.close()
