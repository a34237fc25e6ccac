"""benchmarks/scale.py (issue 26): what it computes from the rows it reads back, and its table, without servers."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def scale():
    saved = list(sys.path)
    spec = importlib.util.spec_from_file_location("bench_scale", os.path.join(ROOT, "benchmarks", "scale.py"))
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)        # it puts benchmarks/ on the path for its siblings
    finally:
        sys.path[:] = saved
    return module


def test_lateness_and_the_longest_gap_count_only_jobs_due_in_the_window(scale):
    rows = [(10.0, 10.002, 10.003), (10.005, 10.010, 10.011), (10.010, 10.300, 10.301),   # one waited 290 ms
            (9.0, 12.0, 12.5),                                                           # due before the window
            (10.015, 10.305, 10.306)]
    got = scale._lateness(rows, 10.0, 11.0)
    assert got["jobs"] == 4
    assert got["max_ms"] == pytest.approx(290.0)
    assert got["longest_gap_ms"] == pytest.approx(290.0)               # 10.011 -> 10.301
    assert got["stall_ms"] == pytest.approx(290.0 - 1000 / scale.RATE)   # beyond the stream's own spacing
    assert scale._lateness(rows, 20.0, 21.0) == {"jobs": 0}


def _result(scale, ratio: float = 0.95, stall: float = 20.0) -> dict:
    side = {"empty": 1000, "loaded": round(1000 * ratio), "ratio": ratio, "empty_runs": [1000], "loaded_runs": [950]}
    window = {"jobs": 400, "p50_ms": 4.0, "p99_ms": 30.0, "max_ms": 40.0, "longest_gap_ms": 25.0, "stall_ms": stall}
    timing = {"p50_ms": 5.0, "p95_ms": 6.0, "max_ms": 7.0, "n": 20}
    table = {"rows": 10, "data_bytes": 1000, "index_bytes": 500, "bytes_a_row": 150.0, "data_bytes_a_row": 100.0,
             "per_index_bytes_a_row": {"PRIMARY": 100.0, "by_ext": 50.0}}
    counted = {"jobs_per_s": 9000, "per_job": dict.fromkeys(scale.STATUS_KEYS, 0.5), "mariadbd_cpu_us_a_job": 150.0,
               "commits_per_group_commit": 1.0}
    return {
        "when": "2026-11-26T00:00:00Z", "scale": 1000, "burst": 500, "machine": "vm", "server": "private",
        "repeat": 20, "runs": 1, "seconds": 60,
        "fill": {"finished_insert_s": 1.0, "finished_update_s": 1.0, "pending_s": 1.0, "analyze_s": 0.1,
                 "rolled_up": 5, "roll_up_s": 0.1},
        "index": {"seconds": 0.1, "restored": 1000, "used_memory_before": 0, "used_memory_after": 125_000,
                  "bytes_a_job": 125.0, "due_set_members": 1000, "due_set_bytes": 105_000, "due_set_bytes_a_member": 105.0},
        "sidekiq": {"jobs": 1000, "member_bytes": 204, "bytes_a_job": 327.0, "memory_usage_a_member": 300.0},
        "disk": {"jobs": table, "attempts": table},
        "reads": {"pages": [{"search": "(overview page)", "page": "", "median_ms": 5.0, "p95_ms": 6.0, "max_ms": 7.0,
                             "jobs_on_page": 0}], "slowest_p95_ms": 6.0,
                  "four": {what: timing for what, _ in scale.FOUR},
                  "commands": {name: {"in_process": timing, "process": timing}
                               for name in ("stats", "list", "list, deep page", "show")}},
        "runner": {name: side for name in ("burst", "io", "single", "bulk")},
        "rebuild": {"restored": 1000, "scanned": 1000, "compensate_seconds": 0.5, "seconds": 0.6, "stream_jobs": 900,
                    "rate": 200, "during": window, "before": window},
        "purge": {"deleted": 998, "jobs_per_s": 9000, "seconds": 0.1, "stream_jobs": 600, "rate": 200,
                  "during": dict(window, stall_ms=stall), "before": window, "attempts_deleted": 998},
        "ceiling": {"no_binlog": counted, "binlog": counted, "fsync_ms": 0.05},
    }


def test_the_table_shows_every_part_and_judges_the_targets(scale):
    text = scale.report(_result(scale))
    for part in ("1. runner", "2. index rebuild", "3. Redis", "4. operator reads", "5. purge", "6. one job's writes",
                 "targets (issue 26)"):
        assert part in text
    assert "NOT MET" not in text
    judged = {what: met for what, _, met in scale.targets(_result(scale, ratio=0.85, stall=150.0))}
    assert judged["burst within 10% of empty"] is False
    assert judged["purge: no runner stall over 100 ms"] is False
    assert judged["rebuild: lateness p99 < 1 s"] is True
    assert "targets (issue 26)" not in scale.report(_result(scale), with_targets=False)


def test_a_part_without_a_figure_says_why_and_its_target_is_not_judged(scale):
    r = _result(scale)
    r["purge"]["during"] = {"jobs": 0}
    r["rebuild"] = {"error": "CalledProcessError: compensate exited 1"}
    text = scale.report(r)
    assert "no stream job was due then" in text
    assert "2. index rebuild: no figure: CalledProcessError: compensate exited 1" in text
    judged = {what: met for what, _, met in scale.targets(r)}
    assert judged["purge: no runner stall over 100 ms"] is None
    assert judged["rebuild: lateness p99 < 1 s"] is None
    assert judged["burst within 10% of empty"] is True


def test_a_crash_of_the_private_server_is_shown_with_the_statement_it_ran(scale):
    r = _result(scale)
    r["mariadbd_died"] = [{"during": "purge", "exit": -11, "restart_s": 2.5,
                           "log": "mariadbd got signal 11 ;\nQuery (0x7f): SELECT JSON_ARRAYAGG(id) FROM t\n"}]
    assert ("the private mariadbd crashed during purge (exit -11; started again in 2.5 s), running: "
            "SELECT JSON_ARRAYAGG(id) FROM t") in scale.report(r)


def test_the_server_s_counters_are_read_in_the_longest_gap_and_over_the_whole_run(scale):
    def sample(t: float, age: int, waits: int, *statements: str) -> tuple:
        return (100.0 + t, {**dict.fromkeys(scale.SAMPLE_KEYS, 0), "Innodb_checkpoint_age": age,
                            "Innodb_log_waits": waits, "statements": list(statements)})
    samples = [sample(0.5, 10, 0), sample(1.0, 900, 2, "0.2 s: SELECT heavy"), sample(3.0, 400, 5, "0.1 s: DELETE x"),
               sample(3.2, 50, 6, "0.3 s: DELETE x"), sample(9.0, 20, 9)]
    # the longest gap ended 3.3 s after the start (100.0) and lasted 300 ms: the window is [2.0, 3.3] (+ one sample)
    got = scale.around_gap(samples, {"began_at": 100.0, "during": {"longest_gap_ended_s": 3.3,
                                                                    "longest_gap_ms": 300.0}})
    assert got["gap"]["Innodb_checkpoint_age"] == 400 and got["gap"]["Innodb_log_waits"] == 1
    assert got["gap"]["statements"] == ["DELETE x"]
    assert got["run"]["Innodb_checkpoint_age"] == 900 and got["run"]["Innodb_log_waits"] == 9
    assert got["longest_statement"] == "0.3 s: DELETE x" and got["samples"] == 5
    assert scale.around_gap([], {"during": {}}) == {}
