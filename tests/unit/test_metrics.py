"""The histogram buckets the SQL computes are the ones the collector names; the filter flags make one JobFilter."""

import re

from delayq import metrics
from delayq.commands import _filters, cancel
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
