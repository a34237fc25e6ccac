"""The sample Flask shop: placing an order and scheduling its confirmation are one transaction.

    cd examples/flask_app
    flask --app flaskshop init-db                 # the shop's table
    flask --app flaskshop delayq migrate          # delayq's tables, in the same database
    flask --app flaskshop run                     # POST /orders, POST /orders/declined
    flask --app flaskshop delayq run-due          # from cron: the due jobs (`delayq run-due` works too)

SHOP_DATABASE_URL names the one database of orders and jobs (default sqlite:///shop.db in this folder; or
mysql://user:pass@host:3306/db): a job can be written in an order's transaction only where the order is.
"""

from __future__ import annotations

from typing import Any, Mapping

from flask import Flask

from . import db, settings, views
from .extensions import dq


def create_app(overrides: Mapping[str, Any] | None = None) -> Flask:
    app = Flask(__name__)
    app.config.from_mapping(
        DATABASE_URL=settings.DATABASE_URL,
        CONFIRM_AFTER=settings.CONFIRM_AFTER,
        DELAYQ_ALLOWED_MODULES=["flaskshop.jobs"],
    )
    app.config.update(overrides or {})
    app.config.setdefault("DELAYQ_DATABASE_URL", app.config["DATABASE_URL"])     # the orders' own database
    db.init_app(app)
    dq.init_app(app)
    app.register_blueprint(views.bp)
    return app
