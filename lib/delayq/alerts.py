"""Alerts for jobs that failed for good: one digest message per compensate run, by webhook.

The runner only flags a failed job (alert_pending); compensate sends what is
flagged and clears the flags once delivered. A delivery failure is logged as a
warning and retried on the next run: alerts never block or crash job processing.
Delivery is therefore at least once; every digest carries an idempotency key, the
same on every run that re-sends it, so a receiver can drop the repeats.
The webhook URL's path and query and the signing secret never appear in output or logs.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
import re
import time
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from . import webhook
from .version import __version__
from .errors import ConfigError

log = logging.getLogger(__name__)
KINDS = ("feishu", "slack", "json")
TIMEOUT = 10.0       # default total deadline of one delivery, in seconds
TIMEOUT_RANGE = (1.0, 50.0)    # cron starts compensate each minute: a delivery must leave the run room
LISTED = 20          # jobs named one by one in a digest; the rest are counted
KEY_HEADER = "Idempotency-Key"


class Alerter:
    def __init__(self, webhook_url: str, kind: str = "json", secret: str | None = None, env_tag: str = "",
                 timeout: float | str | None = None, prefix: str = "delayq"):
        if kind not in KINDS:
            raise ConfigError(f"DELAYQ_ALERT_KIND {kind!r} is unknown: use one of {', '.join(KINDS)}")
        webhook.check_url(webhook_url, "DELAYQ_ALERT_WEBHOOK")
        self._webhook = webhook_url
        self.kind = kind
        self._secret = secret
        self.env_tag = env_tag
        self.timeout = timeout_seconds(timeout)
        self.prefix = prefix

    @property
    def where(self) -> str:
        """The webhook's host only: its path and query often carry the token."""
        return urlsplit(self._webhook).netloc.rsplit("@", 1)[-1]

    def key(self, jobs: list[dict[str, Any]]) -> str:
        """This digest's idempotency key (see idempotency_key)."""
        return idempotency_key(self.prefix, self.env_tag, jobs)

    def send(self, jobs: list[dict[str, Any]], total: int, more: bool = False) -> bool:
        """POST one digest for `jobs` (`more`: others wait for the next run); True when the receiver accepted it."""
        headers = {"User-Agent": f"delayq/{__version__}", KEY_HEADER: self.key(jobs)}
        try:
            reply = webhook.post_json(self._webhook, self.payload(jobs, total, more), headers, self.timeout)
        except webhook.Undelivered as exc:
            log.warning("alert to %s not delivered: %s; it is retried on the next compensate run "
                        "with the same %s", self.where, exc, KEY_HEADER)
            return False
        return self._verdict(reply)

    def _verdict(self, reply: webhook.Reply) -> bool:
        """2xx and no refusal code in the body: delivered. A redirect is not followed, so not delivered."""
        if 300 <= reply.status < 400:
            target = webhook.redirect_target(self._webhook, reply.location)
            log.warning("alert to %s not delivered: HTTP %s redirect to %s is not followed "
                        "(set DELAYQ_ALERT_WEBHOOK to the final URL); it is retried on the next compensate run",
                        webhook.origin(self._webhook), reply.status, target)
            return False
        if reply.status < 300 and _accepted(reply.body):
            return True
        log.warning("alert to %s refused: HTTP %s %s", self.where, reply.status, self._excerpt(reply.body))
        return False

    def _excerpt(self, body: bytes) -> str:
        """The start of the receiver's answer on one line, with anything of the URL or secret it echoes masked."""
        text = " ".join(body[:2000].decode("utf-8", "replace").split())
        for secret in _secrets(self._webhook, self._secret):
            text = text.replace(secret, "***")
        return text[:200]

    def payload(self, jobs: list[dict[str, Any]], total: int, more: bool = False) -> dict[str, Any]:
        count = f"at least {total}" if more else str(total)
        title = f"delayq{' ' + self.env_tag if self.env_tag else ''}: {count} job(s) failed for good"
        key = self.key(jobs)
        if self.kind == "json":
            return {"source": "delayq", "title": title, "total": total, "jobs": [_brief(job) for job in jobs],
                    "idempotency_key": key}
        lines = [title] + [_line(job) for job in jobs[:LISTED]]
        if total > LISTED:
            lines.append(f"... and {total - LISTED} more: bin/show.py --id N, then bin/retry.py")
        lines.append(f"key={key}")
        text = "\n".join(lines)
        if self.kind == "slack":
            return {"text": text}
        body: dict[str, Any] = {"msg_type": "text", "content": {"text": text}}
        if self._secret:
            stamp = str(int(time.time()))
            secret = f"{stamp}\n{self._secret}".encode()
            body["timestamp"] = stamp
            body["sign"] = base64.b64encode(hmac.new(secret, b"", hashlib.sha256).digest()).decode()
        return body


def timeout_seconds(value: float | str | None) -> float:
    """DELAYQ_ALERT_TIMEOUT as seconds (default TIMEOUT); ConfigError outside TIMEOUT_RANGE."""
    if value is None or value == "":
        return TIMEOUT
    low, high = TIMEOUT_RANGE
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not low <= seconds <= high:     # also refuses nan
        raise ConfigError(f"DELAYQ_ALERT_TIMEOUT must be a number of seconds from {low:g} to {high:g} "
                          f"(default {TIMEOUT:g}), not {str(value)[:20]!r}")
    return seconds


def idempotency_key(prefix: str, env_tag: str, jobs: list[dict[str, Any]]) -> str:
    """32 hex digits naming one digest: the same failures give the same key, on any run and any host.

    Derived from the table prefix, the environment tag and, per job, its id, attempt
    count and finish time, in id order; never from the clock of the run. The attempt
    count and finish time tell a job that failed again after bin/retry.py (a new
    failure, to be shown) from the same failure re-sent (a repeat, to be dropped).
    """
    failures = sorted([job["id"], job.get("attempts"), job.get("finished_at")] for job in jobs)
    text = json.dumps(["delayq-alert/1", prefix, env_tag, failures], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _secrets(url: str, secret: str | None) -> list[str]:
    """What must not be echoed into a log: the URL's path, query, password, user and their pieces; the secret."""
    parts = urlsplit(url)
    whole = [parts.path if len(parts.path) > 1 else "", parts.query, parts.password or "", secret or ""]
    pieces = re.split(r"[/;,]", parts.path) + [v for pair in parse_qsl(parts.query) for v in pair]
    pieces.append(parts.username or "")
    return sorted({p for p in whole if p} | {p for p in pieces if len(p) >= 6}, key=len, reverse=True)


def _brief(job: dict[str, Any]) -> dict[str, Any]:
    error = (job.get("last_error") or "").splitlines()
    return {"id": job["id"], "queue": job["queue"], "ext": job["ext"], "callable": job["callable"],
            "attempts": job["attempts"], "error": error[0][:300] if error else None}


def _line(job: dict[str, Any]) -> str:
    b = _brief(job)
    ext = f" ext={b['ext']}" if b["ext"] else ""
    return f"#{b['id']} {b['queue']}{ext} {b['callable']} attempts={b['attempts']}: {b['error']}"


def _accepted(body: bytes) -> bool:
    """Feishu answers HTTP 200 with a non-zero code when it refuses (bad signature, rate limit)."""
    try:
        data = json.loads(body)
    except ValueError:
        return True
    if not isinstance(data, dict):
        return True
    code = data.get("code", data.get("StatusCode", 0))
    return code in (0, None)
