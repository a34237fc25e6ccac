"""Which database: a command run from the wrong directory, or with the wrong DELAYQ_DATABASE_URL or DELAYQ_PREFIX,
says that no delayq tables are there (naming the database by its absolute path, and the prefix) and exits 1;
it never creates the embedded SQLite file. Only what enqueues (enqueue, emit) and migrate create it."""

from __future__ import annotations

import json
import os

import pytest

from tests.acceptance.test_operator_scripts import _mysql_tables
from tests.conftest import MYSQL_URL, ROOT, new_prefix, require
from tests.helpers import script

# Every command that does not enqueue, with arguments that would otherwise work on an empty database.
READERS = {
    "stats": [], "list": [], "show": ["--id", "1"], "workers": [], "run-due": [], "compensate": [],
    "metrics": ["--listen", "127.0.0.1:0"], "web": ["--listen", "127.0.0.1:0"], "cancel": ["--id", "1"],
    "retry": ["--id", "1"], "purge": ["--older-than", "1d"], "pause": ["sms"], "resume": ["sms"],
}
HINT = ('run "delayq migrate" to create them, or set DELAYQ_DATABASE_URL (and DELAYQ_PREFIX) to the database '
        'that has them')


def delayq(cwd, *args, timeout=30, **settings):
    """`delayq ARGS` as a user runs it in `cwd`: no DELAYQ_* setting but those given (and no .env there)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELAYQ_")}
    env.update(settings, PYTHONPATH=ROOT, DELAYQ_ALLOWED_MODULES="examples")
    return script(env, "delayq", *args, cwd=cwd, timeout=timeout)


def refused(done, command, where, prefix="delayq"):
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr == f"delayq {command}: error: no delayq tables at {where} (prefix {prefix}): {HINT}\n"
    assert done.stdout == "" and "Traceback" not in done.stderr


@pytest.mark.parametrize("command", list(READERS))
def test_a_command_that_does_not_enqueue_never_creates_the_default_database(command, tmp_path):
    done = delayq(tmp_path, command, *READERS[command])        # the default: sqlite:///delayq.db, here
    refused(done, command, f"sqlite:///{tmp_path}/delayq.db")
    assert os.listdir(tmp_path) == []                          # no delayq.db, no -wal, no -shm


@pytest.mark.parametrize("command", ["stats", "list", "run-due", "cancel"])
def test_a_relative_url_to_a_missing_file_is_named_by_its_absolute_path_and_not_created(command, tmp_path):
    done = delayq(tmp_path, command, *READERS[command], DELAYQ_DATABASE_URL="sqlite:///var/jobs.db")
    refused(done, command, f"sqlite:///{tmp_path}/var/jobs.db")
    assert not os.path.exists(tmp_path / "var")


def test_an_existing_file_without_delayq_tables_is_refused_and_left_as_it_was(tmp_path):
    (tmp_path / "delayq.db").write_bytes(b"")                 # another program's (empty) file
    for command in ("list", "stats", "run-due"):
        refused(delayq(tmp_path, command), command, f"sqlite:///{tmp_path}/delayq.db")
    assert sorted(os.listdir(tmp_path)) == ["delayq.db"] and (tmp_path / "delayq.db").read_bytes() == b""


@pytest.mark.parametrize("command", ["stats", "list", "show", "workers", "run-due"])
def test_a_mysql_database_without_the_prefix_tables_is_one_line_naming_it(command, tmp_path):
    require("mysql")
    prefix = new_prefix()
    done = delayq(tmp_path, command, *READERS[command], DELAYQ_DATABASE_URL=MYSQL_URL, DELAYQ_PREFIX=prefix)
    refused(done, command, "mysql://127.0.0.1:3306/test", prefix)
    assert _mysql_tables(prefix) == 0


def test_enqueue_creates_the_embedded_database_and_every_command_names_it_and_the_prefix(tmp_path):
    """The embedded default needs no migrate step (make run, README): enqueue creates the file; list, stats and
    migrate then say which file (its absolute path, wherever they run) and which prefix."""
    where = f"sqlite:///{tmp_path}/delayq.db"
    assert delayq(tmp_path, "enqueue", "--call", "examples.shop:noop", "--delay", "60").returncode == 0
    listed = json.loads(delayq(tmp_path, "list", "--json").stdout)
    assert (listed["database"], listed["prefix"], len(listed["jobs"])) == (where, "delayq", 1)
    assert f"database: {where}, prefix delayq" in delayq(tmp_path, "stats").stdout
    assert delayq(tmp_path, "migrate").stdout == f"schema up to date on {where}, prefix delayq\n"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert delayq(elsewhere, "migrate").stdout.startswith("applied migration(s) 1, 2, ")
    assert delayq(elsewhere, "migrate").stdout.endswith(f" on sqlite:///{elsewhere}/delayq.db, prefix delayq\n")
