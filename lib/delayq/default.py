"""The default client: configured once, made on first use, shared by every thread of the process.

    import delayq

    delayq.configure(database_url="mysql://app:secret@db:3306/shop", allowed_modules=("shop",))  # optional
    auto_confirm.enqueue(123)    # made here, on first use (not configured: from the environment and .env)

The typed methods of a job function (methods.py) and delayq.emit() enqueue on it. It is made at
most once, whichever threads ask first (an app under gunicorn threads), and keeps working in
processes forked after it was made (gunicorn --preload), as any Client does. The testing mode
(testing.py) puts a client of its own in front of it for the length of a test.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from . import config as config_mod
from .app import connect
from .client import Client
from .config import Config
from .errors import ConfigError

_lock = threading.Lock()
_config: Config | None = None        # set by configure(); None: the environment and .env, read on first use
_client: Client | None = None        # made from _config on first use
_override: list[Client] = []         # the testing mode's clients, innermost last: they win while they last


def _fresh_lock_in_child() -> None:
    global _lock
    _lock = threading.Lock()         # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_fresh_lock_in_child)


def configure(config: Config | None = None, /, **settings: Any) -> Config:
    """Set the default client's settings, checked now; returns them. No connection is made until the first enqueue.

    `configure()`: from the environment and .env, read now. `configure(Config(...))`: those settings.
    `configure(database_url=..., allowed_modules=("shop",), prefix=...)`: a Config of these fields (the
    others at their defaults; no environment variable is read). `configure(Config.from_env(), prefix="x")`:
    the environment's, with some replaced. A bad value raises ConfigError, one line, no password in it.
    Calling it again (tests do) replaces the default client; the one made before is closed.
    """
    checked = _settings(config, settings)
    global _config, _client
    with _lock:
        old, _config, _client = _client, checked, None
    if old is not None:
        old.close()
    return checked


def default_client() -> Client:
    """The client that `f.enqueue(...)` uses: the testing mode's, else the configured one, made on first use."""
    global _client
    client = _override[-1] if _override else _client
    if client is not None:
        return client
    with _lock:
        if _client is None:
            _client = connect(_config or config_mod.load())
        return _client


def testing_client() -> Client | None:
    """The testing mode's client while one is on, else None: the Django and Flask integrations' clients yield to
    it, so that an application's own tests under delayq.testing enqueue into the testing mode's store."""
    return _override[-1] if _override else None


@contextmanager
def override(client: Client) -> Iterator[Client]:
    """`client` is the default client inside the block, for every thread (the testing mode); the one before after."""
    with _lock:
        _override.append(client)
    try:
        yield client
    finally:
        with _lock:
            _override.remove(client)


def current_config() -> Config:
    """The default client's settings: configure()'s, else the environment's and .env's (read now)."""
    return _config or config_mod.load()


def _settings(config: Config | None, settings: dict[str, Any]) -> Config:
    if config is not None and not isinstance(config, Config):
        raise ConfigError(f"configure() takes a delayq.Config or keyword settings, not a {type(config).__name__}")
    names = {f.name for f in dataclasses.fields(Config)}
    unknown = sorted(set(settings) - names)
    if unknown:
        raise ConfigError(f"configure() has no setting {', '.join(map(repr, unknown))}: use {', '.join(sorted(names))}")
    if config is None:
        return Config(**settings) if settings else config_mod.load()
    return dataclasses.replace(config, **settings) if settings else config
