"""Prometheus metrics derived from the database on every scrape, with prometheus_client.

Nothing is counted in a process: the counters and histograms are the attempts and jobs tables
(plus the totals purge folded away, see store `tallies`), so they are the same whichever
runner or host served the scrape, and survive restarts. Served two ways: a textfile for
node_exporter's textfile collector (`stats --prom FILE`, written atomically) and an HTTP
endpoint (`delayq metrics --listen HOST:PORT`).

A scrape costs a few aggregate queries over the attempts and jobs tables (what purge keeps
small). When the database is away, a scrape answers delayq_up 0 instead of failing.
"""

from __future__ import annotations

import logging
import math
import os
from collections import defaultdict
from typing import TYPE_CHECKING, Iterator

from prometheus_client import CollectorRegistry, start_http_server, write_to_textfile
from prometheus_client.metrics_core import (CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily,
                                            Metric)

from . import words
from .errors import DelayqError, InvalidInput
from .jobs import PENDING

if TYPE_CHECKING:
    from .manager import Manager
    from .store.base import Group

log = logging.getLogger(__name__)
COUNTERS = (  # (metric, kind, name in the metrics rows as words.counted_as names them, help)
    ("delayq_jobs_enqueued", "jobs", "enqueued", "Jobs enqueued."),
    ("delayq_jobs_succeeded", "outcome", "succeeded", "Attempts that succeeded."),
    ("delayq_jobs_failed", "outcome", "failed", "Jobs that failed for good (their last attempt failed or timed out)."),
    ("delayq_jobs_retried", "outcome", "retry", "Attempts that failed (or timed out) and were scheduled again on the "
                                                "ladder."),
    ("delayq_jobs_timed_out", "outcome", "timed_out", "Attempts that ran past their time limit and were stopped "
                                                      "(also counted as retried or failed)."),
    ("delayq_jobs_expired", "outcome", "expired", "Jobs their deadline ended (expired)."),
    ("delayq_jobs_cancelled", "jobs", "cancelled", "Jobs cancelled."),
)
# The buckets' upper bounds: the same as the CASE of the tally_attempts query in store/sql/queries.sql (a test checks).
DURATION_BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
LATENESS_BOUNDS = (0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600)
HISTOGRAMS = (
    ("delayq_job_duration_seconds", "duration", DURATION_BOUNDS, "How long one attempt ran, seconds."),
    ("delayq_job_lateness_seconds", "lateness", LATENESS_BOUNDS,
     "How late an attempt started: start minus the due time it was claimed at, seconds."),
)


class Collector:
    """A prometheus_client collector that reads every value from the database when scraped."""

    def __init__(self, manager: "Manager"):
        self.manager = manager

    def describe(self) -> list[Metric]:
        return []      # nothing to query at registration

    def collect(self) -> Iterator[Metric]:
        try:
            rows, (now, stats), workers, paused = (self.manager.reports.metrics(), self.manager.reports.queue_figures(),
                                                    self.manager.control.workers(), self.manager.control.paused_queues())
        except DelayqError as exc:
            log.warning("metrics: %s", exc)
            yield GaugeMetricFamily("delayq_up", "1 if the last scrape could read the database.", value=0)
            return
        yield GaugeMetricFamily("delayq_up", "1 if the last scrape could read the database.", value=1)
        yield from counters(rows)
        yield from histograms(rows)
        yield from gauges(now, stats, workers, paused)
        try:
            limited = self.manager.reports.waiting_on_limits()
        except DelayqError as exc:
            log.warning("metrics: %s", exc)
            return
        yield waiting_on_limits(limited, self.manager.limits)


def counters(rows: list[tuple[str, str, str, int, float]]) -> Iterator[Metric]:
    """The rows hold the outcomes as stored: each counts under its words (words.counted_as), each attempt once in
    delayq_attempts under the outcome every surface shows (words.shown)."""
    values: dict[tuple[str, str, str], int] = defaultdict(int)
    by_outcome: dict[tuple[str, str], int] = defaultdict(int)
    for queue, kind, name, n, _ in rows:
        for counted in (words.counted_as(name) if kind == "outcome" else (name,)):
            values[(queue, kind, counted)] += n
        if kind == "outcome":
            by_outcome[(queue, words.shown(name))] += n
    queues = sorted({queue for queue, *_ in rows})
    for metric, kind, name, help_ in COUNTERS:
        family = CounterMetricFamily(metric, help_, labels=["queue"])
        for queue in queues:
            family.add_metric([queue], values.get((queue, kind, name), 0))
        yield family
    family = CounterMetricFamily("delayq_attempts", "Attempts by outcome (retry, snoozed, timed_out, interrupted, "
                                 "...).", labels=["queue", "outcome"])
    for (queue, outcome), n in sorted(by_outcome.items()):
        family.add_metric([queue, outcome], n)
    yield family


def histograms(rows: list[tuple[str, str, str, int, float]]) -> Iterator[Metric]:
    for metric, kind, bounds, help_ in HISTOGRAMS:
        found: dict[str, dict[float, tuple[int, float]]] = defaultdict(dict)
        for queue, row_kind, name, n, total in rows:
            if row_kind == kind:
                found[queue][float(name)] = (n, total)
        family = HistogramMetricFamily(metric, help_, labels=["queue"])
        for queue, buckets in sorted(found.items()):
            running, cumulative = 0, []
            for bound in (*bounds, math.inf):
                running += buckets.get(float(bound), (0, 0.0))[0]
                cumulative.append(("+Inf" if math.isinf(bound) else str(float(bound)), running))
            family.add_metric([queue], cumulative, sum_value=sum(total for _, total in buckets.values()))
        yield family


def gauges(now: float, stats: list[Group], workers: list, paused: dict) -> Iterator[Metric]:
    jobs = GaugeMetricFamily("delayq_jobs", "Jobs by queue and status, now.", labels=["queue", "status"])
    due = GaugeMetricFamily("delayq_due_now", "Pending jobs whose due time has come.", labels=["queue"])
    lag = GaugeMetricFamily("delayq_oldest_due_lag_seconds", "How late the oldest due job is (0 in a paused queue).",
                            labels=["queue"])
    counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(words.STATUSES, 0))
    waiting: dict[str, tuple[int, float]] = {}
    for g in stats:       # Group rows: a big group's count is compensate's, at most a minute or two old
        counts[g.queue][words.shown(g.status)] += g.count
        if g.status == PENDING and g.due_now and g.queue not in paused:
            waiting[g.queue] = (g.due_now, max(0.0, now - float(g.oldest_due)))
    for queue, by_status in sorted(counts.items()):
        for status, n in by_status.items():
            jobs.add_metric([queue, status], n)
        due.add_metric([queue], waiting.get(queue, (0, 0.0))[0])
        lag.add_metric([queue], round(waiting.get(queue, (0, 0.0))[1], 3))
    held = GaugeMetricFamily("delayq_queue_paused", "1 for a paused queue (its jobs are not claimed).", labels=["queue"])
    for queue in sorted(paused):
        held.add_metric([queue], 1)
    runners = GaugeMetricFamily("delayq_workers", "Runner heartbeats by state (live, lost, stopped).", labels=["state"])
    states = {"live": 0, "lost": 0, "stopped": 0}
    for worker in workers:
        states[worker.state] += 1
    for state, n in states.items():
        runners.add_metric([state], n)
    yield from (jobs, due, lag, held, runners)


def waiting_on_limits(waiting: dict[str, int], limits: dict) -> Metric:
    """Pending jobs a rate or concurrency limit held back, per queue (every limited queue, 0 included)."""
    gauge = GaugeMetricFamily("delayq_waiting_on_limit", "Pending jobs a rate or concurrency limit held back.",
                              labels=["queue"])
    for queue in sorted(set(waiting) | set(limits)):
        gauge.add_metric([queue], waiting.get(queue, 0))
    return gauge


def registry(manager: "Manager") -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(Collector(manager))
    return reg


def write_textfile(path: str, manager: "Manager") -> None:
    """Write the metrics for node_exporter's textfile collector: a temporary file in the same directory, renamed
    over `path`, so the collector never reads half a file. InvalidInput for a directory that does not exist."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InvalidInput(f"--prom {path}: directory {folder} does not exist (create it, or use node_exporter's "
                           "--collector.textfile.directory)")
    try:
        write_to_textfile(path, registry(manager))
    except OSError as exc:
        raise InvalidInput(f"--prom {path}: cannot write it: {exc.strerror}") from None


def serve(manager: "Manager", host: str, port: int):
    """Serve /metrics over HTTP from a daemon thread; returns the server (server.server_port, server.shutdown())."""
    try:
        server, _ = start_http_server(port, addr=host, registry=registry(manager))
    except OSError as exc:
        raise DelayqError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return server
