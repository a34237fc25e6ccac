"""What list, retry, cancel and purge share: flags that become one JobFilter, and how a bulk action asks,
acts and reports (dry run, --yes above CONFIRM_ABOVE jobs, a progress bar on a terminal only)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from tqdm import tqdm

from .. import bulk, cli, validate, words
from ..bulk import SAMPLE, WORDS, BulkResult, done_text, dry_text, left_alone, per_queue, why
from ..errors import InvalidInput, NotFound
from ..search import TIME_FIELDS, JobFilter, arg_filter, when

CONFIRM_ABOVE = 100


def add_filter_flags(p: argparse.ArgumentParser, older_than: bool = False) -> None:
    """The filter flags, the same for list, retry, cancel and purge."""
    g = p.add_argument_group("which jobs (flags combine with AND; a repeated flag matches any of its values)")
    g.add_argument("--id", type=int, action="append", metavar="ID", help="a job id (repeat for more)")
    g.add_argument("--queue", action="append", metavar="QUEUE", help="a queue (repeat for more; a pull-mode tube is ~NAME)")
    g.add_argument("--status", action="append", metavar="STATUS",
                   help=f"a status: {', '.join(words.STATUSES)} (the deadline ended it; called timed_out before), or "
                        "timed_out: the job's last attempt ran past its time limit (with other statuses: those of "
                        "them) (repeat, or comma-separated)")
    g.add_argument("--call", help="a callable (module:function), or every callable of a module: 'shop.jobs:'")
    g.add_argument("--ext", help="a business key, exactly (e.g. order:123)")
    g.add_argument("--ext-prefix", help="business keys starting with this (e.g. order:)")
    g.add_argument("--since", help="--time at or after this: ISO-8601, epoch seconds, or an age (90s, 15m, 2h, 1d ago)")
    g.add_argument("--until", help="--time before this (same forms as --since)")
    g.add_argument("--time", choices=tuple(TIME_FIELDS), help="which time --since/--until look at (default due"
                                                              + (", finished with --older-than)" if older_than else ")"))
    g.add_argument("--error", help="text found in the last error (a scan: combine it with other filters on big tables)")
    g.add_argument("--arg", metavar="NAME=VALUE", help="an argument of the job equal to this, as text (order_id=123; "
                                                       "a scan: combine it with other filters on big tables)")
    if older_than:
        g.add_argument("--older-than", help="finished more than this long ago: 3d, 12h, 3600 (= --until AGE --time finished)")


def add_bulk_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="count the matching jobs per queue and show a sample; change nothing")
    p.add_argument("--yes", action="store_true", help=f"needed to act on more than {CONFIRM_ABOVE} jobs")


def job_filter(args: argparse.Namespace, now: float) -> JobFilter:
    """The flags as one JobFilter (checked); InvalidInput naming the flag at fault."""
    until, time_field = when(args.until, "--until", now), args.time or "due"
    if getattr(args, "older_than", None):
        if args.until:
            raise InvalidInput("--older-than and --until say the same thing: give one of them")
        until, time_field = now - validate.duration(args.older_than, "--older-than"), args.time or "finished"
    statuses, timed_out = words.status_filter(args.status)
    return JobFilter(ids=tuple(args.id or ()), queues=tuple(args.queue or ()), statuses=statuses, call=args.call,
                     ext=args.ext, ext_prefix=args.ext_prefix, since=when(args.since, "--since", now), until=until,
                     time_field=time_field, error=args.error, timed_out=timed_out,
                     arg=arg_filter(args.arg, "--arg")).checked()


def act(args: argparse.Namespace, manager: Any, action: str, f: JobFilter,
        do: Callable[[JobFilter, Callable[[int], None]], BulkResult], extra: dict[str, Any] | None = None,
        none_is_error: bool = True) -> int:
    """Preview; with --dry-run report it; above CONFIRM_ABOVE jobs without --yes refuse (exit 2); else act
    with a progress bar (a terminal only) and report exactly what was touched. Nothing touched: exit 3
    (NotFound, saying why) unless `none_is_error` is False (purge from cron: nothing old yet is fine). With --yes
    and no terminal (cron) there is nothing to confirm and no bar to size: no preview, whose count of every match
    is a scan of them all (10 million finished jobs for a purge)."""
    if args.yes and not args.dry_run and not sys.stderr.isatty():
        return _done(args, manager, action, f, do(f, lambda n: None), extra, none_is_error)
    preview = bulk.preview(manager, action, f)
    if args.dry_run:
        data = report(action, preview)
        data[f"would_{action}"] = data.pop(WORDS[action][0])
        cli.emit(args, dict(data, dry_run=True, **(extra or {})), dry_text(action, preview))
        return 0
    if preview.total > CONFIRM_ABOVE and not args.yes:
        raise InvalidInput(f"{preview.total} jobs match ({per_queue(preview)}): add --yes to {action} them, "
                           "or --dry-run to see a sample first")
    size = preview.total + sum(preview.skipped.values())
    with tqdm(total=size, desc=action, unit="job", disable=not sys.stderr.isatty(), file=sys.stderr) as bar:
        result = do(f, bar.update)
    return _done(args, manager, action, f, result, extra, none_is_error)


def _done(args: argparse.Namespace, manager: Any, action: str, f: JobFilter, result: BulkResult,
          extra: dict[str, Any] | None, none_is_error: bool) -> int:
    if not result.total and none_is_error:
        raise NotFound(nothing(action, f, result, manager))
    cli.emit(args, dict(report(action, result), dry_run=False, **(extra or {})), done_text(action, result))
    return 0


def report(action: str, result: BulkResult) -> dict[str, Any]:
    past = WORDS[action][0]
    return {past: result.total, "total": result.total, "per_queue": result.per_queue, "queues": result.queues,
            "ids": result.sample_ids, "complete": result.complete,
            "skipped": {words.shown(reason): n for reason, n in result.skipped.items()},
            "untouched": [{"id": job, "status": words.shown(reason)} for job, reason in result.skipped_ids]}


def nothing(action: str, f: JobFilter, result: BulkResult, manager: Any) -> str:
    """Why nothing was touched: what was left alone, or what the filter matches in other statuses, or nothing."""
    past, status = WORDS[action]
    if result.skipped:
        return f"nothing {past}: {left_alone(result)} (only {status} jobs can be {past})"
    others = manager.reports.search(f, limit=SAMPLE)
    if others:
        listed = ", ".join(why(row["id"], row["status"]) for row in others[:5])
        return f"nothing {past}: {listed}{', ...' if len(others) > 5 else ''} (only {status} jobs can be {past})"
    return f"nothing {past}: no job with {f.describe()}"
