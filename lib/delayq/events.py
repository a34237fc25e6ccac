"""Events with several independent handlers (seeds 000 and 003).

    @delayq.on("order.completed")
    def upgrade_to_diamond(order_id: int) -> None: ...

    @delayq.on("order.completed", queue="mail", ladder="alipay")
    def send_receipt(order_id: int) -> None: ...

    delayq.connect().emit("order.completed", {"order_id": 1})    # or bin/emit.py

emit() creates one job per handler registered for the code, all sharing one
event id; each retries and fails on its own. Handlers are found by importing the
modules named in DELAYQ_EVENT_MODULES (each must lie under DELAYQ_ALLOWED_MODULES).
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from .errors import CallableRefused, InvalidInput, shown
from .registry import is_allowed

EVENT_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
HANDLER_OPTIONS = {"ladder", "max_attempts", "lease", "timeout", "priority", "queue"}
_handlers: dict[str, dict[str, dict[str, Any]]] = {}


def check_code(code: Any) -> str:
    if not isinstance(code, str) or not EVENT_RE.match(code):
        raise InvalidInput(f"event code {shown(code, 80)!r} is invalid: use 1-64 letters, digits, '_', '.', ':' or '-'")
    return code


def check_options(code: str, options: dict[str, Any]) -> None:
    """`@delayq.on(code, **options)`'s arguments (methods.on): a valid code, enqueue's options a handler may set."""
    check_code(code)
    unknown = set(options) - HANDLER_OPTIONS
    if unknown:
        raise TypeError(f"@delayq.on: unknown option(s) {', '.join(sorted(unknown))}")


def add_handler(code: str, name: str, options: dict[str, Any]) -> None:
    """Record the callable `name` (module:qualname) as a handler of `code`, with its options."""
    _handlers.setdefault(code, {})[name] = dict(options)


def handlers(code: str, modules: tuple[str, ...], allowed: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """callable name -> options of every handler of `code` in `modules`, in registration order."""
    check_code(code)
    if not modules:
        raise InvalidInput("DELAYQ_EVENT_MODULES is empty: name the modules that define your @delayq.on handlers")
    for name in modules:
        if not is_allowed(name, allowed):
            raise CallableRefused(f"event module {name!r} is not under DELAYQ_ALLOWED_MODULES")
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise InvalidInput(f"event module {name!r} cannot be imported: {exc}") from None
    found = {name: opts for name, opts in _handlers.get(code, {}).items() if is_allowed(name.split(":")[0], modules)}
    if not found:
        raise InvalidInput(f"no handler for event {code!r} in DELAYQ_EVENT_MODULES ({', '.join(modules)})")
    return found
