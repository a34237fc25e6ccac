"""Alert delivery against real local receivers that misbehave: trickle, redirect, answer late, echo the URL.

Every receiver is a real HTTP (or TCP) server on a free loopback port (tests/hostile_http.py);
requests is not mocked. "Another host" means another host:port: the second receiver
listens on 127.0.0.1 too, on its own port. Deliveries use a 1.5 s deadline to keep the
suite short; MARGIN is what the deadline may be overrun by (the worker's wind-down).
"""

from __future__ import annotations

import logging
import re
import threading
import time

import pytest

from delayq.alerts import Alerter
from tests.helpers import run, until
from tests.hostile_http import Receiver, TlsTrickler

FAIL = "examples.shop:refund_rejected"
DEADLINE = 1.5
MARGIN = 1.0
SECRETS = ("secret-token", "hook", "elsewhere")


@pytest.fixture
def receivers():
    made = []

    def make(mode="ok", path="/hook/secret-token-123"):
        made.append(Receiver(mode, path))
        return made[-1]

    yield make
    for r in made:
        r.close()


def fail_jobs(q, n=1, start=0):
    for i in range(start, start + n):
        q.enqueue(FAIL, {"order_id": i}, ext=f"order:{i}")
    run(q, batch=100)


def timed_send(q, alerter):
    started = time.monotonic()
    sent = q.control.send_alerts(alerter)
    return sent, time.monotonic() - started


def no_worker_left():
    return not any(t.name == "delayq-webhook" for t in threading.enumerate())


def warnings_of(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "delayq.alerts" and r.levelno == logging.WARNING]


def cut_at_the_deadline(q, server) -> None:
    """An alert to a receiver that trickles: each read succeeds, so only a total deadline ends it; the connection is
    shut at the deadline (the server sees the hang-up), no worker is left, and the jobs wait for the next run."""
    fail_jobs(q, 3)
    started = time.monotonic()
    sent, took = timed_send(q, Alerter(server.url, "json", timeout=DEADLINE))
    assert sent == 0
    assert DEADLINE <= took < DEADLINE + MARGIN
    assert until(lambda: server.hung_up_at, timeout=MARGIN, every=0.01) - started < DEADLINE + MARGIN
    until(no_worker_left, timeout=MARGIN, every=0.01)
    assert len(q.store.alerts_due(10)) == 3            # still flagged: the next run sends them


def test_a_trickling_receiver_holds_the_run_no_longer_than_the_deadline(q, receivers):
    """1 byte/s in the status line, on every backend; then a good receiver gets the three."""
    cut_at_the_deadline(q, receivers("trickle"))
    good = receivers("ok")
    assert q.control.send_alerts(Alerter(good.url, "json")) == 3
    assert q.store.alerts_due(10) == []


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)     # the transport, not the store, is tested
@pytest.mark.parametrize("mode", ["trickle_body", "tls"])
def test_a_trickle_in_the_body_or_the_tls_handshake_is_cut_at_the_deadline_too(q, receivers, mode):
    server = TlsTrickler() if mode == "tls" else receivers(mode)
    try:
        cut_at_the_deadline(q, server)
    finally:
        if mode == "tls":
            server.close()


@pytest.mark.parametrize("status", [307, 302])
def test_a_redirect_to_another_host_is_not_followed_and_not_delivered(q, receivers, caplog, status):
    fail_jobs(q)
    other = receivers("ok", path="/elsewhere/secret-token-456")
    first = receivers("redirect")
    first.redirect_status, first.redirect_to = status, other.url
    caplog.set_level(logging.WARNING, logger="delayq.alerts")
    assert q.control.send_alerts(Alerter(first.url, "json")) == 0
    assert other.requests == []                        # nothing re-posted (307) or re-sent as a GET (302)
    assert len(first.requests) == 1
    [warning] = warnings_of(caplog)
    assert first.host in warning and other.host in warning and f"HTTP {status} redirect" in warning
    assert not any(s in warning for s in SECRETS)
    assert len(q.store.alerts_due(10)) == 1


def test_a_redirect_to_the_same_host_is_not_followed_either(q, receivers, caplog):
    fail_jobs(q)
    server = receivers("redirect")
    server.redirect_to = "/hook/moved-secret-token"
    caplog.set_level(logging.WARNING, logger="delayq.alerts")
    assert q.control.send_alerts(Alerter(server.url, "slack")) == 0
    assert len(server.requests) == 1
    [warning] = warnings_of(caplog)
    assert f"redirect to http://{server.host} is not followed" in warning and "moved" not in warning


def test_an_answer_after_the_deadline_is_resent_next_run_with_the_same_key(q, receivers, caplog):
    """The receiver got the digest but answered too late: the next run re-sends it, and the key lets it drop it."""
    fail_jobs(q, 2)
    server = receivers("late")
    alerter = Alerter(server.url, "json", timeout=DEADLINE, env_tag="prod", prefix=q.store.prefix)
    caplog.set_level(logging.WARNING, logger="delayq.alerts")
    sent, took = timed_send(q, alerter)
    assert sent == 0 and DEADLINE <= took < DEADLINE + MARGIN
    assert "the same Idempotency-Key" in warnings_of(caplog)[0]
    server.release.set()                               # the late answer goes to a client that hung up
    server.mode = "ok"
    assert q.control.send_alerts(alerter) == 2
    first, second = server.requests
    assert re.fullmatch(r"[0-9a-f]{32}", server.keys[0])
    assert server.keys[0] == server.keys[1]
    assert first["json"]["idempotency_key"] == second["json"]["idempotency_key"] == server.keys[0]
    assert first["json"]["jobs"] == second["json"]["jobs"]
    fail_jobs(q, 1, start=10)                           # a new failure: a new digest, a new key
    assert q.control.send_alerts(alerter) == 1
    assert server.keys[2] != server.keys[0]


@pytest.mark.parametrize("kind", ["json", "slack", "feishu"])
def test_every_alert_carries_the_key_in_a_header_and_in_the_body(q, receivers, kind):
    fail_jobs(q, 2)
    server = receivers("ok")
    alerter = Alerter(server.url, kind, secret="s3cret" if kind == "feishu" else None, prefix=q.store.prefix)
    jobs = q.store.alerts_due(10)
    assert q.control.send_alerts(alerter) == 2
    [request] = server.requests
    key = request["headers"]["Idempotency-Key"]
    assert key == alerter.key(jobs)
    body = request["json"]
    if kind == "json":
        assert body["idempotency_key"] == key
    else:
        text = body["text"] if kind == "slack" else body["content"]["text"]
        assert text.splitlines()[-1] == f"key={key}"


def test_a_key_differs_for_another_prefix_and_for_a_job_that_failed_again(q, receivers):
    job = q.enqueue(FAIL, {"order_id": 1})
    run(q)
    server = receivers("ok")
    assert q.control.send_alerts(Alerter(server.url, "json", prefix=q.store.prefix)) == 1
    q.retry(job_id=job.id)
    run(q)                                              # the same job fails again: a new failure, not a repeat
    assert q.control.send_alerts(Alerter(server.url, "json", prefix=q.store.prefix)) == 1
    assert [r["json"]["jobs"][0]["id"] for r in server.requests] == [job.id, job.id]
    assert server.keys[0] != server.keys[1]
    jobs = [{"id": job.id, "attempts": 1, "finished_at": 1.0}]
    assert Alerter(server.url, prefix="a").key(jobs) != Alerter(server.url, prefix="b").key(jobs)


def test_a_refusal_that_echoes_the_url_is_logged_on_one_line_without_it(q, receivers, caplog):
    fail_jobs(q)
    server = receivers("echo", path="/hook/secret-token-789?token=qwerty123456")
    caplog.set_level(logging.WARNING, logger="delayq.alerts")
    assert q.control.send_alerts(Alerter(server.url, "slack")) == 0
    assert "secret-token-789" in server.requests[0]["path"]    # the page the receiver sent back did echo it
    [warning] = warnings_of(caplog)
    assert "HTTP 404" in warning and "no route for" in warning and "\n" not in warning
    assert "secret-token" not in warning and "qwerty" not in warning
