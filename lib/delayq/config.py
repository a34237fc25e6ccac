"""Configuration from the environment, with a .env file filling the gaps.

Settings (the environment wins over .env):
  DELAYQ_DATABASE_URL     mysql://user:pass@host:3306/db or sqlite:///path.db
                          (default sqlite:///delayq.db in the working directory)
  DELAYQ_REDIS_URL        redis://host:6379/0; unset = due index in the database
  DELAYQ_ALLOWED_MODULES  comma-separated module prefixes a job may name
  DELAYQ_PREFIX           table and key prefix (default "delayq")
  DELAYQ_LEASE            seconds a claimed job may run before it counts as lost (default 300)
  DELAYQ_QUEUES           per-queue defaults as JSON, e.g. {"sms": {"ladder": "15,30,60", "max_attempts": 4},
                          "report": {"lease": 3600}}; keys: ladder, max_attempts, lease, priority
  DELAYQ_EVENT_MODULES    modules whose @delayq.on handlers emit() may create jobs for (under the allowed modules)
  DELAYQ_LOG_FORMAT       kv (default: key=value lines) or json
  DELAYQ_ALERT_WEBHOOK    where alerts for jobs that failed for good are POSTed (unset: no alerts)
  DELAYQ_ALERT_KIND       feishu, slack or json (default json)
  DELAYQ_ALERT_SECRET     Feishu signing secret (optional)
  DELAYQ_ALERT_TAG        a word naming this environment in alerts, e.g. prod
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .errors import ConfigError

DEFAULT_DATABASE_URL = "sqlite:///delayq.db"
PREFIX_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")


@dataclass(frozen=True)
class Config:
    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    allowed_modules: tuple[str, ...] = field(default_factory=tuple)
    prefix: str = "delayq"
    lease: float = 300.0
    queues: dict[str, dict] = field(default_factory=dict)
    event_modules: tuple[str, ...] = field(default_factory=tuple)
    alert_webhook: str | None = field(default=None, repr=False)
    alert_kind: str = "json"
    alert_secret: str | None = field(default=None, repr=False)
    alert_tag: str = ""
    log_format: str = "kv"

    def __post_init__(self) -> None:
        if not PREFIX_RE.match(self.prefix):
            raise ConfigError(
                f"DELAYQ_PREFIX {self.prefix!r} is invalid: use a letter then up to 39 letters, digits or _"
            )
        scheme = urlsplit(self.database_url).scheme
        if scheme not in ("mysql", "sqlite"):
            raise ConfigError(
                f"DELAYQ_DATABASE_URL {redact(self.database_url)!r} is not supported: "
                "use mysql://user:pass@host:3306/db or sqlite:///path/to.db"
            )
        if self.redis_url and urlsplit(self.redis_url).scheme not in ("redis", "rediss", "unix"):
            raise ConfigError(
                f"DELAYQ_REDIS_URL {redact(self.redis_url)!r} is not supported: use redis://host:6379/0"
            )
        if self.log_format not in ("kv", "json"):
            raise ConfigError(f"DELAYQ_LOG_FORMAT {self.log_format!r} is unknown: use kv or json")
        if self.lease <= 0:
            raise ConfigError("DELAYQ_LEASE must be a positive number of seconds")


def load(env: dict[str, str] | None = None, dotenv_path: str | None = ".env") -> Config:
    """Read the settings; `env` replaces os.environ (tests), `.env` fills what is unset."""
    values = dict(os.environ if env is None else env)
    if dotenv_path and os.path.exists(dotenv_path):
        from dotenv import dotenv_values

        for key, value in dotenv_values(dotenv_path).items():
            if value is not None:
                values.setdefault(key, value)
    modules = values.get("DELAYQ_ALLOWED_MODULES", "")
    try:
        lease = float(values.get("DELAYQ_LEASE") or 300)
    except ValueError:
        raise ConfigError("DELAYQ_LEASE must be a number of seconds") from None
    return Config(
        database_url=values.get("DELAYQ_DATABASE_URL") or DEFAULT_DATABASE_URL,
        redis_url=values.get("DELAYQ_REDIS_URL") or None,
        allowed_modules=tuple(m.strip() for m in modules.split(",") if m.strip()),
        prefix=values.get("DELAYQ_PREFIX") or "delayq",
        lease=lease,
        queues=_queues(values.get("DELAYQ_QUEUES", "")),
        event_modules=tuple(m.strip() for m in values.get("DELAYQ_EVENT_MODULES", "").split(",") if m.strip()),
        alert_webhook=values.get("DELAYQ_ALERT_WEBHOOK") or None,
        alert_kind=values.get("DELAYQ_ALERT_KIND") or "json",
        alert_secret=values.get("DELAYQ_ALERT_SECRET") or None,
        alert_tag=values.get("DELAYQ_ALERT_TAG", ""),
        log_format=values.get("DELAYQ_LOG_FORMAT") or "kv",
    )


def _queues(text: str) -> dict[str, dict]:
    """DELAYQ_QUEUES: {"queue": {"ladder": ..., "max_attempts": ..., "lease": ..., "priority": ...}}."""
    if not text.strip():
        return {}
    import json

    from .jobs import QUEUE_DEFAULT_KEYS

    try:
        queues = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"DELAYQ_QUEUES is not valid JSON ({exc}): use {{\"sms\": {{\"max_attempts\": 4}}}}") from None
    if not isinstance(queues, dict) or not all(isinstance(v, dict) for v in queues.values()):
        raise ConfigError("DELAYQ_QUEUES must map queue names to objects, e.g. {\"report\": {\"lease\": 3600}}")
    for name, defaults in queues.items():
        unknown = set(defaults) - QUEUE_DEFAULT_KEYS
        if unknown:
            raise ConfigError(f"DELAYQ_QUEUES[{name!r}]: unknown key(s) {', '.join(sorted(unknown))}; "
                              f"use {', '.join(sorted(QUEUE_DEFAULT_KEYS))}")
    return queues


def redact(url: str) -> str:
    """The URL with its password replaced by ***, safe for any message or log."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return parts._replace(netloc=f"{user}:***@{netloc}").geturl()


def describe(url: str) -> str:
    """Where a backend lives, for error messages: scheme://host:port/db, no user, no password."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return url
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
