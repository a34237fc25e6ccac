"""The testing mode, for an application's own tests: jobs run inline, or when the test says "run what is due".

    from delayq import testing

    def test_checkout():
        with testing.inline() as jobs:             # every enqueue runs its job at once, in this thread
            checkout(order_id=1)                   # the app's code: auto_confirm.enqueue(...) inside
            assert [job.status for job in jobs.jobs()] == ["succeeded"]

    def test_auto_confirm_after_a_week():
        with testing.explicit() as jobs:           # jobs wait for their due time, on a fake clock
            auto_confirm.options(delay="7d").enqueue(1)
            assert jobs.run_due() == 0             # not due yet
            assert jobs.advance("7d") == 1         # a week later: it ran

Both put a client of their own in front of the default client (default.py) for the length of
the block, in every thread: what the application enqueues with a job's methods (`f.enqueue`,
`f.options(...).enqueue`), delayq.default_client() or delayq.emit() goes to it. A Client made
apart (delayq.connect()) is not redirected; give its code delayq.default_client() instead.

The jobs are real rows: checked as in production (DELAYQ_ALLOWED_MODULES, the signature, JSON
args), stored, claimed and run by the runner's own code (Runner.execute: the job's context,
Snooze, Permanent, at-most-once, the ladder, max_attempts, the deadline and on_timeout), then
recorded with their attempts. Two things differ, both on purpose: jobs run in the calling
thread (a test's database transaction, thread-local state and fixtures are the job's too), and
with no time limit (nothing can stop a thread; a job stuck here is stuck in the test).

Where the rows live: by default in a private SQLite file (a temporary directory, removed at the
end), with the default client's other settings (allowed modules, prefix, queue defaults). There a
`connection=` cannot join the caller's transaction (another database): it is ignored and the job
written at once, so a rollback does not remove it. To test that, pass a Config naming your test
database: inline(Config(database_url=...)). Then `connection=` is used as in production, and
such a job runs at the next run_due(), once the caller committed (nothing runs what is not
committed).

inline: an enqueue brings its job due now (a delay or `at` is not waited for), then runs
what is due, before it returns. A job that fails is recorded as in production: its first
attempt fails, the retry waits for its ladder step (advance() runs it), the enqueue returns as
usual (what Client.enqueue returned when it wrote the row: its id, status "pending"), never raising
for the job's own failure. Look at jobs.jobs() (status, last_error) to see what came of it.
explicit: nothing runs until run_due() or advance(); advance("1h") moves the fake clock through
every due time in the hour, so a ladder's retries run as they would in production.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from contextlib import ExitStack
from typing import Any, Callable, Iterable, Mapping

from . import default, validate
from .app import open_manager
from .client import Client
from .clock import FakeClock, SystemClock
from .config import Config
from .errors import DelayqError
from .jobs import PENDING, Attempt, Job
from .manager import Manager
from .registry import name_of
from .search import MAX_PAGE, JobFilter
from .store import Inserted

RUN_LIMIT = 1000      # attempts one run_due() runs at most (a job that enqueues itself at once would never end)


def inline(config: Config | None = None) -> Harness:
    """Jobs run at once, in the enqueuing thread, before enqueue returns (see the module's docstring)."""
    return Harness(True, config)


def explicit(config: Config | None = None) -> Harness:
    """Jobs wait until run_due() or advance() runs what is due on the fake clock (see the module's docstring)."""
    return Harness(False, config)


class Harness:
    """The testing mode's store, fake clock and client; a context manager (enter: installed as the default client).

    As a pytest fixture:

        @pytest.fixture
        def jobs():
            with delayq.testing.explicit() as jobs:
                yield jobs
    """

    def __init__(self, inline: bool, config: Config | None = None):
        self.inline = inline
        self.private = config is None          # a private SQLite file, else the given store as it is
        self._config = config
        self.clock = FakeClock(SystemClock().now())     # starts at the real time: `at=` of today's dates works
        self._manager: Manager | None = None
        self._client: _TestClient | None = None
        self._runner: Any = None
        self._stack = ExitStack()

    # -- the block ------------------------------------------------------------------------
    def __enter__(self) -> Harness:
        with ExitStack() as stack:
            config = self._config
            if config is None:
                tmp = tempfile.mkdtemp(prefix="delayq-test-")
                stack.callback(shutil.rmtree, tmp, ignore_errors=True)
                config = dataclasses.replace(default.current_config(), database_url=f"sqlite:///{tmp}/delayq.db",
                                             redis_url=None)
            self._manager = manager = open_manager(config, self.clock)
            stack.callback(manager.close)
            manager.store.migrate(self.clock.now())
            self._client = _TestClient(manager, self)
            stack.callback(self._close_runner)
            stack.enter_context(default.override(self._client))
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        self._manager = self._client = None

    @property
    def manager(self) -> Manager:
        """The testing mode's Manager (its store and due index, on the fake clock)."""
        if self._manager is None:
            raise DelayqError("the testing mode is not on: use it as `with testing.inline() as jobs:`")
        return self._manager

    @property
    def client(self) -> Client:
        """The testing mode's client: the default client inside the block."""
        if self._client is None:
            raise DelayqError("the testing mode is not on: use it as `with testing.inline() as jobs:`")
        return self._client

    def _close_runner(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    # -- running ------------------------------------------------------------------------------
    def run_due(self, limit: int = RUN_LIMIT) -> int:
        """Run every job due now, one at a time in this thread, until none is (jobs they enqueue included);
        returns how many attempts ran. DelayqError after `limit` attempts: a job re-enqueueing itself at once."""
        from .runner import Runner

        if self._runner is None:
            self._runner = Runner(self.manager, ["default"], 1)   # only its execute(): the runner's own code
        ran = 0
        while True:
            jobs = self.manager.claim(self._queues(), 1)
            if not jobs:
                return ran
            if ran >= limit:
                self.manager.unclaim(jobs)
                raise DelayqError(f"run_due ran {limit} attempts and jobs are still due: does a job enqueue "
                                  "itself with no delay? (run_due(limit=...) runs more)")
            outcome = self._runner.execute(jobs[0])
            if outcome is not None:
                self.manager.finish([outcome])
            ran += 1

    def advance(self, duration: Any) -> int:
        """Move the fake clock on by `duration` (seconds, a timedelta, "90s", "7d"), running what falls due on
        the way at its due time, as a runner would; returns how many attempts ran."""
        end = self.clock.now() + validate.duration(duration, "advance()")
        ran = self.run_due()
        while True:
            queues = self._queues()
            due = self.manager.next_due(queues) if queues else None
            if due is None or due > end or due <= self.clock.now():   # (due now and not run: its queue paused)
                break
            self.clock.advance(due - self.clock.now())
            ran += self.run_due()
        self.clock.advance(max(0.0, end - self.clock.now()))
        return ran

    # -- looking ----------------------------------------------------------------------------
    def jobs(self, call: str | Callable[..., Any] | None = None, status: str | None = None) -> list[Job]:
        """The jobs stored, oldest first; of one function (or its name) and in one status if given."""
        name = name_of(call) if callable(call) else call
        rows = self.manager.reports.search(JobFilter(call=name, statuses=(status,) if status else ()), limit=MAX_PAGE)
        found = (self.manager.reports.get(row["id"]) for row in sorted(rows, key=lambda row: row["id"]))
        return [job for job in found if job is not None]

    def attempts(self, job: Job | int) -> list[Attempt]:
        """A job's attempts, first first (each with its outcome and error)."""
        return self.manager.reports.attempts(job if isinstance(job, int) else job.id)

    def _queues(self) -> list[str]:
        """The queues that hold a pending job."""
        _, groups = self.manager.reports.queue_figures()
        return sorted({g.queue for g in groups if g.status == PENDING})

    def _enqueued(self, inserted: Iterable[Inserted]) -> None:
        """Inline: the new jobs due now, then what is due run."""
        if not self.inline:
            return
        new = [row for row in inserted if row.created]
        for row in new:
            if row.due_at > self.clock.now():
                self.manager.run_now(row.id)
        if new:
            self.run_due()


class _TestClient(Client):
    """A Client whose enqueues follow the testing mode: `connection=` dropped on the private store, inline runs."""

    def __init__(self, manager: Manager, harness: Harness):
        super().__init__(manager)
        self.harness = harness

    def enqueue(self, call: str | Callable[..., Any], args: Mapping[str, Any] | None = None,
                **options: Any) -> Inserted:
        connection = self._connection(options.pop("connection", None))
        inserted = super().enqueue(call, args, connection=connection, **options)
        if connection is None:
            self.harness._enqueued([inserted])
        return inserted

    def enqueue_many(self, jobs: Iterable[Mapping[str, Any]], connection: Any = None) -> list[Inserted]:
        connection = self._connection(connection)
        inserted = super().enqueue_many(jobs, connection)
        if connection is None:
            self.harness._enqueued(inserted)
        return inserted

    def emit(self, code: str, data: Mapping[str, Any] | None = None, delay: Any = None,
             ext: str | None = None) -> tuple[str, list[Inserted]]:
        event_id, inserted = super().emit(code, data, delay=delay, ext=ext)
        self.harness._enqueued(inserted)
        return event_id, inserted

    def _connection(self, connection: Any) -> Any:
        return None if self.harness.private else connection

    def close(self) -> None:
        """The harness closes its store when its block ends (the application may close the default client)."""
