"""The dashboard's logins, kept on the server: a cookie names one, and only what is here counts.

A login makes a session: a random id the signed cookie carries, remembered here with when it began,
when it was last used and the password it was made with (a keyed hash). It counts while all three hold:
used within IDLE seconds, begun within ABSOLUTE seconds, made with today's password. Logout forgets it,
so a cookie saved before the logout reads nothing after it. The dashboard is one process (its cookie key
is made at start), so a restart signs everyone out, and a password changed in the environment takes a
restart anyway.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time

IDLE = 60 * 60.0            # seconds a session may go unused
ABSOLUTE = 12 * 60 * 60.0   # seconds a session lasts at most, however used (the cookie's own expiry too)
MOST = 10_000               # sessions kept at most: beyond, the longest unused are forgotten


class Sessions:
    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._live: dict[str, tuple[float, float, str]] = {}     # hash of the id -> (begun, last used, password)

    def start(self, password: str) -> str:
        """A new session for a login with `password` (its keyed hash); returns the id for the cookie."""
        sid = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            if len(self._live) >= MOST:
                self._prune(now, keep=MOST // 2)
            self._live[_key(sid)] = (now, now, password)
        return sid

    def check(self, sid: object, password: str, use: bool = True) -> bool:
        """Whether the cookie's session id still counts (and, if so and `use`, it was used now: a page's live
        refresh is not use, so a tab left open still ends after IDLE)."""
        if not isinstance(sid, str) or not sid:
            return False
        now = self._clock()
        key = _key(sid)
        with self._lock:
            found = self._live.get(key)
            if found is None:
                return False
            begun, used, made_with = found
            if now - used > IDLE or now - begun > ABSOLUTE or not secrets.compare_digest(made_with, password):
                del self._live[key]
                return False
            if use:
                self._live[key] = (begun, now, made_with)
            return True

    def end(self, sid: object) -> None:
        """Logout: the session is forgotten (a copy of its cookie counts no more)."""
        if isinstance(sid, str):
            with self._lock:
                self._live.pop(_key(sid), None)

    def __len__(self) -> int:
        return len(self._live)

    def _prune(self, now: float, keep: int) -> None:
        live = {k: v for k, v in self._live.items() if now - v[1] <= IDLE and now - v[0] <= ABSOLUTE}
        if len(live) > keep:
            live = dict(sorted(live.items(), key=lambda kv: kv[1][1])[-keep:])
        self._live = live


def _key(sid: str) -> str:
    """What is kept of an id: its hash (a memory dump does not hand out logins)."""
    return hashlib.sha256(sid.encode("utf-8", "surrogatepass")).hexdigest()
