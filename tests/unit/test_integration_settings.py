"""Settings from a framework's configuration (Django's settings.DELAYQ, Flask's app.config): the same DELAYQ_*
values the environment holds, with Django's own database as the default DATABASE_URL. No framework needed."""

from __future__ import annotations

import json
import os
import re
from urllib.parse import unquote, urlsplit

import pytest

from delayq import config
from delayq.errors import ConfigError
from delayq.integrations import settings


def test_every_setting_config_reads_can_be_given_and_no_other():
    documented = set(re.findall(r"^  DELAYQ_([A-Z_]+)", config.__doc__, re.M))
    assert set(settings.KEYS) == documented


def test_values_become_the_environments_text():
    given = {"PREFIX": "shop", "ALLOWED_MODULES": ["shop.jobs", "billing"], "LEASE": 600, "QUEUES":
             {"sms": {"max_attempts": 4}}, "REDIS_URL": None, "DB_TIMEOUT": 2.5}
    values = settings.as_environment(given, "settings.DELAYQ")
    assert values == {"DELAYQ_PREFIX": "shop", "DELAYQ_ALLOWED_MODULES": "shop.jobs,billing", "DELAYQ_LEASE": "600",
                      "DELAYQ_QUEUES": json.dumps({"sms": {"max_attempts": 4}}), "DELAYQ_DB_TIMEOUT": "2.5"}
    loaded = config.load(values, None)
    assert loaded.allowed_modules == ("shop.jobs", "billing") and loaded.queues["sms"]["max_attempts"] == 4


@pytest.mark.parametrize("given, message", [
    ({"PREFX": "shop"}, "unknown setting PREFX: use one of DATABASE_URL"),
    ({"PREFIX": ["shop"]}, r"settings.DELAYQ\['PREFIX'\] must be text or a number, not list"),
    ({"ALLOWED_MODULES": "shop.jobs,x"}, None),                     # text as the environment has it: fine
    ({"ALLOWED_MODULES": [1]}, "must be a list of names"),
    ({"QUEUES": ["sms"]}, "must be a dict of queues"),
    ({"LEASE": True}, "must be text or a number, not bool"),
])
def test_a_wrong_key_or_value_is_one_line_naming_it(given, message):
    if message is None:
        settings.as_environment(given, "settings.DELAYQ")
        return
    with pytest.raises(ConfigError, match=message) as caught:
        settings.as_environment(given, "settings.DELAYQ")
    assert "\n" not in str(caught.value)


def test_flask_spells_the_keys_with_their_prefix():
    with pytest.raises(ConfigError, match="app.config has an unknown setting DELAYQ_PREFX: use one of DELAYQ_"):
        settings.as_environment({"PREFX": "x"}, "app.config", "DELAYQ_")


def test_django_mysql_database_as_a_url_the_store_reads_back():
    db = {"ENGINE": "django.db.backends.mysql", "NAME": "shop", "USER": "app", "PASSWORD": "p@ss:w/rd é",
          "HOST": "db.internal", "PORT": "3307", "OPTIONS": {"charset": "utf8mb4"}}
    url = settings.database_url_from_django(db, "default")
    config.check_database_url(url)
    parts = urlsplit(url)
    assert (parts.hostname, parts.port, parts.username, unquote(parts.password), parts.path) == (
        "db.internal", 3307, "app", "p@ss:w/rd é", "/shop")
    assert "p@ss" not in config.redact(url)
    bare = settings.database_url_from_django({"ENGINE": "django.db.backends.mysql", "NAME": "shop"}, "default")
    assert bare == "mysql://root@127.0.0.1/shop"


def test_django_sqlite_database_is_the_same_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = settings.database_url_from_django({"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}, "default")
    assert url == f"sqlite:///{tmp_path}/db.sqlite3"
    config.check_database_url(url)


@pytest.mark.parametrize("db, message", [
    ({"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}, "in-memory"),
    ({"ENGINE": "django.db.backends.sqlite3", "NAME": "file:memdb1?mode=memory&cache=shared"}, "in-memory"),
    ({"ENGINE": "django.db.backends.postgresql", "NAME": "shop"}, "MySQL/MariaDB or SQLite"),
    ({"ENGINE": "django.db.backends.mysql", "NAME": "shop", "HOST": "/run/mysqld/mysqld.sock"}, "socket"),
    ({"ENGINE": "django.db.backends.mysql", "OPTIONS": {"read_default_file": "/etc/my.cnf"}}, "OPTIONS"),
])
def test_a_django_database_delayq_cannot_open_asks_for_database_url(db, message):
    with pytest.raises(ConfigError, match=message) as caught:
        settings.database_url_from_django(db, "default")
    assert 'DELAYQ = {"DATABASE_URL": ...}' in str(caught.value)


def test_framework_settings_win_over_the_environment_over_dotenv_over_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("DELAYQ_PREFIX=fromfile\nDELAYQ_DATABASE_URL=sqlite:///fromfile.db\n")
    for name in [n for n in os.environ if n.startswith("DELAYQ_")]:
        monkeypatch.delenv(name)

    def default() -> str:
        return "sqlite:///django.db"

    assert settings.load({}, default).database_url == "sqlite:///fromfile.db"
    monkeypatch.setenv("DELAYQ_PREFIX", "fromenv")
    assert settings.load({}, default).prefix == "fromenv"
    assert settings.load({"DELAYQ_PREFIX": "fromsettings"}, default).prefix == "fromsettings"
    (tmp_path / ".env").unlink()
    assert settings.load({}, default).database_url == "sqlite:///django.db"
    assert settings.resolved({}, default) == {"DELAYQ_PREFIX": "fromenv", "DELAYQ_DATABASE_URL": "sqlite:///django.db"}
