#!/usr/bin/env python
"""The sample Django project's manage.py (Django's own, unchanged): `python manage.py delayq run-due` and friends."""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shopsite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
