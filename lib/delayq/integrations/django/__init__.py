"""delayq in a Django project (docs/DJANGO.md; the sample project is examples/django_app/).

    # settings.py
    INSTALLED_APPS = [..., "delayq.integrations.django"]          # adds `manage.py delayq run-due`, `stats`, ...
    DELAYQ = {"ALLOWED_MODULES": ["shop.jobs"]}                   # no DATABASE_URL: Django's own database

    # shop/views.py
    from django.db import transaction
    from delayq.integrations.django import enqueue

    with transaction.atomic():
        order = Order.objects.create(total=500)
        enqueue(confirm_order, {"order_id": order.id}, delay="7d", ext=f"order:{order.id}")

Two ways to tie a job to the request's transaction:
  enqueue(...)            writes the job's row on Django's own connection, inside the open transaction.atomic():
                          the job exists if and only if that transaction commits. The stronger guarantee: prefer it
                          whenever delayq's tables are in the Django database (MySQL/MariaDB or SQLite).
  enqueue_on_commit(...)  checks the job now, writes it after the commit (transaction.on_commit). A rollback leaves
                          no job, but a crash or a failed write right after the commit loses it. For delayq's tables
                          in another database than the transaction's (a Django app on PostgreSQL, say).
`client().enqueue(..., connection=django.db.connection)` is the same as enqueue(): any delayq call taking
connection= accepts a Django connection (mysqlclient, PyMySQL through install_as_MySQLdb, or sqlite3).

Settings: settings.DELAYQ, a dict keyed like the DELAYQ_* environment variables without their prefix ("PREFIX",
"REDIS_URL", "ALLOWED_MODULES" as a list, "QUEUES" as a dict, ...), plus "DATABASE": the Django database alias
(default "default"). Each key wins over the environment and .env; DATABASE_URL, when nothing gives it, is that
Django database itself (the same MySQL database over TCP, or the same SQLite file).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping

try:
    from django.conf import settings
    from django.core.signals import setting_changed
    from django.db import DEFAULT_DB_ALIAS, connections, transaction
except ImportError as exc:                              # pragma: no cover (the extra is not installed)
    raise ImportError("delayq.integrations.django needs Django: pip install 'delayq[django]'") from exc

from ... import default
from ...app import connect
from ...client import Client
from ...clock import SystemClock
from ...config import Config
from ...errors import ConfigError
from ...registry import name_of
from ...store import Inserted
from ..settings import as_environment, database_url_from_django, load, resolved

__all__ = ["client", "config", "enqueue", "enqueue_on_commit", "environment", "reset"]

_lock = threading.Lock()
_client: Client | None = None


def _given() -> tuple[dict[str, str], str]:
    """settings.DELAYQ as DELAYQ_* values, and the Django database alias it names."""
    given = getattr(settings, "DELAYQ", None) or {}
    if not isinstance(given, Mapping):
        raise ConfigError(f"settings.DELAYQ must be a dict, e.g. {{\"PREFIX\": \"shop\"}}, not {type(given).__name__}")
    given = dict(given)
    alias = given.pop("DATABASE", DEFAULT_DB_ALIAS)
    if alias not in settings.DATABASES:
        raise ConfigError(f"settings.DELAYQ['DATABASE'] {alias!r} is not in DATABASES: use one of "
                          f"{', '.join(map(repr, settings.DATABASES))}")
    return as_environment(given, "settings.DELAYQ", others=("DATABASE",)), alias


def _alias() -> str:
    return _given()[1]


def _django_database(alias: str) -> Callable[[], str]:
    # settings_dict, not settings.DATABASES: under Django's test runner it names the test database
    return lambda: database_url_from_django(connections[alias].settings_dict, alias)


def config() -> Config:
    """delayq's settings for this project: settings.DELAYQ over the environment over .env over DATABASES."""
    values, alias = _given()
    return load(values, _django_database(alias))


def environment() -> dict[str, str]:
    """The same settings as DELAYQ_* values (what `manage.py delayq` puts in its environment)."""
    values, alias = _given()
    return resolved(values, _django_database(alias))


def client() -> Client:
    """This process's client, made on first use from config(): share it across threads (it keeps working in
    processes forked after it was made). A change of DELAYQ or DATABASES (override_settings) makes a new one.
    While the testing mode is on (delayq.testing), its client."""
    global _client
    testing = default.testing_client()
    if testing is not None:
        return testing
    if _client is None:
        with _lock:
            if _client is None:
                _client = connect(config())
    return _client


def reset() -> None:
    """Close this process's client; the next client() call makes a new one from the settings then in force."""
    global _client
    with _lock:
        old, _client = _client, None
    if old is not None:
        old.close()


def enqueue(call: str | Callable[..., Any], args: Mapping[str, Any] | None = None, *, using: str | None = None,
            **options: Any) -> Inserted:
    """Schedule a job inside the current transaction of Django's connection `using` (default: DELAYQ["DATABASE"]
    or "default"): it exists if and only if that transaction commits. Outside transaction.atomic(), Django
    commits each write at once, and so this one. Options are Client.enqueue's (delay, ext, queue, unique, ...)."""
    return client().enqueue(call, args, connection=connections[using or _alias()], **options)


def enqueue_on_commit(call: str | Callable[..., Any], args: Mapping[str, Any] | None = None, *,
                      using: str | None = None, robust: bool = False, **options: Any) -> None:
    """Check the job now (InvalidInput at this call, before anything commits), schedule it when the transaction
    of `using` commits (at once outside transaction.atomic()); a rollback schedules nothing. A delay counts from
    the commit. robust=True: an error writing the job is logged by Django, not raised, after the commit."""
    queue = client()
    _check(queue, call, args, options)
    transaction.on_commit(lambda: queue.enqueue(call, args, **options), using=using or _alias(), robust=robust)


def _check(queue: Client, call: Any, args: Any, options: Mapping[str, Any]) -> None:
    """What Client.enqueue would check first: the callable, its arguments, every option (no write)."""
    raw = {"call": name_of(call) if callable(call) else call, "args": args,
           **{key: value for key, value in options.items() if value is not None and (key != "unique" or value)}}
    if callable(raw.get("on_timeout")):
        raw["on_timeout"] = name_of(raw["on_timeout"])
    queue.manager.validate(raw, SystemClock().now())


def _settings_changed(setting: str, **_: Any) -> None:
    if setting in ("DELAYQ", "DATABASES"):
        reset()


setting_changed.connect(_settings_changed, dispatch_uid="delayq.integrations.django")
