"""For a WSGI server: gunicorn shopsite.wsgi (run from this folder)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shopsite.settings")
application = get_wsgi_application()
