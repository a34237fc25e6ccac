"""Another module of the application, which its jobs import."""


def total(order_id: int) -> int:
    return order_id * 100 + 1
