"""The sample Flask shop (examples/flask_app) on real databases: Flask's test client places orders (the order and
its confirmation job written on the request's own PyMySQL or sqlite3 connection, one transaction), from many
threads at once as gunicorn's threads would; `delayq run-due` (the plain CLI, with the app's environment) runs
the jobs once; `flask --app flaskshop delayq ...` runs delayq's commands with the app's settings.

MariaDB, SQLite, and MariaDB with the due index in Redis (a job written in the caller's transaction reaches the
index on the runner's next pass); each in a fresh database or file with its own prefix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from urllib.parse import urlsplit

import pytest

from delayq.errors import ConfigError
from tests.conftest import MYSQL_URL, REDIS_URL, ROOT, app_rows, drop_redis, mysql_database, new_prefix, require

APP_DIR = os.path.join(ROOT, "examples", "flask_app")
KINDS = ["mysql", "sqlite", "mysql+redis"]
THREADS, PER_THREAD = 4, 4


class Shop:
    """The sample app in this process (for its test client) and its settings as the runner's environment."""

    def __init__(self, kind: str, tmp_path):
        self.kind = kind
        self.prefix = new_prefix()
        if kind == "sqlite":
            self.url = f"sqlite:///{tmp_path}/shop.db"
        else:
            self.database = f"dq_{self.prefix}"
            mysql_database(self.database)
            self.url = urlsplit(MYSQL_URL)._replace(path=f"/{self.database}").geturl()
        self.redis_url = REDIS_URL if kind.endswith("+redis") else None
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DELAYQ_", "SHOP_", "FLASK_"))}
        self.env = {**env, "SHOP_DATABASE_URL": self.url, "SHOP_CONFIRM_AFTER": "0", "DELAYQ_PREFIX": self.prefix}
        if self.redis_url:
            self.env["DELAYQ_REDIS_URL"] = self.redis_url

    def create_app(self):
        from flaskshop import create_app

        return create_app({"DATABASE_URL": self.url, "CONFIRM_AFTER": 0, "DELAYQ_PREFIX": self.prefix,
                           "DELAYQ_REDIS_URL": self.redis_url, "TESTING": True})

    def run(self, *argv: str) -> subprocess.CompletedProcess:
        """A command in the app's folder with the app's environment; fails on a non-zero exit."""
        done = subprocess.run([sys.executable, *argv], cwd=APP_DIR, env=self.env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done

    def rows(self, sql: str, *params) -> list[tuple]:
        sql = sql.format(jobs=f"{self.prefix}_jobs")
        if self.kind == "sqlite":
            return app_rows(sql, *params, sqlite_path=self.url[len("sqlite:///"):])
        return app_rows(sql, *params, database=self.database)

    def cleanup(self) -> None:
        if self.kind != "sqlite":
            mysql_database(self.database, create=False)
        if self.redis_url:
            drop_redis(self.prefix)


@pytest.fixture(params=KINDS)
def shop(request, tmp_path, monkeypatch):
    if request.param.startswith("mysql"):
        require("mysql")
    if request.param.endswith("+redis"):
        require("redis")
    monkeypatch.syspath_prepend(APP_DIR)           # the app's package, as its own process would import it
    s = Shop(request.param, tmp_path)
    yield s
    s.cleanup()


def place_from_threads(app) -> list[int]:
    """THREADS threads, each with its own test client, place PER_THREAD orders: the committed orders' ids."""
    placed, errors = [], []
    barrier = threading.Barrier(THREADS)

    def worker() -> None:
        web = app.test_client()
        barrier.wait()
        try:
            for _ in range(PER_THREAD):
                response = web.post("/orders", data={"total": 300})
                assert response.status_code == 201, response.get_data(as_text=True)
                placed.append(response.get_json()["order"])
        except BaseException as exc:      # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return placed


def test_requests_enqueue_in_their_own_transactions_and_the_runner_runs_each_job_once(shop):
    shop.run("-m", "flask", "--app", "flaskshop", "delayq", "migrate")
    app = shop.create_app()
    assert app.test_cli_runner().invoke(args=["init-db"]).exit_code == 0
    web = app.test_client()

    placed = web.post("/orders", data={"total": 500})
    assert placed.status_code == 201
    order, job = placed.get_json()["order"], placed.get_json()["job"]
    assert shop.rows("SELECT id, status FROM {jobs} WHERE ext = ?", f"order:{order}") == [(job, "pending")]

    declined = web.post("/orders/declined", data={"total": 500})
    assert declined.status_code == 402
    gone = declined.get_json()["order"]      # looked at before the next order: SQLite hands the id on
    assert shop.rows("SELECT id FROM shop_orders WHERE id = ?", gone) == []
    assert shop.rows("SELECT id FROM {jobs} WHERE ext = ?", f"order:{gone}") == []

    orders = [order] + place_from_threads(app)
    assert len(orders) == 1 + THREADS * PER_THREAD

    env_settings = {"DELAYQ_DATABASE_URL": shop.url, "DELAYQ_ALLOWED_MODULES": "flaskshop.jobs"}
    shop.env.update(env_settings)       # the plain CLI, settings from the environment
    ran = json.loads(shop.run("-m", "delayq", "run-due", "--json").stdout)
    assert (ran["claimed"], ran["succeeded"]) == (len(orders), len(orders)), ran
    assert sorted(shop.rows("SELECT id, confirmations FROM shop_orders")) == [(o, 1) for o in sorted(orders)]
    assert sorted(shop.rows("SELECT ext, status, attempts FROM {jobs}")) == sorted(
        (f"order:{o}", "succeeded", 1) for o in orders)

    for key in env_settings:
        del shop.env[key]               # the flask command: the app's own settings
    stats = json.loads(shop.run("-m", "flask", "--app", "flaskshop", "delayq", "stats", "--json").stdout)
    assert stats["queues"]["default"]["counts"]["succeeded"] == len(orders) and stats["prefix"] == shop.prefix


def test_init_app_gives_each_app_its_client_and_names_a_bad_setting(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(APP_DIR)
    from flask import Flask

    from flaskshop import create_app
    from flaskshop.extensions import dq

    url = f"sqlite:///{tmp_path}/shop.db"
    one, two = create_app({"DATABASE_URL": url}), create_app({"DATABASE_URL": url})
    with one.app_context():
        first = dq.client
    with two.app_context():
        assert dq.client is not first                        # one client per app, shared by its threads
    with one.app_context():
        assert dq.client is first
    dq.close(one)
    with one.app_context(), pytest.raises(ConfigError, match="call DelayQ"):
        dq.client
    with pytest.raises(ConfigError, match="unknown setting DELAYQ_PREFX"):
        create_app({"DATABASE_URL": url, "DELAYQ_PREFX": "shop"})
    with pytest.raises(ConfigError, match=r"\['DELAYQ_PREFIX'\] must be text"):
        create_app({"DATABASE_URL": url, "DELAYQ_PREFIX": ["shop"]})
    bare = Flask("bare")
    bare.config["DELAYQ_DATABASE_URL"] = "postgres://db/shop"
    with pytest.raises(ConfigError, match="DELAYQ_DATABASE_URL"):
        dq.init_app(bare)
    dq.close(two)


def test_the_shops_own_tests_run_its_jobs_in_delayqs_testing_mode():
    """Issue 22: "the testing mode runs a job inline in an app's own test". The sample shop's own test suite
    (examples/flask_app/tests, run as its developers would: pytest from the app's folder) places an order with
    Flask's test client, moves delayq's fake clock a week and sees the order confirmed by its job; a declined
    order leaves no job; inline, a job runs as it is enqueued. The Flask extension's client yields to the testing
    mode's while it is on (without that, the order's job waits on the real clock and the first test fails)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DELAYQ_", "SHOP_", "FLASK_"))}
    env["PYTHONPATH"] = os.pathsep.join([APP_DIR, os.path.join(ROOT, "lib")])
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=APP_DIR,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "3 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
