"""Connecting to MySQL/MariaDB: the default (PREFERRED) TLS mode builds its context once per process."""

from __future__ import annotations

import ssl

from delayq.store.mysql import MySQLStore
from tests.conftest import MYSQL_URL, require


def test_connections_share_one_unverified_preferred_tls_context():
    require("mysql")
    store = MySQLStore(MYSQL_URL, "unused")
    first, second = store._connect(), store._connect()
    try:
        assert first.ctx is second.ctx and first.ssl and not first._ssl_required
        assert first.ctx.verify_mode == ssl.CERT_NONE and not first.ctx.check_hostname   # PyMySQL's own default
    finally:
        first.close()
        second.close()
