"""Rate and concurrency limits (issue 23): jobs with a per-key limit, for the demo and the tests.
EXAMPLE_LIMITS_LOG names a file each run appends its start and end to (the tests check overlaps from it)."""

import os
import time

import delayq

LOG = os.environ.get("EXAMPLE_LIMITS_LOG", "")


def _note(what: str, key: str) -> None:
    if LOG:
        with open(LOG, "a") as log:
            log.write(f"{what} {delayq.current_job().id} {key} {time.time():.6f} {os.getpid()}\n")


@delayq.job(limit_key="order:{order_id}", limit=1)
def confirm_order(order_id: int, seconds: float = 0.0) -> None:
    """At most one job of an order runs at once, across every runner (seed 004's auto-confirm)."""
    _note("start", f"order:{order_id}")
    time.sleep(seconds)
    _note("end", f"order:{order_id}")


@delayq.job
def poll_payment(order_id: int) -> None:
    """A query to a payment provider that allows N a second (seed 001): its queue has a rate."""
    _note("start", "psp")
