"""Settings of the sample shop: one app (orders) and delayq, on SQLite by default or on MySQL/MariaDB.

    SHOP_MYSQL_DATABASE=shop     MySQL/MariaDB instead of SQLite: that database on SHOP_MYSQL_HOST (127.0.0.1),
                                 SHOP_MYSQL_PORT (3306), as SHOP_MYSQL_USER (root) with SHOP_MYSQL_PASSWORD (none)
    SHOP_MYSQL_DRIVER=pymysql    PyMySQL instead of Django's default driver, mysqlclient
    SHOP_SQLITE_PATH             the SQLite file (default: shop.db in this folder)
    SHOP_CONFIRM_AFTER           how long after an order it is confirmed automatically (default 7d)
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = os.environ.get("SHOP_SECRET_KEY", "sample-only-not-a-secret")
DEBUG = False
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "testserver"]
ROOT_URLCONF = "shopsite.urls"
USE_TZ = True
TIME_ZONE = "UTC"                          # also the zone delayq shows times in under manage.py
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]

INSTALLED_APPS = [
    "orders",
    "delayq.integrations.django",           # manage.py delayq ...
]

if os.environ.get("SHOP_MYSQL_DATABASE"):
    if os.environ.get("SHOP_MYSQL_DRIVER") == "pymysql":
        import pymysql

        pymysql.install_as_MySQLdb()        # Django's MySQL backend on PyMySQL
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.mysql",
        "NAME": os.environ["SHOP_MYSQL_DATABASE"],
        "HOST": os.environ.get("SHOP_MYSQL_HOST", "127.0.0.1"),
        "PORT": os.environ.get("SHOP_MYSQL_PORT", "3306"),
        "USER": os.environ.get("SHOP_MYSQL_USER", "root"),
        "PASSWORD": os.environ.get("SHOP_MYSQL_PASSWORD", ""),
        "OPTIONS": {"charset": "utf8mb4"},  # any text a job's arguments hold (Django's default is 3-byte utf8)
    }}
else:
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SHOP_SQLITE_PATH", BASE_DIR / "shop.db"),
    }}

# delayq's tables live in the default database above (no DATABASE_URL given): a job is written in the order's
# own transaction. Any other DELAYQ_* setting may go here without its prefix, or stay in the environment.
DELAYQ = {
    "ALLOWED_MODULES": ["orders.jobs"],
}
SHOP_CONFIRM_AFTER = os.environ.get("SHOP_CONFIRM_AFTER", "7d")
