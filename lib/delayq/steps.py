"""Multi-step jobs (seed 003): independent steps, each auto (retryable) or manual (at most once).

    @delayq.job
    class SendGift:
        steps = {"add_week_star": "auto", "charge": "manual", "notify": "auto"}

        def add_week_star(self, user_id, gift_id): ...
        def charge(self, user_id, gift_id): ...
        def notify(self, user_id, gift_id): ...

Enqueued as "shop.gifts:SendGift". Each attempt of the job runs every step not yet
succeeded; one failing step never stops the others. A manual step is marked
running (committed) before it runs, so after a crash it is failed as "outcome
unknown" instead of run again; only `delayq retry` runs it again.
"""

from __future__ import annotations

from typing import Any

from .clock import Clock
from .errors import DelayqError, Permanent
from .jobs import FAILED, SUCCEEDED, Job
from .store.base import StepStore


class StepsFailed(Exception):
    """Some auto steps failed: the job is retried on its ladder (done steps are not re-run)."""


class ClaimLost(DelayqError):
    """The job's claim or lease is gone: recovery owns it now, so nothing more may run."""


def run_steps(store: StepStore, clock: Clock, job: Job, cls: type, args: dict[str, Any], describe) -> None:
    """Run the job's unfinished steps; raise StepsFailed (retry) or Permanent (only manual steps left failed)."""
    declared = list(cls.steps.items())
    store.ensure_steps(job.id, declared, clock.now())
    rows = {step.name: step for step in store.steps(job.id)}
    instance = cls()
    failed = {"auto": [], "manual": []}
    for name, mode in declared:
        row = rows[name]
        if row.status == SUCCEEDED:
            continue
        if mode == "manual" and row.status != "pending":
            failed["manual"].append(name)     # attempted before: only a person may run it again
            continue
        if not store.begin_step(job.id, name, job.token or "", clock.now()):
            raise ClaimLost(f"job {job.id} lost its claim before step {name!r}")
        try:
            getattr(instance, name)(**args)
        except BaseException as exc:  # one step's failure never stops the others, whatever it raised
            store.finish_step(job.id, name, FAILED, describe(exc), clock.now())
            failed[mode].append(name)
        else:
            store.finish_step(job.id, name, SUCCEEDED, None, clock.now())
    if failed["auto"]:
        raise StepsFailed(f"step(s) failed: {', '.join(failed['auto'] + failed['manual'])}")
    if failed["manual"]:
        raise Permanent(f"manual step(s) failed: {', '.join(failed['manual'])}: check by hand, then delayq retry --step")
