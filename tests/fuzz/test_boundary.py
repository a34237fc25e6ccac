"""One validation boundary, fuzzed (issue 16): every entry point, generated inputs, 0 internal errors.

Each generated case either becomes a job that list, show and stats display and a runner pass runs (an
attempt recorded), or is refused (exit 2, InvalidInput, ConfigError) with nothing written. Most cases run
on SQLite in a temporary directory, a smaller share on MariaDB; the whole suite makes more than 10,000
cases (the summary line at the end of the run says how many). DELAYQ_FUZZ_SCALE=10 makes ten times as many.

    .venv/bin/python -m pytest -q tests/fuzz
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from tests.conftest import ROOT
from tests.fuzz import strategies as S
from tests.fuzz.harness import TALLY, World

SCALE = float(os.environ.get("DELAYQ_FUZZ_SCALE") or 1)
EXAMPLES = {  # entry point -> (SQLite cases, MariaDB cases); the cheap entry points get the larger shares
    "enqueue flags": (2400, 200),     # each case opens its own connection, as a script does: slow on MariaDB
    "bulk lines": (1000, 100),
    "client": (2600, 300),
    "pull put": (2000, 150),
    "settings": (2000, 0),
}
FLOOR = 10_000
DATABASE = DirectoryBasedExampleDatabase(os.path.join(ROOT, ".hypothesis", "examples"))


def fuzz(entry: str, kind: str):
    sqlite, mysql = EXAMPLES[entry]
    return settings(max_examples=max(1, int(SCALE * (sqlite if kind == "sqlite" else mysql))), deadline=None,
                    suppress_health_check=list(HealthCheck), database=DATABASE, print_blob=True)


@pytest.fixture
def make_world(tmp_path, monkeypatch):
    """make_world(kind, entry): a fuzz harness World (tests/fuzz/harness.py) on "sqlite" or "mysql", closed after
    the test; not the acceptance tests' `world` (a Backend)."""
    made = []

    def make(kind: str, entry: str) -> World:
        made.append(World(kind, entry, tmp_path, monkeypatch))
        return made[-1]

    yield make
    for w in made:
        w.close()


@pytest.mark.parametrize("kind", ["sqlite", "mysql"])
def test_enqueue_flags(make_world, kind):
    w = make_world(kind, "enqueue flags")

    @fuzz("enqueue flags", kind)
    @given(S.cli_argv())
    def case(argv):
        w.cli(argv)

    case()
    w.display_and_run()


@pytest.mark.parametrize("kind", ["sqlite", "mysql"])
def test_bulk_lines(make_world, kind):
    w = make_world(kind, "bulk lines")

    @fuzz("bulk lines", kind)
    @given(S.bulk_lines())
    def case(lines):
        w.bulk(lines)

    case()
    w.display_and_run()


@pytest.mark.parametrize("kind", ["sqlite", "mysql"])
def test_client_enqueue(make_world, kind):
    w = make_world(kind, "client")

    @fuzz("client", kind)
    @given(S.client_call())
    def case(call):
        w.client_enqueue(*call)

    case()
    w.display_and_run()


@pytest.mark.parametrize("kind", ["sqlite", "mysql"])
def test_pull_put(make_world, kind):
    w = make_world(kind, "pull put")

    @fuzz("pull put", kind)
    @given(S.pull_put())
    def case(put):
        w.put(*put)

    case()
    w.display_and_run()


def test_settings(make_world):
    w = make_world("sqlite", "settings")

    @fuzz("settings", "sqlite")
    @given(S.ENV)
    def case(env):
        w.settings(env)

    case()
    w.display_and_run()


def test_the_suite_made_at_least_10000_cases():
    """Last in the file: when every test above ran (make test), they made at least FLOOR cases between them."""
    expected = {f"{entry} ({db})" for entry, (lite, maria) in EXAMPLES.items()
                for db, n in (("SQLite", lite), ("MariaDB", maria)) if n}
    if TALLY.functions >= expected and SCALE >= 1:
        assert sum(TALLY.cases.values()) >= FLOOR, TALLY.line()
    assert TALLY.internal_errors == 0 and TALLY.rows_left == 0, TALLY.line()
