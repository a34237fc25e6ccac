"""Run by test_django_app.py inside the sample Django project (examples/django_app on PYTHONPATH, its settings in
DJANGO_SETTINGS_MODULE): creates the shop's tables, then sends requests with Django's test client, one at a time,
and looks at the database right after each. Prints one JSON object: what each request answered and left behind,
the DB-API driver Django used, and what a wrong connection= object and wrong arguments are told.

Each request is looked at before the next: SQLite hands a rolled-back id to the next row.
"""

from __future__ import annotations

import json
import os

import django

django.setup()

from django.core.management import call_command  # noqa: E402  (after setup)
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402

from delayq.errors import InvalidInput  # noqa: E402
from delayq.integrations.django import client, enqueue_on_commit  # noqa: E402

JOBS = f"{os.environ['DELAYQ_PREFIX']}_jobs"     # our own generated prefix
REQUESTS = ["/orders", "/orders/declined", "/orders?on_commit=1", "/orders/declined?on_commit=1"]


def left_behind(order: int) -> dict:
    """The order row and the jobs with the order's business key, as the database holds them now."""
    with connection.cursor() as cur:
        cur.execute("SELECT status FROM orders_order WHERE id = %s", [order])
        orders = [row[0] for row in cur.fetchall()]
        cur.execute(f"SELECT id, status FROM {JOBS} WHERE ext = %s", [f"order:{order}"])
        jobs = [list(row) for row in cur.fetchall()]
    return {"orders": orders, "jobs": jobs}


def wrong_object() -> str:
    """What enqueue says when given a Django cursor instead of the connection."""
    from orders.jobs import confirm_order

    with connection.cursor() as cur:
        try:
            client().enqueue(confirm_order, {"order_id": 1}, connection=cur)
        except InvalidInput as exc:
            return str(exc)
    return "accepted"


def checked_before_commit() -> str:
    """What enqueue_on_commit says, at the call, of arguments that do not fit the job (nothing is committed)."""
    from orders.jobs import confirm_order

    try:
        with transaction.atomic():
            enqueue_on_commit(confirm_order, {"order": 1})
    except InvalidInput as exc:
        return str(exc)
    return "accepted"


def main() -> None:
    call_command("migrate", verbosity=0)
    web = Client()
    seen = []
    for url in REQUESTS:
        response = web.post(url, {"total": 700})
        body = response.json()
        seen.append({"url": url, "status": response.status_code, "body": body, **left_behind(body["order"])})
    print(json.dumps({"requests": seen, "driver": type(connection.connection).__module__,
                      "wrong_object": wrong_object(), "checked_before_commit": checked_before_commit()}))


if __name__ == "__main__":
    main()
