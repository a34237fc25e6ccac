"""bin/compensate.py with alert settings and receivers as an operator meets them: subprocesses, real servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from delayq.clock import SystemClock
from tests.conftest import ROOT, make_backend
from tests.hostile_http import Receiver

BIN = os.path.join(ROOT, "bin")
SECRET_PATH = "/hook/tok-secret-42"


def make_world(kind, tmp_path):
    return make_backend(kind, tmp_path, SystemClock())


@pytest.fixture
def sqlite_world(tmp_path):
    backend = make_world("sqlite", tmp_path)
    yield backend
    backend.cleanup()


@pytest.fixture(params=["sqlite", "mysql+redis", "mysql"])
def world(request, tmp_path):
    backend = make_world(request.param, tmp_path)
    yield backend
    backend.cleanup()


def script(env, name, *args):
    return subprocess.run([sys.executable, os.path.join(BIN, name), *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("setting, value", [
    ("DELAYQ_ALERT_WEBHOOK", "http://[::1" + SECRET_PATH),
    ("DELAYQ_ALERT_WEBHOOK", "http://host:99999" + SECRET_PATH),
    ("DELAYQ_ALERT_WEBHOOK", "http://" + SECRET_PATH),
    ("DELAYQ_ALERT_WEBHOOK", "http://user:pw-secret@host:port" + SECRET_PATH),
    ("DELAYQ_ALERT_TIMEOUT", "ten"),
    ("DELAYQ_ALERT_TIMEOUT", "0"),
    ("DELAYQ_ALERT_TIMEOUT", "600"),
])
def test_a_bad_alert_setting_is_one_line_and_exit_2(sqlite_world, setting, value):
    env = dict(sqlite_world.env(), DELAYQ_ALERT_WEBHOOK="https://hooks.example.com" + SECRET_PATH)
    env[setting] = value
    done = script(env, "compensate.py")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"compensate.py: error: {setting} ") and done.stderr.count("\n") == 1
    assert "tok-secret" not in done.stderr and "pw-secret" not in done.stderr and "internal error" not in done.stderr


def test_a_trickling_receiver_costs_compensate_its_deadline_and_the_next_run_delivers(world):
    slow, good = Receiver("trickle", SECRET_PATH), Receiver("ok", SECRET_PATH)
    try:
        env = dict(world.env(), DELAYQ_ALERT_TIMEOUT="1")
        assert script(env, "enqueue_delayed.py", "--call", "examples.shop:refund_rejected", "--args",
                      '{"order_id": 1}').returncode == 0
        assert script(env, "run_due.py").returncode == 0
        first = script(dict(env, DELAYQ_ALERT_WEBHOOK=slow.url), "compensate.py", "--json")
        assert first.returncode == 0, first.stderr
        summary = json.loads(first.stdout)
        assert summary["alerted"] == 0 and 1.0 <= summary["seconds"] < 2.0
        assert f"alert to {slow.host} not delivered: no complete answer within 1 s" in first.stderr
        assert "tok-secret" not in first.stderr + first.stdout
        second = script(dict(env, DELAYQ_ALERT_WEBHOOK=good.url), "compensate.py", "--json")
        assert json.loads(second.stdout)["alerted"] == 1 and second.stderr == ""
        assert slow.keys == good.keys and len(good.keys) == 1       # the same digest, the same key
    finally:
        slow.close()
        good.close()
