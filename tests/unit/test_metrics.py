"""The histogram buckets the SQL computes are the ones the collector names; the filter flags make one JobFilter."""

import re

import pytest

from delayq import cli, metrics
from delayq.commands import _filters, cancel, pause, resume
from delayq.errors import InvalidInput
from delayq.search import JobFilter
from delayq.store import queries


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
