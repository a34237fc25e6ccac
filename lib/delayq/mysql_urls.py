"""DELAYQ_DATABASE_URL's mysql:// form read into a MySQLTarget: one host, or several (a Galera cluster's nodes).

A leaf (the standard library only): the settings check, redact and describe a URL with it (config.py), and
store/mysql.py connects to the target's hosts (store/mysql_hosts.py tries them in turn). One host is read by
urllib; a list of hosts, mysql://user:pass@host1[:port][,host2[:port]...]/db, is cut by hand (urllib reads one
host), its login and path then read by urllib from the URL with one host put in.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

PORT = 3306
EXAMPLE = "mysql://user:pass@host1:3306,host2:3306,host3:3306/db"
# A host is an IP literal or an ASCII DNS name: anything else fails inside the drivers (IDNA, NUL) as a bug would.
HOST_RE = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,62}))*\.?$")


class MySQLUrlError(ValueError):
    """A list of hosts that cannot work; the message (one line) names what is wrong, never the password."""


@dataclass(frozen=True)
class MySQLTarget:
    """What a mysql:// URL names: its hosts in the order given, the login (the password kept out of repr) and the
    database. One host, or several (a Galera cluster's nodes), each tried in turn when a connect finds no server."""

    hosts: tuple[tuple[str, int], ...]
    user: str = "root"
    password: str = field(default="", repr=False)
    database: str | None = None

    def describe(self) -> str:
        """mysql://host:port[,host:port...]/db with no user and no password, for messages."""
        return f"mysql://{','.join(map(shown_host, self.hosts))}/{self.database or ''}"


def shown_host(host: tuple[str, int]) -> str:
    """host:port, an IPv6 host in brackets ([::1]:3306)."""
    return f"[{host[0]}]:{host[1]}" if ":" in host[0] else f"{host[0]}:{host[1]}"


def valid_host(host: str) -> bool:
    """An IP literal or an ASCII DNS name (the settings' check of every URL's host, this one's and Redis's)."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(HOST_RE.match(host))


def several_hosts(url: object) -> bool:
    """A mysql:// URL whose host part is a list (a comma in it): read by mysql_target, not by urllib."""
    return isinstance(url, str) and url.startswith("mysql://") and "," in _split(url)[2]


def mysql_target(url: str) -> MySQLTarget:
    """A mysql:// URL read: mysql://user:pass@host1[:port][,host2[:port]...]/db (port 3306 unless given; an IPv6
    host in brackets, [::1]:3306). Raises MySQLUrlError (a ValueError) whose one line names what is wrong, never
    the password."""
    if several_hosts(url):
        scheme, userinfo, hostlist, tail = _split(url)
        hosts = tuple(_host(item) for item in hostlist.split(","))
        if len(set(hosts)) < len(hosts):
            raise MySQLUrlError("names a host twice in its list")
        # the login and the path as urllib reads them (percent-escapes undone), from the URL with one host put in
        parts = urlsplit(f"{scheme}://{userinfo}{'@' if userinfo else ''}host{tail}")
    else:
        parts = urlsplit(url)
        hosts = ((parts.hostname or "127.0.0.1", parts.port or PORT),)
    return MySQLTarget(hosts, unquote(parts.username or "root"), unquote(parts.password or ""),
                       parts.path.lstrip("/") or None)


def redact_hosts(url: str) -> str:
    """A URL with a list of hosts, its password and its query's values replaced by *** (urllib cannot read every
    list of hosts: an IPv6 one among others)."""
    scheme, userinfo, hostlist, tail = _split(url)
    user, colon, _ = userinfo.partition(":")
    path, mark, query = tail.partition("?")
    if query:
        path += mark + "&".join(f"{name}=***" for name, _ in parse_qsl(query, True))
    return f"{scheme}://{user}{':***' if colon else ''}{'@' if userinfo else ''}{hostlist}{path}"


def describe_hosts(url: str) -> str:
    """Where a URL with a list of hosts points, every host with its port (as given, if the list cannot be read)."""
    try:
        return mysql_target(url).describe()
    except ValueError:
        return f"mysql://{_split(url)[2]}"


def _host(item: str) -> tuple[str, int]:
    if item.startswith("["):                        # [::1]:3306
        host, bracket, port = item[1:].partition("]")
        if not bracket or port and not port.startswith(":"):
            raise MySQLUrlError(f"has a host it cannot read in its list ({item[:40]!r})")
        port = port[1:]
    else:
        host, _, port = item.partition(":")
    if not item:
        raise MySQLUrlError("has an empty host in its list")
    if not host or not valid_host(host):
        raise MySQLUrlError(f"has a host that is neither an IP address nor a DNS name ({host[:40]!r}; ASCII, "
                            "xn-- for other scripts)")
    if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise MySQLUrlError(f"gives host {host} the port {port[:12]!r}: a port is 1-65535")
    return host, int(port) if port else PORT


def _split(url: str) -> tuple[str, str, str, str]:
    """scheme, login (user[:password]), host part, and the rest (/path?query) of a URL, cut by hand: urllib reads
    one host, not a list."""
    scheme, _, rest = url.partition("://")
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    userinfo, _, hostlist = rest[:cut].rpartition("@")
    return scheme, userinfo, hostlist, rest[cut:]
