"""The app's extensions, made once and bound to each app by create_app (Flask's app-factory pattern)."""

from delayq.integrations.flask import DelayQ

dq = DelayQ()
