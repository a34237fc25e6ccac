"""The operator's side through the real scripts, as the on-call engineer runs them: broken configurations,
bulk actions, paused queues, runners that died, Prometheus metrics, and the messages of issue 12."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import urllib.request

import pymysql
import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from delayq.clock import SystemClock
from tests.conftest import MYSQL_URL, REDIS_URL, ROOT, make_backend, new_prefix
from tests.helpers import as_json, command, script, until

NOOP = "examples.shop:noop"
FAILS = "examples.shop:refund_rejected"


def jsonl(path, items):
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return str(path)


# -- fail fast: each broken configuration exits 1 with its own message, and writes nothing ---------------
def _mysql_tables(prefix):
    conn = pymysql.connect(host="127.0.0.1", user="root", database="test")
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_name LIKE %s", (prefix + "\\_%",))
        found = cur.fetchone()[0]
    conn.close()
    return found


BROKEN = {
    "wrong password": ("mysql", {"DELAYQ_DATABASE_URL": MYSQL_URL.replace("root@", "root:hunter2@")},
                       "access denied for user 'root': check the user and password"),
    "unknown database": ("mysql", {"DELAYQ_DATABASE_URL": MYSQL_URL.rsplit("/", 1)[0] + "/no_such_db_dq"},
                         "unknown database 'no_such_db_dq': create it"),
    "never migrated": ("mysql+redis", {"DELAYQ_PREFIX": "fresh"}, ': run "delayq migrate" to create them'),
    "redis password": ("mysql+redis", {"DELAYQ_REDIS_URL": "redis://bob:hunter2@127.0.0.1:6379/0"},
                       "Redis at redis://127.0.0.1:6379/0: authentication failed: check the user and password"),
    "redis database": ("mysql+redis", {"DELAYQ_REDIS_URL": "redis://127.0.0.1:6379/99"}, "no such database number"),
    "redis refused": ("sqlite+redis", {"DELAYQ_REDIS_URL": "redis://127.0.0.1:1/0"},
                      "Redis at redis://127.0.0.1:1/0 is unreachable"),
    "schema too new": ("sqlite", {}, "newer than this delayq"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_each_broken_configuration_exits_1_with_its_own_message_and_writes_nothing(case, tmp_path):
    kind, changes, message = BROKEN[case]
    backend = make_backend(kind, tmp_path, SystemClock())
    try:
        env = dict(backend.env(), **changes)
        if changes.get("DELAYQ_PREFIX"):
            env["DELAYQ_PREFIX"] = prefix = new_prefix()
        if case == "schema too new":
            backend.manager().check_ready()
            backend.sql("INSERT INTO " + backend.prefix + "_migrations (version, applied_at) VALUES (99, 0)")
        for name, args in (("enqueue_delayed.py", ["--call", NOOP]), ("compensate.py", []),
                           ("retry.py", ["--id", "1"]), ("pause.py", ["sms"])):
            done = script(env, name, *args, check=1)
            assert message in done.stderr and done.stderr.count("\n") == 1, (name, done.stderr)
            assert "hunter2" not in done.stderr and "Traceback" not in done.stderr
        if changes.get("DELAYQ_PREFIX"):
            assert _mysql_tables(prefix) == 0
            assert not list(redis.Redis.from_url(REDIS_URL).scan_iter(match="{" + prefix + "*"))
        elif case != "schema too new":
            assert backend.sql("SELECT COUNT(*) FROM {jobs}")[0][0] == 0
            assert backend.manager().control.paused_queues() == {}
    finally:
        backend.cleanup()


# -- bulk actions -------------------------------------------------------------------------------
def test_bulk_cancel_retry_purge_by_filters_with_dry_run_and_yes(world, tmp_path):
    promos = [{"call": NOOP, "queue": "sms", "ext": f"promo:{i}", "delay": 600} for i in range(101)]
    script(world, "enqueue_delayed.py", "--from-file", jsonl(tmp_path / "a.jsonl", promos), check=0)
    dry = as_json(script(world, "cancel.py", "--queue", "sms", "--dry-run", "--json", check=0))
    assert (dry["would_cancel"], dry["per_queue"], len(dry["ids"]), dry["dry_run"]) == (101, {"sms": 101}, 20, True)
    refused = script(world, "cancel.py", "--queue", "sms", check=2)
    assert "101 jobs match (sms 101): add --yes" in refused.stderr and refused.stderr.count("\n") == 1
    some = as_json(script(world, "cancel.py", "--ext-prefix", "promo:1", "--queue", "sms", "--json", check=0))
    assert some["cancelled"] == 12 and some["complete"] and some["queues"] == ["sms"]     # promo:1, 10-19, 100
    rest = script(world, "cancel.py", "--queue", "sms", "--since", "5m", "--time", "due", "--yes", check=0).stdout
    assert rest.startswith("cancelled 89 job(s) in 1 queue(s): sms 89 (ids ")

    failing = [{"call": FAILS, "args": {"order_id": i}, "queue": q, "ext": "order:7"} for i, q in ((1, "mail"), (2, "erp"))]
    script(world, "enqueue_delayed.py", "--from-file", jsonl(tmp_path / "b.jsonl", failing), check=0)
    script(world, "run_due.py", "--queue", "mail,erp", check=0)
    [a, b] = [j["id"] for j in as_json(script(world, "list.py", "--call", FAILS, "--status", "failed", "--json",
                                               check=0))["jobs"]]
    retried = as_json(script(world, "retry.py", "--id", str(a), "--id", str(b), "--json", check=0))
    assert sorted(retried["ids"]) == sorted([a, b])                  # --id given twice keeps both
    script(world, "run_due.py", "--queue", "mail,erp", check=0)
    by_error = as_json(script(world, "retry.py", "--error", "already refunded", "--status", "failed", "--until", "0s",
                              "--time", "finished", "--queue", "mail", "--json", check=0))
    assert by_error["per_queue"] == {"mail": 1}
    text = script(world, "cancel.py", "--ext", "order:7", check=0).stdout            # no --queue: it says which
    assert "cancelled 1 job(s)" in text and "in queue(s) mail" in text and "left alone" not in text
    again = script(world, "cancel.py", "--ext", "order:7", check=3)
    assert "is cancelled" in again.stderr and "only pending jobs can be cancelled" in again.stderr

    dry = as_json(script(world, "purge.py", "--status", "cancelled", "--dry-run", "--json", check=0))
    assert dry["would_purge"] == 102 and dry["per_queue"] == {"sms": 101, "mail": 1}
    assert "add --yes" in script(world, "purge.py", "--status", "cancelled", check=2).stderr
    purged = as_json(script(world, "purge.py", "--status", "cancelled", "--yes", "--json", check=0))
    assert purged["deleted"] == 102 and purged["statuses"] == ["cancelled"]
    kept = as_json(script(world, "list.py", "--queue", "sms", "--queue", "mail", "--queue", "erp", "--json", check=0))
    assert [j["status"] for j in kept["jobs"]] == ["failed"]                       # erp's, never retried by --queue mail
    assert "purge needs a filter" in script(world, "purge.py", check=2).stderr


def test_list_pages_with_before_and_names_a_pull_mode_tube(world):
    from delayq.pull import Queue

    ids = [Queue(world.manager()).put("sms-in", {"n": i}) for i in range(3)]
    first = as_json(script(world, "list.py", "--queue", "~sms-in", "--limit", "2", "--json", check=0))
    assert [j["id"] for j in first["jobs"]] == ids[:0:-1] and first["next_before"] == ids[1]
    text = script(world, "list.py", "--queue", "~sms-in", "--before", str(ids[1]), check=0).stdout
    assert f"\n{ids[0]} " in text and "~sms-in" in text and "more:" not in text


def test_a_reader_that_closes_the_pipe_ends_a_command_quietly(world):
    """`delayq list | head`: the reader goes away before the command writes; the command stops with 141 (128 +
    SIGPIPE, what a shell reports) and says nothing, where it said "internal error: BrokenPipeError" (exit 1)."""
    world.manager().enqueue("examples.shop:noop")
    proc = subprocess.Popen(command("list.py"), env=world.env(), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()                           # the only reader is gone: any write fails with EPIPE
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141 and err == "", err


# -- pause and resume ------------------------------------------------------------------------------
def test_pause_and_resume_a_queue_through_the_scripts(world):
    script(world, "pause.py", "sms", "--reason", "gateway down", check=0)
    job = as_json(script(world, "enqueue_delayed.py", "--call", NOOP, "--queue", "sms", "--json", check=0))
    assert as_json(script(world, "run_due.py", "--queue", "sms", "--json", check=0))["claimed"] == 0
    stats = as_json(script(world, "stats.py", "--json", check=0))["queues"]["sms"]
    assert stats["paused"] and stats["paused_reason"] == "gateway down" and stats["due_now"] == 1
    assert stats["oldest_due_lag_s"] == 0                                        # waiting, not late
    assert "queue sms is paused since" in script(world, "list.py", "--queue", "sms", check=0).stdout
    assert "resumed queue sms" in script(world, "resume.py", "--queue", "sms", check=0).stdout   # either form
    ran = as_json(script(world, "run_due.py", "--queue", "sms", "--json", check=0))
    assert ran["succeeded"] == 1
    assert as_json(script(world, "show.py", "--id", str(job["id"]), "--json", check=0))["jobs"][0]["status"] == "succeeded"


# -- runners you can see ------------------------------------------------------------------------
RUNNER = """
import sys, time
from delayq import app
from delayq.workers import Heartbeat
manager = app.open_manager()
beat = Heartbeat(manager.control, ["default", "sms"], 4, lambda: [(7, manager.clock.now() - 1)], every=0.2).start()
print("ready", beat.id, flush=True)
if sys.argv[1] == "stop":
    beat.stop()
    print("stopped", flush=True)
time.sleep(600)
"""


def test_a_killed_runner_shows_as_stopped_beating_and_a_clean_stop_as_stopped(world):
    def runner(how):
        proc = subprocess.Popen([sys.executable, "-c", RUNNER, how], env=world.env(), cwd=ROOT, stdout=subprocess.PIPE,
                                text=True)
        return proc, proc.stdout.readline().split()[1]

    def state(worker_id):
        found = as_json(script(world, "workers.py", "--json", check=0))["workers"]
        return {w["id"]: w for w in found}[worker_id]

    killed, killed_id = runner("kill")
    clean, clean_id = runner("stop")
    try:
        live = state(killed_id)
        assert killed_id in {w["id"] for w in as_json(script(world, "workers.py", "--live", "--json", check=0))["workers"]}
        assert live["state"] == "live" and live["queues"] == ["default", "sms"] and live["concurrency"] == 4
        assert [job["id"] for job in live["running"]] == [7] and live["pid"] == killed.pid
        killed.kill()
        killed.wait()
        until(lambda: state(killed_id)["state"] == "lost")
        until(lambda: clean.stdout.readline().strip() == "stopped")
        assert state(clean_id)["state"] == "stopped"
        text = script(world, "workers.py", check=0).stdout
        assert "stopped beating" in text and "live" not in text
        assert as_json(script(world, "workers.py", "--live", "--json", check=0))["workers"] == []
        seen = as_json(script(world, "workers.py", "--since", "10m ago", "--json", check=0))["workers"]
        assert {w["id"] for w in seen} >= {killed_id, clean_id}
        assert as_json(script(world, "workers.py", "--since", "2000-01-01T00:00:00Z", "--json",
                              check=0))["workers"] != []
        future = script(world, "workers.py", "--since", "2100-01-01T00:00:00Z", check=0).stdout
        assert "no runner matches" in future
    finally:
        for proc in (killed, clean):
            proc.kill()
            proc.wait()


# -- metrics -----------------------------------------------------------------------------------
def test_metrics_endpoint_serves_the_values_of_a_known_run(world, tmp_path):
    jobs = [{"call": NOOP}, {"call": NOOP}, {"call": FAILS, "args": {"order_id": 1}},
            {"call": "examples.shop:flaky_sync", "args": {"order_id": 2}, "ladder": "0"},
            {"call": NOOP, "delay": 600}]
    script(world, "enqueue_delayed.py", "--from-file", jsonl(tmp_path / "j.jsonl", jobs), check=0)
    script(world, "run_due.py", check=0)
    script(world, "run_due.py", check=0)                        # the flaky one's second attempt
    script(world, "cancel.py", "--queue", "default", "--status", "pending", check=0)
    server = subprocess.Popen(command("metrics.py", "--listen", "127.0.0.1:0"),
                              env=world.env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().split()[2]
        body = urllib.request.urlopen(url, timeout=10).read().decode()
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=10) == 0
    values = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for family in text_string_to_metric_families(body) for s in family.samples}

    def get(name, **labels):
        return values[(name, tuple(sorted(labels.items())))]

    assert get("delayq_up") == 1
    counted = {name: get(f"delayq_jobs_{name}_total", queue="default")
               for name in ("enqueued", "succeeded", "failed", "retried", "cancelled", "timed_out")}
    assert counted == {"enqueued": 5, "succeeded": 3, "failed": 1, "retried": 1, "cancelled": 1, "timed_out": 0}
    assert get("delayq_job_duration_seconds_count", queue="default") == 5
    assert get("delayq_job_lateness_seconds_count", queue="default") == 5
    assert get("delayq_job_lateness_seconds_bucket", queue="default", le="+Inf") == 5
    assert get("delayq_jobs", queue="default", status="succeeded") == 3
    assert get("delayq_workers", state="live") == 0
    prom = tmp_path / "delayq.prom"
    script(world, "stats.py", "--prom", str(prom), check=0)
    assert 'delayq_jobs_succeeded_total{queue="default"} 3.0' in prom.read_text()


# -- messages --------------------------------------------------------------------------------------
def test_stats_prom_into_a_missing_directory_is_one_line(world):
    done = script(world, "stats.py", "--prom", "/nonexistent/dir/delayq.prom", check=2)
    assert done.stderr.count("\n") == 1 and "directory /nonexistent/dir does not exist" in done.stderr


def test_show_prints_the_whole_traceback_of_each_attempt(world):
    args = ["--call", "examples.shop:flaky_sync", "--args", '{"order_id": 1, "fail_times": 9}', "--ladder", "0",
            "--max-attempts", "2", "--json"]
    job = as_json(script(world, "enqueue_delayed.py", *args, check=0))["id"]
    script(world, "run_due.py", check=0)
    script(world, "run_due.py", check=0)
    text = script(world, "show.py", "--id", str(job), check=0).stdout
    assert text.count('raise ConnectionError(f"ERP timed out (attempt {attempt})")') == 3   # last error + 2 attempts
    assert text.count("in flaky_sync") == 3


def test_a_reexported_job_is_accepted_and_runs(world):
    script(world, "enqueue_delayed.py", "--call", "examples.reexport:noop", check=0)
    assert as_json(script(world, "run_due.py", "--json", check=0))["succeeded"] == 1


@pytest.mark.parametrize("world", ["sqlite"], indirect=True)
def test_stats_watch_refreshes_until_ctrl_c(world):
    proc = subprocess.Popen(command("stats.py", "--watch", "0.2"), env=world.env(),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []

    def refreshed():
        if select.select([proc.stdout], [], [], 0.1)[0]:
            seen.append(proc.stdout.readline())
        return sum(line.startswith("runners:") for line in seen) >= 3

    try:
        until(refreshed)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "Traceback" not in err
