"""The shop's jobs (DELAYQ["ALLOWED_MODULES"] names this module). `manage.py delayq run-due` runs them with
Django set up, so they use the ORM like any other code of the project."""

from django.db.models import F

import delayq
from orders.models import Order


@delayq.job
def confirm_order(order_id: int) -> None:
    """Confirm receipt of an order the buyer did not confirm in time (seed 004's auto-confirm)."""
    Order.objects.filter(id=order_id).update(status="confirmed", confirmations=F("confirmations") + 1)
