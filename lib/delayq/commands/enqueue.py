"""bin/enqueue_delayed.py: schedule one job, or many from a JSON-lines file."""

from __future__ import annotations

import json
import sys
from typing import Any

from tqdm import tqdm

from .. import app, cli, config
from ..errors import InvalidInput

PROG = "enqueue_delayed.py"
EPILOG = """examples:
  enqueue_delayed.py --call shop.jobs:auto_confirm --args '{"order_id": 123}' --delay 86400 --ext order:123
  enqueue_delayed.py --call shop.jobs:poll_payment --ladder stepped --deadline 180 --ext order:123 --unique
  enqueue_delayed.py --from-file jobs.jsonl     # one JSON object per line, keys as the flags' names
"""


def build_parser() -> cli.Parser:
    p = cli.parser(PROG, "Schedule a delayed job (a row in the store, an entry in the due index).")
    p.epilog = EPILOG
    p.add_argument("--call", help="the job: package.module:function or module:Class.method")
    p.add_argument("--args", help="keyword arguments as a JSON object (default {})")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--delay", help="seconds from now (default 0)")
    when.add_argument("--at", help="an ISO-8601 time (e.g. 2026-12-01T08:00:00+08:00) or epoch seconds")
    p.add_argument("--ext", help="business key, e.g. order:123 (for cancel.py and --unique)")
    p.add_argument("--queue", help="queue name (default: default)")
    p.add_argument("--ladder", help="retry ladder: wechat (default), alipay, stepped, '15,15,30,3m' or 'exp:5:3600:10'")
    p.add_argument("--max-attempts", help="attempts in all, first included (default: 1 + the ladder's steps)")
    p.add_argument("--deadline", help="seconds from now, or an ISO-8601 time: no attempt after it; the job ends timed_out")
    p.add_argument("--on-timeout", metavar="M:F", help="with --deadline: a callable run once (as its own job, same args) "
                                                      "when the deadline ends the job")
    p.add_argument("--priority", help="higher runs first among jobs due together (default 0)")
    p.add_argument("--lease", help="seconds one attempt may run before it counts as lost (default: the queue's or DELAYQ_LEASE)")
    p.add_argument("--unique", action="store_true", help="with --ext: one live job per queue+ext; a repeat returns it")
    p.add_argument("--from-file", metavar="FILE", help="bulk: a JSON-lines file ('-' for stdin); other flags are not allowed")
    return p


def single(args: Any) -> dict[str, Any]:
    raw = {"call": args.call, "args": args.args, "delay": args.delay, "at": args.at, "ext": args.ext,
           "queue": args.queue, "ladder": args.ladder, "max_attempts": args.max_attempts,
           "deadline": args.deadline, "priority": args.priority, "unique": args.unique or None,
           "lease": args.lease, "on_timeout": args.on_timeout}
    return {k: v for k, v in raw.items() if v is not None}


def read_lines(path: str) -> list[dict[str, Any]]:
    """Parse every line first: a bad line names its number and nothing is enqueued."""
    try:
        stream = sys.stdin if path == "-" else open(path, encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None
    items = []
    with stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise InvalidInput(f"{path} line {number}: not valid JSON ({exc}); nothing was enqueued") from None
            if not isinstance(item, dict):
                raise InvalidInput(f"{path} line {number}: a job must be a JSON object; nothing was enqueued")
            items.append((number, item))
    return items


@cli.boundary(PROG)
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.from_file:
        if single(args):
            raise InvalidInput("--from-file takes every job from the file: drop --call and the other job flags")
        return bulk(args, config.load())
    if not args.call:
        raise InvalidInput("--call is required (or --from-file)")
    manager = app.connect(config.load())
    result = manager.enqueue(**single(args))
    data = {"id": result.id, "status": result.status, "due_at": cli.when(result.due_at), "created": result.created}
    text = str(result.id) if result.created else f"{result.id} (already {result.status}: --unique kept the existing job)"
    cli.emit(args, data, text)
    return 0


def bulk(args: Any, settings: config.Config) -> int:
    items = read_lines(args.from_file)
    manager = app.connect(settings)
    numbers = [number for number, _ in items]
    bar = tqdm(total=len(items), desc="validating", unit="job", disable=not sys.stderr.isatty(), file=sys.stderr)
    try:
        results = manager.enqueue_many((item for _, item in items), on_line=lambda _: bar.update())
    except InvalidInput as exc:
        # "item N: ..." -> the file's line number
        message = str(exc)
        if message.startswith("item "):
            index, _, rest = message[5:].partition(": ")
            message = f"{args.from_file} line {numbers[int(index) - 1]}: {rest}"
        raise InvalidInput(f"{message}; nothing was enqueued") from None
    finally:
        bar.close()
    created = sum(1 for r in results if r.created)
    data = {"enqueued": created, "existing": len(results) - created, "ids": [r.id for r in results]}
    cli.emit(args, data, f"enqueued {created} job(s)" + (f", {len(results) - created} already live (--unique)" if created < len(results) else ""))
    return 0
