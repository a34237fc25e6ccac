"""Who may use the dashboard, and how every request is guarded.

- Without a password the app serves only requests whose Host is a loopback name or address, so a web page
  elsewhere cannot reach it through DNS rebinding (a name of theirs that resolves to 127.0.0.1).
- With DELAYQ_WEB_PASSWORD every request but the login form and the CSS needs it: a login form that starts a
  session kept on the server (sessions.py: logout ends it, it expires when idle and after ABSOLUTE seconds; its
  cookie is HttpOnly, SameSite=Strict, Secure over TLS or behind a proxy that says X-Forwarded-Proto: https),
  or HTTP basic auth (any user name), or a bearer token. Comparisons are constant-time (hmac.compare_digest).
  Wrong passwords, however presented (form, Bearer, Basic), are throttled per address and overall: once
  throttled, even the right password is refused (429) for the window; a session already open goes on.
- Refused requests (401, 403, 429) are written to the audit trail, THROTTLE_FAILURES a window per address at most.
- Every POST carries the session's CSRF token (refused with 403 otherwise); read-only mode refuses every POST
  but the login. GET never changes anything.
- Every response carries a Content-Security-Policy that allows one script, the dashboard's own static file
  (static/live.js: no inline script, no other origin), and X-Frame-Options, nosniff, no-referrer, no-store.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import secrets
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, abort, current_app, g, redirect, render_template, request, session, url_for
from flask.sessions import SecureCookieSessionInterface

from ..errors import DelayqError
from .sessions import Sessions

OPEN_ENDPOINTS = {"login", "static"}
LOOPBACK_NAMES = {"localhost"}
THROTTLE_WINDOW = 60.0       # seconds
THROTTLE_FAILURES = 10       # wrong passwords per address and window before logins are refused for the window
THROTTLE_ALL = 100           # wrong passwords from all addresses together in a window: then every login is refused
REFUSED = (401, 403, 429)    # refusals written to the audit trail
CSP = ("default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}


def register(app: Flask, settings: Any) -> None:
    throttle = Throttle()
    sessions = Sessions()
    app.session_interface = _CookieInterface()
    app.extensions["delayq.sessions"] = sessions

    @app.before_request
    def guard() -> Any:
        if settings.local_only and not loopback_host(request.host):
            abort(400, "this dashboard has no password, so it answers only to localhost / 127.0.0.1 / [::1] "
                       "(set DELAYQ_WEB_PASSWORD to serve it under another name)")
        presented = settings.password and "Authorization" in request.headers
        if presented and throttle.blocked(address()):
            abort(429, TOO_MANY)              # even the right one: a guesser cannot tell
        g.actor = actor(settings.password, sessions)
        if presented and g.actor is None:
            throttle.failed(address())
        if g.actor is None and request.endpoint not in OPEN_ENDPOINTS:
            if request.method == "GET":
                return redirect(url_for("login", next=request.full_path if request.query_string else request.path))
            abort(401, "log in first")
        if request.method == "POST":
            if settings.read_only and request.endpoint != "login":
                abort(403, "the dashboard runs read-only (--read-only): nothing can be changed here")
            check_csrf()
        return None

    @app.after_request
    def secure_headers(response: Any) -> Any:
        response.headers.update(HEADERS)
        if request.endpoint != "static":
            response.headers["Cache-Control"] = "no-store"
        if response.status_code in REFUSED and throttle.audit_allowed(address()):
            audit_refusal(response.status_code)
        return response

    @app.context_processor
    def template_globals() -> dict[str, Any]:
        return {"csrf_token": csrf_token, "read_only": settings.read_only, "has_password": bool(settings.password),
                "backend": settings.backend}

    def login() -> Any:
        target = safe_next(request.values.get("next"))
        if not settings.password or g.actor is not None:
            return redirect(target)
        error = None
        if request.method == "POST":
            if throttle.blocked(address()):
                abort(429, TOO_MANY)
            if same(request.form.get("password", ""), settings.password):
                session.clear()
                session["sid"] = sessions.start(fingerprint(settings.password))
                session["csrf"] = secrets.token_urlsafe(32)
                session.permanent = True      # the cookie expires with the session's absolute lifetime
                return redirect(target)
            throttle.failed(address())
            error = "wrong password"
        return render_template("login.html", error=error, next=target), 401 if error else 200

    def logout() -> Any:
        sessions.end(session.get("sid"))      # a copy of the cookie counts no more
        session.clear()
        return redirect(url_for("login"))

    app.add_url_rule("/login", "login", login, methods=["GET", "POST"])
    app.add_url_rule("/logout", "logout", logout, methods=["POST"])


TOO_MANY = "too many wrong passwords: wait a minute"


class _CookieInterface(SecureCookieSessionInterface):
    """The signed session cookie, Secure when the request came over TLS (or through a proxy that says so: it can
    only make the cookie stricter)."""

    def get_cookie_secure(self, app: Flask) -> bool:
        proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
        return request.is_secure or proto == "https"


def address() -> str:
    return request.remote_addr or "?"


def audit_refusal(code: int) -> None:
    """A refused request in the audit trail (never its credentials); a backend that does not answer loses it."""
    target = f"{request.method} {request.path}"[:200]
    try:
        control = current_app.extensions["delayq"].control
        control.record_action(address(), getattr(g, "actor", None) or "anonymous", "refused", target, 0, f"HTTP {code}")
    except DelayqError:
        pass


def same(given: str, expected: str) -> bool:
    """Constant-time equality of two strings (as UTF-8 bytes)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))


def fingerprint(password: str) -> str:
    """What a session remembers of the password: a keyed hash (changing the password signs everyone out)."""
    return hmac.new(b"delayq-web-session", password.encode("utf-8", "surrogatepass"), "sha256").hexdigest()


def live_refresh() -> bool:
    """The request is static/live.js fetching the page again (not a person using it)."""
    return request.headers.get("X-Delayq-Live") == "1"


def actor(password: str | None, sessions: Sessions) -> str | None:
    """Who the request is (written to the audit trail), or None when a password is needed and was not given."""
    if not password:
        return "local (no password)"
    if sessions.check(session.get("sid"), fingerprint(password), use=not live_refresh()):
        return "password (login form)"
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and same(value.strip(), password):
        return "bearer token"
    if scheme.lower() == "basic":
        try:
            user, _, given = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        if same(given, password):
            return f"basic auth ({user[:40]})" if user else "basic auth"
    return None


def csrf_token() -> str:
    """The session's CSRF token, made on first use (every form carries it as a hidden field)."""
    token = session.get("csrf")
    if not token:
        token = session["csrf"] = secrets.token_urlsafe(32)
    return token


def check_csrf() -> None:
    expected = session.get("csrf")
    given = request.form.get("csrf", "")
    if not expected or not given or not same(given, expected):
        abort(403, "this form is stale or did not come from this dashboard (missing or wrong CSRF token): "
                   "reload the page and try again")
    origin = request.headers.get("Origin")
    if origin and origin != "null" and origin.split("://", 1)[-1] != request.host:
        abort(403, "a form from another site was refused")


def loopback_host(host: str) -> bool:
    """Whether a Host header names this machine by a loopback name or address (any port)."""
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    name = name.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a path on this site only. Never //elsewhere, a full URL, a backslash, or any
    control character or space (a browser drops a tab or a newline: /<TAB>/evil.example becomes //evil.example)."""
    if (not target or not target.startswith("/") or target.startswith("//") or "\\" in target
            or any(ord(ch) <= 32 or ord(ch) == 127 for ch in target)):
        return "/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return "/"
    return target


class Throttle:
    """Wrong passwords per address, and from all addresses together, in the last THROTTLE_WINDOW seconds; and the
    refusals each address may still write to the audit trail in that window (in memory, per process)."""

    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: dict[str, list[float]] = {}
        self._all: list[float] = []
        self._audited: dict[str, list[float]] = {}

    def blocked(self, address: str) -> bool:
        with self._lock:
            now = self._clock()
            self._all = [t for t in self._all if now - t < THROTTLE_WINDOW]
            return len(self._recent(self._failures, address, now)) >= THROTTLE_FAILURES or \
                len(self._all) >= THROTTLE_ALL

    def failed(self, address: str) -> None:
        with self._lock:
            now = self._clock()
            self._recent(self._failures, address, now).append(now)
            self._all.append(now)
            _forget_idle(self._failures)

    def audit_allowed(self, address: str) -> bool:
        """One more refusal of this address may be written (THROTTLE_FAILURES a window: a flood is not)."""
        with self._lock:
            now = self._clock()
            rows = self._recent(self._audited, address, now)
            if len(rows) >= THROTTLE_FAILURES:
                return False
            rows.append(now)
            _forget_idle(self._audited)
            return True

    def _recent(self, table: dict[str, list[float]], address: str, now: float) -> list[float]:
        kept = [t for t in table.get(address, []) if now - t < THROTTLE_WINDOW]
        table[address] = kept
        return kept


def _forget_idle(table: dict[str, list[float]]) -> None:
    if len(table) > 10_000:             # many addresses: forget the idle ones
        for key in [k for k, v in table.items() if not v]:
            del table[key]
