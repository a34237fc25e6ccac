"""The shop's settings from its environment: read by the web app and by its jobs (run by `delayq run-due`)."""

import os

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATABASE_URL = os.environ.get("SHOP_DATABASE_URL") or "sqlite:///" + os.path.join(HERE, "shop.db")
CONFIRM_AFTER = os.environ.get("SHOP_CONFIRM_AFTER", "7d")       # how long before an order is confirmed for the buyer
