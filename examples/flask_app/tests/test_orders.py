"""The shop's own tests: delayq's testing mode runs the confirmation job inside the test, on a fake clock.

Run from examples/flask_app: `python -m pytest tests` (tests/integration/test_flask_app.py runs them in `make
test`). The jobs are written in the order's own transaction on the shop's database, as in production, and run
by delayq's own runner code when the test moves the clock: no cron, no server, no sleeping a week.
"""

from __future__ import annotations

import pytest

import flaskshop
from delayq import Config, testing
from flaskshop import db, settings
from flaskshop.jobs import confirm_order


@pytest.fixture
def app(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/shop.db"
    monkeypatch.setattr(settings, "DATABASE_URL", url)          # where the job looks for the order
    app = flaskshop.create_app({"DATABASE_URL": url, "DELAYQ_DATABASE_URL": url, "CONFIRM_AFTER": "7d"})
    with app.app_context():
        conn = db.get_db()
        conn.cursor().execute(db.SCHEMA["sqlite"])
        conn.commit()
    return app


def jobs_for(app):
    """The testing mode on the shop's own database (its jobs in the order's transaction, as in production)."""
    return testing.explicit(Config(database_url=app.config["DATABASE_URL"], allowed_modules=("flaskshop",)))


def status_of(app, order: int) -> tuple[str, int]:
    with app.app_context():
        cur = db.get_db().cursor()
        cur.execute("SELECT status, confirmations FROM shop_orders WHERE id = ?", (order,))
        return tuple(cur.fetchone())


def test_an_order_is_confirmed_for_the_buyer_a_week_later(app):
    with jobs_for(app) as jobs:
        placed = app.test_client().post("/orders", data={"total": 700}).get_json()
        assert jobs.advance("6d") == 0 and status_of(app, placed["order"]) == ("placed", 0)
        assert jobs.advance("1d") == 1 and status_of(app, placed["order"]) == ("confirmed", 1)
        assert [job.status for job in jobs.jobs(confirm_order)] == ["succeeded"]


def test_a_declined_order_leaves_no_job(app):
    with jobs_for(app) as jobs:
        response = app.test_client().post("/orders/declined", data={"total": 700})
        assert response.status_code == 402
        assert jobs.jobs() == [] and jobs.advance("8d") == 0


def test_inline_a_job_runs_as_it_is_enqueued(app):
    with app.app_context():
        conn = db.get_db()
        order = conn.cursor().execute("INSERT INTO shop_orders (total) VALUES (500)").lastrowid
        conn.commit()
    with testing.inline(Config(database_url=app.config["DATABASE_URL"], allowed_modules=("flaskshop",))) as jobs:
        confirm_order.enqueue(order)
        assert status_of(app, order) == ("confirmed", 1)
        assert [job.status for job in jobs.jobs()] == ["succeeded"]
