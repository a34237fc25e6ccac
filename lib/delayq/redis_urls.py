"""DELAYQ_REDIS_URL read into a Target (one server, a Sentinel set or a Cluster), with its query options checked.

A leaf (the standard library only): the settings check a URL with it, and index/redis_client.py connects to
the Target. The forms, the options each takes and why the others are refused: index/redis_client.py's docstring.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import parse_qsl, unquote, urlsplit

SERVER, SENTINEL, CLUSTER = "redis", "redis+sentinel", "redis+cluster"
_DEFAULT_PORT = {SENTINEL: 26379, CLUSTER: 6379}
TLS_OPTIONS = ("ssl_ca_certs", "ssl_ca_path", "ssl_cert_reqs", "ssl_check_hostname", "ssl_certfile", "ssl_keyfile")
# The query options each form takes (and, over TLS, the TLS_OPTIONS); any other is refused.
_ACCEPTED = {
    SERVER: ("db", "client_name", "health_check_interval", "socket_keepalive"),
    "unix": ("db", "client_name", "health_check_interval"),
    SENTINEL: ("sentinel_password", "sentinel_username", "client_name", "health_check_interval", "socket_keepalive"),
    CLUSTER: ("client_name", "socket_keepalive"),     # redis-py's cluster client drops health_check_interval
}
_TIMEOUTS_REFUSED = "set DELAYQ_REDIS_TIMEOUT instead (one bound for each call)"
# Options redis-py (or another client) reads that delayq refuses, and why.
_REFUSED = {
    "socket_timeout": _TIMEOUTS_REFUSED, "socket_connect_timeout": _TIMEOUTS_REFUSED, "timeout": _TIMEOUTS_REFUSED,
    "retry_on_timeout": "delayq retries itself, for DELAYQ_REDIS_FAILOVER_WAIT",
    "retry_on_error": "delayq retries itself, for DELAYQ_REDIS_FAILOVER_WAIT",
    "decode_responses": "delayq reads replies as bytes", "encoding": "delayq reads replies as bytes",
    "encoding_errors": "delayq reads replies as bytes", "protocol": "delayq reads RESP2 replies",
    "max_connections": "each thread of a runner needs a connection of its own",
    "ssl": "use the rediss scheme for TLS, and the redis scheme for none",
    "password": "give it before the host, as in redis://user:password@host or unix://:password@/path.sock",
    "username": "give it before the host, as in redis://user:password@host or unix://user:password@/path.sock",
}
BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
_CLIENT_NAME = re.compile(r"[!-~]{1,64}")       # what CLIENT SETNAME takes: no spaces, printable ASCII
EXAMPLES = ("redis://host:6379/0, redis+sentinel://:password@host1:26379,host2:26379/mymaster/0 "
            "or redis+cluster://:password@host1:7000,host2:7001")


class RedisUrlError(ValueError):
    """A DELAYQ_REDIS_URL that cannot work; the message never holds a password."""


@dataclass(frozen=True)
class Target:
    """Where the index lives: the form, the hosts, and the credentials (kept out of repr)."""

    form: str                                   # SERVER, SENTINEL or CLUSTER
    tls: bool
    hosts: tuple[tuple[str, int], ...]
    url: str = field(repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    master: str = ""                            # Sentinel: the monitored master's name
    db: int = 0
    options: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def scheme(self) -> str:
        return ("rediss" if self.tls else "redis") + self.form[len("redis"):]

    def describe(self) -> str:
        """scheme://host:port[,host:port...][/master/db] with no user and no password, for messages."""
        if self.form == SERVER:
            return _describe_server(self.url)
        hosts = ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.hosts)
        tail = f"/{self.master}/{self.db}" if self.form == SENTINEL else ""
        return f"{self.scheme}://{hosts}{tail}"

    def secrets(self) -> list[str]:
        """Every password this target holds, to scrub from a driver's message."""
        return [s for s in (self.password, self.options.get("sentinel_password")) if s]


def parse(url: str) -> Target:
    """The Target a URL names, or RedisUrlError naming the form and host (never the password)."""
    scheme, sep, rest = url.partition("://")
    base, _, form = scheme.partition("+")
    if not sep or base not in ("redis", "rediss", "unix") or form not in ("", "sentinel", "cluster") \
            or (base == "unix" and form):
        raise RedisUrlError(f"{scheme or url[:20]!r} is not a supported form: use {EXAMPLES}")
    if not form:
        return _server(url)
    kind = SENTINEL if form == "sentinel" else CLUSTER
    shown = f"{base}+{form}://"
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    userinfo, at, hostlist = netloc.rpartition("@")
    username, password = _credentials(userinfo) if at else (None, None)
    hosts = tuple(_host(item, _DEFAULT_PORT[kind], shown) for item in hostlist.split(","))
    shown += ",".join(f"{h}:{p}" for h, p in hosts)
    options = _options(query, shown, kind, base == "rediss")
    master, db = "", 0
    parts = [p for p in path.split("/") if p]
    if kind == SENTINEL:
        if not parts or len(parts) > 2:
            raise RedisUrlError(f"{shown} needs the master's name, then an optional db: {shown}/mymaster/0")
        master = unquote(parts[0])
        db = _db(parts[1] if len(parts) > 1 else "0", shown)
    elif parts:
        raise RedisUrlError(f"{shown}/{path} has a path: a cluster has one database, so name only its hosts")
    return Target(kind, base == "rediss", hosts, url, username, password, master, db, options)


def _server(url: str) -> Target:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RedisUrlError(f"{_describe_server(url)} is not a valid URL ({exc}): use {EXAMPLES}") from None
    if parts.scheme != "unix" and not parts.hostname:
        raise RedisUrlError(f"{parts.scheme}:// names no host: use {EXAMPLES}")
    host = (parts.hostname or parts.path, port or 6379)
    tls = parts.scheme == "rediss"
    options = _options(parts.query, _describe_server(url), "unix" if parts.scheme == "unix" else SERVER, tls)
    return Target(SERVER, tls, (host,), url, parts.username, parts.password, options=options)


def _credentials(userinfo: str) -> tuple[str | None, str | None]:
    user, colon, password = userinfo.partition(":")
    if not colon:      # redis://secret@host: redis-py's convention reads a lone word as the password
        return None, unquote(user) or None
    return unquote(user) or None, unquote(password) or None


def _host(item: str, default_port: int, shown: str) -> tuple[str, int]:
    item = item.strip()
    if item.startswith("["):                     # [::1]:7000
        host, _, port = item[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = item.rpartition(":") if ":" in item else (item, "", "")
    if not host or (":" in host and not item.startswith("[")):
        raise RedisUrlError(f"{shown} has a host it cannot read in its list: use host1:port,host2:port "
                            "([::1]:port for IPv6)")
    try:
        number = int(port) if port else default_port
    except ValueError:
        number = -1
    if not 0 < number < 65536:
        raise RedisUrlError(f"{shown}{host}: port {port[:8]!r} is not a port number")
    return host, number


def _options(query: str, shown: str, form: str, tls: bool) -> dict[str, str]:
    """The URL's query options, each one this form takes with a value that works, or RedisUrlError saying why not
    and what it takes: an option redis-py would pass on blindly fails later, as a TypeError or an AttributeError."""
    pairs = parse_qsl(query, keep_blank_values=True)
    accepted = _ACCEPTED[form] + (TLS_OPTIONS if tls else ())
    names = [name for name, _ in pairs]
    for name, value in pairs:
        if name not in accepted:
            raise RedisUrlError(f"{shown}: {_refusal(name[:40], form)}; the options it takes: {', '.join(accepted)}")
        problem = "is given twice" if names.count(name) > 1 else _check_option(name, value)
        if problem:
            raise RedisUrlError(f"{shown}: option {name} {problem}")
    return dict(pairs)


def _refusal(name: str, form: str) -> str:
    """Why an option is refused on this form: delayq's reason, the scheme or form it belongs to, or unknown."""
    if name in _REFUSED:
        return f"option {name} is not taken: {_REFUSED[name]}"
    if name in TLS_OPTIONS:
        return f"option {name} is for TLS: use the rediss scheme"
    if name == "db":
        return "option db is not taken: " + ("the db follows the master's name" if form == SENTINEL
                                             else "a cluster has one database")
    if any(name in names for names in _ACCEPTED.values()):
        return f"option {name} is not taken by {form}://"
    return f"unknown option {name!r}"


def _check_option(name: str, value: str) -> str | None:
    """What is wrong with the value of an option this form takes, or None."""
    if value == "":
        return "has no value"
    test, complaint = _VALUES.get(name, (bool, ""))
    return None if test(value) else f"{complaint}, not {value[:80]!r}"


# What each option's value must be (sentinel_password and sentinel_username: any text). A CA or certificate file
# that is not there is a setting to fix (exit 2), not a server that is unreachable.
_VALUES: dict[str, tuple[Callable[[str], Any], str]] = {
    "db": (str.isdigit, "must be a whole number"),
    "health_check_interval": (lambda text: text.isdigit() and int(text) <= 3600,
                              "must be a whole number of seconds, 0 to 3600"),
    "socket_keepalive": (lambda text: text.lower() in BOOLEANS, "must be true or false"),
    "ssl_check_hostname": (lambda text: text.lower() in BOOLEANS, "must be true or false"),
    "ssl_cert_reqs": (lambda text: text in ("required", "optional", "none"), "must be required, optional or none"),
    "client_name": (_CLIENT_NAME.fullmatch, "must be 1 to 64 printable characters, no spaces"),
    "ssl_ca_certs": (os.path.isfile, "must name a file"),
    "ssl_certfile": (os.path.isfile, "must name a file"),
    "ssl_keyfile": (os.path.isfile, "must name a file"),
    "ssl_ca_path": (os.path.isdir, "must name a directory"),
}


def _db(text: str, shown: str) -> int:
    if not text.isdigit():
        raise RedisUrlError(f"{shown}: the db after the master's name must be a number, not {text[:20]!r}")
    return int(text)


def _describe_server(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return url.partition("://")[0] + "://<unparseable>"
    if parts.scheme == "unix":
        return f"unix://{parts.path}"
    return f"{parts.scheme}://{host}{port}{parts.path}"
