from delayq.store import queries


def test_both_dialects_define_the_same_queries():
    mysql = queries.Queries("mysql", "p", "%s").names()
    sqlite = queries.Queries("sqlite", "p", "?").names()
    assert mysql == sqlite and "start_jobs" in mysql


def test_placeholders_match_the_dialect_and_tables_get_the_prefix():
    sqlite = queries.Queries("sqlite", "shop", "?")
    for name in sqlite.names():
        assert "%s" not in sqlite(name)
    assert sqlite("start_jobs", ids=3).endswith("WHERE id IN (?, ?, ?) AND status = 'pending'")
    assert "shop_jobs" in sqlite("select_job")
    assert sqlite("insert_attempts", rows=2).count("(?, ?, ?, ?, ?, ?)") == 2


def test_migrations_parse_for_both_dialects():
    for dialect in ("mysql", "sqlite"):
        found = queries.migrations(dialect, "p")
        assert found[0][0] == 1
        assert any("CREATE TABLE IF NOT EXISTS p_jobs" in s for s in found[0][1])
