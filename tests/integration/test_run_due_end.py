"""A runner that has done its work ignores SIGTERM and SIGINT to the end (commands/run_due.py): at shutdown the
interpreter puts back the default action of each signal a Python function handled, so a SIGTERM in those last
moments ended a runner as killed (exit -15) after a run that went well (found by the short fault check, invariant 5:
a runner always ends)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

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


def test_a_sigterm_pending_from_a_supervisor_that_blocked_it_at_the_spawn_stops_the_runner_cleanly(tmp_path):
    """Started with SIGTERM blocked and signalled at once, before Python has run a line: the signal waits, and
    bin/run_due.py's handler receives it when it unblocks it; the runner ends 0 long before its --for."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("DELAYQ_")},
           "DELAYQ_DATABASE_URL": f"sqlite:///{tmp_path}/q.db"}
    subprocess.run([sys.executable, os.path.join(root, "bin", "migrate.py")], env=env, cwd=tmp_path, check=True,
                   capture_output=True)
    proc = subprocess.Popen([sys.executable, os.path.join(root, "bin", "run_due.py"), "--for", "60", "--processes",
                             "0"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM}))
    proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert time.monotonic() - started < 30 and out.strip(), (out, err)
