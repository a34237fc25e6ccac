"""A private three-node MariaDB Galera cluster for the tests: ours to kill, restart and remove.

    with Galera() as cluster:
        cluster.url(0)              # mysql://root@127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2/test (node 0 first)
        cluster.kill(1)             # SIGKILL of node 1's mariadbd, by its pid
        cluster.restart(1)          # it rejoins (IST, or SST by rsync) and is Synced again

Every node is a mariadbd of its own (galera-4's provider, /usr/lib/galera/libgalera_smm.so) on free loopback ports
(SQL, group communication, IST, SST), with its data directory under one temporary directory; the first node
bootstraps the cluster (--wsrep-new-cluster). The cluster has a name of its own, so it never meets another one.
stop() ends only the processes it started, by their pids, and removes the directory. The shared server on 3306 is
never touched.

The group's timeouts are shorter than Galera's defaults (a node killed is noticed after about SUSPECT seconds, not
5): the remaining two nodes' commits wait for that long. Production keeps the defaults (see docs/RELIABILITY.md).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time

import pymysql

from tests.chaos.servers import free_port, install_datadir, wait_port

PROVIDER = "/usr/lib/galera/libgalera_smm.so"
SUSPECT = 2             # seconds before a silent node is suspected (Galera's default: 5)
SYNCED = "Synced"


def _server_user() -> str:
    """Who the nodes run as. Not root: a donor's SST writes through an rsync daemon that the joiner's mariadbd
    starts, and an rsync daemon started by root switches to `nobody`, who may not write the joiner's data
    directory. As root, the nodes run as `mysql` (Debian's mariadb-server makes that user); otherwise as we run."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid()).pw_name
    try:
        return pwd.getpwnam("mysql").pw_name
    except KeyError:
        raise RuntimeError("the Galera nodes need a user other than root (rsync SST): create `mysql` "
                           "(apt-get install mariadb-server makes it)") from None


class Node:
    """One mariadbd of the cluster: its ports, its data directory, its process (None while stopped)."""

    def __init__(self, index: int, root: str, user: str):
        self.index, self.user = index, user
        self.port, self.gcomm, self.ist, self.sst = free_port(), free_port(), free_port(), free_port()
        self.dir = os.path.join(root, f"node{index}")
        self.proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    def install(self) -> None:
        os.makedirs(self.dir)
        if os.geteuid() == 0 and self.user != "root":
            entry = pwd.getpwnam(self.user)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        install_datadir(self.dir, self.user)

    def command(self, cluster: "Galera", bootstrap: bool) -> list[str]:
        members = ",".join(f"127.0.0.1:{node.gcomm}" for node in cluster.nodes)
        provider = ";".join([
            f"gmcast.listen_addr=tcp://127.0.0.1:{self.gcomm}", f"ist.recv_addr=127.0.0.1:{self.ist}",
            "gcache.size=64M", f"evs.suspect_timeout=PT{SUSPECT}S", f"evs.inactive_timeout=PT{2 * SUSPECT}S",
            "evs.inactive_check_period=PT0.5S", "evs.keepalive_period=PT0.5S", "pc.wait_prim_timeout=PT30S"])
        return ["/usr/sbin/mariadbd", "--no-defaults", f"--datadir={self.dir}/data", f"--port={self.port}",
                "--bind-address=127.0.0.1", f"--socket={self.dir}/sock", f"--user={self.user}",
                f"--pid-file={self.dir}/pid", f"--tmpdir={self.dir}/tmp", f"--log-error={self.dir}/server.log",
                "--innodb-buffer-pool-size=64M",
                # a SIGKILL ends the process, not the host: the OS still writes what each commit handed it
                "--innodb-flush-log-at-trx-commit=2",
                "--wsrep-on=ON", f"--wsrep-provider={PROVIDER}", f"--wsrep-cluster-name={cluster.name}",
                f"--wsrep-cluster-address=gcomm://{members}", f"--wsrep-node-name=node{self.index}",
                f"--wsrep-node-address=127.0.0.1:{self.gcomm}", f"--wsrep-node-incoming-address=127.0.0.1:{self.port}",
                f"--wsrep-provider-options={provider}", "--wsrep-sst-method=rsync",
                f"--wsrep-sst-receive-address=127.0.0.1:{self.sst}", "--binlog-format=ROW",
                "--innodb-autoinc-lock-mode=2", "--default-storage-engine=InnoDB",
                *(["--wsrep-new-cluster"] if bootstrap else [])]

    def start(self, cluster: "Galera", bootstrap: bool = False) -> None:
        with open(os.path.join(self.dir, "stderr.log"), "a") as err:      # (the SST scripts' own output)
            self.proc = subprocess.Popen(self.command(cluster, bootstrap), stdout=subprocess.DEVNULL, stderr=err)

    def status(self) -> dict[str, str]:
        """The node's wsrep status variables (raises pymysql's OperationalError while it does not answer)."""
        conn = pymysql.connect(host="127.0.0.1", port=self.port, user="root", connect_timeout=2, read_timeout=5)
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep%'")
                return dict(cur.fetchall())
        finally:
            conn.close()

    def wait_synced(self, size: int, timeout: float) -> None:
        """Until the node answers, is Synced, and sees a primary component of `size` nodes."""
        deadline, seen = time.monotonic() + timeout, "no answer"
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"galera node{self.index} exited ({self.proc and self.proc.returncode}); "
                                   f"its log ends:\n{self.log_tail()}")
            try:
                status = self.status()
                seen = (f"{status.get('wsrep_local_state_comment')}, cluster size {status.get('wsrep_cluster_size')}"
                        f", {status.get('wsrep_cluster_status')}")
                if (status.get("wsrep_local_state_comment") == SYNCED and status.get("wsrep_ready") == "ON"
                        and status.get("wsrep_cluster_status") == "Primary"
                        and int(status.get("wsrep_cluster_size") or 0) == size):
                    return
            except pymysql.err.Error:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"galera node{self.index} not Synced in a cluster of {size} within {timeout:g} s "
                           f"({seen}); its log ends:\n{self.log_tail()}")

    def log_tail(self, lines: int = 60) -> str:
        """The end of the node's error log (the directory goes with the cluster, the message stays)."""
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        if self.pid is not None:
            os.kill(self.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()

    def stop(self, timeout: float = 60) -> None:
        if self.pid is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc is not None:
            self.proc.wait()


class Galera:
    """Three (or `size`) MariaDB nodes in one synchronous cluster, with a database `test`; a context manager."""

    def __init__(self, size: int = 3, timeout: float = 120):
        self.size, self.timeout = size, timeout
        self.name = "delayq-" + secrets.token_hex(4)
        self.dir = tempfile.mkdtemp(prefix="delayq-galera-")
        os.chmod(self.dir, 0o755)           # the nodes' user (not root: see _server_user) reaches its directory
        user = _server_user()
        self.nodes = [Node(i, self.dir, user) for i in range(size)]

    def __enter__(self) -> "Galera":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        for node in self.nodes:
            node.install()
        first, *others = self.nodes
        first.start(self, bootstrap=True)
        first.wait_synced(1, self.timeout)
        for n, node in enumerate(others, start=2):      # one joiner at a time: one SST from the donor at a time
            node.start(self)
            node.wait_synced(n, self.timeout)
        self.sql(0, "CREATE DATABASE IF NOT EXISTS test")
        self.wait_synced()

    def wait_synced(self) -> None:
        for node in self.nodes:
            node.wait_synced(self.size, self.timeout)

    def url(self, first: int = 0, user: str = "root", password: str = "") -> str:
        """The multi-host DELAYQ_DATABASE_URL of the cluster, node `first` first and the others after it in turn."""
        order = self.nodes[first:] + self.nodes[:first]
        login = f"{user}:{password}@" if password else f"{user}@"
        return f"mysql://{login}" + ",".join(f"127.0.0.1:{node.port}" for node in order) + "/test"

    def node_url(self, index: int) -> str:
        return f"mysql://root@127.0.0.1:{self.nodes[index].port}/test"

    def sql(self, index: int, statement: str) -> list[tuple]:
        """One statement on one node (autocommit), its rows."""
        conn = pymysql.connect(host="127.0.0.1", port=self.nodes[index].port, user="root", autocommit=True,
                               connect_timeout=5, read_timeout=60)
        try:
            with conn.cursor() as cur:
                cur.execute(statement)
                return list(cur.fetchall())
        finally:
            conn.close()

    def kill(self, index: int) -> None:
        """SIGKILL of one node's mariadbd, by its pid; returns once the process is gone."""
        self.nodes[index].kill()

    def restart(self, index: int) -> None:
        """Start a killed (or stopped) node again: it rejoins from the others (IST if their write-set cache still
        holds what it missed, else a full SST by rsync) and is Synced in a cluster of every node."""
        node = self.nodes[index]
        node.start(self)
        node.wait_synced(self.size, self.timeout)

    def stop(self) -> None:
        """End every node this cluster started (by pid: SIGTERM, then SIGKILL after 60 s) and remove its files."""
        for node in reversed(self.nodes):
            node.stop()
        for node in self.nodes:
            try:
                wait_port(node.port, up=False, timeout=10)
            except RuntimeError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


if __name__ == "__main__":          # a quick look: start, kill node 1, restart it, stop
    t0 = time.monotonic()
    with Galera() as cluster:
        print(f"up in {time.monotonic() - t0:.1f} s: {cluster.url()}")
        t1 = time.monotonic()
        cluster.kill(1)
        print(f"killed node1; node0 sees {cluster.nodes[0].status().get('wsrep_cluster_size')} node(s)")
        cluster.restart(1)
        print(f"node1 back and Synced in {time.monotonic() - t1:.1f} s")
    print(f"stopped; {time.monotonic() - t0:.1f} s in all")
