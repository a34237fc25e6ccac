"""Enqueue `count` ping jobs one at a time over `seconds`, each due 1 to 5 s later (run under faketime).

    python tests/chaos/skew_enqueue.py PORT COUNT SECONDS

Settings come from the environment (DELAYQ_*), as in an application; due times are set by delayq's clock,
whatever this host's clock says."""

import os
import random
import sys
import time

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib")]

import delayq  # noqa: E402


def main(port: int, count: int, seconds: float) -> None:
    client = delayq.connect()
    for _ in range(count):
        client.enqueue("tests.chaos.jobs:ping", {"port": port}, delay=round(random.uniform(1, 5), 3))
        time.sleep(seconds / count)
    client.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
