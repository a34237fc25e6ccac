"""Alerts through a real local HTTP server that records what it receives."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from delayq.alerts import Alerter
from tests.helpers import run

FAIL = "examples.shop:refund_rejected"


class Receiver:
    """A webhook endpoint on 127.0.0.1 that answers with `status` and keeps every body."""

    def __init__(self):
        self.bodies: list[dict] = []
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers["Content-Length"])
                receiver.bodies.append({"json": json.loads(self.rfile.read(length)), "agent": self.headers["User-Agent"]})
                self.send_response(receiver.status)
                self.end_headers()
                self.wfile.write(b'{"code": 0}')

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook/secret-token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def test_a_storm_of_failures_is_one_digest_and_is_sent_once(q, receiver):
    for i in range(30):
        q.enqueue(FAIL, {"order_id": i}, ext=f"order:{i}")
    run(q, batch=100)
    alerter = Alerter(receiver.url, "feishu")
    assert q.control.send_alerts(alerter) == 30
    assert q.control.send_alerts(alerter) == 0
    assert len(receiver.bodies) == 1
    body = receiver.bodies[0]
    text = body["json"]["content"]["text"]
    assert "30 job(s) failed for good" in text and "ext=order:0" in text and "and 10 more" in text
    assert body["agent"].startswith("delayq/")


def test_undelivered_alert_is_retried_next_run_and_never_raises(q, receiver):
    q.enqueue(FAIL, {"order_id": 1})
    run(q)
    receiver.status = 500
    assert q.control.send_alerts(Alerter(receiver.url, "slack")) == 0
    dead = Alerter("http://127.0.0.1:1/nothing-listens", "slack")
    assert q.control.send_alerts(dead) == 0
    receiver.status = 200
    assert q.control.send_alerts(Alerter(receiver.url, "slack")) == 1
    assert [b["json"]["text"].splitlines()[0] for b in receiver.bodies] == [
        "delayq: 1 job(s) failed for good", "delayq: 1 job(s) failed for good"]


def test_a_retried_job_that_fails_again_alerts_again(q, receiver):
    job = q.enqueue(FAIL, {"order_id": 1})
    run(q)
    alerter = Alerter(receiver.url, "json")
    assert q.control.send_alerts(alerter) == 1
    q.retry(job_id=job.id)
    run(q)
    assert q.control.send_alerts(alerter) == 1
    assert [b["json"]["jobs"][0]["id"] for b in receiver.bodies] == [job.id, job.id]


def test_feishu_signature_and_no_secret_in_the_message():
    alerter = Alerter("https://open.feishu.cn/open-apis/bot/v2/hook/tok", "feishu", secret="s3cret")
    body = alerter.payload([], 0)
    key = f"{body['timestamp']}\ns3cret".encode()
    assert body["sign"] == base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
    assert "s3cret" not in json.dumps(body) and "tok" not in alerter.where
