"""Placing an order and scheduling its confirmation are one transaction: both happen, or neither."""

from django.conf import settings
from django.db import transaction
from django.http import JsonResponse
from django.views.decorators.http import require_POST

from delayq.integrations.django import enqueue, enqueue_on_commit
from orders.jobs import confirm_order
from orders.models import Order


class PaymentDeclined(Exception):
    """The payment failed after the order was written: what was placed (order and job ids) goes with it."""

    def __init__(self, placed: dict):
        super().__init__(f"payment declined for order {placed['order']}")
        self.placed = placed


def _place(request, decline: bool) -> dict:
    """An order and its confirmation job in one transaction.atomic(); ?on_commit=1 schedules the job when the
    transaction commits instead of inside it."""
    on_commit = request.GET.get("on_commit") == "1"
    with transaction.atomic():
        order = Order.objects.create(total=int(request.POST.get("total", 500)))
        options = {"delay": settings.SHOP_CONFIRM_AFTER, "ext": f"order:{order.id}"}
        if on_commit:
            enqueue_on_commit(confirm_order, {"order_id": order.id}, **options)
            job = None
        else:
            job = enqueue(confirm_order, {"order_id": order.id}, **options).id   # in this transaction
        placed = {"order": order.id, "job": job}
        if decline:
            raise PaymentDeclined(placed)           # leaves atomic(): the order and its job are rolled back
    return placed


@require_POST
def place_order(request):
    return JsonResponse(_place(request, decline=False), status=201)


@require_POST
def place_declined_order(request):
    """The payment is declined after the order and its job were written: the rollback takes both away."""
    try:
        _place(request, decline=True)
    except PaymentDeclined as declined:
        return JsonResponse({"declined": True, **declined.placed}, status=402)
