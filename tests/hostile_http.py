"""Real webhook receivers on free loopback ports, well-behaved or hostile, for the alert tests.

Each Receiver is a ThreadingHTTPServer in a daemon thread; `mode` says how it answers:
  ok        read the POST, answer 200 {"code": 0}
  trickle   answer one byte a second, starting with the status line (the headers never complete in time)
  trickle_body  send the headers at once, then the body one byte a second
  late      read the POST, hold the answer until `release` is set, then answer 200
  redirect  answer `redirect_status` with `Location: redirect_to`
  echo      answer 404 with a page that repeats the request's path and query (as many servers do)
Every request (a GET too) is recorded (method, path, headers, JSON body) before it is answered. A trickling
answer watches its socket and records when the client hung up (`hung_up_at`).
TlsTrickler does the same inside a TLS handshake, for https:// URLs.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TRICKLE = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"code": 0}'


class Receiver:
    def __init__(self, mode: str = "ok", path: str = "/hook/secret-token-123"):
        self.mode = mode
        self.requests: list[dict] = []
        self.release = threading.Event()
        self.stop = threading.Event()
        self.hung_up_at: float | None = None
        self.redirect_status = 307
        self.redirect_to = ""
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.port = self.server.server_port
        self.host = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.host}{path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def keys(self) -> list[str]:
        return [r["headers"].get("Idempotency-Key") for r in self.requests]

    def close(self) -> None:
        self.stop.set()
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


class TlsTrickler:
    """A TCP server for https:// URLs: it takes the ClientHello, then answers a TLS record one byte a second,
    so the client sits in its handshake. Records `hung_up_at` like a Receiver."""

    def __init__(self):
        self.stop = threading.Event()
        self.hung_up_at: float | None = None
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"https://127.0.0.1:{self.port}/hook/secret-token-123"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        with conn:
            conn.recv(65536)                                      # the ClientHello
            trickle(self, conn, b"\x16\x03\x03\x00\x40" + b"\x00" * 64)   # a 64-byte handshake record, slowly

    def close(self):
        self.stop.set()
        self.listener.close()


def trickle(owner, sock: socket.socket, data: bytes) -> None:
    """Send `data` one byte a second; between bytes, notice at once when the client hangs up (owner.hung_up_at)."""
    gone = False
    for i in range(len(data)):
        try:
            sock.sendall(data[i:i + 1])
        except OSError:
            gone = True
        if gone or owner.stop.is_set():
            break
        gone = _client_gone(sock, 1.0)
    if gone:
        owner.hung_up_at = time.monotonic()


def _client_gone(sock: socket.socket, wait: float) -> bool:
    readable, _, _ = select.select([sock], [], [], wait)
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _handler(receiver: Receiver) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            receiver.requests.append({"method": "POST", "path": self.path, "headers": dict(self.headers),
                                      "json": json.loads(raw)})
            getattr(self, "answer_" + receiver.mode)()

        def do_GET(self):
            """What a client that follows a 302 sends: recorded and accepted, as a careless endpoint would."""
            receiver.requests.append({"method": "GET", "path": self.path, "headers": dict(self.headers), "json": None})
            self.answer_ok()

        def answer_ok(self):
            self.reply(200, b'{"code": 0}')

        def answer_late(self):
            receiver.release.wait(60)
            try:
                self.reply(200, b'{"code": 0}')
            except OSError:
                pass          # the client gave up long ago

        def answer_redirect(self):
            self.send_response(receiver.redirect_status)
            self.send_header("Location", receiver.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def answer_echo(self):
            self.reply(404, f"<h1>Not Found</h1>\n<p>no route for\n{self.path}</p>".encode())

        def answer_trickle(self):
            self.trickle(TRICKLE)

        def answer_trickle_body(self):
            body = b'{"code": 0, "padding": "' + b"x" * 60 + b'"}'
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
            self.wfile.flush()
            self.trickle(body)

        def trickle(self, data: bytes):
            trickle(receiver, self.connection, data)
            self.close_connection = True

        def reply(self, status: int, body: bytes):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler
