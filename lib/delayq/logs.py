"""Log lines for operators: key=value by default, one JSON object per line with DELAYQ_LOG_FORMAT=json.

The library only logs (logging.getLogger(__name__)); the scripts install this
formatter on stderr, so a crontab line's `>> file 2>&1` keeps one line per job outcome.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time


class KeyValueFormatter(logging.Formatter):
    _second, _stamp = -1, ""

    def format(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        if second != self._second:    # one strftime per second, not per line
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(second))
        fields = getattr(record, "fields", None)
        text = " ".join(f"{k}={_kv(v)}" for k, v in fields.items()) if fields else f"msg={_kv(record.getMessage())}"
        return f"time={self._stamp} level={record.levelname.lower()} {text}"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data = {"time": record.created, "level": record.levelname.lower(), "logger": record.name}
        fields = getattr(record, "fields", None)
        data.update(fields if fields else {"msg": record.getMessage()})
        return json.dumps(data, ensure_ascii=False, default=str)


_NEEDS_QUOTES = re.compile(r'[\s="]|^$')


def _kv(value: object) -> str:
    text = value if isinstance(value, str) else str(value)
    return json.dumps(text, ensure_ascii=False) if _NEEDS_QUOTES.search(text) else text


class BatchHandler(logging.Handler):
    """Writes lines to a stream in batches: at each flush() (the runner flushes after every batch of
    outcomes, logging.shutdown at exit), at 64 KiB, and at once for warnings and errors."""

    def __init__(self, stream):
        super().__init__()
        self.stream = stream
        self.lines: list[str] = []
        self.size = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self.lines.append(line)
        self.size += len(line)
        if record.levelno >= logging.WARNING or self.size > 65536:
            self.flush()

    def flush(self) -> None:
        if not self.lines:
            return
        with self.lock:
            text, self.lines, self.size = "\n".join(self.lines) + "\n", [], 0
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):
                pass


def flush() -> None:
    """Write out what the handlers hold (cheap when nothing is held)."""
    for handler in logging.getLogger().handlers:
        handler.flush()


def setup(level: int, fmt: str = "kv") -> None:
    """Send delayq's records to stderr in the chosen format (the scripts call this once)."""
    handler = BatchHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
