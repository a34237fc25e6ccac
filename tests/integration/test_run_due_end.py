"""A runner that has done its work ignores SIGTERM and SIGINT to the end (commands/run_due.py): at shutdown the
interpreter puts back the default action of each signal a Python function handled, so a SIGTERM in those last
moments ended a runner as killed (exit -15) after a run that went well (found by the short fault check, invariant 5:
a runner always ends)."""

from __future__ import annotations

import signal

from delayq import config
from delayq.commands import run_due
from delayq.store import open_store


def test_after_its_run_a_runner_ignores_sigterm_and_sigint_to_the_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = config.load({"DELAYQ_DATABASE_URL": f"sqlite:///{tmp_path}/q.db"}, dotenv_path=None)
    open_store(settings.database_url, settings.prefix).migrate(0.0)
    args = run_due.build_parser("run_due.py").parse_args(["--processes", "0"])
    args.prog = "run_due.py"
    saved = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        assert run_due.execute(args, settings) == 0
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, saved[0])
        signal.signal(signal.SIGINT, saved[1])
