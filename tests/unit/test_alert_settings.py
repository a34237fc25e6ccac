"""Alert settings checked before any delivery, and the idempotency key: pure logic, no server."""

from __future__ import annotations

import pytest

from delayq import app, config
from delayq.alerts import TIMEOUT, Alerter, idempotency_key
from delayq.errors import ConfigError
from delayq.webhook import origin, redirect_target

JOBS = [{"id": 7, "attempts": 3, "finished_at": 1700000000.25}, {"id": 3, "attempts": 1, "finished_at": 1700000001.5}]


@pytest.mark.parametrize("url", [
    "http://[::1/hook/tok-secret",              # IPv6 bracket left open
    "http://host:99999/hook/tok-secret",        # port out of range
    "http://host:0/hook/tok-secret",
    "http://host:abc/hook/tok-secret",
    "http:///hook/tok-secret",                  # no host
    "http://user:pw-secret@/hook/tok-secret",
    "ftp://host/hook/tok-secret",
    "hooks.example.com/hook/tok-secret",
    "http://exa mple.com/hook/tok-secret",
    "http://example.com/hook/tok-secret\n",
    "http://.example.com/hook/tok-secret",      # an empty DNS label: requests refuses it
])
def test_a_malformed_webhook_is_one_line_config_error_without_the_url(url):
    with pytest.raises(ConfigError, match="DELAYQ_ALERT_WEBHOOK is not a usable webhook URL") as err:
        Alerter(url, "slack")
    message = str(err.value)
    assert "\n" not in message and "tok-secret" not in message and "pw-secret" not in message


@pytest.mark.parametrize("url", ["https://open.feishu.cn/open-apis/bot/v2/hook/x", "http://[::1]:8080/h",
                                 "http://u:p@hooks.example.com/h?token=1", "https://bücher.example/h"])
def test_good_webhooks_pass(url):
    alerter = Alerter(url, "json")             # no ConfigError; what it shows of the URL is its host only
    host = url.split("//", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
    assert alerter.where == host and "p@" not in alerter.where and alerter.kind == "json"


@pytest.mark.parametrize("value", ["abc", "0", "-1", "0.5", "51", "nan", "inf", "1e9"])
def test_a_bad_timeout_is_a_config_error(value):
    with pytest.raises(ConfigError, match="DELAYQ_ALERT_TIMEOUT must be a number of seconds from 1 to 50"):
        Alerter("https://h/x", timeout=value)


def test_timeout_from_the_environment_reaches_the_alerter():
    settings = config.load({"DELAYQ_ALERT_WEBHOOK": "https://h/x", "DELAYQ_ALERT_TIMEOUT": "2.5"}, None)
    assert app.alerter(settings).timeout == 2.5
    assert app.alerter(config.load({"DELAYQ_ALERT_WEBHOOK": "https://h/x"}, None)).timeout == TIMEOUT == 10
    shop = config.load({"DELAYQ_ALERT_WEBHOOK": "https://h/x", "DELAYQ_PREFIX": "shop"}, None)
    assert app.alerter(shop).prefix == "shop"


def test_a_bad_alert_setting_does_not_fail_loading_the_config():
    """Only compensate builds the alerter: run_due and enqueue must not stop on a bad alert setting."""
    settings = config.load({"DELAYQ_ALERT_WEBHOOK": "http://[::1", "DELAYQ_ALERT_TIMEOUT": "soon"}, None)
    with pytest.raises(ConfigError):
        app.alerter(settings)


def test_the_key_is_stable_and_names_exactly_one_set_of_failures():
    key = idempotency_key("delayq", "prod", JOBS)
    assert len(key) == 32 and int(key, 16) >= 0
    assert idempotency_key("delayq", "prod", list(reversed(JOBS))) == key           # order does not matter
    assert idempotency_key("delayq", "prod", [dict(j, queue="x") for j in JOBS]) == key  # only id/attempts/time
    assert idempotency_key("delayq", "prod", JOBS[:1]) != key                        # another set
    assert idempotency_key("other", "prod", JOBS) != key                             # another prefix
    assert idempotency_key("delayq", "staging", JOBS) != key                         # another environment
    again = [dict(JOBS[0], attempts=4, finished_at=1700000100.0), JOBS[1]]           # failed again after retry
    assert idempotency_key("delayq", "prod", again) != key


def test_origins_name_hosts_only_and_cannot_inject_lines():
    assert origin("https://u:pw@Hooks.Example.com:8443/p/tok?x=1") == "https://hooks.example.com:8443"
    assert origin("http://[::1]:9/p") == "http://[::1]:9"
    assert redirect_target("http://a:1/p/tok", "/q/tok2") == "http://a:1"
    assert redirect_target("http://a:1/p", "http://evil\x1b.example\x07/x") == "http://evil?.example?"
    assert redirect_target("http://a:1/p", "http://[::1") == "an unparsable URL"
    assert redirect_target("http://a:1/p", None) == "nowhere (no Location header)"
