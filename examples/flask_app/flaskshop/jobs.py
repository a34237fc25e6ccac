"""The shop's jobs (DELAYQ_ALLOWED_MODULES names this module), run by `delayq run-due` outside any request."""

import delayq
from flaskshop import db, settings


@delayq.job
def confirm_order(order_id: int) -> None:
    """Confirm receipt of an order the buyer did not confirm in time (seed 004's auto-confirm)."""
    conn = db.connect(settings.DATABASE_URL)
    try:
        mark = db.param(settings.DATABASE_URL)
        conn.cursor().execute("UPDATE shop_orders SET status = 'confirmed', confirmations = confirmations + 1 "
                              f"WHERE id = {mark}", (order_id,))
        conn.commit()
    finally:
        conn.close()
