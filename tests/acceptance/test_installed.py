"""delayq as an application installs it: the wheel in a fresh venv outside the repository, the application's
package in a directory of its own, the `delayq` command (and the checkout's bin/ scripts) run from there.

`make test` builds the wheel and its venv (scripts/wheel_env.sh) and passes its python in DELAYQ_TEST_PYTHON;
run alone, these tests build it themselves.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT, make_backend

SAMPLE = os.path.join(ROOT, "tests", "sample_app")


@pytest.fixture(scope="session")
def python():
    """The python of a venv where only the built wheel (and its dependencies) is installed."""
    path = os.environ.get("DELAYQ_TEST_PYTHON")
    if not path:
        built = subprocess.run([os.path.join(ROOT, "scripts", "wheel_env.sh")], capture_output=True, text=True,
                               cwd=ROOT, timeout=600)
        assert built.returncode == 0, built.stderr
        path = built.stdout.strip().splitlines()[-1]
    assert not path.startswith(ROOT), "the wheel's venv must live outside the repository"
    return path


@pytest.fixture(params=["sqlite", "mysql", "mysql+redis"])
def app(request, tmp_path, python):
    from delayq.clock import SystemClock

    backend = make_backend(request.param, tmp_path, SystemClock())
    folder = tmp_path / "shop"                        # the application's own directory
    shutil.copytree(SAMPLE, folder)
    settings = {"DELAYQ_DATABASE_URL": backend.database_url if request.param != "sqlite" else "sqlite:///shop.db",
                "DELAYQ_PREFIX": backend.prefix, "DELAYQ_ALLOWED_MODULES": "acme"}
    if backend.redis_url:
        settings["DELAYQ_REDIS_URL"] = backend.redis_url
    (folder / ".env").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))   # read from the working dir
    yield App(python, folder, backend)
    backend.cleanup()


class App:
    def __init__(self, python: str, folder, backend):
        self.python, self.folder, self.backend = python, folder, backend
        self.ledger = folder / "ledger.txt"

    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DELAYQ_", "PYTHON"))}
        return {**env, "ACME_LEDGER": str(self.ledger), **extra}

    def delayq(self, *args, check=0, **extra):
        """The installed console script, from the application's directory."""
        command = os.path.join(os.path.dirname(self.python), "delayq")
        return self._run([command, *args], check, extra)

    def module(self, *args, check=0, **extra):
        """`python -P -m delayq`: -P keeps the working directory (with the app's delayq.py) off the path,
        which plain -m puts first before any of delayq's code runs (Python's own rule)."""
        return self._run([self.python, "-P", "-m", "delayq", *args], check, extra)

    def checkout_script(self, name, *args, check=0, **extra):
        """The checkout's bin/ script, run with the application's venv python (as a crontab line would)."""
        return self._run([self.python, os.path.join(ROOT, "bin", name), *args], check, extra)

    def _run(self, argv, check, extra):
        done = subprocess.run(argv, capture_output=True, text=True, cwd=self.folder, env=self.env(**extra), timeout=120)
        if check is not None:
            assert done.returncode == check, (argv, done.stdout, done.stderr)
        return done

    def rows(self) -> int:
        return len(json.loads(self.delayq("list", "--json", "--limit", "10000").stdout)["jobs"])


def test_the_installed_command_runs_the_applications_jobs(app):
    app.delayq("migrate")
    job = json.loads(app.delayq("enqueue", "--call", "acme.jobs:bill", "--args", '{"order_id": 7}', "--json").stdout)
    ran = json.loads(app.delayq("run-due", "--json").stdout)
    assert (ran["claimed"], ran["succeeded"]) == (1, 1)
    assert app.ledger.read_text() == "order 7 billed 701\n"       # the job imported acme.pricing
    shown = json.loads(app.module("show", "--id", str(job["id"]), "--json").stdout)["jobs"][0]
    assert shown["status"] == "succeeded" and shown["call"] == "acme.jobs:bill"
    (app.folder / "delayq.py").unlink()        # plain -m: delayq takes the working directory off the path itself,
    listed = app._run([app.python, "-m", "delayq", "list", "--json"], 0, {})       # so the app's redis.py is not read
    assert [j["id"] for j in json.loads(listed.stdout)["jobs"]] == [job["id"]]


def test_the_checkouts_bin_scripts_run_under_the_applications_python(app):
    app.checkout_script("migrate.py")
    app.checkout_script("enqueue_delayed.py", "--call", "acme.jobs:bill", "--args", '{"order_id": 8}')
    ran = json.loads(app.checkout_script("run_due.py", "--json").stdout)
    assert ran["succeeded"] == 1 and app.ledger.read_text() == "order 8 billed 801\n"


@pytest.mark.parametrize("args, message", [
    (["--call", "acme.jobs:bill", "--args", '{"order": 7}'], "args do not fit acme.jobs:bill(order_id: int)"),
    (["--call", "acme.jobs:bill", "--args", '{"order_id": 7}', "--delay", "1h", "--deadline", "30m"],
     "deadline is not after the job's first due time"),
    (["--call", "acme.jobs:bill", "--args", '{"order_id": 7}', "--delay", "5w"], "'5w' is not a duration"),
    (["--call", "acme.jobs:bill", "--args", '{"order_id": 7}', "--at", "2030-02-30T08:00"], "not an ISO-8601 time"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(app, args, message):
    app.delayq("migrate")
    done = app.delayq("enqueue", *args, check=2)
    assert message in done.stderr and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert app.rows() == 0


def test_a_bad_bulk_line_writes_nothing_and_names_the_line(app):
    app.delayq("migrate")
    bulk = app.folder / "jobs.jsonl"
    bulk.write_text('{"call": "acme.jobs:bill", "args": {"order_id": 1}}\n\n'
                    '{"call": "acme.jobs:bill", "args": {"order_id": 2}, "delay": "2h"}\n'
                    '{"call": "acme.jobs:bill", "args": {"order_id": 3}, "delay": "soon"}\n')
    done = app.delayq("enqueue", "--from-file", str(bulk), check=2)
    assert "jobs.jsonl line 4: delay" in done.stderr and "nothing was enqueued" in done.stderr
    assert app.rows() == 0


def test_a_naive_time_is_local_time_as_every_command_prints_it(app):
    app.delayq("migrate")
    job = json.loads(app.delayq("enqueue", "--call", "acme.jobs:confirm", "--args", '{"order_id": 9}', "--at",
                                "2030-01-01T08:00", "--json", TZ="Asia/Shanghai").stdout)
    assert job["due_at"] == "2030-01-01T08:00:00.000+08:00"
    shown = json.loads(app.delayq("show", "--id", str(job["id"]), "--json", TZ="Asia/Shanghai").stdout)["jobs"][0]
    assert shown["due_at"] == "2030-01-01T08:00:00.000+08:00"
    utc = json.loads(app.delayq("show", "--id", str(job["id"]), "--json", TZ="UTC").stdout)["jobs"][0]
    assert utc["due_at"] == "2030-01-01T00:00:00.000+00:00"
