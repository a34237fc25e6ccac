"""Wiring: from a Config to a ready Manager (store, index, registry, clock), and the application's Client."""

from __future__ import annotations

from . import config as config_mod
from .client import Client
from .clock import Clock, ServerClock, SystemClock
from .config import Config
from .index import open_index
from .manager import Manager
from .registry import Registry
from .store import open_store


def open_manager(config: Config | None = None, clock: Clock | None = None, create: bool = True) -> Manager:
    """A Manager for `config` (default: the environment and .env). Connects lazily.

    create=False: the embedded SQLite file and its tables are never created (open_store), for what does not
    enqueue: a command run from the wrong directory then says so instead of showing an empty new database."""
    config = config or config_mod.load()
    store = open_store(config.database_url, config.prefix, config.db_timeout, create)
    index = open_index(config.redis_url, config.prefix, store, socket_timeout=config.redis_timeout,
                       connect_timeout=config.redis_timeout, failover_wait=config.redis_failover_wait)
    if clock is None:
        clock = default_clock(config, store, index)
    return Manager(store, index, Registry(config.allowed_modules), clock, lease=config.lease,
                   queues=config.queues, event_modules=config.event_modules)


def open_ready(config: Config | None = None, clock: Clock | None = None, create: bool = True) -> Manager:
    """A Manager whose store and index were just proven usable (Manager.check_ready): for commands that write,
    so a wrong password, a missing database or unmigrated tables stop them before anything is written."""
    manager = open_manager(config, clock, create)
    manager.check_ready()
    return manager


def open_reader(config: Config | None = None, clock: Clock | None = None) -> Manager:
    """A Manager for a command that only reads (list, show, stats, workers): nothing is created, and the store is
    proven to hold delayq's tables first (one query; the index is not asked), so the wrong database or prefix
    is one line naming it (SchemaError), not an empty answer."""
    manager = open_manager(config, clock, create=False)
    manager.store.check_schema()
    return manager

def default_clock(config: Config, store, index) -> Clock:
    """One clock for every host: the database's on MySQL (the rows' due times and leases are compared
    against it; a Cluster has a TIME per node, a Sentinel failover moves it). SQLite lives on one host:
    its clock, or Redis TIME when Redis holds the index (as before)."""
    if not config.database_url.startswith("sqlite"):
        return ServerClock(store.server_time)
    return ServerClock(index.server_time) if config.redis_url else SystemClock()


def connect(config: Config | None = None, clock: Clock | None = None) -> Client:
    """The application's client (settings from the environment / .env): share it across threads; a context manager."""
    return Client(open_manager(config, clock))


def alerter(config: Config):
    """The configured Alerter, or None when DELAYQ_ALERT_WEBHOOK is unset; ConfigError for a bad alert setting."""
    if not config.alert_webhook:
        return None
    from .alerts import Alerter

    return Alerter(config.alert_webhook, config.alert_kind, config.alert_secret, config.alert_tag,
                   timeout=config.alert_timeout, prefix=config.prefix)
