"""The application's jobs: they import the application's own modules, as real jobs import Django models."""

import os

import delayq
from acme.pricing import total


@delayq.job
def bill(order_id: int) -> None:
    with open(os.environ["ACME_LEDGER"], "a") as ledger:
        ledger.write(f"order {order_id} billed {total(order_id)}\n")


@delayq.job
def confirm(order_id: int, note: str = "") -> None:
    """Auto-confirm receipt (seed 004)."""
