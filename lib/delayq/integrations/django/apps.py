"""The Django app that brings `manage.py delayq ...`: INSTALLED_APPS = [..., "delayq.integrations.django"]."""

from django.apps import AppConfig


class DelayqConfig(AppConfig):
    name = "delayq.integrations.django"
    label = "delayq"
    verbose_name = "delayq"
    default = True
