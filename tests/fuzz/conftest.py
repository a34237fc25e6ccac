"""The fuzz suite's summary line at the end of the run: cases generated per entry point, internal errors, rows left."""

from tests.fuzz.harness import TALLY


def pytest_terminal_summary(terminalreporter):
    if TALLY.cases:
        terminalreporter.write_line(TALLY.line())
