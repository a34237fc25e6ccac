"""The client an application holds: `delayq.connect()`.

    import delayq
    from datetime import timedelta

    queue = delayq.connect()                       # once, at start-up: settings from the environment / .env

    @delayq.job
    def auto_confirm(order_id: int) -> None: ...

    queue.enqueue(auto_confirm, {"order_id": 123}, delay=timedelta(days=7), ext="order:123")
    queue.enqueue("shop.jobs:auto_confirm", {"order_id": 124}, delay="7d")   # by name works too
    queue.cancel(ext="order:123")

    with db.begin() as conn:                       # in the application's own transaction (PyMySQL / sqlite3)
        conn.execute("UPDATE orders ...")
        queue.enqueue(auto_confirm, {"order_id": 125}, delay="7d", connection=conn)

One client may be shared by any number of threads, and keeps working in processes forked
after it was made (gunicorn --preload, multiprocessing): database connections come from a
pool that a forked child never shares with its parent; redis-py's pool does the same.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from .jobs import Attempt, Job
from .manager import Manager
from .registry import name_of
from .store import Cancelled, Inserted


class Client:
    def __init__(self, manager: Manager):
        self.manager = manager

    def enqueue(self, call: str | Callable[..., Any], args: Mapping[str, Any] | None = None, *,
                delay: Any = None, at: Any = None, ext: str | None = None, queue: str | None = None,
                ladder: Any = None, max_attempts: int | None = None, deadline: Any = None,
                priority: int | None = None, unique: bool = False, lease: Any = None, timeout: Any = None,
                on_timeout: str | Callable[..., Any] | None = None, connection: Any = None) -> Inserted:
        """Schedule one job; InvalidInput (nothing written) when it could never run as given.

        call: a function marked @delayq.job, or its name "package.module:function".
        delay: seconds, a timedelta, or "90s", "15m", "2h", "1d"; at: a datetime (naive = local time)
        or ISO-8601 text. ladder: a name (wechat, alipay, stepped), "15,30,3m", or a list of steps.
        deadline: seconds from now or a time; no attempt after it (on_timeout then runs once).
        connection: the application's open PyMySQL or sqlite3 connection: the job is written in its
        transaction and exists if and only if that transaction commits.
        """
        options = {"delay": delay, "at": at, "ext": ext, "queue": queue, "ladder": ladder,
                   "max_attempts": max_attempts, "deadline": deadline, "priority": priority,
                   "unique": unique or None, "lease": lease, "timeout": timeout,
                   "on_timeout": name_of(on_timeout) if callable(on_timeout) else on_timeout}
        return self.manager.enqueue(name_of(call) if callable(call) else call, args, connection=connection,
                                    **{k: v for k, v in options.items() if v is not None})

    def enqueue_many(self, jobs: Iterable[Mapping[str, Any]], connection: Any = None) -> list[Inserted]:
        """Many jobs at once (each a dict with enqueue's keyword names plus call and args): all or none."""
        raws = [{**job, "call": name_of(job["call"])} if callable(job.get("call")) else job for job in jobs]
        return self.manager.enqueue_many(raws, connection=connection)

    def get(self, job_id: int) -> Job | None:
        return self.manager.reports.get(job_id)

    def attempts(self, job_id: int) -> list[Attempt]:
        return self.manager.reports.attempts(job_id)

    def cancel(self, id: int | None = None, ext: str | None = None, queue: str | None = None) -> Cancelled:
        """Cancel the pending job with this id, or every pending job with this business key (in `queue`)."""
        return self.manager.cancel(job_id=id, ext=ext, queue=queue)

    def emit(self, code: str, data: Mapping[str, Any] | None = None, delay: Any = None,
             ext: str | None = None) -> tuple[str, list[Inserted]]:
        """One job per @delayq.on handler of `code`; returns (event id, jobs)."""
        return self.manager.emit(code, data, delay=delay, ext=ext)

    def close(self) -> None:
        self.manager.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
