"""Issue 16, items 2, 3, 6 and 7: each defect as the user or the attacker met it, through the real scripts.

Every refused input exits 2 with one line on stderr (no traceback) and writes nothing: no row, and with
Redis no index entry (counted before and after). Rows edited by hand into values no datetime holds are
displayed as out of range by list, show and stats (and its Prometheus file), never "internal error".

The scripts run as subprocesses where the process matters (raw bytes in argv, the application's import,
DELAYQ_DEBUG); elsewhere in-process through delayq.commands.run, the same boundary (cli.run) in a
hundredth of the time, with the settings in os.environ as a script would read them.
"""

from __future__ import annotations

import json
import math
import os
import subprocess

import pytest

from delayq import commands
from tests.conftest import ALLOWED, BACKENDS, ROOT
from tests.helpers import command, script, strict_json

NOOP = "examples.shop:noop"
DEEP_ARGS = '{"a":' * 5000 + "1" + "}" * 5000
EVERY_BACKEND = pytest.mark.parametrize("world", BACKENDS, indirect=True)     # sqlite+redis too
SCRIPTS = {"enqueue_delayed.py": "enqueue", "cancel.py": "cancel", "list.py": "list", "show.py": "show",
           "stats.py": "stats", "run_due.py": "run-due", "compensate.py": "compensate"}


@pytest.fixture
def in_process(monkeypatch, capsys):
    """in_process(env, "list.py", *args, check=None): the script's command run in this process (delayq.commands.run,
    the boundary a script crosses), with env's DELAYQ_ settings in os.environ; what tests.helpers.script returns."""
    monkeypatch.chdir(ROOT)

    def run_command(env, name, *args, check=None):
        for key in [k for k in os.environ if k.startswith("DELAYQ_")]:
            monkeypatch.delenv(key)
        for key, value in env.items():
            if key.startswith("DELAYQ_"):
                monkeypatch.setenv(key, value)
        capsys.readouterr()
        code = commands.run(SCRIPTS[name], list(args), prog=name)
        out, err = capsys.readouterr()
        done = subprocess.CompletedProcess(args, code, out, err)
        if check is not None:
            assert code == check, (out, err)
        return done

    return run_command


def one_line_usage_error(done, *words):
    """Exit 2, one line on stderr naming what is wrong, no traceback, nothing on stdout."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr and "internal error" not in done.stderr
    for word in words:
        assert word in done.stderr, done.stderr
    assert done.stdout == ""


def written(backend) -> tuple[int, int]:
    """(rows in the jobs table, members in this prefix's Redis index sets)."""
    rows = backend.sql("SELECT COUNT(*) FROM {jobs}")[0][0]
    members = 0
    if backend.redis_url:
        import redis

        r = redis.Redis.from_url(backend.redis_url)
        members = sum(r.zcard(key) for key in r.scan_iter(match="{" + backend.prefix + ":*", count=1000)
                      if r.type(key) == b"zset")
    return int(rows), members


# -- item 2 and 3: out-of-range times and ladder steps --------------------------------------------------
@EVERY_BACKEND
@pytest.mark.parametrize("flags, words", [
    (["--delay", "1e20"], ["delay", "1e20"]),
    (["--at", "9999-12-31T23:59:59-12:00"], ["at", "out of range", "1970 to 3000"]),
    (["--deadline", "1e20"], ["deadline"]),
    (["--ladder", "1e400"], ["1e400", "not a duration"]),
    (["--ladder", "15,30,inf"], ["inf"]),
    (["--ladder", ",".join(["15"] * 100)], ["ladder is 299 characters as stored: at most 255"]),
    (["--args", DEEP_ARGS], ["args is nested more than 64 deep"]),
    (["--args", '{"a":' * 65 + "1" + "}" * 65], ["args is nested more than 64 deep"]),
], ids=["delay-1e20", "at-9999", "deadline-1e20", "ladder-1e400", "ladder-inf", "ladder-299-chars", "args-5000-deep",
     "args-65-deep"])
def test_out_of_range_flags_exit_2_and_write_nothing(world, in_process, flags, words):
    before = written(world)
    done = in_process(world.env(), "enqueue_delayed.py", "--call", NOOP, *flags)
    one_line_usage_error(done, *words)
    assert written(world) == before == (0, 0)


BAD_LINES = {
    "delay 1e20": ({"call": NOOP, "delay": 1e20}, "delay must be between 0 s and 100 years"),
    "at 9999": ({"call": NOOP, "at": "9999-12-31T23:59:59-12:00"}, "out of range"),
    "ladder 1e400": ('{"call": "%s", "ladder": "1e400"}' % NOOP, "not a duration"),
    "ladder [1e400]": ('{"call": "%s", "ladder": [1e400]}' % NOOP, "ladder step"),
    "args 5000 deep": ('{"call": "%s", "args": %s}' % (NOOP, DEEP_ARGS), "not valid JSON"),
    "args 5000 deep, as text": ({"call": NOOP, "args": DEEP_ARGS}, "nested more than 64 deep"),
    "lone surrogate in ext": ('{"call": "%s", "ext": "order:\\udc80"}' % NOOP, "ext is not valid UTF-8"),
    "lone surrogate in an args key": ('{"call": "%s", "args": {"\\ud800": 1}}' % NOOP, "lone surrogate"),
}


@EVERY_BACKEND
@pytest.mark.parametrize("name", BAD_LINES)
def test_a_bad_line_in_a_bulk_file_names_the_line_and_writes_nothing(world, in_process, tmp_path, name):
    bad, words = BAD_LINES[name]
    good = json.dumps({"call": NOOP, "ext": "bulk"})
    path = tmp_path / "jobs.jsonl"
    path.write_text("\n".join([good, good, bad if isinstance(bad, str) else json.dumps(bad), good]) + "\n")
    done = in_process(world.env(), "enqueue_delayed.py", "--from-file", str(path))
    one_line_usage_error(done, f"{path} line 3:", words, "nothing was enqueued")
    assert written(world) == (0, 0)


# -- item 6: input that used to be an internal error ----------------------------------------------------
NON_UTF8 = [["enqueue_delayed.py", "--call", NOOP, "--ext"], ["cancel.py", "--ext"], ["list.py", "--ext-prefix"],
            ["show.py", "--ext"], ["list.py", "--queue"], ["cancel.py", "--id", "1", "--queue"],
            ["show.py", "--ext", "order:1", "--queue"], ["enqueue_delayed.py", "--call", NOOP, "--queue"]]


@EVERY_BACKEND
def test_non_utf8_command_line_values_exit_2(world, in_process):
    """Raw bytes that are not UTF-8 in argv (Python turns them into lone surrogates) are refused, not a crash."""
    in_process(world.env(), "enqueue_delayed.py", "--call", NOOP, "--ext", "order:1", "--delay", "60", check=0)
    before = written(world)
    procs = [subprocess.Popen(command(name, *args, b"order:\xff"), env=world.env(), cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for name, *args in NON_UTF8]
    for (name, *_), proc in zip(NON_UTF8, procs):
        out, err = proc.communicate(timeout=120)
        done = subprocess.CompletedProcess(name, proc.returncode, out.decode(), err.decode())
        one_line_usage_error(done, name, "not valid UTF-8")
    assert written(world) == before == (1, 1 if world.redis_url else 0)


@EVERY_BACKEND
def test_lone_surrogates_through_the_client_are_refused(world):
    import delayq

    config = delayq.Config(database_url=world.database_url, redis_url=world.redis_url, prefix=world.prefix,
                           allowed_modules=ALLOWED)
    with delayq.connect(config) as client:
        for options in ({"ext": "order:\udc80"}, {"args": {"\ud800": 1}}, {"args": {"k": "v\udfff"}},
                        {"queue": "q\udc80"}, {"ladder": "15,\udc80"}, {"at": "2030-01-01T00:00:00\udc80"}):
            with pytest.raises(delayq.InvalidInput):
                client.enqueue(NOOP, **options)
        with pytest.raises(delayq.InvalidInput, match="not valid UTF-8"):
            client.cancel(ext="order:\udc80")
        with pytest.raises(delayq.InvalidInput, match="lone surrogate"):
            delayq.Queue(client.manager).put("sms", {"to": "\ud83d"})
    assert written(world) == (0, 0)


@EVERY_BACKEND
def test_args_nested_5000_deep_through_the_client_and_a_pull_put(world):
    import delayq

    deep = nested = {}
    for _ in range(5000):
        nested["a"] = nested = {}
    config = delayq.Config(database_url=world.database_url, redis_url=world.redis_url, prefix=world.prefix,
                           allowed_modules=ALLOWED)
    with delayq.connect(config) as client:
        with pytest.raises(delayq.InvalidInput, match="nested more than 64 deep"):
            client.enqueue(NOOP, deep)
        with pytest.raises(delayq.InvalidInput, match="nested more than 64 deep"):
            client.enqueue_many([{"call": NOOP, "args": {"list": [deep]}}])
        with pytest.raises(delayq.InvalidInput, match="nested more than 64 deep"):
            delayq.Queue(client.manager).put("sms", [deep])
    assert written(world) == (0, 0)


@pytest.mark.parametrize("setting, value, words", [
    ("DELAYQ_DATABASE_URL", "mysql://shop:hunter2@db:99999/shop", ["DELAYQ_DATABASE_URL", "Port out of range"]),
    ("DELAYQ_DATABASE_URL", "mysql://shop:hunter2@[::1/shop", ["DELAYQ_DATABASE_URL", "Invalid IPv6 URL"]),
    ("DELAYQ_DATABASE_URL", "mysql://shop:hunter2@" + "a" * 64 + ".example/shop", ["DELAYQ_DATABASE_URL", "host"]),
    ("DELAYQ_DATABASE_URL", "mysql://shop:hunter2@db\x01:3306/shop", ["DELAYQ_DATABASE_URL", "control"]),
    ("DELAYQ_REDIS_URL", "redis://:hunter2@cache:99999/0", ["DELAYQ_REDIS_URL", "Port out of range"]),
    ("DELAYQ_REDIS_URL", "redis://:hunter2@[::1/0", ["DELAYQ_REDIS_URL", "Invalid IPv6 URL"]),
    ("DELAYQ_REDIS_URL", "redis://:hunter2@cache:6379/0?db=x", ["DELAYQ_REDIS_URL", "redis-py"]),
    ("DELAYQ_REDIS_URL", "redis://:hunter2@cache:6379/0?max_connections=-1", ["DELAYQ_REDIS_URL", "redis-py"]),
    ("DELAYQ_REDIS_URL", "redis://:hunter2@cache:6379/0?socket_timeout=0", ["DELAYQ_REDIS_TIMEOUT"]),
    ("DELAYQ_DB_TIMEOUT", "inf", ["DELAYQ_DB_TIMEOUT"]),
    ("DELAYQ_REDIS_TIMEOUT", "0", ["DELAYQ_REDIS_TIMEOUT", "1 s"]),
    ("DELAYQ_LEASE", "nan", ["DELAYQ_LEASE"]),
], ids=["db-port-99999", "db-ipv6-open", "db-label-64", "db-control", "redis-port-99999", "redis-ipv6-open",
        "redis-db-x", "redis-max-connections", "redis-url-timeout", "db-timeout-inf", "redis-timeout-0", "lease-nan"])
def test_malformed_settings_exit_2_in_every_script(tmp_path, in_process, setting, value, words):
    env = dict(os.environ, DELAYQ_DATABASE_URL=f"sqlite:///{tmp_path}/x.db", DELAYQ_ALLOWED_MODULES="examples",
               PYTHONPATH=ROOT)
    env[setting] = value
    for argv in (["enqueue_delayed.py", "--call", NOOP], ["run_due.py"], ["compensate.py"], ["list.py"]):
        done = in_process(env, *argv)
        one_line_usage_error(done, *words)
        assert "hunter2" not in done.stderr
    assert not (tmp_path / "x.db").exists()


# -- item 7 --------------------------------------------------------------------------------------------
@pytest.fixture
def broken_app(tmp_path):
    """An application package whose module fails at import (a bug in the app): delayq reports an internal error."""
    app = tmp_path / "app"
    (app / "brokenapp").mkdir(parents=True)
    (app / "brokenapp" / "__init__.py").write_text("")
    (app / "brokenapp" / "jobs.py").write_text("raise RuntimeError('settings module missing')\n")
    return app


@pytest.mark.parametrize("value, traceback", [("0", False), ("false", False), ("no", False), ("off", False),
                                              ("", False), (None, False), ("1", True), ("yes", True)])
def test_delayq_debug_0_shows_no_traceback(tmp_path, broken_app, value, traceback):
    env = dict(os.environ, DELAYQ_DATABASE_URL=f"sqlite:///{tmp_path}/x.db", DELAYQ_ALLOWED_MODULES="brokenapp",
               DELAYQ_APP_PATH=str(broken_app), PYTHONPATH=ROOT)
    env.pop("DELAYQ_DEBUG", None)
    if value is not None:
        env["DELAYQ_DEBUG"] = value
    done = script(env, "enqueue_delayed.py", "--call", "brokenapp.jobs:send", check=1)
    assert ("Traceback" in done.stderr) is traceback, done.stderr
    if not traceback:
        assert done.stderr == ("enqueue_delayed.py: internal error: RuntimeError: settings module missing "
                               "(set DELAYQ_DEBUG=1 for the traceback)\n")


@EVERY_BACKEND
def test_max_attempts_1e9_in_delayq_queues_is_refused_naming_the_key(world, in_process):
    env = dict(world.env(), DELAYQ_QUEUES='{"sms": {"ladder": "15,30", "max_attempts": 1e9}}')
    done = in_process(env, "enqueue_delayed.py", "--call", NOOP, "--queue", "sms")
    one_line_usage_error(done, "DELAYQ_QUEUES['sms'].max_attempts", "1 to 10000")
    one_line_usage_error(in_process(env, "run_due.py", "--queue", "sms"), "DELAYQ_QUEUES['sms'].max_attempts")
    assert written(world) == (0, 0)


@EVERY_BACKEND
def test_a_package_init_module_is_refused_before_it_is_imported(world, tmp_path):
    """pkg.__init__:x used to import the package's __init__ a second time, as a module of its own."""
    app = tmp_path / "app"
    (app / "pkg").mkdir(parents=True)
    imports = tmp_path / "imports.log"
    (app / "pkg" / "__init__.py").write_text(
        "import delayq\n"
        f"open({str(imports)!r}, 'a').write(__name__ + '\\n')\n"
        "@delayq.job\n"
        "def x() -> None:\n"
        "    pass\n")
    env = dict(world.env(), DELAYQ_ALLOWED_MODULES="examples,pkg", DELAYQ_APP_PATH=str(app))
    for call in ("pkg.__init__:x", "pkg.__init__.sub:x", "pkg:__init__"):
        one_line_usage_error(script(env, "enqueue_delayed.py", "--call", call), "dunder")
    assert not imports.exists()
    assert written(world) == (0, 0)
    script(env, "enqueue_delayed.py", "--call", "pkg:x", check=0)      # the package itself is fine
    assert imports.read_text() == "pkg\n"


# -- rows edited by hand ----------------------------------------------------------------------------------
def edits(world) -> list[tuple[str, str]]:
    """(column, SQL value) pairs the column allows: SQLite's REAL takes inf and text, MySQL's DOUBLE neither."""
    common = [("due_at", "1e300"), ("due_at", "-1e300"), ("deadline", "1.7976931348623157e308"),
              ("created_at", "-1e300"), ("started_at", "1e300"), ("finished_at", "1e300")]
    if world.database_url.startswith("sqlite"):
        common += [("deadline", "'inf'"), ("due_at", "9e999"), ("due_at", "-9e999"), ("deadline", "'soon'"),
                   ("lease_until", "9e999"), ("updated_at", "'x'"), ("due_at", "'abc'"), ("lease_seconds", "9e999")]
    return common


@EVERY_BACKEND
def test_rows_edited_out_of_range_are_displayed_not_crashed_on(world, in_process, tmp_path):
    env = world.env()
    cases = edits(world)
    ids = []
    for n in range(len(cases)):
        out = in_process(env, "enqueue_delayed.py", "--call", NOOP, "--ext", f"edited:{n}", "--delay", "600",
                         "--deadline", "1d", "--json", check=0)
        ids.append(json.loads(out.stdout)["id"])
    for job, (column, value) in zip(ids, cases):
        world.sql(f"UPDATE {{jobs}} SET {column} = {value} WHERE id = ?", job)
    world.sql("INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome) VALUES (?, 1, ?, ?, 'failed')",
              ids[0], -1e300, 1e300)

    listed = in_process(env, "list.py", check=0).stdout
    assert "(out of range)" in listed
    rows = strict_json(in_process(env, "list.py", "--json", check=0).stdout)["jobs"]
    assert len(rows) == len(cases)
    for job, (column, value) in zip(ids, cases):
        shown = in_process(env, "show.py", "--id", str(job), check=0).stdout
        data = strict_json(in_process(env, "show.py", "--id", str(job), "--json", check=0).stdout)["jobs"][0]
        field = {"lease_seconds": "lease"}.get(column, column)
        assert data[field].endswith("(out of range)"), (column, value, data)
        assert field == "lease" or "(out of range)" in shown, shown
    prom = tmp_path / "delayq.prom"
    stats = strict_json(in_process(env, "stats.py", "--json", "--prom", str(prom), check=0).stdout)["queues"]
    assert stats["default"]["counts"]["pending"] == len(cases)
    assert in_process(env, "stats.py", check=0).stdout.startswith("queue")
    for line in prom.read_text().splitlines():
        if not line.startswith("#"):
            value = line.rsplit(" ", 1)[1]
            assert value in ("+Inf", "-Inf", "NaN") or math.isfinite(float(value)), line


def test_a_database_password_outside_latin1_connects(mariadb, in_process):
    """PyMySQL encodes a str password as latin-1: '密码' was an internal error, and 'pä€' could never log in."""
    import pymysql
    from urllib.parse import quote

    password = "密码pä€"
    admin = pymysql.connect(host="127.0.0.1", port=mariadb.port, user="root", database="test", charset="utf8mb4")
    with admin.cursor() as cur:
        cur.execute("CREATE USER IF NOT EXISTS 'shop'@'127.0.0.1' IDENTIFIED BY %s", (password,))
        cur.execute("GRANT ALL ON test.* TO 'shop'@'127.0.0.1'")
    admin.close()
    url = f"mysql://shop:{quote(password)}@127.0.0.1:{mariadb.port}/test"
    env = dict(os.environ, DELAYQ_DATABASE_URL=url, DELAYQ_ALLOWED_MODULES="examples", DELAYQ_PREFIX="unicodepw",
               PYTHONPATH=ROOT)
    assert "applied migration(s)" in script(env, "migrate.py", check=0).stdout
    in_process(env, "enqueue_delayed.py", "--call", NOOP, check=0)
    wrong = dict(env, DELAYQ_DATABASE_URL=url.replace(quote(password), quote("密码pä")))
    denied = in_process(wrong, "list.py", check=1)
    assert "access denied for user 'shop'" in denied.stderr and "密码" not in denied.stderr
