"""web: serve the dashboard (Flask app, waitress server) on the same store and index as the scripts.

Safe by default: it listens on 127.0.0.1; any other address needs DELAYQ_WEB_PASSWORD, or it refuses to start.
Flask and waitress come with the optional extra (pip install 'delayq[web]'); nothing else in delayq imports them.
"""

from __future__ import annotations

import ipaddress
import signal
import sys

from .. import app, cli
from ..config import describe
from ..errors import InvalidInput
from .metrics import listen_address

INSTALL = "the web dashboard needs the web extra: pip install 'delayq[web]' (Flask and waitress)"
MIN_PASSWORD = 12


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Serve the web dashboard until stopped (Ctrl-C or SIGTERM): queues, runners, a job search, "
                         "a job's attempts, tracebacks, ladder and steps; retry, cancel, run now, bulk actions, pause. "
                         "Listens on 127.0.0.1 unless told otherwise; any other address needs DELAYQ_WEB_PASSWORD.")
    p.add_argument("--listen", default="127.0.0.1:8080", metavar="HOST:PORT",
                   help="where to listen (default 127.0.0.1:8080; port 0 picks a free one)")
    p.add_argument("--read-only", action="store_true", help="show everything, change nothing: no action buttons, "
                                                            "every POST refused")
    p.add_argument("--threads", type=int, default=8, help="requests served at once (default 8)")
    return p


def is_loopback(host: str) -> bool:
    """Only a loopback address (or the name localhost) counts as local: 0.0.0.0, :: and any other name do not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_listen(host: str, port: int, password: str | None) -> None:
    """Refuse an address other than loopback without a password, and a password too short to stand guessing."""
    if password is not None and len(password) < MIN_PASSWORD:
        raise InvalidInput(f"DELAYQ_WEB_PASSWORD is too short: use at least {MIN_PASSWORD} characters "
                           "(e.g. the output of: python3 -c 'import secrets; print(secrets.token_urlsafe(24))')")
    if not is_loopback(host) and not password:
        raise InvalidInput(f"refusing to listen on {host}:{port} without a password: set DELAYQ_WEB_PASSWORD "
                           "(every request then needs it), or listen on 127.0.0.1")


def execute(args, settings) -> int:
    host, port = listen_address(args.listen)
    if not 1 <= args.threads <= 64:
        raise InvalidInput("--threads must be between 1 and 64")
    try:
        import flask  # noqa: F401
        import waitress
    except ImportError:
        raise InvalidInput(INSTALL) from None
    check_listen(host, port, settings.web_password)
    cli.setup_logging(False, settings.log_format)
    manager = app.open_ready(settings, create=False)
    from ..web import WebSettings, create_app

    where = describe(settings.database_url) + (" + Redis " + describe(settings.redis_url) if settings.redis_url else "")
    web = create_app(manager, WebSettings(password=settings.web_password, read_only=args.read_only,
                                          local_only=settings.web_password is None, backend=where,
                                          schedule_modules=settings.schedule_modules))
    server = waitress.create_server(web, host=host, port=port, threads=args.threads, ident="delayq",
                                    clear_untrusted_proxy_headers=True)
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{server.effective_port}/"
    mode = " read-only" if args.read_only else ""
    cli.emit(args, {"listening": address, "read_only": args.read_only},
             f"{args.prog}: serving the{mode} dashboard on {address} (Ctrl-C to stop)")
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
        manager.close()
    return 0


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt
