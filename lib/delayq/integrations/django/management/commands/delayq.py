"""`manage.py delayq COMMAND ...`: the `delayq` command with this project's settings (settings.DELAYQ, else the
environment, else Django's own database), its jobs run where Django is set up, so they may use the ORM.

    python manage.py delayq migrate                  # delayq's tables, beside Django's
    python manage.py delayq run-due --for 55         # from cron, like `delayq run-due`
    python manage.py delayq stats --json

Every argument after `delayq` goes to the delayq command as it is (`manage.py delayq run-due --help`), and so does
its exit code (0 ok, 1 runtime, 2 usage, 3 not found). call_command("delayq", "stats") works too.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from delayq.errors import DelayqError
from delayq.integrations.django import environment
from delayq.integrations.settings import run_command

_DJANGO_OPTIONS = ("--settings", "--pythonpath")   # read by manage.py itself before any command runs


class Command(BaseCommand):
    help = "delayq's commands with this project's settings: run-due, compensate, stats, list, migrate, ..."
    requires_system_checks: list[str] = []     # cron runs it every minute: Django's checks belong to deploys

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("delayq_args", nargs=argparse.REMAINDER, metavar="COMMAND ...",
                            help="a delayq command and its arguments (manage.py delayq --help lists them)")

    def run_from_argv(self, argv: list[str]) -> None:
        """From manage.py: everything after `delayq` is delayq's (its --help too), not parsed by Django."""
        code = forward(_without_django_options(argv[2:]))
        if code:
            sys.exit(code)

    def handle(self, *args: Any, delayq_args: list[str] | None = None, **options: Any) -> None:
        """From call_command("delayq", "stats", "--json"): CommandError with the delayq command's exit code."""
        code = forward(list(args) + list(delayq_args or []))
        if code:
            raise CommandError(f"delayq exited with {code}", returncode=code)


def forward(argv: list[str]) -> int:
    """Run `delayq ARGV` in this process with the project's settings; its exit code."""
    try:
        values = environment()
    except DelayqError as exc:
        print(f"manage.py delayq: error: {' '.join(str(exc).splitlines())}", file=sys.stderr)
        return exc.exit_code
    return run_command(argv, values)


def _without_django_options(argv: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _DJANGO_OPTIONS:
            skip = True
        elif not arg.startswith(tuple(f"{option}=" for option in _DJANGO_OPTIONS)):
            kept.append(arg)
    return kept
