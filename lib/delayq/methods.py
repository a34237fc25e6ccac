"""The decorators `@delayq.job` and `@delayq.on`, and the methods a marked function gets: `f.enqueue(...)` and
`f.options(...).enqueue(...)`.

    @delayq.job
    def auto_confirm(order_id: int) -> None: ...

    auto_confirm(123)                                   # a plain call: runs it here, as before
    auto_confirm.enqueue(123)                           # a job, due now, on the default client
    auto_confirm.options(delay="7d", ext="order:123").enqueue(order_id=123)
    auto_confirm.options(connection=conn).enqueue(123)  # in the application's own transaction

Why two calls and not `enqueue(order_id=123, delay="7d")`: the job's own parameters may be named
`delay`, `queue`, `ext` or `connection` (a job `notify(queue: str)` is ordinary), and one call that
took both would let one shadow the other. With `enqueue` taking exactly the job's parameters, a
type checker reads them from the function (typing.ParamSpec: mypy and pyright report a wrong or
missing argument), and `options` takes only delayq's, under names of their own. procrastinate
(`configure(...).defer(...)`) and dramatiq (`send_with_options`) split them the same way.

The arguments are bound to the function's signature at the call (a wrong or missing one raises
InvalidInput, nothing written) and stored by name, as JSON: `auto_confirm.enqueue(123)` stores
{"order_id": 123}. A job with positional-only or *args parameters cannot be enqueued this way
(delayq calls a job with keyword arguments only).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, ParamSpec, Protocol, TypeVar, overload

from . import events, registry
from .errors import InvalidInput
from .limits import check_key_template
from .registry import name_of

if TYPE_CHECKING:
    from .client import Client
    from .store import Inserted

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
T = TypeVar("T")


class JobFunction(Protocol[P, R_co]):
    """What @delayq.job makes of a function, for type checkers: the function itself, plus two methods.

    At run time it is the very same function object (pickling, introspection and plain calls are
    unchanged); only `enqueue` and `options` are added to it.
    """

    __name__: str
    __qualname__: str
    __module__: str

    def __call__(self, /, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    def enqueue(self, /, *args: P.args, **kwargs: P.kwargs) -> Inserted:
        """Schedule one run of the function with these arguments, due now, on the default client."""
        ...

    def options(self, *, delay: Any = None, at: Any = None, ext: str | None = None, queue: str | None = None,
                ladder: Any = None, max_attempts: int | None = None, deadline: Any = None,
                priority: int | None = None, unique: bool | None = None, lease: Any = None, timeout: Any = None,
                on_timeout: str | Callable[..., Any] | None = None, connection: Any = None,
                client: Client | None = None) -> JobCall[P]:
        """The same job with enqueue options (Client.enqueue's): `.options(delay="7d").enqueue(...)`."""
        ...


@dataclass(frozen=True)
class JobCall(Generic[P]):
    """A job function with enqueue options set; `enqueue(...)` takes the function's own arguments.

    `client`: the Client to enqueue on (default: delayq's default client, delayq.configure).
    Every other option is Client.enqueue's, with the same meaning; None leaves one unset.
    `options()` again returns a new JobCall with these options and the new ones.
    """

    func: Callable[P, Any]
    settings: Mapping[str, Any] = field(default_factory=dict)
    client: Client | None = None

    def options(self, *, delay: Any = None, at: Any = None, ext: str | None = None, queue: str | None = None,
                ladder: Any = None, max_attempts: int | None = None, deadline: Any = None,
                priority: int | None = None, unique: bool | None = None, lease: Any = None, timeout: Any = None,
                on_timeout: str | Callable[..., Any] | None = None, connection: Any = None,
                client: Client | None = None) -> JobCall[P]:
        """The same job with these enqueue options added (delay: seconds, a timedelta or "90s", "15m", "7d";
        connection: the application's open connection, whose transaction the job joins)."""
        given = {"delay": delay, "at": at, "ext": ext, "queue": queue, "ladder": ladder,
                 "max_attempts": max_attempts, "deadline": deadline, "priority": priority, "unique": unique,
                 "lease": lease, "timeout": timeout, "on_timeout": on_timeout, "connection": connection}
        settings = {**self.settings, **{k: v for k, v in given.items() if v is not None}}
        return JobCall(self.func, settings, client or self.client)

    def enqueue(self, /, *args: P.args, **kwargs: P.kwargs) -> Inserted:
        """Schedule one run with these arguments; returns what Client.enqueue returns (id, status, due_at,
        created). InvalidInput, nothing written, if they do not fit the function or are not JSON."""
        values = keywords(self.func, args, kwargs)
        if self.client is not None:
            return self.client.enqueue(self.func, values, **self.settings)
        from .default import default_client

        return default_client().enqueue(self.func, values, **self.settings)


def add_methods(func: Callable[..., Any]) -> None:
    """Give a marked function its `enqueue` and `options` (a class marked @delayq.job gets none: its methods
    are enqueued by name, "module:Class.method")."""
    plain = JobCall(func)
    func.enqueue = plain.enqueue       # type: ignore[attr-defined]
    func.options = plain.options       # type: ignore[attr-defined]


def keywords(func: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of a call of `func`, by parameter name (as the job is stored and later called)."""
    signature = _signature(func)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise InvalidInput(f"args do not fit {name_of(func)}{signature}: {exc}", "args") from None
    values: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            values.update(value)
        elif kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL):
            raise InvalidInput(f"{name_of(func)}: parameter {name!r} cannot be passed by name, and delayq calls a "
                               "job with keyword arguments only: make it an ordinary parameter", "args")
        else:
            values[name] = value
    return values


@functools.lru_cache(maxsize=1024)
def _signature(func: Callable[..., Any]) -> inspect.Signature:
    """The function's signature, read once (inspect.signature is slow next to an enqueue)."""
    return inspect.signature(func)


class Marker(Protocol):
    """What `@delayq.job(...)` with options returns: it marks a class, or a function (adding its methods)."""

    @overload
    def __call__(self, target: type[T], /) -> type[T]: ...  # type: ignore[overload-overlap]

    @overload
    def __call__(self, target: Callable[P, R], /) -> JobFunction[P, R]: ...


# A class is also a Callable: its overload comes first, and the class comes back as it is (no methods added).
@overload
def job(target: type[T], /) -> type[T]: ...  # type: ignore[overload-overlap]


@overload
def job(target: Callable[P, R], /) -> JobFunction[P, R]: ...


@overload
def job(target: None = None, /, *, at_most_once: bool = False, timeout: float | None = None,
        limit_key: str | None = None, limit: int | None = None) -> Marker: ...


def job(target: Any = None, *, at_most_once: bool = False, timeout: float | None = None,
        limit_key: str | None = None, limit: int | None = None) -> Any:
    """Mark a function, or a class whose public methods are jobs, as runnable by delayq.

    A marked function is returned unchanged (a plain call runs it, as before) with two methods added
    (below): `f.enqueue(*args, **kwargs)` schedules it on the default client, and
    `f.options(delay="7d", ext=..., connection=...).enqueue(...)` with enqueue options; both are typed
    from the function's own signature.

    `@delayq.job(at_most_once=True)` marks a job that must never run twice on its
    own (charging a user): it gets one attempt, and an attempt interrupted by a
    crash fails with "outcome unknown" instead of running again.
    `@delayq.job(timeout=120)`: an attempt may run 120 s before it is stopped and counted
    as failed (enqueue's --timeout wins over it; it wins over the queue's and the default).
    `@delayq.job(limit_key="order:{order_id}", limit=1)`: at most `limit` (default 1) of its jobs with the
    same key run at once, across every runner (limits.py); the key is made from the job's arguments when it
    is enqueued.
    A class with a `steps` mapping ({"method": "auto" | "manual"}) is a multi-step
    job, named as "module:Class".
    """

    def mark(target: Any) -> Any:
        registry.mark(target, at_most_once, timeout, limit_key, limit)
        if inspect.isfunction(target):
            add_methods(target)
        return target

    registry.check_timeout(timeout)     # a bad timeout or limit key fails at the decorator, before any target
    check_key_template(limit_key, limit)
    return mark if target is None else mark(target)


def on(code: str, **options: Any) -> Callable[[Callable[P, R]], JobFunction[P, R]]:
    """Register a function as a handler of event `code` (and mark it as a job); options as enqueue's (events.py)."""
    events.check_options(code, options)

    def register(func: Callable[P, R]) -> JobFunction[P, R]:
        marked = job(func)
        events.add_handler(code, f"{func.__module__}:{func.__qualname__}", options)
        return marked

    return register
