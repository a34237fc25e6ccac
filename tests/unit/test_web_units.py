"""The dashboard's pure parts: the ladder's next attempts, the chart's geometry, the address and Host rules,
the search form's reading, and the "outcome unknown" mark."""

from __future__ import annotations

import pytest
from werkzeug.datastructures import MultiDict

from delayq import ladders
from delayq.commands.web import check_listen, is_loopback
from delayq.errors import InvalidInput
from delayq.retries import UNKNOWN as RUNNER_UNKNOWN
from delayq.search import JobFilter
from delayq.reports import Activity
from delayq.web import charts, display, forms, security

T = 1_800_000_000.0


def test_upcoming_attempts_follow_the_ladder_until_max_attempts():
    found, more = ladders.upcoming("wechat", 2, 16, T, None, limit=4)
    assert [(u.attempt, u.earliest - T) for u in found] == [(3, 0), (4, 30), (5, 210), (6, 810)]
    assert more == 16 - 6 and all(u.earliest == u.latest for u in found)
    assert ladders.upcoming("15,30", 3, 3, T, None) == ([], 0)            # no attempt left


def test_upcoming_attempts_stop_at_the_deadline_and_show_the_jitter_range():
    found, _ = ladders.upcoming("15,30", 0, 10, T, T + 50)
    assert [u.earliest - T for u in found] == [0, 15, 45]
    found, _ = ladders.upcoming("exp:10:3600:5", 1, 4, T, None)
    assert [(u.earliest - T, u.latest - T) for u in found] == [(0, 0), (10, 20), (30, 60)]


def activity(counts, window="1h", late_avg=None, late_max=None):
    n = len(next(iter(counts.values()))) if counts else 61
    return Activity(window, None, T, {"1h": 60, "24h": 900, "7d": 3600}[window], counts,
                    late_avg or [None] * n, late_max or [None] * n)


def test_chart_stacks_outcomes_per_bucket_on_a_round_scale():
    assert [charts.nice_ceiling(n) for n in (0, 1, 3, 7, 10, 11, 999)] == [1, 1, 5, 10, 10, 20, 1000]
    chart = charts.attempts(activity({"succeeded": [4] + [0] * 60, "retry": [0] * 60 + [2], "snoozed": [1] + [0] * 60}))
    assert chart.totals == {"succeeded": 4, "failures": 2, "other": 1}
    assert [b.css for b in chart.bars] == ["bar-ok", "bar-other", "bar-fail"]
    ok, other, fail = chart.bars
    assert ok.x == other.x < fail.x and other.y + other.height == ok.y          # stacked on top of each other
    assert ok.height == pytest.approx(4 * other.height) and chart.y_ticks[-1][1] == "5"
    assert fail.title.endswith(": 2 failures") and chart.x_ticks[-1][2] == "end"
    assert chart.title.startswith("Attempts per minute, last hour: 4 succeeded")


def test_the_long_charts_name_their_buckets_and_show_the_day():
    week = charts.attempts(activity({"succeeded": [1] * 169}, "7d"))
    assert week.title.startswith("Attempts per hour, last 7 days") and len(week.bars) == 169
    assert all(len(label.split()) == 2 for _, label, _ in week.x_ticks)        # "Thu 14:00"
    day = charts.attempts(activity({"failed": [0] * 96 + [3]}, "24h"))
    assert day.title.startswith("Attempts per quarter hour, last 24 hours") and day.totals["failures"] == 3


def test_the_lateness_chart_shows_the_average_and_names_the_largest():
    avg = [None] * 59 + [2.0, 90.0]
    most = [None] * 59 + [5.0, 400.0]
    chart = charts.lateness(activity({}, late_avg=avg, late_max=most))
    assert [b.title.split(": ", 1)[1] for b in chart.bars] == ["2s on average, the largest 5s",
                                                             "90s on average, the largest 6.7m"]
    assert chart.bars[1].height > chart.bars[0].height and chart.y_ticks[-1][1] == "100s"
    assert chart.title.endswith("the largest 6.7m")
    assert charts.lateness(activity({})).bars == [] and "the largest none" in charts.lateness(activity({})).title


@pytest.mark.parametrize("peak", [7, 9_999, 12_000, 99_000, 100_000, 180_000, 2_400_000, 900_000_000])
def test_the_charts_axis_labels_fit_its_margin(peak):
    """Issue 24: the chart's top label was clipped ("00,000" for 100,000 attempts a minute)."""
    chart = charts.attempts(activity({"succeeded": [peak] + [0] * 60}))
    labels = [label for _, label in chart.y_ticks]
    assert all(len(label) <= 5 for label in labels), labels
    assert labels[0] == "0" and labels[-1] == charts.compact(charts.nice_ceiling(peak))


@pytest.mark.parametrize("host, local", [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True),
                                         ("localhost", True), ("0.0.0.0", False), ("::", False),
                                         ("192.168.1.5", False), ("dash.example", False)])
def test_only_loopback_is_local(host, local):
    assert is_loopback(host) is local


def test_listen_rules_name_the_fix():
    check_listen("127.0.0.1", 8080, None)
    check_listen("0.0.0.0", 8080, "a-long-enough-password")
    with pytest.raises(InvalidInput, match="refusing to listen on 0.0.0.0:8080 without a password"):
        check_listen("0.0.0.0", 8080, None)
    with pytest.raises(InvalidInput, match="too short"):
        check_listen("127.0.0.1", 8080, "short")


@pytest.mark.parametrize("host, ok", [("127.0.0.1:8080", True), ("localhost", True), ("[::1]:80", True),
                                      ("LOCALHOST:1", True), ("evil.example:8080", False),
                                      ("127.0.0.1.nip.io:8080", False), ("10.0.0.1", False)])
def test_host_check_without_a_password(host, ok):
    assert security.loopback_host(host) is ok


@pytest.mark.parametrize("target, expected", [("/jobs?x=1", "/jobs?x=1"), ("//evil.example/", "/"),
                                              ("https://evil.example/", "/"), ("/\\evil", "/"), (None, "/")])
def test_login_goes_back_to_this_site_only(target, expected):
    assert security.safe_next(target) == expected


def test_search_form_reads_like_the_cli_flags():
    args = MultiDict([("id", "41, #42"), ("status", "failed,pending"), ("status", "failed"), ("queue", "sms"),
                      ("ext_prefix", " order: "), ("call", ""), ("time", "finished"), ("since", "2h"),
                      ("until", "2030-01-01T00:00:00+00:00")])
    f = forms.job_filter(args, T)
    assert f == JobFilter(ids=(41, 42), queues=("sms",), statuses=("failed", "pending"), ext_prefix="order:",
                          since=T - 7200, until=1893456000.0, time_field="finished")
    assert forms.fields(args)[0] == ("id", "41, #42") and ("call", "") not in forms.fields(args)
    for bad, field in (({"id": "x"}, "id"), ({"status": "lost"}, "status"), ({"time": "soon"}, "time"),
                       ({"since": "tomorrow"}, "since")):
        with pytest.raises(InvalidInput, match=field):
            forms.job_filter(MultiDict(bad), T)
    assert forms.page({"before": "90", "limit": "20"}) == (90, 20)
    with pytest.raises(InvalidInput, match="limit"):
        forms.page({"limit": "5000"})


def test_outcome_unknown_is_recognised_in_both_messages():
    assert display.outcome_unknown(f"boom; {RUNNER_UNKNOWN}")
    assert not display.outcome_unknown("ConnectionError: timed out") and not display.outcome_unknown(None)
    assert display.status_class("timed_out") == "st-expired" and display.status_class("<b>") == "st-other"
    assert display.status_class("timeout_retry") == display.status_class("timeout_failed") == "st-failed"
