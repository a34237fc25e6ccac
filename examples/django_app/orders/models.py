from django.db import models


class Order(models.Model):
    total = models.PositiveIntegerField(help_text="in cents")
    status = models.CharField(max_length=16, default="placed")
    confirmations = models.PositiveIntegerField(default=0, help_text="times confirm_order ran for it")
    created_at = models.DateTimeField(auto_now_add=True)
