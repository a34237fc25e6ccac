"""ReportStore on SQL: the operator's views, each one bounded query, and the metrics derived from the rows."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any, Sequence

from ..jobs import FINAL, PENDING, RUNNING, STATUSES, SUCCEEDED
from ..search import TIME_FIELDS, JobFilter
from .base import Bucket

# Statuses whose rows stay few (running: the runners' threads; failed, cancelled, timed out: until purged): a page
# of them reads their entries in by_claim, however many pending and succeeded rows are newer (search_jobs).
FEW = frozenset(STATUSES) - {PENDING, SUCCEEDED}
FEW_IDS = 500           # ids a step of _search_few reads from by_claim
LIVE = frozenset((PENDING, RUNNING))    # is_finished = 0 (finished_at not set); the others, FINAL: is_finished = 1


def _few(f: JobFilter) -> bool:
    """Only the few statuses, and no narrower key (ids, one business key: the optimizer picks well for those)."""
    return bool(f.statuses) and set(f.statuses) <= FEW and not f.ids and f.ext is None


def _few_and_more(f: JobFilter) -> bool:
    """_few, and a fragment that needs the row."""
    return _few(f) and (_narrowed(f) or f.as_of is not None)


def _narrowed(f: JobFilter) -> bool:
    """A fragment besides the statuses and a snapshot or scan window: another index may hold few of the matches."""
    return f.timed_out or any(x is not None for x in (f.call, f.ext_prefix, f.since, f.until, f.error, f.arg))


def _half(f: JobFilter) -> list[str]:
    """by_is_finished's half that holds every job of the filter's statuses (filter_live: pending and running;
    filter_finished: the final ones), as a fragment; none when the statuses are mixed or not given. Added only where
    that index is read: elsewhere it would make a read of another index (by_claim's entries alone) fetch each row."""
    if f.statuses and set(f.statuses) <= LIVE:
        return ["filter_live"]
    if f.statuses and set(f.statuses) <= set(FINAL):
        return ["filter_finished"]
    return []


def escape_like(text: str) -> str:
    """A literal prefix for LIKE ... ESCAPE '!'."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def where(f: JobFilter) -> tuple[list[str], dict[str, Any], dict[str, str]]:
    """The filter's SQL fragments (their names in sql/queries.sql), parameters and tokens."""
    parts: list[str] = []
    params: dict[str, Any] = {}

    def use(fragment: str, **values: Any) -> None:
        parts.append(fragment)
        params.update(values)

    if f.ids:
        use("filter_ids", ids=list(f.ids))
    if f.queues:
        use("filter_queues", queues=list(f.queues))
    if f.statuses:
        use("filter_statuses", statuses=list(f.statuses))
    if f.timed_out:
        use("filter_timed_out")
    if f.call and f.call[-1] in ":.":
        use("filter_call_prefix", call_like=escape_like(f.call) + "%")
    elif f.call:
        use("filter_call", call=f.call)
    if f.ext is not None:
        use("filter_ext", ext=f.ext)
    if f.ext_prefix is not None:
        use("filter_ext_prefix", ext_like=escape_like(f.ext_prefix) + "%")
    if f.since is not None:
        use("filter_since", since=f.since)
    if f.until is not None:
        use("filter_until", until=f.until)
    if f.error is not None:
        use("filter_error", error_like="%" + escape_like(f.error) + "%")
    if f.arg is not None:
        use("filter_arg", path='$."' + f.arg[0] + '"', value=f.arg[1])
    if f.upto_id is not None:
        use("filter_upto_id", upto_id=f.upto_id)
    if f.as_of is not None:
        use("filter_as_of", as_of=f.as_of)
    if f.above_id is not None:
        use("filter_above_id", above_id=f.above_id)
    return parts, params, {"time_column": TIME_FIELDS[f.time_field]}


class ReportingSql:
    run: Any
    tx: Any
    q: Any
    integrity_error: Any
    tokens: dict[str, str]

    def search(self, f: JobFilter, before: int | None, limit: int) -> list[dict]:
        before = before or 2**62
        if _few_and_more(f):
            return self._search_few(f, before, limit)
        order = self._order(f)
        return self._search(f, before, limit, order, _half(f) if order == "by_is_finished" else [])

    def _search(self, f: JobFilter, before: int, limit: int, order: str, extra: Sequence[str] = ()) -> list[dict]:
        parts, params, tokens = where(f)
        parts += extra
        tokens["order"] = self.tokens[order] if order else ""
        with self.tx(write=False) as cur:
            cur.execute(*self.q.compose("search_jobs", parts, tokens, before=before, limit=limit, **params))
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def _search_few(self, f: JobFilter, before: int, limit: int) -> list[dict]:
        """The few statuses with a fragment by_claim cannot judge (a business-key prefix, a callable, a time...):
        FEW_IDS of their ids at a time from by_claim alone (no row read), newest first, then those rows with the
        whole filter, until a page is found. One statement would read every failed row for its business key
        (156 ms for ext_prefix + failed at 20 million rows, 20,000 of them failed)."""
        narrow = JobFilter(statuses=f.statuses, queues=f.queues, upto_id=f.upto_id, above_id=f.above_id)
        parts, params, tokens = where(narrow)
        found: list[dict] = []
        while len(found) < limit:
            with self.tx(write=False) as cur:
                cur.execute(*self.q.compose("search_few_ids", parts, tokens, before=before, limit=FEW_IDS, **params))
                ids = [int(row[0]) for row in cur.fetchall()]
            if not ids:
                break
            found += self._search(replace(f, ids=tuple(ids)), before, limit - len(found), "")
            if len(ids) < FEW_IDS:
                break
            before = ids[-1]
        return found

    def _order(self, f: JobFilter) -> str:
        """search_jobs' index hint, as the name of a token ("": the optimizer chooses). Ids and a business key are
        narrow: the optimizer picks well. The few statuses: their by_claim entries, sorted. A queue (and no status): by_queue read backwards from :before, the queue's rows
        alone (left to itself, the optimizer took 5.8 s for a deep page of one queue at 20 million rows). Pending or
        succeeded and nothing else (no queue, callable, business key, time...): by_is_finished read backwards, the
        live or the finished rows alone (the primary key walked every newer pending row for a page of succeeded
        jobs). A queue and a common status: by_claim has both but not the order, by_is_finished the order but not the
        queue; a status and another fragment (a callable, a time): by_call, by_finished... may hold few matches,
        where by_is_finished would read every finished row to find none: the optimizer chooses."""
        if _few(f):
            return "not_by_id_order"
        if f.ids or f.ext is not None:
            return ""
        if f.queues:
            return "" if f.statuses else "by_queue"
        return "by_is_finished" if _half(f) and not _narrowed(f) else ""

    def search_keys(self, f: JobFilter, before: int | None, limit: int,
                    by_id: bool = False) -> list[tuple[int, str, str]]:
        """by_id, a walk over many jobs: by_is_finished's half when the statuses are all live or all final (a purge
        walks the finished rows alone, not first back through every newer pending one), else the primary key."""
        parts, params, tokens = where(f)
        half = _half(f) if by_id else []
        parts += half
        tokens["by_id"] = "" if not by_id else self.tokens["by_is_finished" if half else "scan_by_id"]
        with self.tx(write=False) as cur:
            cur.execute(*self.q.compose("search_keys", parts, tokens, before=before or 2**62, limit=limit, **params))
            return [(int(job), queue, status) for job, queue, status in cur.fetchall()]

    def count(self, f: JobFilter) -> list[tuple[str, str, int]]:
        parts, params, tokens = where(f)
        with self.tx(write=False) as cur:
            cur.execute(*self.q.compose("count_jobs", parts, tokens, **params))
            return [(queue, status, int(n)) for queue, status, n in cur.fetchall()]

    def count_upto(self, f: JobFilter, most: int) -> int:
        parts, params, tokens = where(f)
        with self.tx(write=False) as cur:
            cur.execute(*self.q.compose("count_upto", parts, tokens, most=most, **params))
            return int(cur.fetchone()[0])

    def recent_attempts(self, minute: float, hour: float) -> list[tuple]:
        with self.tx(write=False) as cur:
            return [tuple(row) for row in self.run(cur, "recent_attempts", minute=minute, hour=hour).fetchall()]

    def metrics(self) -> list[tuple[str, str, str, int, float]]:
        with self.tx(write=False) as cur:
            cur.execute(*self.q.compose("metrics", [], {}))
            return [(queue, kind, name, int(n or 0), float(total or 0)) for queue, kind, name, n, total in cur.fetchall()]

    def _fold_tallies(self, cur: Any, rows: Sequence[Sequence], ids: list[int]) -> None:
        """Add the counts of jobs `rows` (id, queue, status, ...) and of their attempts to the folded totals."""
        totals: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0.0])
        for _, queue, status, *_ in rows:
            totals[(queue, "jobs", "enqueued")][0] += 1
            if status == "cancelled":
                totals[(queue, "jobs", "cancelled")][0] += 1
        cur.execute(*self.q.compose("tally_attempts", ["filter_attempts_of"], {}, ids=ids))
        for queue, kind, name, n, total in cur.fetchall():
            totals[(queue, kind, name)][0] += int(n)
            totals[(queue, kind, name)][1] += float(total or 0)
        for (queue, kind, name), (n, total) in totals.items():
            self._tally(cur, {"queue": queue, "kind": kind, "name": name, "n": n, "total": total})

    def _tally(self, cur: Any, row: dict[str, Any]) -> None:
        if self.run(cur, "tally_add", **row).rowcount:
            return
        try:
            self.run(cur, "tally_insert", **row)
        except self.integrity_error:     # another purge inserted it meanwhile
            self.run(cur, "tally_add", **row)

    def list_jobs(self, status: str | None, queue: str | None, ext_prefix: str | None, limit: int) -> list[dict]:
        like = None if ext_prefix is None else escape_like(ext_prefix) + "%"
        with self.tx(write=False) as cur:
            self.run(cur, "list_jobs", status=status, queue=queue, ext_like=like, limit=limit)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def live_queues_like(self, pattern: str) -> list[str]:
        with self.tx(write=False) as cur:
            return [row[0] for row in self.run(cur, "live_queues_like", pattern=pattern).fetchall()]

    def failed_in_queue(self, queue: str, limit: int) -> list[int]:
        with self.tx(write=False) as cur:
            return [row[0] for row in self.run(cur, "failed_in_queue", queue=queue, limit=limit).fetchall()]

    def attempts_per_bucket(self, since: float, from_at: float, until: float, bucket: int,
                            queue: str | None = None) -> list[Bucket]:
        return self._buckets("attempts_per_bucket", since, from_at, until, bucket, queue)

    def rollups_per_bucket(self, since: float, from_at: float, until: float, bucket: int,
                           queue: str | None = None) -> list[Bucket]:
        return self._buckets("rollups_per_bucket", since, from_at, until, bucket, queue)

    def _buckets(self, name: str, since: float, from_at: float, until: float, bucket: int,
                 queue: str | None) -> list[Bucket]:
        with self.tx(write=False) as cur:
            rows = self.run(cur, name, since=since, from_at=from_at, until=until, bucket=bucket,
                            all_queues=1 if queue is None else 0, queue=queue or "").fetchall()
        return [(int(b), outcome, int(n), float(late_sum or 0), int(late_n or 0),
                 None if late_max is None else float(late_max)) for b, outcome, n, late_sum, late_n, late_max in rows]

    def rolled_upto(self) -> float | None:
        with self.tx(write=False) as cur:
            at = self.run(cur, "rolled_upto").fetchone()[0]
        return None if at is None else float(at)
