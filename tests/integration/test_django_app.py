"""The sample Django project (examples/django_app) on real databases, as its developers run it: Django's test client
places orders (each enqueueing its confirmation in the order's own transaction.atomic(), or on commit), then
`manage.py delayq run-due` runs the jobs and `manage.py delayq stats` reports them.

Django's MySQL backend on its default driver mysqlclient, on PyMySQL (pymysql.install_as_MySQLdb()), and its
sqlite3 backend; each in a fresh database (MariaDB) or file (SQLite) with its own delayq prefix. Django can be set
up once per process, and one driver per process: every step is a process of its own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from tests.conftest import MYSQL_URL, ROOT, app_rows, mysql_database, new_prefix, require

PROJECT = os.path.join(ROOT, "examples", "django_app")
DRIVER_SCRIPT = os.path.join(ROOT, "tests", "integration", "django_requests.py")
DRIVERS = {"mysqlclient": "MySQLdb", "pymysql": "pymysql", "sqlite": "sqlite3"}   # -> the module of the connection


class Project:
    """The sample project on one driver: its environment, its database, and how to read that database."""

    def __init__(self, driver: str, tmp_path):
        self.driver = driver
        self.prefix = new_prefix()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DELAYQ_", "SHOP_", "DJANGO_"))}
        # no DELAYQ_DATABASE_URL: delayq's tables go in Django's own database (DATABASES['default'])
        self.env = {**env, "DJANGO_SETTINGS_MODULE": "shopsite.settings", "PYTHONPATH": PROJECT,
                    "DELAYQ_PREFIX": self.prefix, "SHOP_CONFIRM_AFTER": "0"}
        if driver == "sqlite":
            self.path = str(tmp_path / "shop.db")
            self.env["SHOP_SQLITE_PATH"] = self.path
            return
        u = urlsplit(MYSQL_URL)
        self.database = f"dq_{self.prefix}"
        self.env.update(SHOP_MYSQL_DATABASE=self.database, SHOP_MYSQL_DRIVER=driver, SHOP_MYSQL_HOST=u.hostname,
                        SHOP_MYSQL_PORT=str(u.port or 3306), SHOP_MYSQL_USER=u.username or "root",
                        SHOP_MYSQL_PASSWORD=u.password or "")
        mysql_database(self.database)

    def run(self, *argv: str, script: str | None = None) -> subprocess.CompletedProcess:
        """manage.py ARGV (or a script) in the project's folder, as its developers run it; fails on a non-zero exit."""
        command = [sys.executable, script] if script else [sys.executable, "manage.py", *argv]
        done = subprocess.run(command, cwd=PROJECT, env=self.env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done

    def rows(self, sql: str) -> list[tuple]:
        sql = sql.format(jobs=f"{self.prefix}_jobs", attempts=f"{self.prefix}_attempts")
        if self.driver == "sqlite":
            return app_rows(sql, sqlite_path=self.path)
        return app_rows(sql, database=self.database)

    def cleanup(self) -> None:
        if self.driver != "sqlite":
            mysql_database(self.database, create=False)


def need(module: str, what: str) -> None:
    """Django and mysqlclient come with `make install` (the dev extra): missing, the test fails saying so."""
    if importlib.util.find_spec(module) is None:
        pytest.fail(f"{what} is not installed: run `make install` (mysqlclient compiles against libmariadb-dev and "
                    "pkg-config: apt-get install libmariadb-dev pkg-config)", pytrace=False)


@pytest.fixture(params=list(DRIVERS))
def project(request, tmp_path):
    need("django", "Django")
    if request.param != "sqlite":
        require("mysql")
        need("MySQLdb", "mysqlclient")
    p = Project(request.param, tmp_path)
    yield p
    p.cleanup()


def test_a_request_enqueues_in_its_own_transaction_and_manage_py_runs_the_job_once(project):
    migrated = project.run("delayq", "migrate")
    assert f"prefix {project.prefix}" in migrated.stdout            # in Django's own database, found by itself

    seen = json.loads(project.run(script=DRIVER_SCRIPT).stdout)
    assert seen["driver"].split(".")[0] == DRIVERS[project.driver]   # mysqlclient really is Django's driver here
    placed, declined, placed_on_commit, declined_on_commit = seen["requests"]
    for request in (placed, placed_on_commit):                       # committed: the order with exactly one job
        assert request["status"] == 201 and request["orders"] == ["placed"], request
        assert [status for _, status in request["jobs"]] == ["pending"], request
    assert placed["jobs"][0][0] == placed["body"]["job"]
    assert isinstance(declined["body"]["job"], int)                  # written in the transaction, then rolled back
    for request in (declined, declined_on_commit):                   # rolled back: neither the order nor a job
        assert request["status"] == 402 and request["body"]["declined"] is True, request
        assert request["orders"] == [] and request["jobs"] == [], request
    assert "connection= must be" in seen["wrong_object"] and "\n" not in seen["wrong_object"]
    assert "args do not fit" in seen["checked_before_commit"]

    ran = json.loads(project.run("delayq", "run-due", "--json").stdout)
    assert (ran["claimed"], ran["succeeded"]) == (2, 2), ran
    orders = dict(project.rows("SELECT id, confirmations FROM orders_order"))
    assert orders == {placed["body"]["order"]: 1, placed_on_commit["body"]["order"]: 1}   # each job ran once
    assert sorted(project.rows("SELECT ext, status, attempts FROM {jobs}")) == sorted(
        (f"order:{order}", "succeeded", 1) for order in orders)

    stats = json.loads(project.run("delayq", "stats", "--json").stdout)
    assert stats["queues"]["default"]["counts"]["succeeded"] == 2 and stats["prefix"] == project.prefix
