"""Settings given in a framework's own configuration (Django's `settings.DELAYQ`, Flask's `app.config`), turned
into the DELAYQ_* values the environment holds, so that one loader (delayq.config.load) checks every source.

    as_environment({"PREFIX": "shop", "ALLOWED_MODULES": ["shop.jobs"]}, "settings.DELAYQ")
    -> {"DELAYQ_PREFIX": "shop", "DELAYQ_ALLOWED_MODULES": "shop.jobs"}

Precedence, highest first: the framework's settings, the environment, a .env file in the working directory, then
the framework's default database (Django: DATABASES; see database_url_from_django). No framework is imported here.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Mapping
from urllib.parse import quote

from .. import config as config_mod
from ..config import Config
from ..errors import ConfigError, shown

# The settings delayq.config reads, without their DELAYQ_ prefix (tests/unit/test_integration_settings.py checks
# this list against config.py's own).
KEYS = ("DATABASE_URL", "APP_PATH", "REDIS_URL", "REDIS_FAILOVER_WAIT", "ALLOWED_MODULES", "PREFIX", "LEASE", "TIMEOUT",
        "CONCURRENCY", "HEARTBEAT", "DB_TIMEOUT", "REDIS_TIMEOUT", "QUEUES", "EVENT_MODULES", "SCHEDULE_MODULES",
        "LOG_FORMAT",
        "ALERT_WEBHOOK", "ALERT_KIND", "ALERT_SECRET", "ALERT_TAG", "ALERT_TIMEOUT", "WEB_PASSWORD")
_LISTS = {"ALLOWED_MODULES": ",", "EVENT_MODULES": ",", "SCHEDULE_MODULES": ",", "APP_PATH": os.pathsep}
_NO_TCP_OPTIONS = ("read_default_file", "unix_socket", "host", "port", "user", "password", "passwd", "db",
                   "database", "ssl")


def as_environment(given: Mapping[str, Any], where: str, prefix: str = "",
                   others: tuple[str, ...] = ()) -> dict[str, str]:
    """DELAYQ_* values for settings named without their DELAYQ_ prefix: text and numbers as they are, a list of
    modules (ALLOWED_MODULES, EVENT_MODULES, SCHEDULE_MODULES, APP_PATH) joined, QUEUES as JSON; None leaves a setting unset.
    `where` names the source in errors (an unknown key, a value of the wrong type), `prefix` how it spells keys,
    `others` the keys of its own it took out before (listed with the known ones)."""
    values = {}
    for key, value in given.items():
        if key not in KEYS:
            raise ConfigError(f"{where} has an unknown setting {prefix}{shown(key)}: use one of "
                              f"{', '.join(prefix + k for k in others + KEYS)}")
        if value is not None:
            values[f"DELAYQ_{key}"] = _text(f"{where}[{prefix + key!r}]", key, value)
    return values


def _text(name: str, key: str, value: Any) -> str:
    if isinstance(value, (list, tuple)) and key in _LISTS and all(isinstance(v, str) for v in value):
        return _LISTS[key].join(value)
    if isinstance(value, dict) and key == "QUEUES":
        return json.dumps(value)
    if isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return str(value)
    expected = "a list of names" if key in _LISTS else "a dict of queues" if key == "QUEUES" else "text or a number"
    raise ConfigError(f"{name} must be {expected}, not {type(value).__name__}")


def load(settings: Mapping[str, str], default_database_url: Callable[[], str] | None = None) -> Config:
    """The Config for a framework: `settings` (DELAYQ_* values, from as_environment) over the environment over .env;
    DELAYQ_DATABASE_URL from default_database_url() when none of them gives one (else delayq's own default)."""
    return config_mod.load(env=_values(settings, default_database_url), dotenv_path=None)


def resolved(settings: Mapping[str, str], default_database_url: Callable[[], str] | None = None) -> dict[str, str]:
    """The DELAYQ_* values load() reads, checked by loading them: for a command that reads its settings from
    os.environ (manage.py delayq) to see the same ones."""
    values = _values(settings, default_database_url)
    config_mod.load(env=values, dotenv_path=None)
    return {key: value for key, value in values.items() if key.startswith("DELAYQ_")}


def _values(settings: Mapping[str, str], default_database_url: Callable[[], str] | None) -> dict[str, str]:
    values = {**_dotenv(".env"), **os.environ, **settings}
    if not values.get("DELAYQ_DATABASE_URL") and default_database_url is not None:
        values["DELAYQ_DATABASE_URL"] = default_database_url()
    return values


def run_command(argv: list[str], values: Mapping[str, str]) -> int:
    """`delayq ARGV` in this process with `values` (DELAYQ_* settings) in os.environ for the call, as the command
    reads its settings from there (and the runner's forked workers inherit them); os.environ is restored after."""
    from ..commands import main

    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        return main(argv)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _dotenv(path: str) -> dict[str, str]:
    if not os.path.exists(path):
        return {}
    from dotenv import dotenv_values

    return {key: value for key, value in dotenv_values(path).items() if value is not None}


def database_url_from_django(db: Mapping[str, Any], alias: str) -> str:
    """DELAYQ_DATABASE_URL for one of Django's DATABASES entries (its settings_dict): the same MySQL database over
    TCP, or the same SQLite file. ConfigError, saying to set DATABASE_URL, for what delayq cannot open the same way
    (another engine, a socket path, an option file, an in-memory SQLite)."""
    engine = str(db.get("ENGINE") or "")
    fix = f"set DELAYQ = {{\"DATABASE_URL\": ...}} in the Django settings (DATABASES[{alias!r}] is {engine or 'empty'}"
    if engine == "django.db.backends.sqlite3":
        name = str(db.get("NAME") or "")
        if not name or name == ":memory:" or name.startswith("file:") or "mode=memory" in name:
            raise ConfigError(f"{fix}: an in-memory SQLite database, which delayq's runner cannot open)")
        return "sqlite:///" + os.path.abspath(name)
    if engine != "django.db.backends.mysql":
        raise ConfigError(f"{fix}: delayq keeps its tables in MySQL/MariaDB or SQLite)")
    host = str(db.get("HOST") or "127.0.0.1")
    options = db.get("OPTIONS") or {}
    if host.startswith("/") or any(key in options for key in _NO_TCP_OPTIONS):
        raise ConfigError(f"{fix} with a socket path or connection OPTIONS: delayq connects over TCP with a URL)")
    user = quote(str(db.get("USER") or "root"), safe="")
    password = str(db.get("PASSWORD") or "")
    auth = f"{user}:{quote(password, safe='')}" if password else user
    port = f":{db['PORT']}" if db.get("PORT") else ""
    host = f"[{host}]" if ":" in host else host
    return f"mysql://{auth}@{host}{port}/{quote(str(db.get('NAME') or ''), safe='')}"
