"""Placing an order and scheduling its confirmation are one transaction on the request's connection."""

from __future__ import annotations

from flask import Blueprint, current_app, request

from flaskshop import db
from flaskshop.extensions import dq
from flaskshop.jobs import confirm_order

bp = Blueprint("orders", __name__)


def _place() -> dict:
    """An order row and its confirmation job, written on the request's connection, not yet committed."""
    conn, url = db.get_db(), current_app.config["DATABASE_URL"]
    cur = conn.cursor()
    cur.execute(f"INSERT INTO shop_orders (total) VALUES ({db.param(url)})", (int(request.form.get("total", 500)),))
    order = cur.lastrowid
    job = dq.enqueue(confirm_order, {"order_id": order}, delay=current_app.config["CONFIRM_AFTER"],
                     ext=f"order:{order}", connection=conn)         # in the same transaction as the order
    return {"order": order, "job": job.id}


@bp.post("/orders")
def place_order():
    placed = _place()
    db.get_db().commit()                   # the order and its job, together
    return placed, 201


@bp.post("/orders/declined")
def place_declined_order():
    """The payment is declined after the order and its job were written: the rollback takes both away."""
    placed = _place()
    db.get_db().rollback()
    return {"declined": True, **placed}, 402
