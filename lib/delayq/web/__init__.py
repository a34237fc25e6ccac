"""The web dashboard (`delayq web`): server-rendered pages over the manager's verbs, nothing else.

    from delayq.web import WebSettings, create_app
    app = create_app(delayq.open_manager(), WebSettings(password=None, read_only=False))

One module per concern: security.py (authentication, CSRF, the Host check, headers), sessions.py (logins kept
on the server), forms.py (query strings
to a JobFilter, with the CLI's rules), overview.py, jobs.py (search and a job's page), schedules.py (the recurring
schedules), actions.py (every POST: retry, cancel, run now, bulk actions, pause and resume of a queue or a
schedule, each written to the audit trail), charts.py (SVG),
display.py (times, durations and statuses as text).
Templates are Jinja with autoescaping on; the CSS is a static file, and so is the one script (static/live.js:
the live parts of a page fetched again without a reload); the Content-Security-Policy allows that file alone. Needs the optional extra: pip install 'delayq[web]'.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from flask import Flask

from ..manager import Manager
from . import actions, display, jobs, overview, schedules, security, sessions


@dataclass(frozen=True)
class WebSettings:
    password: str | None = None         # DELAYQ_WEB_PASSWORD: required on every request when set
    read_only: bool = False             # no action buttons; every POST but the login refused
    local_only: bool = True             # no password: only loopback Host headers are served (DNS rebinding)
    backend: str = ""                   # where the store lives, without credentials (config.describe)
    page_size: int = 50
    schedule_modules: tuple[str, ...] | None = None   # DELAYQ_SCHEDULE_MODULES; None: the environment's and .env's

    def __repr__(self) -> str:          # never the password
        return f"WebSettings(read_only={self.read_only}, local_only={self.local_only}, backend={self.backend!r})"


def create_app(manager: Manager, settings: WebSettings) -> Flask:
    """The dashboard's WSGI app on `manager` (shared by the server's threads: the manager is thread-safe)."""
    app = Flask(__name__, static_folder="static", template_folder="templates")
    app.config.update(
        SECRET_KEY=secrets.token_bytes(32),       # per process: a restart signs everyone out
        SESSION_COOKIE_NAME="delayq_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Strict",
        PERMANENT_SESSION_LIFETIME=timedelta(seconds=sessions.ABSOLUTE),   # the cookie's expiry: the session's end
        MAX_CONTENT_LENGTH=64 * 1024,
        TEMPLATES_AUTO_RELOAD=False,
    )
    app.jinja_env.autoescape = True               # every template, whatever its file name
    app.extensions["delayq"] = manager
    app.extensions["delayq.settings"] = settings
    display.register(app)
    security.register(app, settings)
    overview.register(app)
    jobs.register(app)
    schedules.register(app)
    actions.register(app)
    return app


__all__ = ["WebSettings", "create_app"]
