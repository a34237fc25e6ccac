"""Configuration from the environment, with a .env file filling the gaps.

Settings (the environment wins over .env):
  DELAYQ_DATABASE_URL     mysql://user:pass@host:3306/db or sqlite:///relative.db, sqlite:////absolute.db
                          (default sqlite:///delayq.db in the working directory). Several MySQL hosts (a Galera
                          cluster): mysql://user:pass@host1:3306,host2:3306,host3/db, tried in turn from the one
                          that last answered when a connect finds no server
  DELAYQ_APP_PATH         directories where the scripts find the application's job modules, after the
                          installed packages (os.pathsep-separated; default: the working directory)
  DELAYQ_REDIS_URL        redis://host:6379/0, redis+sentinel://:pw@host1:26379,host2:26379/mymaster/0 or
                          redis+cluster://:pw@host1:7000,host2:7001 (rediss... for TLS); unset = due index in the database.
                          Query options: client_name, socket_keepalive, health_check_interval (not on a cluster), db
                          (one server), sentinel_password, sentinel_username (Sentinel); over TLS ssl_ca_certs,
                          ssl_ca_path, ssl_cert_reqs, ssl_check_hostname, ssl_certfile, ssl_keyfile. Any other
                          option (decode_responses, socket_timeout, ssl=true...) is refused with the reason.
  DELAYQ_REDIS_FAILOVER_WAIT  seconds a Redis call keeps retrying through a failover (default 30 for Sentinel and
                          Cluster, 0 for one server); size it to a few node timeouts. One bound for the whole call:
                          its first attempt, every retry and every wait in them end within the larger of this and
                          DELAYQ_REDIS_TIMEOUT of its start
  DELAYQ_ALLOWED_MODULES  comma-separated module prefixes a job may name
  DELAYQ_PREFIX           table and key prefix (default "delayq")
  DELAYQ_LEASE            seconds after which the jobs of a runner that died count as lost (default 300; a live
                          runner keeps the leases of the jobs it runs)
  DELAYQ_TIMEOUT          seconds an attempt may run before it is stopped and counted as failed (default 30)
  DELAYQ_CONCURRENCY      jobs a runner process runs at once (default 16)
  DELAYQ_HEARTBEAT        seconds between a runner's heartbeats (default 5; three missed: it counts as stopped)
  DELAYQ_DB_TIMEOUT       seconds one MySQL operation may take in all: a transaction or a statement, with its
                          connect, every statement, each answer and the COMMIT (default 20)
  DELAYQ_REDIS_TIMEOUT    seconds one Redis call may take in all: connecting, the handshake, each command and
                          reply, redis-py's own retries (default 10; Sentinel and Cluster: see FAILOVER_WAIT)
  DELAYQ_QUEUES           per-queue defaults as JSON, e.g. {"sms": {"ladder": "15,30,60", "max_attempts": 4},
                          "report": {"lease": 3600}}; keys: ladder, max_attempts, lease, timeout, priority, concurrency
  DELAYQ_EVENT_MODULES    modules whose @delayq.on handlers emit() may create jobs for (under the allowed modules)
  DELAYQ_SCHEDULE_MODULES modules whose delayq.schedule(...) declarations every run-due enqueues the due slots of
                          (under the allowed modules)
  DELAYQ_LOG_FORMAT       kv (default: key=value lines) or json
  DELAYQ_ALERT_WEBHOOK    where alerts for jobs that failed for good are POSTed (unset: no alerts)
  DELAYQ_ALERT_KIND       feishu, slack or json (default json)
  DELAYQ_ALERT_SECRET     Feishu signing secret (optional)
  DELAYQ_ALERT_TAG        a word naming this environment in alerts, e.g. prod
  DELAYQ_ALERT_TIMEOUT    seconds one alert delivery may take in all, 1-50 (default 10)
  DELAYQ_WEB_PASSWORD     the web dashboard's password (also its bearer token); required to listen on any address
                          but loopback (`delayq web --listen 0.0.0.0:8080`); never shown in a page, log or message

The alert settings are checked when compensate builds its alerter (delayq.app.alerter),
after its recovery: a bad alert setting exits 2 but never blocks job processing or recovery.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from urllib.parse import parse_qsl, urlsplit

from .errors import ConfigError, shown
from .mysql_urls import EXAMPLE as MYSQL_HOSTS_EXAMPLE
from .mysql_urls import MySQLTarget, mysql_target  # noqa: F401 - also read from here (config.mysql_target)
from .mysql_urls import MySQLUrlError, describe_hosts, redact_hosts, several_hosts, valid_host
from .redis_urls import RedisUrlError, parse

DEFAULT_DATABASE_URL = "sqlite:///delayq.db"
PREFIX_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")
# Every wait on a server is bounded, and so is each operation as a whole, its retries included (docs/RELIABILITY.md,
# "Every wait has a bound"). A paused MySQL then ends a script after about DB_TIMEOUT s, a paused Redis after
# about REDIS_TIMEOUT s: both well inside the cron minute, while a legitimate transaction (a stats scan, a purge
# page) has 20 s to finish.
DEFAULT_DB_TIMEOUT = 20.0
DEFAULT_REDIS_TIMEOUT = 10.0
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
TIMEOUT_RANGE = (1.0, 3600.0)
LEASE_RANGE = (1.0, 7 * 86400.0)


@dataclass(frozen=True)
class Config:
    """delayq's settings: read by load() / Config.from_env() from the environment and .env, or built in code.

        Config(database_url="mysql://app:secret@db:3306/shop", allowed_modules=("shop",), prefix="shop")

    Each field is the DELAYQ_ setting of the same name (above), as Python values: times in seconds
    (lease=300.0), module lists as tuples (allowed_modules=("shop", "billing")), DELAYQ_QUEUES as a
    dict. Every value is checked here, as load() checks the environment's: a bad one raises
    ConfigError, one line, naming the setting. repr() shows no password.
    """

    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    allowed_modules: tuple[str, ...] = field(default_factory=tuple)
    prefix: str = "delayq"
    lease: float = 300.0
    timeout: float = 30.0
    concurrency: int | None = None
    heartbeat: float = 5.0
    db_timeout: float = DEFAULT_DB_TIMEOUT
    redis_timeout: float = DEFAULT_REDIS_TIMEOUT
    queues: dict[str, dict] = field(default_factory=dict)
    event_modules: tuple[str, ...] = field(default_factory=tuple)
    schedule_modules: tuple[str, ...] = field(default_factory=tuple)
    alert_webhook: str | None = field(default=None, repr=False)
    alert_kind: str = "json"
    alert_secret: str | None = field(default=None, repr=False)
    alert_tag: str = ""
    alert_timeout: str | None = None      # as given: delayq.alerts.timeout_seconds checks it
    log_format: str = "kv"
    app_path: tuple[str, ...] = field(default_factory=tuple)
    redis_failover_wait: float | None = None
    web_password: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, dotenv_path: str | None = ".env") -> "Config":
        """The settings of the environment, with a .env file filling the gaps (the same as load())."""
        return load(env, dotenv_path)

    def __repr__(self) -> str:
        shown_fields = ", ".join(f"{f.name}={self._shown(f.name)!r}" for f in fields(self) if f.repr)
        return f"Config({shown_fields})"

    def _shown(self, name: str) -> object:
        value = getattr(self, name)
        return redact(value) if name in ("database_url", "redis_url") and isinstance(value, str) else value

    def __post_init__(self) -> None:
        self._check_code_values()
        if not isinstance(self.prefix, str) or not PREFIX_RE.match(self.prefix):
            raise ConfigError(
                f"DELAYQ_PREFIX {shown(self.prefix, 60)!r} is invalid: use a letter then up to 39 letters, digits or _"
            )
        check_database_url(self.database_url)
        if self.redis_url:
            check_redis_url(self.redis_url)
        if self.redis_failover_wait is not None and not 0 <= self.redis_failover_wait <= 600:
            raise ConfigError("DELAYQ_REDIS_FAILOVER_WAIT must be 0 to 600 seconds (a few node timeouts)")
        if self.log_format not in ("kv", "json"):
            raise ConfigError(f"DELAYQ_LOG_FORMAT {self.log_format!r} is unknown: use kv or json")
        for setting, value, (lo, hi) in (("DELAYQ_LEASE", self.lease, LEASE_RANGE),
                                         ("DELAYQ_DB_TIMEOUT", self.db_timeout, TIMEOUT_RANGE),
                                         ("DELAYQ_REDIS_TIMEOUT", self.redis_timeout, TIMEOUT_RANGE)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
                raise ConfigError(f"{setting} must be {lo:g} to {hi:g} seconds, not {shown(value)!r}")

    def _check_code_values(self) -> None:
        """The fields load() checks as it reads them, checked for a Config built in code (lists become tuples)."""
        from . import validate
        from .errors import InvalidInput

        for name, setting in (("allowed_modules", "DELAYQ_ALLOWED_MODULES"), ("event_modules", "DELAYQ_EVENT_MODULES"),
                              ("schedule_modules", "DELAYQ_SCHEDULE_MODULES"), ("app_path", "DELAYQ_APP_PATH")):
            value = getattr(self, name)
            if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or not all(
                    isinstance(item, str) and item for item in value):
                raise ConfigError(f"{setting} in code ({name}=) is a tuple of names, e.g. ('shop',), "
                                  f"not {shown(value)!r}")
            object.__setattr__(self, name, tuple(value))
        try:
            timeout = validate.duration(self.timeout, "DELAYQ_TIMEOUT", 1, validate.MAX_LEASE)
            object.__setattr__(self, "timeout", timeout)
            object.__setattr__(self, "heartbeat", validate.duration(self.heartbeat, "DELAYQ_HEARTBEAT", 0.1, 3600))
            if self.concurrency is not None:
                concurrency = validate.integer(self.concurrency, "DELAYQ_CONCURRENCY", 1, 1024)
                object.__setattr__(self, "concurrency", concurrency)
            if not isinstance(self.queues, dict):
                raise ConfigError("DELAYQ_QUEUES in code (queues=) is a dict, e.g. {\"report\": {\"lease\": 3600}}")
            object.__setattr__(self, "queues", validate.queue_defaults(self.queues))
        except InvalidInput as exc:
            raise ConfigError(str(exc)) from None


def load(env: dict[str, str] | None = None, dotenv_path: str | None = ".env") -> Config:
    """Read the settings; `env` replaces os.environ (tests), `.env` fills what is unset."""
    values = dict(os.environ if env is None else env)
    if dotenv_path and os.path.exists(dotenv_path):
        from dotenv import dotenv_values

        for key, value in dotenv_values(dotenv_path).items():
            if value is not None:
                values.setdefault(key, value)
    modules = values.get("DELAYQ_ALLOWED_MODULES", "")
    app_path = values.get("DELAYQ_APP_PATH")
    from . import validate
    from .errors import InvalidInput

    try:
        timeout = validate.duration(values.get("DELAYQ_TIMEOUT") or 30, "DELAYQ_TIMEOUT", 1, validate.MAX_LEASE)
        heartbeat = validate.duration(values.get("DELAYQ_HEARTBEAT") or 5, "DELAYQ_HEARTBEAT", 0.1, 3600)
        concurrency = (validate.integer(values["DELAYQ_CONCURRENCY"], "DELAYQ_CONCURRENCY", 1, 1024)
                       if values.get("DELAYQ_CONCURRENCY") else None)
    except InvalidInput as exc:
        raise ConfigError(str(exc)) from None

    wait = values.get("DELAYQ_REDIS_FAILOVER_WAIT")
    try:
        failover_wait = float(wait) if wait else None
    except ValueError:
        raise ConfigError("DELAYQ_REDIS_FAILOVER_WAIT must be a number of seconds") from None
    return Config(
        timeout=timeout,
        concurrency=concurrency,
        heartbeat=heartbeat,
        app_path=tuple(p for p in app_path.split(os.pathsep) if p) if app_path else (os.getcwd(),),
        database_url=values.get("DELAYQ_DATABASE_URL") or DEFAULT_DATABASE_URL,
        redis_url=values.get("DELAYQ_REDIS_URL") or None,
        allowed_modules=tuple(m.strip() for m in modules.split(",") if m.strip()),
        prefix=values.get("DELAYQ_PREFIX") or "delayq",
        lease=_seconds(values, "DELAYQ_LEASE", 300.0, LEASE_RANGE),
        db_timeout=_seconds(values, "DELAYQ_DB_TIMEOUT", DEFAULT_DB_TIMEOUT, TIMEOUT_RANGE),
        redis_timeout=_seconds(values, "DELAYQ_REDIS_TIMEOUT", DEFAULT_REDIS_TIMEOUT, TIMEOUT_RANGE),
        queues=_queues(values.get("DELAYQ_QUEUES", "")),
        event_modules=tuple(m.strip() for m in values.get("DELAYQ_EVENT_MODULES", "").split(",") if m.strip()),
        schedule_modules=tuple(m.strip() for m in values.get("DELAYQ_SCHEDULE_MODULES", "").split(",") if m.strip()),
        alert_webhook=values.get("DELAYQ_ALERT_WEBHOOK") or None,
        alert_kind=values.get("DELAYQ_ALERT_KIND") or "json",
        alert_secret=values.get("DELAYQ_ALERT_SECRET") or None,
        alert_tag=values.get("DELAYQ_ALERT_TAG", ""),
        alert_timeout=values.get("DELAYQ_ALERT_TIMEOUT") or None,
        log_format=values.get("DELAYQ_LOG_FORMAT") or "kv",
        redis_failover_wait=failover_wait,
        web_password=values.get("DELAYQ_WEB_PASSWORD") or None,
    )


def _seconds(values: dict[str, str], setting: str, default: float, bounds: tuple[float, float]) -> float:
    """A number of seconds (or 90s, 15m, 2h) within bounds; nan, inf and text are refused, never guessed."""
    text = values.get(setting)
    if not text:
        return default
    from . import validate
    from .errors import InvalidInput

    try:
        return validate.duration(text, setting, *bounds)
    except InvalidInput as exc:
        raise ConfigError(f"{exc} (unset: {default:g})") from None


def _queues(text: str) -> dict[str, dict]:
    """DELAYQ_QUEUES: {"queue": {"ladder": ..., "max_attempts": ..., "lease": ..., "priority": ...}}, each checked."""
    if not text.strip():
        return {}
    import json

    from . import validate
    from .errors import InvalidInput

    try:
        queues = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"DELAYQ_QUEUES is not valid JSON ({exc}): use {{\"sms\": {{\"max_attempts\": 4}}}}") from None
    if not isinstance(queues, dict):
        raise ConfigError("DELAYQ_QUEUES must map queue names to objects, e.g. {\"report\": {\"lease\": 3600}}")
    try:
        return validate.queue_defaults(queues)
    except InvalidInput as exc:
        raise ConfigError(str(exc)) from None


def check_url(url: str, setting: str, schemes: tuple[str, ...], example: str) -> None:
    """A URL the drivers can use, or a ConfigError that shows it without its password.

    Refused here, not inside a driver: text that is not valid Unicode (a non-UTF-8 environment), control
    characters, a port out of 1-65535, a host that is neither an IP literal nor an ASCII DNS name.
    """
    _check_text(url, setting, example)
    try:
        parts = urlsplit(url)
        port = parts.port       # raises ValueError for a port out of range or not a number
    except ValueError as exc:
        raise ConfigError(f"{setting} is not a valid URL ({exc}): use {example}") from None
    if parts.scheme not in schemes:
        raise ConfigError(f"{setting} {redact(url)!r} is not supported: use {example}")
    if parts.scheme in ("sqlite", "unix"):
        return
    if not parts.hostname:
        raise ConfigError(f"{setting} {redact(url)!r} names no host: use {example}")
    if port == 0 or not valid_host(parts.hostname):
        raise ConfigError(f"{setting} {redact(url)!r}: the host must be an IP address or a DNS name "
                          f"(ASCII; xn-- for other scripts) and the port 1-65535: use {example}")


def _check_text(url: str, setting: str, example: str) -> None:
    if not isinstance(url, str):
        raise ConfigError(f"{setting} must be text: use {example}")
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{setting} is not valid UTF-8 text: use {example}") from None
    if _CONTROL_RE.search(url):
        raise ConfigError(f"{setting} holds control characters: use {example}")


def check_redis_url(url: str) -> None:
    """One server, a Sentinel set or a Cluster (redis_urls.py), or a ConfigError naming the form and host.

    A single server's URL is first read the way redis-py reads it, without connecting; then every form's query
    options are checked (redis_urls.parse): each is one delayq takes, with a value that works, or it is refused
    (its own timeouts among them: DELAYQ_REDIS_TIMEOUT is the one bound).
    """

    if isinstance(url, str) and url.partition("://")[0] in ("redis", "rediss", "unix"):
        _check_redis_py_reads(url)
    try:
        parse(url)
    except RedisUrlError as exc:
        raise ConfigError(f"DELAYQ_REDIS_URL {exc}") from None


def _check_redis_py_reads(url: str) -> None:
    example = "redis://host:6379/0"
    check_url(url, "DELAYQ_REDIS_URL", ("redis", "rediss", "unix"), example)
    import redis

    try:
        redis.ConnectionPool.from_url(url)         # parses the URL, then checks the pool's own options
    except (ValueError, TypeError, redis.RedisError) as exc:
        raise ConfigError(f"DELAYQ_REDIS_URL {redact(url)!r} is not a URL redis-py can use "
                          f"({str(exc)[:100]}): use {example}") from None


def check_database_url(url: str) -> None:
    example = ("mysql://user:pass@host:3306/db (several hosts: mysql://user:pass@host1:3306,host2:3306/db), "
               "sqlite:///relative/path.db or sqlite:////absolute/path.db")
    if several_hosts(url):                  # read by mysql_urls: urllib reads one host
        _check_text(url, "DELAYQ_DATABASE_URL", example)
        try:
            mysql_target(url)
        except MySQLUrlError as exc:
            raise ConfigError(f"DELAYQ_DATABASE_URL {redact(url)!r} {exc}: use {MYSQL_HOSTS_EXAMPLE}") from None
        return
    check_url(url, "DELAYQ_DATABASE_URL", ("mysql", "sqlite"), example)
    if url.startswith("sqlite:") and (not url.startswith("sqlite:///") or len(url) == len("sqlite:///")):
        # sqlite://x.db would put "x.db" where a host goes and mean another file than intended
        raise ConfigError(f"DELAYQ_DATABASE_URL {url!r}: a SQLite URL has three slashes then the path: {example}")


def redact(url: str) -> str:
    """The URL with its password and its query's values replaced by ***, safe for any message or log (a Redis
    URL's query may hold a password: sentinel_password, or redis-py's own password=)."""
    if several_hosts(url):
        return redact_hosts(url)
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<unparseable URL>"
    if parts.query:
        parts = parts._replace(query="&".join(f"{name}=***" for name, _ in parse_qsl(parts.query, True)))
        url = parts.geturl()
    if password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return parts._replace(netloc=f"{user}:***@{netloc}").geturl()


def describe(url: str) -> str:
    """Where a backend lives, for error messages: scheme://host:port/db, no user, no password; an SQLite file by its
    absolute path (sqlite:////srv/shop/delayq.db), so that output says which file wherever it was run from."""
    if several_hosts(url):                  # every host, with its port
        return describe_hosts(url)
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return "sqlite:///" + os.path.abspath(url[len("sqlite:///"):] or "delayq.db")
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
