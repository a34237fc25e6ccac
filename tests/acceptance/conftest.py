"""Private MariaDB and Redis servers for the acceptance tests that pause them or create users on them.

One of each per test session, on free loopback ports, ended by their own pid: the shared servers on
3306 and 6379 are never paused or given users.
"""

from __future__ import annotations

import pytest

from tests.chaos.servers import PrivateMariaDB, PrivateRedis, resume


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
