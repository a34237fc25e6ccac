"""The acceptance tests' fixtures: `world`, a backend as the scripts meet it, and the private MariaDB and Redis
servers for the tests that pause them or create users on them.

The private servers: one of each per test session, on free loopback ports, ended by their own pid: the shared
servers on 3306 and 6379 are never paused or given users.
"""

from __future__ import annotations

import pytest

from delayq.clock import SystemClock
from tests.chaos.servers import PrivateMariaDB, PrivateRedis, resume
from tests.conftest import make_backend

WORLDS = ["sqlite", "mysql+redis", "mysql"]


@pytest.fixture(params=WORLDS)
def world(request, tmp_path):
    """A migrated backend on the real clock, its own prefix, cleaned up after: SQLite, MariaDB + Redis, MariaDB
    alone; a test picks others with @pytest.mark.parametrize("world", [...], indirect=True)."""
    backend = make_backend(request.param, tmp_path, SystemClock())
    yield backend
    backend.cleanup()


@pytest.fixture(scope="session")
def mariadb():
    server = PrivateMariaDB()
    yield server
    resume(server.proc)
    server.remove()


@pytest.fixture(scope="session")
def redis_server():
    server = PrivateRedis()
    yield server
    resume(server.proc)
    server.stop()
