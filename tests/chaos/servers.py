"""Private MariaDB and Redis servers for chaos runs: ours to stop, restart and FLUSHALL.

They live in a temporary directory on free loopback ports and are ended by their
own pid; the shared servers on 3306 and 6379 are never touched.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, up: bool = True, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            if up:
                return
        except OSError:
            if not up:
                return
        time.sleep(0.05)
    raise RuntimeError(f"port {port} did not {'open' if up else 'close'} within {timeout} s")


def resume(proc: subprocess.Popen | None) -> None:
    """SIGCONT a server paused with SIGSTOP (a no-op for a running one), so that it can answer or be stopped."""
    if proc and proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)


def install_datadir(home: str, user: str = "root") -> None:
    """mariadb-install-db into home/data, with home/tmp as the bootstrap server's temporary directory.

    A mariadbd starting removes the `#sql*` files it finds in its tmpdir: two bootstraps sharing /tmp remove each
    other's temporary tables ("File '/tmp/#sql-temptable-...MAD' not found", exit 1, seen in CI when two private
    servers were installed side by side). Pass --tmpdir=home/tmp to the server too. Fails with the tool's own
    last lines."""
    tmp = os.path.join(home, "tmp")
    os.makedirs(tmp, exist_ok=True)
    if user != "root":
        shutil.chown(tmp, user, user)
    done = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={home}/data", f"--user={user}",
                           "--auth-root-authentication-method=normal", "--skip-test-db"],
                          env={**os.environ, "TMPDIR": tmp}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if done.returncode:
        tail = "\n".join(done.stdout.strip().splitlines()[-5:])
        raise RuntimeError(f"mariadb-install-db exited {done.returncode} in {home}:\n{tail}")


class PrivateRedis:
    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="delayq-chaos-redis-")
        self.proc = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                                      "--appendonly", "no", "--dir", self.dir], stdout=subprocess.DEVNULL)
        wait_port(self.port)
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivateMariaDB:
    """A throwaway mariadbd with its own data directory; stop() and start() keep the data.

    buffer_pool: InnoDB's buffer pool (--innodb-buffer-pool-size); extra_args: more server options, after the
    defaults (a later option wins), e.g. ("--innodb-log-file-size=1G",). start(extra_args=...) replaces them for
    that start and the ones after it."""

    def __init__(self, buffer_pool: str = "128M", extra_args: tuple[str, ...] = ()):
        self.buffer_pool = buffer_pool
        self.extra_args = tuple(extra_args)
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="delayq-chaos-mariadb-")
        install_datadir(self.dir)
        self.proc: subprocess.Popen | None = None
        self.start()
        subprocess.run(["mariadb", "-uroot", "-h127.0.0.1", f"-P{self.port}", "-e", "CREATE DATABASE test"], check=True)
        self.url = f"mysql://root@127.0.0.1:{self.port}/test"

    def start(self, extra_args: tuple[str, ...] | None = None) -> None:
        if extra_args is not None:
            self.extra_args = tuple(extra_args)
        self.proc = subprocess.Popen(
            ["/usr/sbin/mariadbd", "--no-defaults", f"--datadir={self.dir}/data", f"--port={self.port}",
             "--bind-address=127.0.0.1", f"--socket={self.dir}/sock", "--user=root", "--skip-log-bin",
             f"--innodb-buffer-pool-size={self.buffer_pool}", f"--pid-file={self.dir}/pid",
             f"--tmpdir={self.dir}/tmp", *self.extra_args],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "server.log"), "a"))
        wait_port(self.port)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)
        wait_port(self.port, up=False)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
