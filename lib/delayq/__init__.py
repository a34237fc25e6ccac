"""delayq: delayed and retried background jobs on MySQL and Redis, run by cron.

    import delayq

    @delayq.job
    def auto_confirm(order_id: int) -> None: ...

    q = delayq.connect()                       # settings from the environment / .env
    q.enqueue("shop.jobs:auto_confirm", {"order_id": 123}, delay=86400, ext="order:123")
"""

from .app import connect
from .config import Config
from .context import JobContext, current_job
from .errors import (BackendError, CallableRefused, ConfigError, DelayqError, InvalidInput, NotFound,
                     Permanent, Snooze)
from .events import on
from .manager import Manager
from .pull import Message, Queue
from .registry import job

__all__ = [
    "BackendError", "CallableRefused", "Config", "ConfigError", "DelayqError", "InvalidInput", "JobContext",
    "Manager", "Message", "NotFound", "Queue", "Permanent", "Snooze", "connect", "current_job", "emit", "job", "on",
]
__version__ = "0.1.0"


def emit(code: str, data=None, delay: float | None = None, ext: str | None = None):
    """Emit an event with the settings from the environment / .env: one job per handler.

    Returns (event id, jobs). For many events, keep a Manager: delayq.connect().emit(...).
    """
    manager = connect()
    try:
        return manager.emit(code, data, delay=delay, ext=ext)
    finally:
        manager.close()
