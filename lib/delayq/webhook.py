"""One outbound webhook POST that a hostile or broken receiver cannot stretch, redirect or turn into a leak.

requests' timeout bounds each socket operation, not the delivery: a receiver that
trickles one byte a second never trips it. So the POST runs in a worker thread that
the caller waits for up to a total deadline (DNS, connect, TLS, send, headers and
reply all count). At the deadline the caller shuts the delivery's TCP connection
down, which ends the worker at once, in the TLS handshake too. Only a worker still in
DNS or in the TCP connect outlives the deadline, until the resolver gives up or its
connect timeout (twice the deadline) passes; it is a daemon, so it never holds the
process open.

Redirects are never followed: requests would re-POST the body to wherever a 307
points, or turn the POST into a GET on a 302 and report the GET's 200. Messages
name hosts only: a webhook's path and query usually hold its token.
"""

from __future__ import annotations

import functools
import re
import socket
import threading
from dataclasses import dataclass
from typing import Any, Iterator
from urllib.parse import SplitResult, urljoin, urlsplit

import requests
from requests.adapters import HTTPAdapter

from .errors import ConfigError

MAX_REPLY = 64 * 1024       # bytes of the receiver's answer read, at most
ABORT_GRACE = 0.5           # seconds the caller waits for the worker to end after shutting its socket
_HOST_CHARS = re.compile(r"[^A-Za-z0-9._~:-]")
_local = threading.local()


class Undelivered(Exception):
    """The POST got no complete answer; the message names no URL part, only what went wrong."""


@dataclass(frozen=True)
class Reply:
    status: int
    location: str | None     # the Location header of a redirect, as sent (may hold a path: never log it)
    body: bytes              # at most MAX_REPLY bytes, as sent (not decompressed)


def check_url(url: str, setting: str) -> None:
    """ConfigError unless `url` is an http(s) URL requests can use; the message never repeats the URL."""
    problem = _url_problem(url)
    if problem:
        raise ConfigError(f"{setting} is not a usable webhook URL: {problem} (expected https://host[:port]/path)")


def _url_problem(url: str) -> str | None:
    if any(c.isspace() or not c.isprintable() for c in url):
        return "it contains spaces or control characters"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "its host is not a valid [IPv6] address"
    try:
        port = parts.port
    except ValueError:
        return "its port is not a number from 1 to 65535"
    if parts.scheme not in ("http", "https"):
        return "its scheme must be http or https"
    if not parts.hostname:
        return "it has no host"
    if port == 0:
        return "its port is not a number from 1 to 65535"
    try:
        requests.Request("POST", url).prepare()
    except (requests.RequestException, ValueError, UnicodeError):
        return "requests refuses it (an invalid host name?)"
    return None


def origin(url: str) -> str:
    """scheme://host[:port] of `url`, without user, password, path or query; safe to log."""
    try:
        parts = urlsplit(url)
        return f"{parts.scheme}://{_host(parts)}"
    except ValueError:
        return "an unparsable URL"


def _host(parts: SplitResult) -> str:
    """host[:port] with only the characters a host can hold: a hostile Location cannot inject log lines."""
    host = _HOST_CHARS.sub("?", parts.hostname or "")[:100] or "no host"
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port else host


def redirect_target(url: str, location: str | None) -> str:
    """The origin a redirect points to (relative Locations resolve against `url`)."""
    if not location:
        return "nowhere (no Location header)"
    try:
        return origin(urljoin(url, location))
    except ValueError:
        return "an unparsable URL"


def post_json(url: str, body: dict[str, Any], headers: dict[str, str], deadline: float) -> Reply:
    """POST `body` as JSON; the answer within `deadline` seconds in all, or Undelivered. Never follows redirects."""
    watch = _Watch()
    outcome: list[Reply | Exception] = []
    worker = threading.Thread(target=_work, args=(watch, outcome, url, body, headers, deadline),
                              name="delayq-webhook", daemon=True)
    worker.start()
    worker.join(deadline)
    if not outcome:
        watch.abort()
        worker.join(ABORT_GRACE)
        raise Undelivered(f"no complete answer within {deadline:g} s (the receiver may have it anyway)")
    if isinstance(outcome[0], Exception):
        raise Undelivered(type(outcome[0]).__name__)   # requests' messages repeat the URL: the type only
    return outcome[0]


def _work(watch: _Watch, outcome: list, url: str, body: dict[str, Any], headers: dict[str, str],
          deadline: float) -> None:
    """The worker thread: its connections report to `watch` (through a thread-local) so they can be shut."""
    _local.watch = watch
    try:
        outcome.append(_post(url, body, headers, deadline))
    except Exception as exc:
        outcome.append(exc)
    finally:
        watch.close()


def _post(url: str, body: dict[str, Any], headers: dict[str, str], deadline: float) -> Reply:
    """One POST on a fresh session (no pooled socket outlives it); reads at most MAX_REPLY bytes of the answer."""
    backstop = 2 * deadline    # per socket operation: the caller's total deadline always comes first
    with _Session() as session:
        with session.post(url, json=body, headers={**headers, "Accept-Encoding": "identity"},
                          timeout=backstop, allow_redirects=False, stream=True) as response:
            data = response.raw.read(MAX_REPLY, decode_content=False) or b""
            return Reply(response.status_code, response.headers.get("Location"), data)


class _Session(requests.Session):
    """A session that never resolves a redirect: with allow_redirects=False requests still works out the
    next hop, reading the redirect's whole body (unbounded) and raising on a malformed Location."""

    def __init__(self) -> None:
        super().__init__()
        self.mount("http://", _Adapter())
        self.mount("https://", _Adapter())

    def resolve_redirects(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return iter(())


class _Watch:
    """The sockets of one delivery, so the caller can shut them down at the deadline.

    It holds a duplicate of each connection's socket, taken as soon as TCP connects:
    the duplicate shares the connection but not the object, so it stays usable while
    the TLS wrap detaches the original, and a handshake can be cut short too. A socket
    is shut down, not closed: shutdown wakes a thread blocked in recv or send on the
    connection, close does not.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self.aborted = False

    def check(self) -> None:
        if self.aborted:
            raise ConnectionAbortedError("the delivery's deadline passed")

    def adopt(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.append(sock)
            if self.aborted:
                _shut(sock)

    def abort(self) -> None:
        with self._lock:
            self.aborted = True
            for sock in self._socks:
                _shut(sock)

    def close(self) -> None:
        with self._lock:
            for sock in self._socks:
                sock.close()
            self._socks.clear()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass     # already shut or closed


class _Tracked:
    """Mixed into urllib3's connection classes: each new socket is duplicated into the worker's _Watch."""

    def _new_conn(self) -> socket.socket:
        watch = getattr(_local, "watch", None)
        if watch:
            watch.check()
        sock = super()._new_conn()  # type: ignore[misc]
        if watch:
            watch.adopt(sock.dup())
        return sock


class _Adapter(HTTPAdapter):
    """An HTTPAdapter whose connections (direct or through a proxy) are _Tracked."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        _track(self.poolmanager)

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **kwargs)
        _track(manager)
        return manager


def _track(manager: Any) -> None:
    classes = manager.pool_classes_by_scheme
    manager.pool_classes_by_scheme = {scheme: _tracked_pool(cls) for scheme, cls in classes.items()}


@functools.lru_cache(maxsize=None)
def _tracked_pool(pool_cls: type) -> type:
    """A subclass of urllib3's `pool_cls` whose connections are _Tracked (itself when it already is)."""
    if issubclass(pool_cls.ConnectionCls, _Tracked):
        return pool_cls
    connection_cls = type(pool_cls.ConnectionCls.__name__, (_Tracked, pool_cls.ConnectionCls), {})
    return type(pool_cls.__name__, (pool_cls,), {"ConnectionCls": connection_cls})
