"""delayq: delayed and retried background jobs on MySQL and Redis, run by cron.

    import delayq

    @delayq.job
    def auto_confirm(order_id: int) -> None: ...

    queue = delayq.connect()                      # settings from the environment / .env; share it across threads
    queue.enqueue(auto_confirm, {"order_id": 123}, delay="1d", ext="order:123")
"""

from .app import connect, open_manager
from .client import Client
from .config import Config
from .context import JobContext, current_job
from .errors import (BackendError, CallableRefused, ConfigError, DelayqError, InvalidInput, NotFound,
                     Permanent, SchemaError, Snooze)
from .events import on
from .manager import Manager
from .pull import Message, Queue
from .registry import job

__all__ = [
    "BackendError", "CallableRefused", "Client", "Config", "ConfigError", "DelayqError", "InvalidInput", "JobContext",
    "Manager", "Message", "NotFound", "Queue", "Permanent", "SchemaError", "Snooze", "connect", "current_job", "emit",
    "job", "on", "open_manager",
]
__version__ = "0.2.0"


def emit(code: str, data=None, delay=None, ext: str | None = None):
    """Emit an event with the settings from the environment / .env: one job per handler.

    Returns (event id, jobs). For many events, keep a client: delayq.connect().emit(...).
    """
    with connect() as client:
        return client.emit(code, data, delay=delay, ext=ext)
