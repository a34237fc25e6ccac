"""enqueue: schedule one job, or many from a JSON-lines file (all or nothing)."""

from __future__ import annotations

import json
import sys
from typing import Any

from tqdm import tqdm

from .. import app, cli, validate
from ..errors import InvalidInput

EPILOG = """examples:
  %(prog)s --call shop.jobs:auto_confirm --args '{"order_id": 123}' --delay 1d --ext order:123
  %(prog)s --call shop.jobs:poll_payment --ladder stepped --deadline 3m --ext order:123 --unique
  %(prog)s --from-file jobs.jsonl     # one JSON object per line, keys as the flags' names
"""
FLAGS = ("call", "args", "delay", "at", "ext", "queue", "ladder", "max_attempts", "deadline", "priority", "lease",
         "timeout", "on_timeout")


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Schedule a delayed job (a row in the store, an entry in the due index).")
    p.epilog = EPILOG
    p.add_argument("--call", help="the job: package.module:function or module:Class.method")
    p.add_argument("--args", help="keyword arguments as a JSON object (default {})")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--delay", help="from now: seconds, or 90s, 15m, 2h, 1d (default 0)")
    when.add_argument("--at", help="an ISO-8601 time (without an offset: local time, as every command prints) "
                                   "or epoch seconds")
    p.add_argument("--ext", help="business key, e.g. order:123 (for cancel and --unique)")
    p.add_argument("--queue", help="queue name (default: default)")
    p.add_argument("--ladder", help="retry ladder: wechat (default), alipay, stepped, '15,15,30,3m' or 'exp:5:3600:10'")
    p.add_argument("--max-attempts", help="attempts in all, first included (default: 1 + the ladder's steps)")
    p.add_argument("--deadline", help="from now (90s, 15m, 2h, 1d) or an ISO-8601 time: no attempt after it; "
                                      "the job ends expired")
    p.add_argument("--on-timeout", metavar="M:F", help="with --deadline: a callable run once (as its own job, same args) "
                                                      "when the deadline ends the job (it expired)")
    p.add_argument("--priority", help="higher runs first among jobs due together (default 0)")
    p.add_argument("--lease", help="seconds one attempt may run before compensate counts it as lost "
                                   "(default: the queue's or DELAYQ_LEASE)")
    p.add_argument("--timeout", help="seconds one attempt may run before it is stopped: it timed_out, counted as a "
                                     "failure (default: the job's, the queue's or DELAYQ_TIMEOUT)")
    p.add_argument("--unique", action="store_true", help="with --ext: one live job per queue+ext; a repeat returns it")
    p.add_argument("--from-file", metavar="FILE", help="bulk: a JSON-lines file ('-' for stdin); other flags are not allowed")
    return p


def single(args: Any) -> dict[str, Any]:
    raw = {name: getattr(args, name) for name in FLAGS}
    raw["unique"] = args.unique or None
    return {k: v for k, v in raw.items() if v is not None}


def execute(args, settings) -> int:
    if args.from_file:
        if single(args):
            raise InvalidInput("--from-file takes every job from the file: drop --call and the other job flags")
        return bulk(args, settings)
    if not args.call:
        raise InvalidInput("--call is required (or --from-file)")
    result = app.open_ready(settings).enqueue(**single(args))
    data = {"id": result.id, "status": result.status, "due_at": cli.when(result.due_at), "created": result.created}
    text = str(result.id) if result.created else f"{result.id} (already {result.status}: --unique kept the existing job)"
    cli.emit(args, data, text)
    return 0


def read_lines(path: str) -> tuple[list[int], list[dict[str, Any]]]:
    """Parse every line first: a bad line names its number and nothing is enqueued."""
    try:
        stream = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="strict")
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None
    numbers, items = [], []
    with stream:
        try:
            for number, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                try:
                    if validate.deeper_than(line, 2 * validate.MAX_DEPTH):    # the job's own object, then its args
                        raise ValueError(f"nested more than {2 * validate.MAX_DEPTH} deep")
                    item = json.loads(line)
                except ValueError as exc:
                    raise InvalidInput(f"{path} line {number}: not valid JSON ({str(exc)[:100]}); nothing was enqueued",
                                       line=number) from None
                if not isinstance(item, dict):
                    raise InvalidInput(f"{path} line {number}: a job must be a JSON object; nothing was enqueued",
                                       line=number)
                numbers.append(number)
                items.append(item)
        except UnicodeDecodeError:
            raise InvalidInput(f"{path} line {len(numbers) + 1}: not UTF-8 text; nothing was enqueued") from None
    return numbers, items


def bulk(args: Any, settings) -> int:
    numbers, items = read_lines(args.from_file)
    manager = app.open_ready(settings)
    bar = tqdm(total=len(items), desc="validating", unit="job", disable=not sys.stderr.isatty(), file=sys.stderr)
    try:
        results = manager.enqueue_many(items, source=args.from_file, lines=numbers, on_item=lambda _: bar.update())
    except InvalidInput as exc:
        raise InvalidInput(f"{exc}; nothing was enqueued", exc.field, exc.line) from None
    finally:
        bar.close()
    created = sum(1 for r in results if r.created)
    data = {"enqueued": created, "existing": len(results) - created, "ids": [r.id for r in results]}
    cli.emit(args, data, f"enqueued {created} job(s)" +
             (f", {len(results) - created} already live (--unique)" if created < len(results) else ""))
    return 0
