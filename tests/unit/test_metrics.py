"""The histogram buckets the SQL computes are the ones the collector names; the filter flags make one JobFilter."""

import re

import pytest

from delayq import bulk, cli, metrics
from delayq.commands import _filters, cancel, pause, resume
from delayq.errors import InvalidInput
from delayq.search import JobFilter
from delayq.store import queries
from delayq.store.base import Group


def test_the_sql_buckets_are_the_collectors_bounds():
    sql = queries.parse((queries.sql_dir() / "queries.sql").read_text())["tally_attempts"]
    duration, lateness = sql.split("'lateness' AS kind")
    for part, bounds in ((duration.split("'duration' AS kind")[1], metrics.DURATION_BOUNDS),
                         (lateness, metrics.LATENESS_BOUNDS)):
        found = re.findall(r"<= ([\d.]+) THEN '([\d.]+)'", part)
        assert [float(a) for a, _ in found] == [float(b) for _, b in found] == [float(b) for b in bounds]


def test_repeated_flags_and_ages_become_one_filter():
    args = cancel.build_parser("cancel").parse_args(
        ["--id", "3", "--id", "4", "--queue", "a", "--queue", "~tube", "--status", "pending,failed",
         "--since", "2h", "--until", "9000", "--time", "created", "--ext-prefix", "order:"])
    f = _filters.job_filter(args, now=10_000.0)
    assert f == JobFilter(ids=(3, 4), queues=("a", "~tube"), statuses=("pending", "failed"), since=10_000.0 - 7200,
                          until=9000.0, time_field="created", ext_prefix="order:")


def test_an_age_reads_as_the_help_writes_it_with_or_without_ago():
    for text in ("2h", "2h ago", " 90 m  ago", "1.5d ago"):
        args = cancel.build_parser("cancel").parse_args(["--since", text])
        f = _filters.job_filter(args, now=1_000_000.0)
        assert f.since == 1_000_000.0 - {"2h": 7200, "2h ago": 7200, " 90 m  ago": 5400,
                                                    "1.5d ago": 129600}[text]
    with pytest.raises(InvalidInput):
        _filters.job_filter(cancel.build_parser("cancel").parse_args(["--since", "2h hence"]), now=0.0)


def test_pause_and_resume_take_the_queue_as_list_retry_and_cancel_do_or_as_their_own_argument():
    for command in (pause, resume):
        parser = command.build_parser(command.__name__)
        assert cli.the_queue(parser.parse_args(["--queue", "sms"])) == "sms"
        assert cli.the_queue(parser.parse_args(["sms"])) == "sms"
        assert cli.the_queue(parser.parse_args(["sms", "--queue", "sms"])) == "sms"
        for argv in ([], ["sms", "--queue", "mail"]):
            with pytest.raises(InvalidInput):
                cli.the_queue(parser.parse_args(argv))


# -- one word for a time limit hit (timed_out) and one for a deadline (expired): issue 22 ----------------------------
def test_a_run_that_timed_out_counts_as_timed_out_and_as_its_failure_and_a_deadline_as_expired():
    rows = [("q", "outcome", "timeout_retry", 2, 0.0), ("q", "outcome", "timeout_failed", 1, 0.0),   # as stored
            ("q", "outcome", "retry", 1, 0.0), ("q", "outcome", "failed", 1, 0.0),
            ("q", "outcome", "timed_out", 4, 0.0), ("q", "jobs", "enqueued", 9, 0.0)]
    counted = {f.name: {tuple(sorted(s.labels.items())): s.value for s in f.samples} for f in metrics.counters(rows)}
    q = (("queue", "q"),)
    assert {name: counted[f"delayq_jobs_{name}"][q] for name in ("timed_out", "expired", "retried", "failed")} == \
        {"timed_out": 3, "expired": 4, "retried": 3, "failed": 2}
    outcomes = {dict(labels)["outcome"]: n for labels, n in counted["delayq_attempts"].items()}
    assert outcomes == {"timed_out": 3, "expired": 4, "retry": 1, "failed": 1}     # each attempt once, as shown
    gauges = metrics.gauges(0.0, [Group("q", "timed_out", 4)], [], {})
    jobs = {tuple(sorted(s.labels.items())): s.value for f in gauges if f.name == "delayq_jobs" for s in f.samples}
    assert jobs[(("queue", "q"), ("status", "expired"))] == 4 and (("queue", "q"), ("status", "timed_out")) not in jobs


def test_status_words_become_the_stored_statuses_and_timed_out_a_filter_of_its_own():
    args = cancel.build_parser("cancel").parse_args(["--status", "expired,failed", "--status", "timed_out"])
    f = _filters.job_filter(args, now=0.0)
    assert (f.statuses, f.timed_out) == (("timed_out", "failed"), True)       # the deadline's status as stored
    assert f.describe() == "status expired, failed, last attempt timed_out"
    with pytest.raises(InvalidInput, match="^--status stopped is unknown: use pending, running, succeeded, failed, "
                                           "cancelled, expired, timed_out "):
        _filters.job_filter(cancel.build_parser("cancel").parse_args(["--status", "stopped"]), now=0.0)
    assert bulk.scoped("retry", JobFilter(timed_out=True)) == JobFilter(statuses=("failed",), timed_out=True)
    with pytest.raises(InvalidInput, match="use --status expired"):       # an old purge line never means failed jobs
        bulk.scoped("purge", JobFilter(statuses=("succeeded",), timed_out=True))
    with pytest.raises(InvalidInput, match=r"^retry takes failed jobs only \(failed\), not expired$"):
        bulk.scoped("retry", JobFilter(statuses=("timed_out",)))
