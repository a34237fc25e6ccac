"""One error tree for delayq, and the exit codes each branch maps to.

Every error a script can meet derives from DelayqError; each script has one
error boundary (delayq.cli.boundary) that prints the one-line message and
exits with the branch's code. Messages never contain credentials.
"""

EXIT_OK = 0
EXIT_RUNTIME = 1      # a backend unreachable, or another runtime error
EXIT_USAGE = 2        # bad usage or invalid input
EXIT_NOT_FOUND = 3    # nothing matched: unknown job, or no job in a state the verb accepts


def shown(value: object, limit: int = 40) -> str:
    """The start of a value as an error message quotes it; never raises (str() of 10**5000 does)."""
    try:
        return str(value)[:limit]
    except ValueError:
        return f"<{type(value).__name__} too large to print>"


class DelayqError(Exception):
    """Base of every delayq error."""

    exit_code = EXIT_RUNTIME


class InvalidInput(DelayqError):
    """Input that cannot be accepted: the message says what and how to fix it.

    `field` names the input field at fault (call, args, delay, ...), `line` the line of a
    bulk file it came from, so callers never re-parse the message.
    """

    exit_code = EXIT_USAGE

    def __init__(self, message: str, field: str | None = None, line: int | None = None):
        super().__init__(message)
        self.field = field
        self.line = line

    def on_line(self, line: int, source: str | None = None) -> "InvalidInput":
        """The same error, located on a line of a bulk file (or at an item of a list, without a source)."""
        return type(self)(f"{source} line {line}: {self}" if source else f"item {line}: {self}", self.field, line)


class ConfigError(InvalidInput):
    """Configuration that cannot work (a bad URL, an unknown setting)."""


class CallableRefused(InvalidInput):
    """A job names a callable outside DELAYQ_ALLOWED_MODULES or not marked with @delayq.job."""


class BackendError(DelayqError):
    """A database or Redis failed or is unreachable; the message names which, never credentials."""

    retryable = False       # the server rolled the whole transaction back (a deadlock's victim): run it again


class SchemaError(BackendError):
    """The database answers but delayq's tables are missing, too old or too new for this code."""


class NotFound(DelayqError):
    """No job matched, or none in a state the verb accepts."""

    exit_code = EXIT_NOT_FOUND


class Snooze(Exception):
    """Raised by a job to say "not yet, ask me again" (stepped polling, seed 001).

    The job is rescheduled after `seconds`, or after its ladder's next step; it is
    not a failure and raises no alert, but each snooze is an attempt row
    ("snoozed") and counts toward the ladder position. The deadline (or, without
    one, max_attempts) ends the polling.
    """

    def __init__(self, seconds: float | None = None):
        super().__init__(f"snoozed for {seconds} s" if seconds is not None else "snoozed")
        self.seconds = seconds


class Permanent(Exception):
    """Raised by a job to fail at once, with no retry (the seeds' "error code 10000").

    Deliberately not a DelayqError: it is a job's verdict, not a delayq fault.
    """
