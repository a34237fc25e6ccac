import pytest

from delayq import config
from delayq.errors import ConfigError


def test_redact_hides_the_password_only():
    assert config.redact("mysql://shop:s3cret@db:3306/shop") == "mysql://shop:***@db:3306/shop"
    assert config.redact("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert "s3cret" not in config.describe("mysql://shop:s3cret@db:3306/shop")


def test_redact_hides_the_query_values_too_where_a_redis_url_may_hold_a_password():
    assert config.redact("redis://:pw@h:1/0?sentinel_password=s3cret&db=x") == \
        "redis://:***@h:1/0?sentinel_password=***&db=***"
    with pytest.raises(ConfigError, match="redis-py") as bad:      # refused by redis-py's own reading, first
        config.load({"DELAYQ_REDIS_URL": "redis://cache:6379/0?password=s3cret&db=x"}, None)
    assert "s3cret" not in str(bad.value)


def test_environment_wins_over_dotenv(tmp_path):
    dotenv = tmp_path / ".env"
    dotenv.write_text("DELAYQ_PREFIX=fromfile\nDELAYQ_ALLOWED_MODULES=shop.jobs, billing\nDELAYQ_LOG_FORMAT=json\n")
    settings = config.load({"DELAYQ_PREFIX": "fromenv"}, str(dotenv))
    assert settings.prefix == "fromenv"
    assert settings.allowed_modules == ("shop.jobs", "billing") and settings.log_format == "json"
    assert settings.database_url == "sqlite:///delayq.db" and settings.redis_url is None


@pytest.mark.parametrize("env, message", [
    ({"DELAYQ_PREFIX": "bad-prefix"}, "DELAYQ_PREFIX"),
    ({"DELAYQ_DATABASE_URL": "postgres://u:pw@h/db"}, "not supported"),
    ({"DELAYQ_REDIS_URL": "http://h"}, "DELAYQ_REDIS_URL"),
    ({"DELAYQ_LEASE": "long"}, "DELAYQ_LEASE"),
    ({"DELAYQ_QUEUES": "{sms: 1}"}, "DELAYQ_QUEUES is not valid JSON"),
    ({"DELAYQ_QUEUES": '{"sms": {"colour": 1}}'}, "unknown key"),
    ({"DELAYQ_LOG_FORMAT": "xml"}, "DELAYQ_LOG_FORMAT"),
])
def test_bad_settings_say_how_to_fix(env, message):
    with pytest.raises(ConfigError, match=message) as err:
        config.load(env, None)
    assert "pw" not in str(err.value)


def test_every_wait_has_a_bound_by_default_and_by_setting():
    from delayq import app

    default = config.load({"DELAYQ_DATABASE_URL": "mysql://u@db/shop", "DELAYQ_REDIS_URL": "redis://cache/0"}, None)
    assert (default.db_timeout, default.redis_timeout) == (20.0, 10.0)
    given = config.load({"DELAYQ_DATABASE_URL": "mysql://u@db/shop", "DELAYQ_REDIS_URL": "redis://cache/0",
                         "DELAYQ_DB_TIMEOUT": "5", "DELAYQ_REDIS_TIMEOUT": "2s"}, None)
    manager = app.open_manager(given)          # connects lazily: nothing is reached here
    assert manager.store.timeout == 5.0
    options = manager.index.r.connection_pool.connection_kwargs
    assert (options["socket_timeout"], options["socket_connect_timeout"]) == (2.0, 2.0)


@pytest.mark.parametrize("setting", ["DELAYQ_DB_TIMEOUT", "DELAYQ_REDIS_TIMEOUT", "DELAYQ_LEASE"])
@pytest.mark.parametrize("value", ["0", "0.5", "-1", "nan", "inf", "1e400", "soon", "\udc80"])
def test_timeouts_and_lease_out_of_range_are_refused(setting, value):
    with pytest.raises(ConfigError, match=setting):
        config.load({setting: value}, None)


@pytest.mark.parametrize("url, message", [
    ("mysql://u:pw@db:0/shop", "port 1-65535"),
    ("mysql://u:pw@" + "a" * 64 + ".example/shop", "DNS name"),
    ("mysql://u:pw@é.example/shop", "ASCII"),
    ("mysql://u:pw@db\x00/shop", "control characters"),
    ("mysql://u:pw@db\udc80/shop", "not valid UTF-8"),
])
def test_database_urls_the_driver_would_choke_on_are_refused(url, message):
    with pytest.raises(ConfigError, match=message) as err:
        config.load({"DELAYQ_DATABASE_URL": url}, None)
    assert "pw" not in str(err.value)


@pytest.mark.parametrize("url, message", [
    ("redis://cache:6379/0?db=x", "redis-py"),
    ("redis://cache:6379/0?max_connections=-1", "redis-py"),
    ("redis://cache:6379/0?socket_timeout=60", "DELAYQ_REDIS_TIMEOUT"),
    ("redis://cache:6379/0?socket_connect_timeout=1", "DELAYQ_REDIS_TIMEOUT"),
])
def test_redis_urls_are_read_as_redis_py_reads_them(url, message):
    with pytest.raises(ConfigError, match=message):
        config.load({"DELAYQ_REDIS_URL": url}, None)
