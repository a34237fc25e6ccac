"""What every script shares: the error boundary, the parser, output and logging.

A script parses, loads config, calls one manager verb and returns an exit code;
problems go to stderr as one line, results to stdout (one JSON object with --json).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
from datetime import datetime
from typing import Any, Callable

from . import logs
from .errors import EXIT_RUNTIME, EXIT_USAGE, DelayqError

EXIT_INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def parser(prog: str, description: str, verbose: bool = False) -> Parser:
    p = Parser(prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    if verbose:
        p.add_argument("-v", "--verbose", action="store_true", help="log each job or recovery to stderr")
    return p


def boundary(prog: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """The one error boundary of a script: a one-line cause on stderr and a named exit code."""

    def wrap(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def run(argv: list[str] | None = None) -> int:
            try:
                return main(argv) or 0
            except DelayqError as exc:
                print(f"{prog}: error: {exc}", file=sys.stderr)
                return exc.exit_code
            except KeyboardInterrupt:
                print(f"{prog}: interrupted", file=sys.stderr)
                return EXIT_INTERRUPTED
            except Exception as exc:  # a bug: still one line, the traceback only on request
                if os.environ.get("DELAYQ_DEBUG"):
                    raise
                print(f"{prog}: internal error: {type(exc).__name__}: {exc} (set DELAYQ_DEBUG=1 for the traceback)",
                      file=sys.stderr)
                return EXIT_RUNTIME

        return run

    return wrap


def setup_logging(verbose: bool, fmt: str = "kv") -> None:
    """Scripts log to stderr, key=value or JSON (DELAYQ_LOG_FORMAT): warnings always, details when verbose."""
    logs.setup(logging.INFO if verbose else logging.WARNING, fmt)


def when(t: float | None) -> str | None:
    """Epoch seconds as local ISO-8601 with its offset (what an operator reads)."""
    if t is None:
        return None
    return datetime.fromtimestamp(t).astimezone().isoformat(timespec="milliseconds")


def emit(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, ensure_ascii=False, default=str))
    else:
        print(text)
