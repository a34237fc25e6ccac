"""Connecting to MySQL/MariaDB: the default (PREFERRED) TLS mode builds its context once per process; an insert of
one statement runs on a connection that commits each statement (one round trip, not two)."""

from __future__ import annotations

import ssl

import pytest

from delayq.jobs import JobSpec
from delayq.store.mysql import MySQLStore
from tests.conftest import MYSQL_URL, drop_mysql, new_prefix, require

NOW = 1_800_000_000.0


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


def _migrated_store() -> MySQLStore:
    require("mysql")
    store = MySQLStore(MYSQL_URL, new_prefix())
    store.migrate(NOW)
    return store


def test_an_insert_of_one_statement_commits_by_itself_without_a_commit_round_trip():
    store = _migrated_store()
    try:
        one = store.insert_jobs([JobSpec(call="examples.shop:noop", args_json="{}", due_at=NOW)], NOW)
        group = store.insert_jobs([JobSpec(call="examples.shop:noop", args_json="{}", due_at=NOW)] * 4, NOW)
        assert [store.get(r.id).status for r in one + group] == ["pending"] * 5     # seen from another connection
        with store.statement() as cur:         # the connection that wrote them: autocommit, no COMMIT ever sent
            cur.execute("SHOW SESSION STATUS WHERE Variable_name IN ('Com_commit', 'Com_insert', 'Com_insert_select')")
            counts = {name: int(value) for name, value in cur.fetchall()}
        assert counts["Com_commit"] == 0 and counts["Com_insert"] + counts["Com_insert_select"] == 2, counts
    finally:
        store.close()
        drop_mysql(store.prefix)


def test_a_statement_cut_short_does_not_return_its_connection_to_the_pool():
    store = _migrated_store()
    try:
        with pytest.raises(KeyboardInterrupt):
            with store.statement() as cur:
                cur.execute("SELECT 1")
                cut = cur.connection
                raise KeyboardInterrupt       # e.g. between sending a statement and reading its reply
        assert not cut.open
        with store.statement() as cur:
            assert cur.connection is not cut
    finally:
        store.close()
        drop_mysql(store.prefix)
