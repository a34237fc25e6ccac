"""The bin/ scripts as a user runs them: subprocesses, real servers, real exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter

import pytest

from delayq.config import describe
from tests.conftest import ROOT
from tests.helpers import BIN, as_json, command, script, until


def test_enqueue_cancel_run_show(world):
    now = script(world, "enqueue_delayed.py", "--call", "examples.shop:auto_confirm", "--args", '{"order_id": 1}',
                 "--ext", "order:1", "--json", check=0)
    first = as_json(now)
    assert first["status"] == "pending" and first["created"] is True
    later = as_json(script(world, "enqueue_delayed.py", "--call", "examples.shop:auto_confirm",
                           "--args", '{"order_id": 2}', "--delay", "86400", "--ext", "order:2", "--json", check=0))
    assert as_json(script(world, "cancel.py", "--ext", "order:2", "--json", check=0))["ids"] == [later["id"]]
    ran = as_json(script(world, "run_due.py", "--json", check=0))
    assert (ran["claimed"], ran["succeeded"]) == (1, 1)
    shown = as_json(script(world, "show.py", "--id", str(first["id"]), "--json", check=0))["jobs"][0]
    assert shown["status"] == "succeeded" and shown["attempts_history"][0]["outcome"] == "succeeded"
    assert as_json(script(world, "show.py", "--ext", "order:2", "--json", check=0))["jobs"][0]["status"] == "cancelled"
    again = script(world, "cancel.py", "--ext", "order:2", check=3)
    assert "job %d is cancelled" % later["id"] in again.stderr
    text = script(world, "show.py", "--id", str(first["id"]), check=0).stdout
    assert "status: succeeded" in text and "#1" in text


def test_unique_enqueue_returns_the_same_id(world):
    args = ["--call", "examples.shop:noop", "--delay", "60", "--ext", "order:5", "--unique", "--json"]
    a = as_json(script(world, "enqueue_delayed.py", *args, check=0))
    b = as_json(script(world, "enqueue_delayed.py", *args, check=0))
    assert a["id"] == b["id"] and b["created"] is False


@pytest.mark.parametrize("args, message", [
    (["--call", "examples.shop:noop", "--args", "{nope"], "not valid JSON"),
    (["--call", "examples.shop:noop", "--args", "[1]"], "JSON object"),
    (["--call", "examples.shop"], "not of the form"),
    (["--call", "os:system", "--args", '{"command": "id"}'], "not under DELAYQ_ALLOWED_MODULES"),
    (["--call", "examples.shop:not_a_job"], "not marked"),
    (["--call", "examples.shop:noop", "--delay", "-3"], "between 0 s and 100 years"),
    (["--call", "examples.shop:noop", "--delay", "abc"], "'abc' is not a duration: use seconds or 15s"),
    (["--call", "examples.shop:noop", "--at", "2001-01-01T00:00:00Z"], "in the past"),
    (["--call", "examples.shop:noop", "--ext", "x" * 200], "at most 191"),
    (["--call", "examples.shop:noop", "--ext", "a\tb"], "control characters"),
    (["--call", "examples.shop:noop", "--ladder", "monthly"], "unknown ladder"),
    (["--call", "examples.shop:noop", "--delay", "1", "--at", "2030-01-01T00:00:00Z"], "not allowed with"),
    (["--bogus"], "unrecognized arguments"),
    (["--from-file", "jobs.jsonl", "--ext", "order:1"], "drop --call and the other job flags"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(world, args, message):
    done = script(world, "enqueue_delayed.py", *args, check=2)
    assert message in done.stderr and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    ran = as_json(script(world, "run_due.py", "--json", check=0))
    assert ran["claimed"] == 0


def test_bulk_file_reports_the_bad_line_and_enqueues_nothing(world, tmp_path):
    good = json.dumps({"call": "examples.shop:noop", "ext": "bulk"})
    path = tmp_path / "jobs.jsonl"
    path.write_text("\n".join([good, good, "", json.dumps({"call": "examples.shop:noop", "delay": -1}), good]) + "\n")
    done = script(world, "enqueue_delayed.py", "--from-file", str(path), check=2)
    assert f"{path} line 4:" in done.stderr and "nothing was enqueued" in done.stderr
    script(world, "show.py", "--ext", "bulk", check=3)
    path.write_text("\n".join([good] * 3) + "\n{broken\n")
    assert "line 4: not valid JSON" in script(world, "enqueue_delayed.py", "--from-file", str(path), check=2).stderr
    path.write_text("\n".join([good] * 3) + "\n")
    assert as_json(script(world, "enqueue_delayed.py", "--from-file", str(path), "--json", check=0))["enqueued"] == 3
    assert len(as_json(script(world, "show.py", "--ext", "bulk", "--json", check=0))["jobs"]) == 3


def test_backend_down_is_exit_1_without_credentials(world):
    env = world.env()
    env["DELAYQ_DATABASE_URL"] = "mysql://shop:hunter2@127.0.0.1:1/shop"
    env.pop("DELAYQ_REDIS_URL", None)
    for name, args in (("enqueue_delayed.py", ["--call", "examples.shop:noop"]), ("run_due.py", []),
                       ("cancel.py", ["--id", "1"]), ("show.py", ["--id", "1"]), ("migrate.py", [])):
        done = script(env, name, *args, check=1)
        assert "MySQL at mysql://127.0.0.1:1/shop" in done.stderr and "hunter2" not in done.stderr + done.stdout
        assert "Traceback" not in done.stderr
    env = world.env()
    env["DELAYQ_REDIS_URL"] = "redis://:hunter2@127.0.0.1:1/0"
    done = script(env, "run_due.py", check=1)
    assert "Redis at redis://127.0.0.1:1/0" in done.stderr and "hunter2" not in done.stderr


def test_migrate_is_idempotent(world):
    first = as_json(script(world, "migrate.py", "--json", check=0))
    # the fixture migrated already (a new SQLite file's first migrate: tests/acceptance/test_which_database.py)
    assert first["applied"] == [] and first["prefix"] == world.prefix
    assert "schema up to date" in script(world, "migrate.py", check=0).stdout


def test_help_for_every_script(world):
    for name in ("enqueue_delayed.py", "cancel.py", "run_due.py", "show.py", "migrate.py"):
        assert "usage:" in script(world, name, "--help", check=0).stdout
    assert "STEP" in subprocess.run([os.path.join(BIN, "loop.sh"), "--help"], capture_output=True, text=True).stdout


def test_two_runners_run_each_of_2000_jobs_exactly_once(world, tmp_path):
    log = tmp_path / "effects.log"
    jobs = tmp_path / "jobs.jsonl"
    # Due in 3 s, so that both runners are up when they fall due (one runner alone runs 2,000 no-op jobs in well
    # under the second runner's start-up); 10 ms each, so one runner alone would need over a second for them all.
    job = {"call": "examples.shop:span", "args": {"path": str(log), "seconds": 0.01}, "delay": 3}
    jobs.write_text("".join(json.dumps(job) + "\n" for _ in range(2000)))
    script(world, "enqueue_delayed.py", "--from-file", str(jobs), check=0)
    cmd = command("run_due.py", "--for", "120", "--interval", "0.2", "--json")
    procs = [subprocess.Popen(cmd, env=world.env(), cwd=ROOT, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        until(lambda: log.exists() and log.read_text().count("\n") >= 2000, timeout=110, every=0.1)
    finally:
        for p in procs:                                      # done (or out of time): both stop as cron's would
            p.send_signal(signal.SIGTERM)
        outs = [p.communicate(timeout=60)[0] for p in procs]
    results = [json.loads(out) for out in outs]
    assert all(p.returncode == 0 for p in procs)
    counts = Counter(line.split()[1] for line in log.read_text().splitlines())
    assert len(counts) == 2000 and set(counts.values()) == {1}
    assert sum(r["succeeded"] for r in results) == 2000
    assert all(r["claimed"] > 0 for r in results), results   # both really took part


def test_loop_runs_on_fixed_ticks_and_never_overlaps(tmp_path):
    out = tmp_path / "ticks.log"
    env = dict(os.environ, DELAYQ_LOOP_SECONDS="3", DELAYQ_LOOP_LOCK=str(tmp_path / "loop.lock"))
    cmd = [os.path.join(BIN, "loop.sh"), "1", "sh", "-c", f"echo tick >> {out}"]
    first = subprocess.Popen(cmd, env=env)
    until(lambda: out.exists() and out.read_text(), timeout=10, every=0.01)       # first holds the lock now
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
    first.wait(timeout=30)
    assert first.returncode == 0 and second.returncode == 0
    assert "still holds" in second.stderr
    assert out.read_text().count("tick") == 3


def test_loop_a_slow_run_keeps_its_slot_and_the_ticks_go_on(tmp_path):
    out, flag = tmp_path / "ticks.log", tmp_path / "first"
    env = dict(os.environ, DELAYQ_LOOP_SECONDS="4", DELAYQ_LOOP_LOCK=str(tmp_path / "loop.lock"))
    slow_once = f"if [ ! -e {flag} ]; then touch {flag}; sleep 6; echo slow-done >> {out}; fi; echo tick >> {out}"
    started = time.monotonic()
    done = subprocess.run([os.path.join(BIN, "loop.sh"), "1", "sh", "-c", slow_once], env=env, timeout=30)
    took = time.monotonic() - started
    assert done.returncode == 0 and took < 5.5              # the loop ended with its minute, not with the slow run
    assert out.read_text().count("tick") == 3               # ticks 1, 2 and 3 ran in the other slot
    until(lambda: "slow-done" in out.read_text(), timeout=10)    # the slow run went on to its end


def test_loop_stops_on_a_usage_error_and_says_so_once(tmp_path):
    out = tmp_path / "runs.log"
    env = dict(os.environ, DELAYQ_LOOP_SECONDS="5", DELAYQ_LOOP_LOCK=str(tmp_path / "loop.lock"))
    done = subprocess.run([os.path.join(BIN, "loop.sh"), "1", "sh", "-c", f"echo run >> {out}; exit 2"],
                          env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and done.stderr.count("usage error") == 1
    assert out.read_text().count("run") == 1


def test_loop_passes_on_the_command_failure_and_rejects_bad_step(tmp_path):
    env = dict(os.environ, DELAYQ_LOOP_SECONDS="2", DELAYQ_LOOP_LOCK=str(tmp_path / "l.lock"))
    assert subprocess.run([os.path.join(BIN, "loop.sh"), "1", "false"], env=env, timeout=30).returncode == 1
    bad = subprocess.run([os.path.join(BIN, "loop.sh"), "0", "true"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "STEP" in bad.stderr


def test_compensate_retry_purge_scripts(world, tmp_path):
    failing = as_json(script(world, "enqueue_delayed.py", "--call", "examples.shop:refund_rejected",
                             "--args", '{"order_id": 8}', "--ext", "order:8", "--json", check=0))
    script(world, "run_due.py", check=0)
    summary = as_json(script(world, "compensate.py", "--json", check=0))
    assert summary["requeued"] == 0 and summary["failed"] == 0 and "seconds" in summary
    assert "no job with ext" in script(world, "retry.py", "--ext", "order:none", check=3).stderr
    retried = as_json(script(world, "retry.py", "--id", str(failing["id"]), "--json", check=0))
    assert retried["ids"] == [failing["id"]]
    assert as_json(script(world, "run_due.py", "--json", check=0))["failed"] == 1
    assert as_json(script(world, "purge.py", "--older-than", "0", "--json", check=0))["deleted"] == 0
    purged = as_json(script(world, "purge.py", "--older-than", "0", "--status", "failed", "--json", check=0))
    assert purged["deleted"] == 1
    script(world, "show.py", "--id", str(failing["id"]), check=3)
    assert "final statuses only" in script(world, "purge.py", "--older-than", "1d", "--status", "pending", check=2).stderr
    assert "not a duration" in script(world, "purge.py", "--older-than", "soon", check=2).stderr


def test_compensate_says_when_redis_is_unreachable(world):
    env = world.env()
    env["DELAYQ_REDIS_URL"] = "redis://127.0.0.1:1/0"
    done = script(env, "compensate.py", check=1)
    assert "Redis at redis://127.0.0.1:1/0" in done.stderr and "Traceback" not in done.stderr


def test_emit_list_stats_scripts(world, tmp_path):
    env = dict(world.env(), DELAYQ_EVENT_MODULES="examples.events")
    log = tmp_path / "e.log"
    data = json.dumps({"order_id": 3, "path": str(log), "total": 900})
    emitted = as_json(script(env, "emit.py", "order.completed", "--data", data, "--ext", "order:3", "--json",
                             check=0))
    assert len(emitted["ids"]) == 3
    shown = as_json(script(env, "show.py", "--event", emitted["event_id"], "--json", check=0))["jobs"]
    assert sorted(j["id"] for j in shown) == sorted(emitted["ids"])
    assert "no handler for event" in script(env, "emit.py", "order.lost", check=2).stderr
    script(env, "run_due.py", "--queue", "default,mail", check=0)
    listed = as_json(script(world, "list.py", "--ext-prefix", "order:", "--json", check=0))["jobs"]
    assert [j["id"] for j in listed] == sorted(emitted["ids"], reverse=True)
    assert {j["status"] for j in listed} == {"succeeded"}
    none = script(world, "list.py", "--status", "failed", check=0).stdout      # and which database it looked in
    where = describe(world.database_url)                                        # no user, no password
    assert f"(no jobs in {where}, prefix {world.prefix})" in none
    prom = tmp_path / "delayq.prom"
    report = as_json(script(world, "stats.py", "--json", "--prom", str(prom), check=0))
    assert (report["database"], report["prefix"]) == (where, world.prefix)
    assert f"database: {where}, prefix {world.prefix}" in script(world, "stats.py", check=0).stdout
    stats = report["queues"]
    assert stats["default"]["counts"]["succeeded"] == 2 and stats["mail"]["succeeded_1h"] == 1
    assert 'delayq_jobs{queue="mail",status="succeeded"} 1' in prom.read_text()
    assert "queue" in script(world, "stats.py", check=0).stdout


def test_run_due_logs_one_line_per_outcome_in_kv_or_json(world):
    script(world, "enqueue_delayed.py", "--call", "examples.shop:noop", check=0)
    line = script(world, "run_due.py", check=0).stderr.strip()
    assert "level=info job=" in line and "outcome=succeeded" in line and "ms=" in line
    script(world, "enqueue_delayed.py", "--call", "examples.shop:noop", check=0)
    record = json.loads(script(world, "run_due.py", check=0, DELAYQ_LOG_FORMAT="json").stderr)
    assert record["outcome"] == "succeeded" and record["call"] == "examples.shop:noop"
