"""A sample application: what a user's package looks like beside delayq (tests/acceptance/test_installed.py)."""
