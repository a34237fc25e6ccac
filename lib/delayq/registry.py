"""Which callables a job may name, and how a name becomes a function.

A callable runs only if both hold: its module lies under one of the prefixes in
DELAYQ_ALLOWED_MODULES, and the function (or its class) is marked with
@delayq.job in code. Both are checked at enqueue and again at execution, so a
row edited by hand to name `os:system` or `builtins:eval` is refused before
anything is imported. Payloads are JSON; nothing is unpickled or evaluated.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from typing import Any, Callable

from .errors import CallableRefused, InvalidInput, shown
from .limits import check_key_template

_MARK = "__delayq_job__"
_ONCE = "__delayq_at_most_once__"
_TIMEOUT = "__delayq_timeout__"
_LIMIT = "__delayq_limit__"          # (limit_key template, limit) or None
MODES = ("auto", "manual")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_DUNDER_RE = re.compile(r"(^|\.)__\w*__(\.|$)")


def check_timeout(timeout: Any) -> None:
    """`@delayq.job(timeout=...)`: None, or 1 to 604800 seconds; TypeError otherwise (a mistake in code)."""
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 1 <= timeout <= 7 * 86400):
        raise TypeError("@delayq.job(timeout=...) takes 1 to 604800 seconds")


def mark(target: Any, at_most_once: bool = False, timeout: float | None = None, limit_key: str | None = None,
         limit: int | None = None) -> Any:
    """Set the marks the Registry reads back on a function, or a class whose public methods are jobs (its `steps`
    checked): `@delayq.job` (methods.py) calls it. TypeError on a timeout out of 1 to 604800 seconds, or a limit
    key that is not a format string of argument names (limits.check_key_template)."""
    check_timeout(timeout)
    check_key_template(limit_key, limit)
    setattr(target, _MARK, True)
    setattr(target, _ONCE, at_most_once)
    setattr(target, _TIMEOUT, None if timeout is None else float(timeout))
    setattr(target, _LIMIT, None if limit_key is None else (limit_key, limit or 1))
    steps = getattr(target, "steps", None) if inspect.isclass(target) else None
    if steps is not None:
        check_steps(target, steps)
    return target


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
    return _checked_text(name) if type(name) is str else _check_name(name)


@functools.lru_cache(maxsize=4096)
def _checked_text(name: str) -> tuple[str, str]:
    """check_name of a text, once per name (every job names its callable; a refusal is not remembered)."""
    return _check_name(name)


def _check_name(name: Any) -> tuple[str, str]:
    if not isinstance(name, str) or len(name) > 255 or not _NAME_RE.match(name):
        raise InvalidInput(
            f"callable {shown(name, 80)!r} is not of the form 'package.module:function' or 'module:Class.method'",
            "call")
    module, _, attr = name.partition(":")
    if _DUNDER_RE.search(module) or _DUNDER_RE.search(attr):
        # pkg.__init__:f would import the package's __init__ a second time, as a module of its own
        raise InvalidInput(f"callable {name!r}: name the package itself, not a dunder module or attribute", "call")
    return module, attr


def name_of(target: Any) -> str:
    """The name a job is stored under, "module:qualname", for a marked function, method or steps class."""
    func = getattr(target, "__func__", target)          # a bound or static method: its function
    module, qualname = getattr(func, "__module__", None), getattr(func, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        raise InvalidInput(f"{target!r} cannot be named as package.module:function: define it at a module's top "
                           "level (or as a method of a top-level class) and mark it with @delayq.job", "call")
    return f"{module}:{qualname}"


def is_allowed(module: str, allowed: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in allowed)


def check_allowed(name: str, allowed: tuple[str, ...]) -> tuple[str, str]:
    module, attr = check_name(name)
    if not allowed:
        raise CallableRefused(
            f"callable {name!r} refused: DELAYQ_ALLOWED_MODULES is empty; list the packages your jobs live in"
        )
    if not is_allowed(module, allowed):
        raise CallableRefused(f"callable {name!r} refused: module {module!r} is not under DELAYQ_ALLOWED_MODULES")
    return module, attr


class Registry:
    """Resolves allowed, marked callables; imports each module once per process."""

    def __init__(self, allowed: tuple[str, ...]):
        self.allowed = allowed
        self._cache: dict[str, Callable[..., Any]] = {}
        self._once: dict[str, bool] = {}
        self._timeouts: dict[str, float | None] = {}
        self._limits: dict[str, tuple[str, int] | None] = {}

    def at_most_once(self, name: str) -> bool:
        """Whether the function, or the class of the method, was marked @delayq.job(at_most_once=True)."""
        self.resolve(name)
        return self._once[name]

    def timeout(self, name: str) -> float | None:
        """The time limit the code declares, @delayq.job(timeout=...), or None."""
        self.resolve(name)
        return self._timeouts[name]

    def limit(self, name: str) -> tuple[str, int] | None:
        """The code's per-key limit, @delayq.job(limit_key="order:{order_id}", limit=1): (template, limit), or None."""
        self.resolve(name)
        return self._limits[name]

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
        if not getattr(target, _MARK, False):
            raise CallableRefused(f"callable {name!r} refused: {head!r} is not marked with @delayq.job")
        home = getattr(target, "__module__", None) or ""
        if not is_allowed(home, self.allowed):
            # re-exported from another of the app's modules is fine; from outside the allowed packages it is not
            raise CallableRefused(f"callable {name!r} refused: {head!r} is defined in {home!r}, "
                                  "which is not under DELAYQ_ALLOWED_MODULES")
        self._once[name] = bool(getattr(target, _ONCE, False))
        self._timeouts[name] = getattr(target, _TIMEOUT, None)
        self._limits[name] = getattr(target, _LIMIT, None)
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
