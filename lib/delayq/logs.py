"""Log lines for operators: key=value by default, one JSON object per line with DELAYQ_LOG_FORMAT=json.

The library only logs (logging.getLogger(__name__)); the scripts install this
formatter on stderr, so a crontab line's `>> file 2>&1` keeps one line per job outcome.
"""

from __future__ import annotations

import json
import logging
import sys
import time


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(record.created))
        fields = getattr(record, "fields", None)
        text = " ".join(f"{k}={_kv(v)}" for k, v in fields.items()) if fields else f"msg={_kv(record.getMessage())}"
        return f"time={stamp} level={record.levelname.lower()} {text}"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data = {"time": record.created, "level": record.levelname.lower(), "logger": record.name}
        fields = getattr(record, "fields", None)
        data.update(fields if fields else {"msg": record.getMessage()})
        return json.dumps(data, ensure_ascii=False, default=str)


def _kv(value: object) -> str:
    text = str(value)
    return json.dumps(text, ensure_ascii=False) if (not text or any(c in text for c in ' ="\n')) else text


def setup(level: int, fmt: str = "kv") -> None:
    """Send delayq's records to stderr in the chosen format (the scripts call this once)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
