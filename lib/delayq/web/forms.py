"""A search form's fields to one JobFilter, with the rules of the scripts' flags (search.py): times as
ISO-8601, epoch seconds or an age (90s, 15m, 2h, 1d ago), statuses repeated or comma-separated, the filter
checked once (InvalidInput naming the field). And back: a filter's fields for links and hidden inputs."""

from __future__ import annotations

import math
import re
from typing import Mapping

from werkzeug.datastructures import MultiDict

from .. import words
from ..errors import InvalidInput
from ..search import TIME_FIELDS, JobFilter, arg_filter
from ..search import when as time_value     # the scripts' reading of --since/--until

# The command line's flags, as a message from the shared rules names them, and the search form's labels for them.
LABELS = {"--ext-prefix": "'Business key starts with'", "--ext": "'Business key is'", "--id": "'Id'",
          "--call": "'Callable'", "--queue": "'Queue'", "--status": "'Status'", "--since": "'from'",
          "--until": "'before'", "--error": "'Error contains'", "--reason": "the reason"}
FLAG = re.compile(r"--(?:ext-prefix|ext|id|call|queue|status|since|until|error|reason)\b")
FIELDS = ("id", "queue", "status", "call", "ext", "ext_prefix", "time", "since", "until", "error", "arg", "limit")
MAX_PAGE = 200


def job_filter(args: MultiDict, now: float) -> JobFilter:
    """The filter a search form (or a link, or a bulk confirmation's hidden fields) describes."""
    time_field = _one(args, "time") or "due"
    if time_field not in TIME_FIELDS:
        raise InvalidInput(f"time field {time_field[:20]!r} is unknown: use due, created or finished", "time")
    statuses, timed_out = words.status_filter(_many(args, "status"))     # the words the pages show
    return JobFilter(ids=_ids(args), queues=_many(args, "queue"), statuses=statuses, timed_out=timed_out,
                     call=_one(args, "call"), ext=_one(args, "ext"), ext_prefix=_one(args, "ext_prefix"),
                     since=time_value(_one(args, "since"), "since", now), until=time_value(_one(args, "until"), "until", now),
                     time_field=time_field, error=_one(args, "error"), arg=arg_filter(_one(args, "arg"), "'Argument'"),
                     upto_id=_int(args.get("upto_id"), "upto_id"), as_of=seconds(args.get("as_of"), "as_of")).checked()


def in_page_words(message: str) -> str:
    """A message of the shared rules (which name the command line's flags: "--ext-prefix is 8000 characters
    long") in the dashboard's words: the search form's labels."""
    return FLAG.sub(lambda m: LABELS[m.group(0)], message)


def fields(args: MultiDict) -> list[tuple[str, str]]:
    """The non-empty filter fields as given (for the next page's link and the bulk form's hidden inputs)."""
    return [(name, value) for name in FIELDS for value in args.getlist(name) if value.strip()]


def page(args: Mapping[str, str]) -> tuple[int | None, int]:
    """(before, limit) of a keyset page."""
    before = _int(args.get("before"), "before")
    limit = _int(args.get("limit"), "limit") or 50
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}", "limit")
    return before, limit


def _one(args: MultiDict, name: str) -> str | None:
    value = (args.get(name) or "").strip()
    return value or None


def _many(args: MultiDict, name: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for value in args.getlist(name):
        for part in value.split(","):
            if part.strip():
                seen[part.strip()] = None
    return tuple(seen)


def _ids(args: MultiDict) -> tuple[int, ...]:
    found = []
    for value in args.getlist("id"):
        for part in value.replace(",", " ").split():
            found.append(_int(part.lstrip("#"), "id"))
    return tuple(found)


def count(value: str | None, name: str) -> int:
    """A count a form carries (0 when absent)."""
    text = (value or "").strip()
    if not text:
        return 0
    if not text.isdigit() or len(text) > 18:
        raise InvalidInput(f"{name} must be a whole number, not {text[:20]!r}", name)
    return int(text)


def seconds(value: str | None, name: str) -> float | None:
    """A time in epoch seconds, as a bulk confirmation carries its preview's; finite."""
    if value is None or not value.strip():
        return None
    try:
        t = float(value.strip())
    except ValueError:
        t = math.nan
    if not math.isfinite(t) or t < 0:
        raise InvalidInput(f"{name} must be a time in seconds, not {value.strip()[:20]!r}", name)
    return t


def _int(value: str | None, name: str) -> int | None:
    if value is None or not value.strip():
        return None
    text = value.strip()
    if not text.isdigit() or len(text) > 18 or int(text) < 1:
        raise InvalidInput(f"{name} must be a positive whole number, not {text[:20]!r}", name)
    return int(text)
