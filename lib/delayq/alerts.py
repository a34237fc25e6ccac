"""Alerts for jobs that failed for good: one digest message per compensate run, by webhook.

The runner only flags a failed job (alert_pending); compensate sends what is
flagged and clears the flags once delivered. A delivery failure is logged as a
warning and retried on the next run: alerts never block or crash job processing.
The webhook URL and the signing secret never appear in output or logs.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import time
from typing import Any
from urllib.parse import urlsplit

import requests

from . import __version__
from .errors import ConfigError

log = logging.getLogger(__name__)
KINDS = ("feishu", "slack", "json")
TIMEOUT = 10
LISTED = 20          # jobs named one by one in a digest; the rest are counted


class Alerter:
    def __init__(self, webhook: str, kind: str = "json", secret: str | None = None, env_tag: str = ""):
        if kind not in KINDS:
            raise ConfigError(f"DELAYQ_ALERT_KIND {kind!r} is unknown: use one of {', '.join(KINDS)}")
        if urlsplit(webhook).scheme not in ("http", "https"):
            raise ConfigError("DELAYQ_ALERT_WEBHOOK must be an http(s) URL")
        self._webhook = webhook
        self.kind = kind
        self._secret = secret
        self.env_tag = env_tag

    @property
    def where(self) -> str:
        """The webhook's host only: its path and query often carry the token."""
        return urlsplit(self._webhook).netloc.rsplit("@", 1)[-1]

    def send(self, jobs: list[dict[str, Any]], total: int, more: bool = False) -> bool:
        """POST one digest for `jobs` (`more`: others wait for the next run); True when the receiver accepted it."""
        body = self.payload(jobs, total, more)
        try:
            response = requests.post(self._webhook, json=body, timeout=TIMEOUT,
                                     headers={"User-Agent": f"delayq/{__version__}"})
            ok = response.status_code < 300 and _accepted(response)
            if not ok:
                log.warning("alert to %s refused: HTTP %s %s", self.where, response.status_code, response.text[:200])
            return ok
        except requests.RequestException as exc:
            log.warning("alert to %s not delivered: %s; it is retried on the next compensate run",
                        self.where, type(exc).__name__)
            return False

    def payload(self, jobs: list[dict[str, Any]], total: int, more: bool = False) -> dict[str, Any]:
        count = f"at least {total}" if more else str(total)
        title = f"delayq{' ' + self.env_tag if self.env_tag else ''}: {count} job(s) failed for good"
        if self.kind == "json":
            return {"source": "delayq", "title": title, "total": total, "jobs": [_brief(job) for job in jobs]}
        lines = [title] + [_line(job) for job in jobs[:LISTED]]
        if total > LISTED:
            lines.append(f"... and {total - LISTED} more: bin/show.py --id N, then bin/retry.py")
        text = "\n".join(lines)
        if self.kind == "slack":
            return {"text": text}
        body: dict[str, Any] = {"msg_type": "text", "content": {"text": text}}
        if self._secret:
            stamp = str(int(time.time()))
            key = f"{stamp}\n{self._secret}".encode()
            body["timestamp"] = stamp
            body["sign"] = base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
        return body


def _brief(job: dict[str, Any]) -> dict[str, Any]:
    error = (job.get("last_error") or "").splitlines()
    return {"id": job["id"], "queue": job["queue"], "ext": job["ext"], "callable": job["callable"],
            "attempts": job["attempts"], "error": error[0][:300] if error else None}


def _line(job: dict[str, Any]) -> str:
    b = _brief(job)
    ext = f" ext={b['ext']}" if b["ext"] else ""
    return f"#{b['id']} {b['queue']}{ext} {b['callable']} attempts={b['attempts']}: {b['error']}"


def _accepted(response: requests.Response) -> bool:
    """Feishu answers HTTP 200 with a non-zero code when it refuses (bad signature, rate limit)."""
    try:
        data = response.json()
    except ValueError:
        return True
    if not isinstance(data, dict):
        return True
    code = data.get("code", data.get("StatusCode", 0))
    return code in (0, None)


