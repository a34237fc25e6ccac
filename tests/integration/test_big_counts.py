"""A queue's group of more than 10,000 jobs of one status: `delayq stats` and the overview show a floor until
compensate counts it, then compensate's count marked as such (issue 26: their cost does not grow with the
tables, so a big group is not counted on every read)."""

from __future__ import annotations

import json
import re

import pytest

from delayq.clock import SystemClock
from delayq.jobs import JobSpec
from delayq.reports import LIVE_UPTO
from delayq.web import WebSettings, create_app
from tests.conftest import make_backend
from tests.helpers import script

BIG = LIVE_UPTO + 5


@pytest.fixture(params=["sqlite", "mysql"])
def backend(request, tmp_path):
    b = make_backend(request.param, tmp_path, SystemClock())
    yield b
    b.cleanup()


def stats(backend) -> dict:
    return json.loads(script(backend, "delayq", "stats", "--json", check=0).stdout)["queues"]["auto"]


def overview_row(manager) -> str:
    page = create_app(manager, WebSettings()).test_client().get("/", base_url="http://127.0.0.1:8080")
    return re.search(r'<tr id="queue-\d+" data-queue="auto">(.*?)</tr>', page.get_data(as_text=True), re.S).group(1)


def test_a_group_above_the_live_bound_shows_a_floor_then_compensate_s_count(backend):
    q = backend.manager()
    now = q.clock.now()
    for start in range(0, BIG, 5000):          # a week of pending auto-confirms, and 3 due now
        q.store.insert_jobs([JobSpec(call="examples.shop:noop", args_json="{}", queue="auto",
                                     due_at=now - 60 if i < 3 else now + 7 * 86400) for i in range(start, min(BIG, start + 5000))], now)
    before = stats(backend)
    assert before["counts"]["pending"] == LIVE_UPTO + 1 and before["counted_at"] == {"pending": None}
    assert before["due_now"] == 3 and before["oldest_due_lag_s"] >= 59                 # due figures stay exact
    table = script(backend, "delayq", "stats", check=0).stdout
    assert re.search(rf"^auto\s+>{LIVE_UPTO}\s+0\s+0\s+3\s", table, re.M), table
    assert f"&gt; {LIVE_UPTO:,}" in overview_row(q)

    done = json.loads(script(backend, "compensate.py", "--json", check=0).stdout)
    assert done["counted"] == 1
    after = stats(backend)
    assert after["counts"]["pending"] == BIG and after["counted_at"]["pending"].startswith("20")
    assert re.search(rf"^auto\s+{BIG}~\s+0\s+0\s+3\s", script(backend, "delayq", "stats", check=0).stdout, re.M)
    assert f"~{BIG:,}" in overview_row(q) and "counted by compensate at" in overview_row(q)
    assert json.loads(script(backend, "compensate.py", "--json", check=0).stdout)["counted"] == 0    # a minute apart
