"""The concurrent runner as cron runs it: real run_due.py processes with worker processes, real servers.

Overlap is observed (jobs record when they start and end), never assumed; a runner is killed
with SIGKILL, stopped with SIGTERM; jobs hang, end their own process, raise SystemExit.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections import Counter

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import ROOT
from tests.helpers import as_json, command, environ, script, until


def runner(world, *args, **extra):
    return subprocess.Popen(command("run_due.py", "--json", "-q", *args), env=environ(world, **extra), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def enqueue(world, jobs):
    path = f"/tmp/delayq-{world.prefix}-jobs.jsonl"
    with open(path, "w") as f:
        f.writelines(json.dumps(job) + "\n" for job in jobs)
    return as_json(script(world, "enqueue_delayed.py", "--from-file", path, "--json", check=0))["ids"]


def statuses(world):
    return Counter(dict(world.sql("SELECT status, COUNT(*) FROM {jobs} GROUP BY status")))


def lines(path):
    return [line.split() for line in open(path)] if os.path.exists(path) else []


def test_jobs_run_at_once(world, tmp_path):
    log = tmp_path / "spans.log"
    enqueue(world, [{"call": "examples.shop:span", "args": {"path": str(log), "seconds": 0.5}}] * 8)
    started = time.monotonic()
    done = script(world, "run_due.py", "--concurrency", "8", "--json", check=0)
    took = time.monotonic() - started
    assert json.loads(done.stdout)["succeeded"] == 8
    spans = [(float(a), float(b)) for _, _, _, a, b in lines(log)]
    most = max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans)
    assert most == 8, spans                          # all eight were running at one moment
    assert took < 4.0                                # one after another would take 4 s of sleeping alone


def test_a_job_handed_to_a_process_of_its_own_is_counted_once(world, tmp_path):
    """An at-most-once job runs alone in a process of its own: its worker claimed it and hands it off; the summary
    said claimed=2 for one job (the solo counted the claim again; found by running docs/JOBS.md's example)."""
    enqueue(world, [{"call": "examples.shop:charge", "args": {"path": str(tmp_path / "effects.log")}},
                    {"call": "examples.shop:noop"}])
    done = json.loads(script(world, "run_due.py", "--json", check=0).stdout)
    assert (done["claimed"], done["succeeded"]) == (2, 2), done


def test_a_runner_of_slow_jobs_claims_little_more_than_its_free_slots(world, tmp_path):
    """Other runners get the rest: with 4 slots and half-second jobs, the prefetch is one job (a quarter of the
    slots), never a batch; the jobs that end together at each half second do not make the runner claim more."""
    log = tmp_path / "effects.log"
    enqueue(world, [{"call": "examples.shop:span", "args": {"path": str(log), "seconds": 0.5}}] * 40)
    proc = runner(world, "--for", "60", "--concurrency", "4", "--processes", "1")
    held = []

    def look():       # claimed and not yet ended (an ended job's outcome may wait up to a second to be committed)
        running = {row[0] for row in world.sql("SELECT id FROM {jobs} WHERE status = 'running'")}
        ended = {int(line[1]) for line in lines(log)}
        held.append(len(running - ended))
        return len(ended) >= 16

    try:
        until(look, timeout=60, every=0.02)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert max(held) == 5, held      # 4 running and 1 ahead: observed, and never more


def test_many_runners_never_share_a_job_and_lose_none_when_one_is_killed(world, tmp_path):
    log = tmp_path / "effects.log"
    ids = enqueue(world, [{"call": "examples.shop:span", "args": {"path": str(log), "seconds": 0.01}}] * 3000)
    runners = [runner(world, "--for", "60", "--concurrency", "8", DELAYQ_LEASE=3) for _ in range(4)]
    until(lambda: len(lines(log)) >= 600, timeout=60)
    victim = runners[0]
    workers = subprocess.run(["pgrep", "-P", str(victim.pid)], capture_output=True, text=True).stdout.split()
    victim.send_signal(signal.SIGKILL)                # mid-batch: running jobs and unwritten outcomes die with it
    victim.wait()

    def compensated():                               # what cron's compensate line does each minute, sooner
        script(world, "compensate.py", "--rebuild", "now", check=0, DELAYQ_LEASE=3)
        return statuses(world) == Counter(succeeded=3000)

    until(compensated, timeout=120, every=1.0)
    for proc in runners[1:]:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    runs = Counter(int(job) for _, job, *_ in lines(log))
    assert set(runs) == set(ids)                                        # 0 lost
    assert max(runs.values()) <= 2
    # A job ran twice only if it first ran in the killed runner (its outcome died with it): never two claims.
    for job in (job for job, n in runs.items() if n > 1):
        assert any(pid in workers for _, j, pid, *_ in lines(log) if int(j) == job)


def leftovers(world):
    """Processes still running with this test's prefix in their environment (a runner's orphaned workers)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"DELAYQ_PREFIX={world.prefix}".encode() in f.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            pass
    return found


def test_time_limits_stop_a_job_an_at_most_once_job_and_a_step(world, tmp_path):
    log = tmp_path / "effects.log"
    hang, charge, gift, quick = enqueue(world, [
        {"call": "examples.shop:hang", "args": {"path": str(log), "seconds": 60}},
        {"call": "examples.shop:charge_slowly", "args": {"path": str(log), "seconds": 60}},
        {"call": "examples.shop:SlowGift", "args": {"path": str(log), "seconds": 60}},
        {"call": "examples.shop:span", "args": {"path": str(log), "seconds": 0.1}},
    ])
    started = time.monotonic()
    done = json.loads(script(world, "run_due.py", "--timeout", "2", "--concurrency", "4", "--json", check=0).stdout)
    assert time.monotonic() - started < 15            # the runner did not wait 60 s for anyone
    assert (done["timed_out"], done["succeeded"], done["expired"]) == (3, 1, 0)
    rows = {r[0]: r[1:] for r in world.sql("SELECT id, status, last_error, alert_pending FROM {jobs}")}
    assert rows[hang][0] == "pending" and rows[hang][1].startswith("timed out after 2s")       # retried on its ladder
    assert rows[charge][0] == "failed" and "outcome unknown" in rows[charge][1] and rows[charge][2] == 1
    assert rows[gift][0] == "pending"
    steps = {name: (status, attempts) for name, status, attempts in
             world.sql("SELECT name, status, attempts FROM {steps} WHERE job_id = ?", gift)}
    assert steps == {"reserve": ("pending", 1), "notify": ("pending", 0)}   # the hung step was running: it runs again
    until(lambda: not leftovers(world), timeout=5)        # the hung workers did not outlive the runner


def scrape(world):
    """The metrics endpoint's samples, as Prometheus reads them: {(name, labels): value}."""
    server = subprocess.Popen(command("metrics.py", "--listen", "127.0.0.1:0"), env=world.env(), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        body = urllib.request.urlopen(server.stdout.readline().split()[2], timeout=10).read().decode()
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=10) == 0
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body) for s in family.samples}


def test_a_run_past_its_time_limit_is_timed_out_and_a_deadline_expired_on_every_surface(world, tmp_path):
    """One word for each (issue 22): a run stopped at its time limit is timed_out, a job its deadline ended is
    expired, alike in the summary line, the log lines, the metrics, list --status, show and the dashboard. (The
    summary said timed_out for the deadline and stopped for the time limit; the log said by=timeout; the metric
    and list --status timed_out counted the deadline.)"""
    from delayq.web import WebSettings, create_app

    log = tmp_path / "effects.log"
    hang, poll = enqueue(world, [
        {"call": "examples.shop:hang", "args": {"path": str(log), "seconds": 60}, "max_attempts": 1},
        {"call": "examples.shop:poll_payment", "args": {"trade_no": "T1", "path": str(log), "paid_after": -1},
         "ladder": "600", "deadline": "300"},           # its next poll would fall after its deadline
    ])
    done = script(world, "run_due.py", "--timeout", "2", check=0)
    assert re.search(r"\bfailed=1 expired=1 timed_out=1\b", done.stdout), done.stdout          # the summary line
    # the log lines: the worker's (or, when the runner ended the worker process to stop the job, the recovery's)
    assert re.search(rf"\bjob={hang} .*\b(outcome|recovered)=failed .*\bby=timed_out\b", done.stderr), done.stderr
    assert re.search(rf"\bjob={poll} .*outcome=expired\b", done.stderr), done.stderr
    assert "by=timeout" not in done.stderr

    values = scrape(world)
    counted = {name: values[(f"delayq_jobs_{name}_total", (("queue", "default"),))]
               for name in ("timed_out", "expired", "failed", "retried")}
    assert counted == {"timed_out": 1, "expired": 1, "failed": 1, "retried": 0}      # a timed-out run still failed
    assert values[("delayq_attempts_total", (("outcome", "timed_out"), ("queue", "default")))] == 1
    assert values[("delayq_attempts_total", (("outcome", "expired"), ("queue", "default")))] == 1
    assert values[("delayq_jobs", (("queue", "default"), ("status", "expired")))] == 1
    assert ("delayq_jobs", (("queue", "default"), ("status", "timed_out"))) not in values

    def listed(*status):
        return [job["id"] for job in json.loads(script(world, "list.py", "--json", *status, check=0).stdout)["jobs"]]
    assert (listed("--status", "timed_out"), listed("--status", "expired")) == ([hang], [poll])
    assert listed("--status", "failed,timed_out") == [hang] and listed("--status", "pending,timed_out") == []
    shown = json.loads(script(world, "show.py", "--id", str(hang), "--json", check=0).stdout)["jobs"][0]
    assert (shown["status"], [a["outcome"] for a in shown["attempts_history"]]) == ("failed", ["timed_out"])
    assert as_json(script(world, "show.py", "--id", str(poll), "--json", check=0))["jobs"][0]["status"] == "expired"

    web = create_app(world.manager(), WebSettings(read_only=True)).test_client()
    page = web.get(f"/jobs/{hang}", base_url="http://127.0.0.1:8080").get_data(as_text=True)
    assert re.search(r'<span class="status st-failed">timed_out</span>', page), page          # its attempt
    page = web.get(f"/jobs/{poll}", base_url="http://127.0.0.1:8080").get_data(as_text=True)
    assert re.search(r'id="job-status"[^>]*>expired</span>', page) and ">timed_out<" not in page
    found = web.get("/jobs?status=timed_out", base_url="http://127.0.0.1:8080").get_data(as_text=True)
    assert f'href="/jobs/{hang}"' in found and f'href="/jobs/{poll}"' not in found


def test_a_job_that_kills_its_process_fails_after_three_times_and_takes_nothing_with_it(world, tmp_path):
    log = tmp_path / "effects.log"
    jobs = [{"call": "examples.shop:record", "args": {"path": str(log), "tag": f"j{i}"}} for i in range(9)]
    jobs[5] = {"call": "examples.shop:die", "args": {"path": str(log)}, "ladder": "0", "max_attempts": 10}
    ids = enqueue(world, jobs)
    for _ in range(5):
        script(world, "run_due.py", "--concurrency", "1", "--json", check=0)
    rows = {r[0]: r[1:] for r in world.sql("SELECT id, status, last_error, crashes, alert_pending FROM {jobs}")}
    killer = rows.pop(ids[5])
    assert killer[0] == "failed" and killer[1].startswith("killed its runner") and killer[2] == 3 and killer[3] == 1
    assert {r[0] for r in rows.values()} == {"succeeded"}
    runs = Counter(tag for tag, *_ in lines(log))
    assert runs.pop("die") == 3 and set(runs.values()) == {1}        # the eight others ran once each


def test_a_job_that_ends_its_worker_beside_others_is_named_at_once_and_alone_blamed(world, tmp_path):
    """os._exit names its job in the ledger: the job is blamed at its first crash (no guessing among the eight
    running beside it), runs alone from then on, and fails at its third; the eight were interrupted, not blamed:
    they ran again (their interrupted attempt recorded) and succeeded, each crash count 0."""
    log = tmp_path / "effects.log"
    jobs = [{"call": "examples.shop:span", "args": {"path": str(log), "seconds": 0.3, "tag": f"s{i}"}} for i in range(8)]
    jobs.append({"call": "examples.shop:die", "args": {"path": str(log)}, "ladder": "0", "max_attempts": 10})
    ids = enqueue(world, jobs)
    for _ in range(4):
        script(world, "run_due.py", "--concurrency", "9", "--json", check=0)
    rows = {r[0]: r[1:] for r in world.sql("SELECT id, status, crashes FROM {jobs}")}
    assert rows.pop(ids[8]) == ("failed", 3) and {r for r in rows.values()} == {("succeeded", 0)}
    runs = Counter(tag for tag, *_ in lines(log))
    assert runs.pop("die") == 3 and runs == Counter({f"s{i}": 1 for i in range(8)})   # span logs when it returns
    outcomes = {job: [a for (a,) in world.sql("SELECT outcome FROM {attempts} WHERE job_id = ? ORDER BY attempt", job)]
                for job in ids[:8]}
    assert set(map(tuple, outcomes.values())) == {("interrupted", "succeeded")}


def test_system_exit_in_a_job_fails_that_job_only(world, tmp_path):
    log = tmp_path / "effects.log"
    for workers in ("1", "0"):                                 # in worker processes, and in the runner itself
        ids = enqueue(world, [{"call": "examples.shop:record", "args": {"path": str(log), "tag": "a"}},
                              {"call": "examples.shop:raise_system_exit", "args": {"path": str(log)}, "max_attempts": 1},
                              {"call": "examples.shop:record", "args": {"path": str(log), "tag": "b"}}])
        done = script(world, "run_due.py", "--concurrency", "1", "--processes", workers, "--json", check=0)
        assert (json.loads(done.stdout)["succeeded"], json.loads(done.stdout)["failed"]) == (2, 1)
        error = dict(world.sql("SELECT id, last_error FROM {jobs}"))[ids[1]]
        assert error.startswith("SystemExit: 0")


def test_sigterm_lets_running_jobs_end_and_hands_back_the_rest_at_once(world, tmp_path):
    log = tmp_path / "effects.log"
    enqueue(world, [{"call": "examples.shop:hang", "args": {"path": str(log), "seconds": 3}}] * 3 +
            [{"call": "examples.shop:record", "args": {"path": str(log), "tag": "later"}}] * 10)
    proc = runner(world, "--for", "60", "--concurrency", "3", "--batch", "20")
    until(lambda: len(lines(log)) >= 3, timeout=60)
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    took = time.monotonic() - signalled
    assert proc.returncode == 0 and took < 5.0                   # three 3 s jobs end: not 3 x 3 s one by one
    summary = json.loads(out)
    assert summary["succeeded"] >= 3 and summary["handed_back"] >= 1
    counts = statuses(world)
    assert counts["running"] == 0 and counts["succeeded"] + counts["pending"] == 13   # none left waiting on a lease


def test_sigterm_after_the_grace_period_records_the_jobs_as_interrupted(world, tmp_path):
    log = tmp_path / "effects.log"
    enqueue(world, [{"call": "examples.shop:hang", "args": {"path": str(log), "seconds": 30}}] * 2)
    proc = runner(world, "--for", "60", "--concurrency", "2", "--grace", "1", "--timeout", "60")
    until(lambda: len(lines(log)) >= 2, timeout=60)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0
    rows = world.sql("SELECT status, last_error FROM {jobs}")
    assert {r[0] for r in rows} == {"pending"} and all("grace period" in r[1] for r in rows)


def test_a_quiet_queue_runs_while_a_busy_one_has_a_backlog(world, tmp_path):
    log = tmp_path / "effects.log"
    enqueue(world, [{"call": "examples.shop:wait_ms", "args": {"ms": 20}, "queue": "busy"}] * 1000)
    [quiet] = enqueue(world, [{"call": "examples.shop:span", "args": {"path": str(log), "seconds": 0}, "queue": "quiet"}])
    started = time.time()
    proc = runner(world, "--for", "60", "--queue", "busy,quiet", "--concurrency", "8")
    until(lambda: lines(log), timeout=30)
    ran_after = float(lines(log)[0][3]) - started
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert ran_after < 2.0          # the busy queue alone needs 1000 x 20 ms / 8 = 2.5 s of work
    left = world.sql("SELECT id, queue, attempts, claim_token FROM {jobs} WHERE status = 'running'")
    assert proc.returncode == 0 and left == [], (left, out, err[-2000:])


def test_a_runner_shows_in_workers_with_its_jobs_and_as_lost_once_killed(world, tmp_path):
    log = tmp_path / "effects.log"
    [job] = enqueue(world, [{"call": "examples.shop:hang", "args": {"path": str(log), "seconds": 30}}])
    proc = runner(world, "--for", "60", "--timeout", "60", DELAYQ_HEARTBEAT=0.3)

    def workers():
        return json.loads(script(world, "workers.py", "--json", check=0).stdout)["workers"]

    until(lambda: any(w["state"] == "live" and [r["id"] for r in w["running"]] == [job]
                      and w["pid"] == proc.pid for w in workers()), timeout=20)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    until(lambda: [w["state"] for w in workers() if w["pid"] == proc.pid] == ["lost"], timeout=20)
    until(lambda: not leftovers(world), timeout=5)        # its workers died with it
