"""Handlers of "order.completed" (seed 000): each its own job, retried and failed on its own."""

import os

import delayq


def _note(path: str, what: str) -> None:
    with open(path, "a") as log:
        log.write(f"{what} {delayq.current_job().id} {os.getpid()}\n")


@delayq.on("order.completed")
def upgrade_to_diamond(order_id: int, path: str, total: int = 0, erp_down: bool = False) -> None:
    """Upgrade the buyer to diamond member once their orders reach $500."""
    _note(path, "diamond" if total >= 500 else "no-upgrade")


@delayq.on("order.completed", queue="mail")
def send_email(order_id: int, path: str, **_: object) -> None:
    _note(path, "email")


@delayq.on("order.completed", ladder="5,10")
def sync_to_erp(order_id: int, path: str, erp_down: bool = False, **_: object) -> None:
    _note(path, "erp")
    if erp_down:
        raise ConnectionError("ERP unreachable")
