"""`make run`: a short demo on the embedded SQLite default, through the real scripts.

Enqueues a few delayed jobs (one fails and retries, one fails permanently, one
is cancelled), runs them with run_due.py --for, and shows the result.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DB = os.path.join(ROOT, "demo.db")
ENV = dict(os.environ, DELAYQ_DATABASE_URL=f"sqlite:///{DB}", DELAYQ_ALLOWED_MODULES="examples",
           DELAYQ_PREFIX="demo")
ENV.pop("DELAYQ_REDIS_URL", None)


def sh(*argv: str) -> str:
    print("$ " + " ".join(argv), flush=True)
    done = subprocess.run([sys.executable, *argv], cwd=ROOT, env=ENV, text=True, capture_output=True)
    out = (done.stdout + done.stderr).rstrip()
    if out:
        print(out)
    return done.stdout.strip()


def main() -> None:
    if os.path.exists(DB):
        os.remove(DB)
    print("== enqueue (embedded SQLite at demo.db; no server needed)")
    sh("bin/enqueue_delayed.py", "--call", "examples.shop:auto_confirm", "--args", '{"order_id": 1001}',
       "--delay", "1", "--ext", "order:1001")
    flaky = sh("bin/enqueue_delayed.py", "--call", "examples.shop:flaky_sync", "--args",
               '{"order_id": 1002, "fail_times": 2}', "--ladder", "1,1", "--ext", "order:1002")
    sh("bin/enqueue_delayed.py", "--call", "examples.shop:refund_rejected", "--args", '{"order_id": 1003}')
    sh("bin/enqueue_delayed.py", "--call", "examples.shop:auto_confirm", "--args", '{"order_id": 1004}',
       "--delay", "86400", "--ext", "order:1004")
    sh("bin/enqueue_delayed.py", "--call", "os:system", "--args", '{"command": "id"}')
    print("\n== the buyer confirmed order 1004 by hand: cancel its auto-confirm")
    sh("bin/cancel.py", "--ext", "order:1004")
    print("\n== run due jobs for 4 seconds (cron would run: bin/loop.sh 2 bin/run_due.py)")
    sh("bin/run_due.py", "--for", "4", "--interval", "0.5")
    print("\n== the flaky job's history")
    sh("bin/show.py", "--id", flaky)
    print("\n== every job by business key")
    sh("bin/show.py", "--ext", "order:1004")


if __name__ == "__main__":
    main()
