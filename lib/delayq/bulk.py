"""Bulk actions: retry, cancel or purge every job a JobFilter matches, in batches, with bounded memory
(preview, retry, cancel, purge; the manager writes each batch: Manager.retry_ids, cancel_ids).

The matching ids are walked in keyset pages (newest first, `id < last seen`: no OFFSET, no list
of every match held in memory). Each page is changed in one short transaction that locks its
rows and changes only those still in the state the action needs; a job that changed meanwhile
is skipped and counted by reason. What a run keeps grows with the number of queues, never with
the number of jobs: counts per queue, counts per skip reason and the first few ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Iterator

from . import words
from .errors import InvalidInput
from .jobs import FAILED, FINAL, PENDING, STATUSES
from .search import JobFilter
from .store import Changed, ReportStore

if TYPE_CHECKING:
    from .manager import Manager

BATCH = 500          # ids per page and per transaction
SCAN_BY_ID = 5000    # above this many matches, pages walk the ids in order (linear in all) instead of an index
SAMPLE = 20          # ids kept to show (all of them when the action touched no more)
ACTIONS = {          # action -> (the statuses it acts on, how a refusal names them)
    "retry": ((FAILED,), "failed jobs"),
    "cancel": ((PENDING,), "pending jobs"),
    "purge": (FINAL, "final statuses"),
}


@dataclass
class BulkResult:
    """What a bulk action did (or, from preview(), would do)."""

    total: int = 0                                           # jobs changed
    per_queue: dict[str, int] = field(default_factory=dict)  # queue -> jobs changed
    skipped: dict[str, int] = field(default_factory=dict)    # reason (a status, "gone", ...) -> jobs left alone
    sample_ids: list[int] = field(default_factory=list)      # the first SAMPLE ids changed, newest first
    skipped_ids: list[tuple[int, str]] = field(default_factory=list)   # the first SAMPLE (id, reason) left alone

    @property
    def queues(self) -> list[str]:
        return sorted(self.per_queue)

    @property
    def complete(self) -> bool:
        """sample_ids holds every id changed."""
        return self.total <= len(self.sample_ids)

    def add(self, changed: Changed) -> None:
        self.total += len(changed.changed)
        for job, queue, _ in changed.changed:
            self.per_queue[queue] = self.per_queue.get(queue, 0) + 1
        for job, reason in changed.skipped:
            self.skipped[reason] = self.skipped.get(reason, 0) + 1
        self.sample_ids += [job for job, _, _ in changed.changed[:SAMPLE - len(self.sample_ids)]]
        self.skipped_ids += changed.skipped[:SAMPLE - len(self.skipped_ids)]


def scoped(action: str, f: JobFilter) -> JobFilter:
    """The filter an action walks: only the statuses it acts on, unless ids name the jobs (then any status is
    looked at, and the others are reported as skipped with their status)."""
    allowed, label = ACTIONS[action]
    bad = sorted(words.shown(s) for s in set(f.statuses) - set(allowed))
    if bad:
        raise InvalidInput(f"{action} takes {label} only ({', '.join(map(words.shown, allowed))}), not "
                           f"{', '.join(bad)}", "status")
    if action == "purge" and f.timed_out:
        # purge's own default once named the deadline's status timed_out: a cron line written then must not come
        # to mean jobs whose last attempt hit its time limit (failed ones among them)
        raise InvalidInput("purge does not take --status timed_out (a run that hit its time limit): jobs their "
                           "deadline ended are expired now (their status was called timed_out before): use --status "
                           "expired, or --status failed for failed jobs", "status")
    if f.empty:
        raise InvalidInput(f"{action} needs a filter (--id, --queue, --status, --call, --ext, --ext-prefix, --since, "
                           "--until, --error): it never acts on every job at once")
    return f if f.statuses or f.ids else replace(f, statuses=allowed)


def pages(store: ReportStore, f: JobFilter, batch: int | None = None, many: bool = False) -> Iterator[list[int]]:
    """The ids matching `f`, one keyset page at a time (`batch` ids, default BATCH), newest first.

    many: the filter matches many jobs, so walk the ids in order: the primary key, or by_is_finished's half when
    the statuses are all live or all final (a purge reads the finished rows alone); each page reads the rows down
    to its last match, the whole walk reads them once. Through an index on the filter's columns, every page would
    read and sort all the remaining matches instead (a million matches: 2,000 sorts of up to a million rows).
    """
    batch = batch or BATCH
    before = None
    while True:
        keys = store.search_keys(f, before, batch, by_id=many)
        if keys:
            yield [job for job, _, _ in keys]
        if len(keys) < batch:
            return
        before = keys[-1][0]


def run(store: ReportStore, f: JobFilter, change: Callable[[list[int]], Changed],
        progress: Callable[[int], None] | None = None, batch: int | None = None) -> BulkResult:
    """Apply `change` to every page of ids matching `f`; each call is one transaction."""
    result = BulkResult()
    many = store.count_upto(f, SCAN_BY_ID + 1) > SCAN_BY_ID     # bounded: a purge of millions counts no further
    for ids in pages(store, f, batch, many):
        result.add(change(ids))
        if progress:
            progress(len(ids))
    return result


def preview(manager: Manager, action: str, f: JobFilter) -> BulkResult:
    """What `action` ("retry", "cancel" or "purge") would do now: counts per queue, a sample of ids."""
    scope = scoped(action, f.checked())
    return _would(manager.reports.count(scope), manager.reports.search(scope, limit=SAMPLE * 2), action)


def retry(manager: Manager, f: JobFilter, step: str | None = None, reset_attempts: bool = False,
          at: float | None = None, progress: Callable[[int], None] | None = None) -> BulkResult:
    """Every failed job matching `f` back to pending (due now or `at`), a batch per transaction."""
    return run(manager.store, scoped("retry", f.checked()),
               lambda ids: manager.retry_ids(ids, step, reset_attempts, at), progress)


def cancel(manager: Manager, f: JobFilter, progress: Callable[[int], None] | None = None) -> BulkResult:
    """Every pending job matching `f` cancelled, then dropped from the due index, a batch per transaction."""
    return run(manager.store, scoped("cancel", f.checked()), manager.cancel_ids, progress)


def purge(manager: Manager, f: JobFilter, progress: Callable[[int], None] | None = None,
          batch: int | None = None) -> BulkResult:
    """Every job matching `f` in a final status deleted with its history (its counts kept for the metrics)."""
    scope = scoped("purge", f.checked())
    statuses = list(scope.statuses or FINAL)
    return run(manager.store, scope, lambda ids: manager.store.purge_ids(ids, statuses), progress, batch)


def purge_older(manager: Manager, statuses: list[str], older_than: float, batch: int | None = None,
                progress: Callable[[int], None] | None = None) -> int:
    """Delete jobs in `statuses` finished more than `older_than` seconds ago, with their history."""
    bad = set(statuses) - set(FINAL)
    if bad or not statuses:
        raise InvalidInput(f"purge takes final statuses only ({', '.join(FINAL)}), not {', '.join(sorted(bad)) or 'none'}")
    f = JobFilter(statuses=tuple(statuses), until=manager.clock.now() - older_than, time_field="finished")
    return purge(manager, f, progress, batch).total


def _would(counts: list[tuple[str, str, int]], sample: list[dict], action: str) -> BulkResult:
    """What an action would do, from the counts and a first page: per queue for the statuses it acts on,
    the rest as skipped by status."""
    allowed = ACTIONS[action][0]
    result = BulkResult(sample_ids=[row["id"] for row in sample if row["status"] in allowed][:SAMPLE])
    for queue, status, n in counts:
        if status in allowed:
            result.total += n
            result.per_queue[queue] = result.per_queue.get(queue, 0) + n
        else:
            result.skipped[status] = result.skipped.get(status, 0) + n
    result.skipped_ids = [(row["id"], row["status"]) for row in sample if row["status"] not in allowed][:SAMPLE]
    return result


# -- in words: what an action did or would do (the scripts' lines, the dashboard's messages) ---------------
WORDS = {"retry": ("retried", "failed"), "cancel": ("cancelled", "pending"), "purge": ("deleted", "finished")}


def per_queue(result: BulkResult) -> str:
    return ", ".join(f"{queue} {n}" for queue, n in sorted(result.per_queue.items()))


def done_text(action: str, result: BulkResult) -> str:
    past = WORDS[action][0]
    if not result.total:
        text = f"{past} 0 jobs"
    elif result.complete:
        text = (f"{past} {result.total} job(s) ({', '.join(map(str, result.sample_ids))}) in queue(s) "
                f"{', '.join(result.queues)}")
    else:
        text = (f"{past} {result.total} job(s) in {len(result.per_queue)} queue(s): {per_queue(result)} "
                f"(ids {', '.join(map(str, result.sample_ids))} and {result.total - len(result.sample_ids)} more)")
    return text + (f"; left alone: {left_alone(result)}" if result.skipped else "")


def dry_text(action: str, result: BulkResult) -> str:
    text = f"dry run: would {action} {result.total} job(s)"
    if result.total:
        more = ", ..." if result.total > len(result.sample_ids) else ""
        text += f" in queue(s) {per_queue(result)}; ids {', '.join(map(str, result.sample_ids))}{more}"
    return text + (f"; would leave alone: {left_alone(result)}" if result.skipped else "")


def left_alone(result: BulkResult) -> str:
    if sum(result.skipped.values()) <= len(result.skipped_ids):
        return ", ".join(why(job, reason) for job, reason in result.skipped_ids)
    return ", ".join(f"{words.shown(reason)} {n}" for reason, n in sorted(result.skipped.items()))


def why(job: int, reason: str) -> str:
    if reason in STATUSES or reason == "gone":
        return f"job {job} is {words.shown(reason)}"
    return f"job {job}: {reason}"
