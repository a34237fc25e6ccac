"""Which callables a job may name, and how a name becomes a function.

A callable runs only if both hold: its module lies under one of the prefixes in
DELAYQ_ALLOWED_MODULES, and the function (or its class) is marked with
@delayq.job in code. Both are checked at enqueue and again at execution, so a
row edited by hand to name `os:system` or `builtins:eval` is refused before
anything is imported. Payloads are JSON; nothing is unpickled or evaluated.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any, Callable

from .errors import CallableRefused, InvalidInput

_MARK = "__delayq_job__"
_ONCE = "__delayq_at_most_once__"
MODES = ("auto", "manual")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


def job(target: Any = None, *, at_most_once: bool = False) -> Any:
    """Mark a function, or a class whose public methods are jobs, as runnable by delayq.

    `@delayq.job(at_most_once=True)` marks a job that must never run twice on its
    own (charging a user): it gets one attempt, and an attempt interrupted by a
    crash fails with "outcome unknown" instead of running again.
    A class with a `steps` mapping ({"method": "auto" | "manual"}) is a multi-step
    job, named as "module:Class".
    """

    def mark(target: Any) -> Any:
        setattr(target, _MARK, True)
        setattr(target, _ONCE, at_most_once)
        steps = getattr(target, "steps", None) if inspect.isclass(target) else None
        if steps is not None:
            check_steps(target, steps)
        return target

    return mark if target is None else mark(target)


def check_steps(cls: type, steps: Any) -> None:
    """A steps map must name public methods of the class, each 'auto' or 'manual'."""
    if not isinstance(steps, dict) or not steps:
        raise TypeError(f"{cls.__name__}.steps must be a non-empty dict of method name -> 'auto' or 'manual'")
    for name, mode in steps.items():
        if mode not in MODES or name.startswith("_") or not callable(getattr(cls, name, None)) or len(name) > 64:
            raise TypeError(f"{cls.__name__}.steps[{name!r}] must name a public method, with 'auto' or 'manual'")


def steps_of(target: Any) -> dict[str, str] | None:
    """The steps map of a multi-step job class, else None."""
    return getattr(target, "steps", None) if inspect.isclass(target) else None


def check_name(name: str) -> tuple[str, str]:
    """'pkg.module:function' or 'module:Class.method' -> (module, attribute path)."""
    if not isinstance(name, str) or len(name) > 255 or not _NAME_RE.match(name):
        raise InvalidInput(
            f"callable {str(name)[:80]!r} is not of the form 'package.module:function' or 'module:Class.method'"
        )
    module, _, attr = name.partition(":")
    return module, attr


def check_allowed(name: str, allowed: tuple[str, ...]) -> tuple[str, str]:
    module, attr = check_name(name)
    if not allowed:
        raise CallableRefused(
            f"callable {name!r} refused: DELAYQ_ALLOWED_MODULES is empty; list the packages your jobs live in"
        )
    if not any(module == p or module.startswith(p + ".") for p in allowed):
        raise CallableRefused(f"callable {name!r} refused: module {module!r} is not under DELAYQ_ALLOWED_MODULES")
    return module, attr


class Registry:
    """Resolves allowed, marked callables; imports each module once per process."""

    def __init__(self, allowed: tuple[str, ...]):
        self.allowed = allowed
        self._cache: dict[str, Callable[..., Any]] = {}
        self._once: dict[str, bool] = {}

    def at_most_once(self, name: str) -> bool:
        """Whether the function, or the class of the method, was marked @delayq.job(at_most_once=True)."""
        self.resolve(name)
        return self._once[name]

    def resolve(self, name: str) -> Callable[..., Any]:
        """The callable for `name`; CallableRefused if not allowed or not marked, ImportError if missing."""
        func = self._cache.get(name)
        if func is None:
            func = self._cache[name] = self._load(name)
        return func

    def _load(self, name: str) -> Callable[..., Any]:
        module_name, attr = check_allowed(name, self.allowed)
        module = importlib.import_module(module_name)
        head, _, method = attr.partition(".")
        target = getattr(module, head, None)
        if target is None:
            raise ImportError(f"module {module_name!r} has no attribute {head!r}")
        if not getattr(target, _MARK, False) or getattr(target, "__module__", None) != module.__name__:
            raise CallableRefused(f"callable {name!r} refused: {head!r} is not marked with @delayq.job in {module_name}")
        self._once[name] = bool(getattr(target, _ONCE, False))
        if not method:
            if inspect.isclass(target) and steps_of(target) is None:
                raise InvalidInput(f"callable {name!r} names a class without steps: add the method, 'module:Class.method'")
            return target
        if method.startswith("_"):
            raise CallableRefused(f"callable {name!r} refused: {method!r} is not a public method")
        raw = inspect.getattr_static(target, method, None)
        if raw is None:
            raise ImportError(f"class {head!r} has no method {method!r}")
        if isinstance(raw, (staticmethod, classmethod)):
            return getattr(target, method)
        return getattr(target(), method)
