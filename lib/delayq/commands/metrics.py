"""metrics: serve Prometheus metrics over HTTP, read from the database on each scrape (any host may serve them)."""

from __future__ import annotations

import signal
import sys
import threading

from .. import app, cli, metrics
from ..errors import InvalidInput


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "Serve /metrics for a Prometheus scrape until stopped (Ctrl-C or SIGTERM). Every value comes "
                         "from the database, so one server per database is enough and restarts lose nothing.")
    p.add_argument("--listen", default="127.0.0.1:9109", metavar="HOST:PORT",
                   help="where to listen (default 127.0.0.1:9109; port 0 picks a free one)")
    return p


def listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InvalidInput(f"--listen {text[:60]!r}: use HOST:PORT, e.g. 127.0.0.1:9109")
    return host, int(port)


def execute(args, settings) -> int:
    host, port = listen_address(args.listen)
    manager = app.open_ready(settings, create=False)
    server = metrics.serve(manager, host, port)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    address = f"http://{host}:{server.server_port}/metrics"
    cli.emit(args, {"listening": address}, f"{args.prog}: serving {address} (Ctrl-C to stop)")
    sys.stdout.flush()
    stop.wait()
    server.shutdown()
    return 0
