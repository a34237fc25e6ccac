import pytest

from delayq import config
from delayq.errors import ConfigError


def test_redact_hides_the_password_only():
    assert config.redact("mysql://shop:s3cret@db:3306/shop") == "mysql://shop:***@db:3306/shop"
    assert config.redact("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert "s3cret" not in config.describe("mysql://shop:s3cret@db:3306/shop")


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
