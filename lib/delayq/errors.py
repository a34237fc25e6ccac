"""One error tree for delayq, and the exit codes each branch maps to.

Every error a script can meet derives from DelayqError; each script has one
error boundary (delayq.cli.boundary) that prints the one-line message and
exits with the branch's code. Messages never contain credentials.
"""

EXIT_OK = 0
EXIT_RUNTIME = 1      # a backend unreachable, or another runtime error
EXIT_USAGE = 2        # bad usage or invalid input
EXIT_NOT_FOUND = 3    # nothing matched: unknown job, or no job in a state the verb accepts


class DelayqError(Exception):
    """Base of every delayq error."""

    exit_code = EXIT_RUNTIME


class InvalidInput(DelayqError):
    """Input that cannot be accepted: the message says what and how to fix it."""

    exit_code = EXIT_USAGE


class ConfigError(InvalidInput):
    """Configuration that cannot work (a bad URL, an unknown setting)."""


class CallableRefused(InvalidInput):
    """A job names a callable outside DELAYQ_ALLOWED_MODULES or not marked with @delayq.job."""


class BackendError(DelayqError):
    """A database or Redis failed or is unreachable; the message names which, never credentials."""


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
