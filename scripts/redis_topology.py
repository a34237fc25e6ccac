"""Private Redis Cluster and Sentinel sets on free loopback ports: ours to kill, fail over and stop.

    python scripts/redis_topology.py cluster  [--masters 3] [--replicas 1] [--password PW] [--tls]
    python scripts/redis_topology.py sentinel [--replicas 1] [--sentinels 3] [--password PW] [--tls]

The CLI prints the URL that DELAYQ_REDIS_URL would take (redis+cluster://... or
redis+sentinel://.../mymaster/0) on stdout, waits for SIGINT or SIGTERM, then stops
what it started. As a module:

    with Cluster() as c:            # 3 masters, 3 replicas, ready when every node says cluster_state:ok
        seconds = c.kill_master("{delayq:sms}:due")
    with Sentinel() as s:           # master, replica, 3 sentinels that all see both
        seconds = s.kill_master()

Every process lives in one temporary directory and is ended by its own pid, never by
name: the shared servers on 6379 and 3306 are never touched. Startup that fails halfway
stops what it had started; an atexit hook stops what a caller forgot; on Linux each
server also gets SIGTERM from the kernel if the Python thread that started it dies.
Timeouts are short (cluster-node-timeout 1000 ms, down-after-milliseconds 1000 ms), so
a failover takes seconds. Needs redis-server >= 7.0 (cluster-port) and redis-cli.
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Callable, NamedTuple

import redis
from redis.cluster import ClusterNode
from redis.crc import key_slot

HOST = "127.0.0.1"
NODE_TIMEOUT_MS = 1000
POLL = 0.02
_used_ports: set[int] = set()


class Node(NamedTuple):
    host: str
    port: int
    role: str   # "master", "replica", or "down" (a process we killed)


class TopologyError(RuntimeError):
    """A topology did not reach the state we waited for; the message names it and the log directory."""


def free_port() -> int:
    """A loopback port nobody listens on now and that this process has not handed out before."""
    while True:
        with socket.socket() as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if port not in _used_ports:
            _used_ports.add(port)
            return port


def _slot_range(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    return int(first), int(last or first)


def slot_of(slot_or_key: int | str | bytes) -> int:
    if isinstance(slot_or_key, int):
        return slot_or_key
    return key_slot(slot_or_key.encode() if isinstance(slot_or_key, str) else slot_or_key)


def _owner_in(view: dict[int, dict], slot: int) -> int | None:
    """The port of the master, not flagged as failed, that serves slot in one node's view."""
    for port, node in view.items():
        if "master" in node["flags"] and "fail" not in node["flags"]:
            if any(first <= slot <= last for first, last in node["slots"]):
                return port
    return None


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> float:
    """Poll condition (a redis error counts as not yet) until it is true; return the seconds it took."""
    start = time.monotonic()
    while True:
        try:
            if condition():
                return time.monotonic() - start
        except (redis.RedisError, OSError):
            pass
        if time.monotonic() - start > timeout:
            raise TopologyError(f"{what}: not reached within {timeout} s")
        time.sleep(POLL)


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn asking Linux to SIGTERM the child when its parent thread dies (even by SIGKILL)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG


class _Topology:
    """Processes in one temporary directory, each ended by its own pid."""

    kind = "topology"

    def __init__(self, password: str | None, tls: bool = False):
        self.password = password
        self.tls = tls
        self.dir = tempfile.mkdtemp(prefix=f"delayq-{self.kind}-")
        if tls:
            self._make_certificate()
        self.procs: dict[int, subprocess.Popen] = {}   # port -> the process we started on it
        self._argv: dict[int, list[str]] = {}
        self._admins: dict[int, redis.Redis] = {}
        self._passwords: dict[int, str | None] = {}   # ports whose password is not self.password
        atexit.register(self.stop)

    def _make_certificate(self) -> None:
        """A self-signed certificate for 127.0.0.1 in the topology's directory: every node's, and the CA."""
        self.ca = os.path.join(self.dir, "cert.pem")
        done = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                               "-keyout", os.path.join(self.dir, "key.pem"), "-out", self.ca, "-subj", f"/CN={HOST}",
                               "-addext", f"subjectAltName=IP:{HOST}"], capture_output=True, timeout=60)
        if done.returncode != 0:
            raise TopologyError(f"openssl could not make a certificate: {done.stderr.decode()[-300:]}")

    def _tls_args(self, port: int) -> list[str]:
        """Serve TLS only on `port` (with --port 0), replicate over TLS, and ask clients for no certificate."""
        if not self.tls:
            return ["--port", str(port)]
        return ["--port", "0", "--tls-port", str(port), "--tls-cert-file", self.ca, "--tls-key-file",
                os.path.join(self.dir, "key.pem"), "--tls-ca-cert-file", self.ca, "--tls-auth-clients", "no",
                "--tls-replication", "yes"]

    def _client_tls(self) -> dict:
        return {"ssl": True, "ssl_ca_certs": self.ca} if self.tls else {}

    def _query(self, url: str) -> str:
        return f"{url}?ssl_ca_certs={self.ca}" if self.tls else url

    def _start(self, port: int, argv: list[str]) -> None:
        self._argv[port] = argv
        log = open(os.path.join(self.dir, f"{port}.out"), "ab")
        self.procs[port] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            preexec_fn=_die_with_parent())
        log.close()

    def _server_argv(self, port: int, *extra: str) -> list[str]:
        home = os.path.join(self.dir, f"node-{port}")
        os.makedirs(home, exist_ok=True)
        argv = ["redis-server", "--bind", HOST, *self._tls_args(port), "--save", "", "--appendonly", "no",
                "--dir", home, "--logfile", os.path.join(home, "redis.log"),
                "--repl-diskless-sync-delay", "0", *extra]   # the default 5 s delays every replica's first sync
        if self.password:
            argv += ["--requirepass", self.password, "--masterauth", self.password]
        return argv

    def admin(self, port: int) -> redis.Redis:
        """A client for one process, without retries, so a poll of a dead node fails at once."""
        if port not in self._admins:
            password = self._passwords.get(port, self.password)
            self._admins[port] = redis.Redis(HOST, port, password=password, retry=None, **self._client_tls(),
                                             socket_timeout=1, socket_connect_timeout=1, decode_responses=True)
        return self._admins[port]

    def alive(self, port: int) -> bool:
        return port in self.procs and self.procs[port].poll() is None

    def _wait_started(self, ports: list[int]) -> None:
        for port in ports:
            wait_for(lambda: self.admin(port).ping(), 10, f"redis on port {port} (see {self.dir})")

    def _kill(self, port: int) -> None:
        self.procs[port].send_signal(signal.SIGKILL)
        self.procs[port].wait(timeout=10)
        self.admin(port).connection_pool.disconnect()

    def _lagging(self, master: int, replicas: list[int], lagging: Callable[[], object] | None) -> float:
        """SIGKILL the master; return the time.monotonic() of the kill. With `lagging`, the master's replicas are
        stopped (SIGSTOP) and their links closed by the master while lagging() runs, and the master is killed
        before they go on (SIGCONT): what lagging() wrote reached the master only, acknowledged, and is lost with
        it, as writes replication had not carried yet are when a master dies (Redis replicates asynchronously).
        Stopping alone would not do: what the master sent waits in the stopped replica's socket buffer."""
        if lagging is None:
            start = time.monotonic()
            self._kill(master)
            return start
        for port in replicas:
            self.procs[port].send_signal(signal.SIGSTOP)
        try:
            self.admin(master).client_kill_filter(_type="replica")
            lagging()
            start = time.monotonic()
            self._kill(master)
        finally:
            for port in replicas:
                self.procs[port].send_signal(signal.SIGCONT)
        return start

    def restart(self, port: int) -> None:
        """Start a process we killed again, with the same arguments; it rejoins as a replica."""
        if self.alive(port):
            return
        self._start(port, self._argv[port])
        self._wait_started([port])

    def _auth(self) -> str:
        return f":{self.password}@" if self.password else ""

    def stop(self) -> None:
        """End exactly the processes this topology started (TERM, then KILL after 5 s) and remove its directory."""
        atexit.unregister(self.stop)
        for client in self._admins.values():
            client.close()
        self._admins.clear()
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class Cluster(_Topology):
    """A Redis Cluster of masters * (1 + replicas) nodes, slots spread by redis-cli --cluster create."""

    kind = "cluster"

    def __init__(self, masters: int = 3, replicas: int = 1, password: str | None = None,
                 node_timeout_ms: int = NODE_TIMEOUT_MS, tls: bool = False):
        super().__init__(password, tls)
        try:
            self.ports = [free_port() for _ in range(masters * (1 + replicas))]
            for port in self.ports:
                self._start(port, self._server_argv(
                    port, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-port", str(free_port()), "--cluster-node-timeout", str(node_timeout_ms),
                    "--cluster-replica-validity-factor", "0", *(["--tls-cluster", "yes"] if tls else [])))
            self._wait_started(self.ports)
            self._create(replicas)
            self.wait_ok(30)
        except BaseException:
            self.stop()
            raise

    def _create(self, replicas: int) -> None:
        argv = ["redis-cli", "--cluster", "create", *(f"{HOST}:{p}" for p in self.ports),
                "--cluster-replicas", str(replicas), "--cluster-yes"]
        if self.password:
            argv += ["-a", self.password, "--no-auth-warning"]
        if self.tls:
            argv += ["--tls", "--cacert", self.ca]
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                              preexec_fn=_die_with_parent())
        if done.returncode != 0:
            raise TopologyError(f"redis-cli --cluster create failed: {done.stdout.decode()[-500:]}")

    @property
    def url(self) -> str:
        scheme = "rediss+cluster://" if self.tls else "redis+cluster://"
        return self._query(scheme + self._auth() + ",".join(f"{HOST}:{p}" for p in self.ports))

    @property
    def startup_nodes(self) -> list[ClusterNode]:
        return [ClusterNode(HOST, p) for p in self.ports]

    def view(self, port: int) -> dict[int, dict]:
        """CLUSTER NODES as one node sees it: port -> {id, flags (a set), master_id, slots [(first, last)]}.

        "CLUSTER" and "NODES" go as two words, so redis-py leaves the raw text to us."""
        out = {}
        for line in self.admin(port).execute_command("CLUSTER", "NODES").splitlines():
            node_id, addr, flags, master_id, *fields = line.split()
            slots = [_slot_range(r) for r in fields[4:] if r[0].isdigit()]   # "[...]": a slot in migration
            out[int(addr.split("@")[0].rsplit(":", 1)[1])] = {
                "id": node_id, "flags": set(flags.split(",")), "master_id": master_id, "slots": slots}
        return out

    def _any_view(self) -> dict[int, dict]:
        for port in self.ports:
            if self.alive(port):
                try:
                    return self.view(port)
                except redis.RedisError:
                    continue
        raise TopologyError("no cluster node answers")

    @property
    def nodes(self) -> list[Node]:
        view = self._any_view()
        return [Node(HOST, p, "down" if not self.alive(p) else "master" if "master" in view[p]["flags"]
                     else "replica") for p in self.ports]

    def owner(self, slot_or_key: int | str | bytes) -> int:
        """The port of the live master that serves a slot (or a key's slot), as a live node sees it."""
        port = _owner_in(self._any_view(), slot_of(slot_or_key))
        if port is None:
            raise TopologyError(f"no live master serves slot {slot_of(slot_or_key)}")
        return port

    def replicas_of(self, master_port: int) -> list[int]:
        view = self._any_view()
        return [p for p, n in view.items() if n["master_id"] == view[master_port]["id"] and self.alive(p)]

    def _ok(self) -> bool:
        live = [p for p in self.ports if self.alive(p)]
        for port in live:
            info = dict(line.split(":", 1) for line in self.admin(port).execute_command("CLUSTER", "INFO").split())
            if info["cluster_state"] != "ok" or int(info["cluster_slots_ok"]) != 16384:
                return False
        return self._agree(live) and all(
            self.admin(p).info("replication").get("master_link_status", "up") == "up" for p in live)

    def _agree(self, live: list[int]) -> bool:
        """Every live node sees every other live node as reachable and in the role that node gives itself."""
        views = {p: self.view(p) for p in live}
        return all(not {"fail", "fail?"} & views[p][q]["flags"]
                   and ("master" in views[p][q]["flags"]) == ("master" in views[q][q]["flags"])
                   for p in live for q in live)

    def wait_ok(self, timeout: float = 30) -> float:
        """Wait until every live node says cluster_state:ok with all 16384 slots ok and replicas in sync."""
        return wait_for(self._ok, timeout, f"cluster_state:ok on every node (logs in {self.dir})")

    def _wait_moved(self, old: int, slot_or_key, timeout: float) -> None:
        def moved() -> bool:
            demoted = not self.alive(old) or self.admin(old).info("replication")["role"] == "slave"
            return demoted and all(_owner_in(self.view(p), slot_of(slot_or_key)) not in (None, old)
                                   for p in self.ports if self.alive(p)) and self._ok()
        wait_for(moved, timeout, f"a new master for {slot_or_key!r} on every node (logs in {self.dir})")

    def kill_master(self, slot_or_key: int | str | bytes, timeout: float = 30,
                    lagging: Callable[[], object] | None = None) -> float:
        """SIGKILL the master serving a slot or key; return seconds until every live node sees its replica
        as the slot's master and says cluster_state:ok. `lagging`: see _Topology._lagging."""
        old = self.owner(slot_or_key)
        replicas = self.replicas_of(old)
        if not replicas:
            raise TopologyError(f"the master on {old} has no live replica to take over")
        start = self._lagging(old, replicas, lagging)
        self._wait_moved(old, slot_or_key, timeout)
        return time.monotonic() - start

    def restart(self, port: int) -> float:
        """Start a killed node again with its own nodes.conf; return seconds until it is back as a replica."""
        super().restart(port)
        return self.wait_ok()

    def failover(self, slot_or_key: int | str | bytes, timeout: float = 30) -> float:
        """CLUSTER FAILOVER on a replica of the slot's master (no data lost); return the seconds it took."""
        old = self.owner(slot_or_key)
        replicas = self.replicas_of(old)
        if not replicas:
            raise TopologyError(f"the master on {old} has no live replica to take over")
        start = time.monotonic()
        self.admin(replicas[0]).execute_command("CLUSTER", "FAILOVER")
        self._wait_moved(old, slot_or_key, timeout)
        return time.monotonic() - start


class Sentinel(_Topology):
    """A master, its replicas, and sentinels that monitor it under master_name with quorum 2."""

    kind = "sentinel"

    def __init__(self, replicas: int = 1, sentinels: int = 3, master_name: str = "mymaster",
                 password: str | None = None, sentinel_password: str | None = None,
                 down_after_ms: int = NODE_TIMEOUT_MS, tls: bool = False):
        super().__init__(password, tls)
        self.master_name = master_name
        self.sentinel_password = sentinel_password
        try:
            self.master_port, *self.replica_ports = (free_port() for _ in range(1 + replicas))
            self._start(self.master_port, self._server_argv(self.master_port))
            for port in self.replica_ports:
                self._start(port, self._server_argv(port, "--replicaof", HOST, str(self.master_port)))
            self._wait_started([self.master_port, *self.replica_ports])
            wait_for(lambda: self._replicas_in_sync(self.master_port), 10, f"replicas in sync (logs in {self.dir})")
            self.sentinel_ports = [free_port() for _ in range(sentinels)]
            for port in self.sentinel_ports:
                self._start(port, ["redis-server", self._sentinel_conf(port, down_after_ms), "--sentinel"])
            self._passwords.update((port, sentinel_password) for port in self.sentinel_ports)
            self._wait_started(self.sentinel_ports)
            wait_for(self._sentinels_see_all, 20, f"every sentinel sees the master, replicas and peers ({self.dir})")
        except BaseException:
            self.stop()
            raise

    def _sentinel_conf(self, port: int, down_after_ms: int) -> str:
        path = os.path.join(self.dir, f"sentinel-{port}.conf")
        name = self.master_name
        listen = [f"port {port}"] if not self.tls else [
            "port 0", f"tls-port {port}", f"tls-cert-file {self.ca}", f"tls-key-file {os.path.join(self.dir, 'key.pem')}",
            f"tls-ca-cert-file {self.ca}", "tls-auth-clients no", "tls-replication yes"]
        lines = [f"bind {HOST}", *listen, f"dir {self.dir}",
                 f"logfile {os.path.join(self.dir, f'sentinel-{port}.log')}",
                 f"sentinel monitor {name} {HOST} {self.master_port} 2",
                 f"sentinel down-after-milliseconds {name} {down_after_ms}",
                 f"sentinel failover-timeout {name} {2 * down_after_ms}",
                 f"sentinel parallel-syncs {name} 1"]
        if self.password:
            lines.append(f"sentinel auth-pass {name} {self.password}")
        if self.sentinel_password:   # sentinels use their own requirepass to talk to each other
            lines.append(f"requirepass {self.sentinel_password}")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def _replicas_in_sync(self, master: int) -> bool:
        return all(self.admin(p).info("replication").get("master_link_status") == "up"
                   for p in [self.master_port, *self.replica_ports] if p != master and self.alive(p))

    def _sentinels_see_all(self) -> bool:
        want_replicas = sum(self.alive(p) for p in self.replica_ports + [self.master_port]) - 1
        for port in self.sentinel_ports:
            state = self.admin(port).sentinel_master(self.master_name)
            peers = len(self.sentinel_ports) - 1
            if not state["is_master"] or state["is_sdown"] or state["num-other-sentinels"] != peers:
                return False
            ok = [r for r in self.admin(port).sentinel_slaves(self.master_name)
                  if not r["is_sdown"] and r["master-link-status"] == "ok"]
            if len(ok) < want_replicas:
                return False
        return True

    @property
    def url(self) -> str:
        hosts = ",".join(f"{HOST}:{p}" for p in self.sentinel_ports)
        scheme = "rediss+sentinel://" if self.tls else "redis+sentinel://"
        return self._query(f"{scheme}{self._auth()}{hosts}/{self.master_name}/0")

    @property
    def sentinels(self) -> list[tuple[str, int]]:
        return [(HOST, p) for p in self.sentinel_ports]

    def master_address(self) -> tuple[str, int]:
        """The master's address as the first sentinel that answers reports it."""
        for port in self.sentinel_ports:
            try:
                host, master = self.admin(port).sentinel_get_master_addr_by_name(self.master_name)
                return host, int(master)
            except redis.RedisError:
                continue
        raise TopologyError("no sentinel answers")

    @property
    def nodes(self) -> list[Node]:
        master = self.master_address()[1]
        return [Node(HOST, p, "down" if not self.alive(p) else "master" if p == master else "replica")
                for p in [self.master_port, *self.replica_ports]]

    def _switched(self, old: int) -> bool:
        seen = {int(self.admin(p).sentinel_get_master_addr_by_name(self.master_name)[1])
                for p in self.sentinel_ports}
        return len(seen) == 1 and old not in seen and self.admin(seen.pop()).info("replication")["role"] == "master"

    def _wait_switched(self, old: int, timeout: float) -> None:
        wait_for(lambda: self._switched(old), timeout, f"every sentinel reports a new master (logs in {self.dir})")

    def restart(self, port: int) -> float:
        """Start a killed server again as a replica of the current master (sentinels would convert a returning
        old master themselves, but only after 10-20 s); return seconds until it is in sync and seen by all."""
        start = time.monotonic()
        self._argv[port] = self._server_argv(port, "--replicaof", *map(str, self.master_address()))
        super().restart(port)
        wait_for(lambda: self._sentinels_see_all() and self._replicas_in_sync(self.master_address()[1]), 30,
                 f"{port} back as a replica (logs in {self.dir})")
        return time.monotonic() - start

    def kill_master(self, timeout: float = 30, lagging: Callable[[], object] | None = None) -> float:
        """SIGKILL the master; return seconds until every sentinel reports a replica, now master, in its place.
        `lagging`: see _Topology._lagging."""
        old = self.master_address()[1]
        start = self._lagging(old, [p for p in self.replica_ports if self.alive(p)], lagging)
        self._wait_switched(old, timeout)
        return time.monotonic() - start

    def failover(self, timeout: float = 30) -> float:
        """SENTINEL FAILOVER (the old master becomes a replica); return seconds until every sentinel agrees."""
        old = self.master_address()[1]
        start = time.monotonic()
        self.admin(self.sentinel_ports[0]).sentinel_failover(self.master_name)
        self._wait_switched(old, timeout)
        return time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Start a private Redis Cluster or Sentinel set, print its URL; stop it on SIGINT/SIGTERM.")
    parser.add_argument("kind", choices=["cluster", "sentinel"])
    parser.add_argument("--masters", type=int, default=3, help="cluster masters (default 3)")
    parser.add_argument("--replicas", type=int, default=1, help="replicas per master (default 1)")
    parser.add_argument("--sentinels", type=int, default=3, help="sentinels (default 3)")
    parser.add_argument("--password", help="requirepass/masterauth on every data node (shown in the URL)")
    parser.add_argument("--sentinel-password", help="requirepass on the sentinels (sentinel set only)")
    parser.add_argument("--tls", action="store_true", help="TLS only, with a self-signed certificate (rediss+...)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    start = time.monotonic()
    topology = None
    try:
        if args.kind == "cluster":
            topology = Cluster(args.masters, args.replicas, password=args.password, tls=args.tls)
        else:
            topology = Sentinel(args.replicas, args.sentinels, password=args.password,
                                sentinel_password=args.sentinel_password, tls=args.tls)
        print(topology.url, flush=True)
        print(f"ready in {time.monotonic() - start:.1f} s: {topology.nodes}; logs in {topology.dir}; "
              f"Ctrl-C stops it", file=sys.stderr, flush=True)
        while True:
            signal.pause()
    except KeyboardInterrupt:
        return 0
    except TopologyError as exc:
        print(f"redis_topology: {exc}", file=sys.stderr)
        return 1
    finally:
        if topology is not None:
            topology.stop()


if __name__ == "__main__":
    sys.exit(main())
