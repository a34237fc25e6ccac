"""What every command shares: the error boundary, the parser, output, logging, the import path.

A command module (delayq/commands/*.py) has `build_parser(prog)` and `execute(args, settings)`:
it parses, calls manager verbs and returns an exit code. `run` wraps it in the one error
boundary: problems go to stderr as one line with a named exit code, results to stdout
(one JSON object with --json).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from datetime import datetime
from types import ModuleType
from typing import Any, Sequence

from . import config, logs
from .errors import EXIT_RUNTIME, EXIT_USAGE, DelayqError, InvalidInput

EXIT_INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        message = " ".join(message.splitlines())     # an argument may hold a newline: still one line
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def parser(prog: str, description: str, verbose: bool = False) -> Parser:
    p = Parser(prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    if verbose:
        p.add_argument("-v", "--verbose", action="store_true", help="log each job or recovery to stderr")
    return p


def queue_argument(p: Parser, help: str = "the queue (a pull-mode tube is ~NAME)") -> None:
    """The one queue a command acts on, as QUEUE or --queue QUEUE (the flag list, retry and cancel take)."""
    p.add_argument("queue", nargs="?", help=f"{help}; or --queue QUEUE")
    p.add_argument("--queue", dest="queue_option", metavar="QUEUE", help=argparse.SUPPRESS)


def the_queue(args: argparse.Namespace) -> str:
    """The queue given by queue_argument's either form: exactly one (both forms naming the same one is fine)."""
    given = {q for q in (args.queue, args.queue_option) if q is not None}
    if len(given) != 1:
        raise InvalidInput("name one queue: QUEUE or --queue QUEUE" if not given else
                           f"two queues given ({' and '.join(sorted(given))}): name one", "queue")
    return given.pop()


def debug() -> bool:
    """DELAYQ_DEBUG=1 (or true/yes) shows an internal error's traceback; 0, false, no or unset do not."""
    return os.environ.get("DELAYQ_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")


def run(command: ModuleType, argv: Sequence[str] | None, prog: str) -> int:
    """Parse, load the settings, put the application on the import path, execute: the one error boundary."""
    try:
        args = command.build_parser(prog).parse_args(argv)
        args.prog = prog
        settings = config.load()
        use_app_path(settings.app_path)
        return command.execute(args, settings) or 0
    except DelayqError as exc:
        print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:   # `delayq show ... | head`: the reader went away; stop quietly, as a shell tool does
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # a bug: still one line, the traceback only on request
        if debug():
            raise
        print(f"{prog}: internal error: {type(exc).__name__}: {one_line(exc)} (set DELAYQ_DEBUG=1 for the traceback)",
              file=sys.stderr)
        return EXIT_RUNTIME


EXIT_BROKEN_PIPE = 141      # 128 + SIGPIPE: what a shell reports for a tool whose reader closed the pipe


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's own flush at exit does not fail on the closed pipe too."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def one_line(exc: BaseException) -> str:
    """The message on one line, whatever a driver or a quoted input put in it: cron mails one line per problem."""
    return " ".join(str(exc).splitlines())


def use_app_path(dirs: Sequence[str]) -> None:
    """The application's directories go after the installed packages: an app file named redis.py shadows nothing."""
    for folder in dirs:
        folder = os.path.abspath(folder)
        if folder not in (os.path.abspath(p or ".") for p in sys.path):
            sys.path.append(folder)


def setup_logging(verbose: bool, fmt: str = "kv") -> None:
    """Commands log to stderr, key=value or JSON (DELAYQ_LOG_FORMAT): warnings always, details when verbose."""
    logs.setup(logging.INFO if verbose else logging.WARNING, fmt)


def when(t: Any) -> str | None:
    """Epoch seconds as local ISO-8601 with its offset (what an operator reads; naive input means the same zone).

    A value no datetime can hold (a row edited by hand: 1e300, inf, text in SQLite's REAL column) is shown
    as itself, marked out of range: a display never fails on what it displays.
    """
    if t is None:
        return None
    try:
        return datetime.fromtimestamp(float(t)).astimezone().isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError, TypeError):
        return out_of_range(t)


def out_of_range(value: Any) -> str:
    return f"{repr(value)[:60]} (out of range)"


def number(value: Any) -> float:
    """A stored number as a float; what is not one (text edited into a REAL column) becomes nan."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def finite(data: Any) -> Any:
    """The data with every inf or nan float replaced by its text marked out of range: JSON has no inf."""
    if isinstance(data, float) and not math.isfinite(data):
        return out_of_range(data)
    if isinstance(data, dict):
        return {key: finite(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(value) for value in data]
    return data


def table(columns: Sequence[str], rows: list[list[str]], empty: str) -> str:
    """Rows under their column names, each column as wide as its widest cell; `empty` (a line) when there are none."""
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines if rows else [*lines, empty])


def emit(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(finite(data), ensure_ascii=False, default=str))
    else:
        print(text)
