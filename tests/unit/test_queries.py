"""The one file of named queries: every dialect defines what the code runs; parameters are bound, by name."""

import re
from pathlib import Path

from delayq.store import queries

LIB = Path(__file__).resolve().parents[2] / "lib" / "delayq"
TOKENS = {"mysql": {"table_options": "ENGINE=InnoDB", "for_update": "FOR UPDATE",
                    "skip_locked": "FOR UPDATE SKIP LOCKED", "jobs_ix": "", "scan_by_id": "FORCE INDEX (PRIMARY)",
                    "on_jobs": "ON p_jobs"},
          "sqlite": {"table_options": "", "for_update": "", "skip_locked": "", "jobs_ix": "p_jobs_",
                     "scan_by_id": "NOT INDEXED", "on_jobs": ""}}


def code_text() -> str:
    return "\n".join(p.read_text() for p in LIB.rglob("*.py"))


def test_every_dialect_defines_every_query_the_code_runs_and_no_more():
    text = code_text()
    run = set(re.findall(r'\.run\(cur, "(\w+)"', text))     # self.run(cur, "name", ...)
    for dialect in ("mysql", "sqlite"):
        defined = queries.Queries(dialect, "p", "named", TOKENS[dialect]).names()
        assert run - defined == set(), f"{dialect} lacks {run - defined}"
        unused = {name for name in defined if f'"{name}"' not in text}
        assert unused == set(), f"{dialect} defines queries no code names: {unused}"


def test_overrides_are_few_and_name_only_shared_queries():
    for dialect in ("mysql", "sqlite"):
        overrides = queries.parse((queries.sql_dir() / dialect / "queries.sql").read_text())
        assert set(overrides) <= set(queries.parse((queries.sql_dir() / "queries.sql").read_text()))
        # 6: reading one JSON value as text differs too (MySQL/MariaDB's JSON_UNQUOTE, SQLite's typed json_extract)
        assert len(overrides) <= 6, sorted(overrides)


def test_named_parameters_and_list_expansion_in_both_styles():
    sqlite = queries.Queries("sqlite", "shop", "named", TOKENS["sqlite"])
    sql, params = sqlite("start_jobs", token="t", now=1.0, lease=5.0, ids=[7, 8, 9])
    assert "WHERE id IN (:ids_0, :ids_1, :ids_2) AND status = 'pending'" in sql
    assert params == {"token": "t", "now": 1.0, "lease": 5.0, "ids_0": 7, "ids_1": 8, "ids_2": 9}
    assert "shop_jobs" in sqlite("select_job", id=1)[0]
    mysql = queries.Queries("mysql", "shop", "pyformat", TOKENS["mysql"])
    sql, params = mysql("lock_held", ids=[1, 2], token="t")
    assert "id IN (%(ids)s) AND claim_token = %(token)s FOR UPDATE" in sql       # ints: one IntList parameter
    assert type(params["ids"]) is queries.IntList and params["ids"] == [1, 2]
    sql, params = mysql("lock_held", ids=["1", 2], token="t")                      # anything else: one each
    assert "id IN (%(ids_0)s, %(ids_1)s)" in sql and params["ids_0"] == "1"
    for name in mysql.names():
        assert "?" not in mysql(name)[0] and not re.search(r"(?<![:\w]):\w", mysql(name)[0])


def test_migrations_share_a_source_where_the_ddl_can_be_shared():
    for dialect in ("mysql", "sqlite"):
        found = queries.migrations(dialect, "p", TOKENS[dialect])
        assert [v for v, _ in found] == list(range(1, len(found) + 1))
        assert any("CREATE TABLE IF NOT EXISTS p_jobs" in s for s in found[0][1])
    shared = sorted(item.name for item in (queries.sql_dir() / "migrations").iterdir())
    assert len(shared) >= 3 and all(n[:4] != "0001" for n in shared)      # only the first is per dialect
    assert queries.latest_version("mysql") == queries.latest_version("sqlite") == len(shared) + 1


def test_a_packed_claim_lists_the_columns_of_the_plain_one_in_the_same_order():
    from delayq.store.sql_jobs import CLAIMED

    columns = ", ".join(CLAIMED)
    for dialect in ("mysql", "sqlite"):
        q = queries.Queries(dialect, "p", "named", TOKENS[dialect])
        assert f"SELECT {columns} FROM p_jobs" in q("select_claimed", ids=[1], token="t")[0]
    assert f"JSON_ARRAY({columns}))" in queries.Queries("mysql", "p", "named", TOKENS["mysql"])(
        "select_claimed_packed", ids=[1], token="t")[0]
