"""delayq: delayed and retried background jobs on MySQL and Redis, run by cron.

    import delayq

    @delayq.job
    def auto_confirm(order_id: int) -> None: ...

    auto_confirm.enqueue(123)                     # on the default client: settings from the environment / .env
    auto_confirm.options(delay="1d", ext="order:123").enqueue(order_id=123)

    delayq.configure(database_url="sqlite:///jobs.db", allowed_modules=("shop",))   # or set in code, once
    queue = delayq.connect()                      # or a client of your own; share it across threads
    queue.enqueue(auto_confirm, {"order_id": 123}, delay="1d", ext="order:123")

docs/DEVELOPERS.md: defining, enqueueing and testing jobs (delayq.testing).
"""

from .app import connect, open_manager
from .client import Client
from .config import Config
from .context import JobContext, current_job
from .default import configure, default_client
from .errors import (BackendError, CallableRefused, ConfigError, DelayqError, InvalidInput, NotFound,
                     Permanent, SchemaError, Snooze)
from .manager import Manager
from .pull import Message, Queue
from .methods import job, on
from .schedules import schedule
from .version import __version__ as __version__  # re-exported: delayq.__version__

__all__ = [
    "BackendError", "CallableRefused", "Client", "Config", "ConfigError", "DelayqError", "InvalidInput", "JobContext",
    "Manager", "Message", "NotFound", "Queue", "Permanent", "SchemaError", "Snooze", "configure", "connect",
    "current_job", "default_client", "emit", "job", "on", "open_manager", "schedule",
]


def emit(code: str, data=None, delay=None, ext: str | None = None):
    """Emit an event on the default client (delayq.configure, else the environment / .env): one job per handler.

    Returns (event id, jobs).
    """
    return default_client().emit(code, data, delay=delay, ext=ext)
