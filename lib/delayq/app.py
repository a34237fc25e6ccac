"""Wiring: from a Config to a ready Manager (store, index, registry, clock)."""

from __future__ import annotations

from . import config as config_mod
from .clock import Clock, ServerClock, SystemClock
from .config import Config
from .index import open_index
from .manager import Manager
from .registry import Registry
from .store import open_store


def connect(config: Config | None = None, clock: Clock | None = None) -> Manager:
    """A Manager for `config` (default: the environment and .env). Connects lazily."""
    config = config or config_mod.load()
    store = open_store(config.database_url, config.prefix)
    index = open_index(config.redis_url, config.prefix, store)
    if clock is None:
        # One clock for every runner: Redis's when it holds the index, else the database's.
        clock = SystemClock() if config.database_url.startswith("sqlite") and not config.redis_url else ServerClock(index.server_time)
    return Manager(store, index, Registry(config.allowed_modules), clock, lease=config.lease,
                   queues=config.queues, event_modules=config.event_modules)


def alerter(config: Config):
    """The configured Alerter, or None when DELAYQ_ALERT_WEBHOOK is unset."""
    if not config.alert_webhook:
        return None
    from .alerts import Alerter

    return Alerter(config.alert_webhook, config.alert_kind, config.alert_secret, config.alert_tag)
