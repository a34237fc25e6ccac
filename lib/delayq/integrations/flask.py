"""delayq in a Flask app (docs/FLASK.md; the sample app is examples/flask_app/).

    from flask import Flask
    from delayq.integrations.flask import DelayQ

    dq = DelayQ()

    def create_app():
        app = Flask(__name__)
        app.config["DELAYQ_ALLOWED_MODULES"] = "shopapp.jobs"
        dq.init_app(app)
        return app

    # in a view: the job is written in the request's own transaction, on the app's PyMySQL or sqlite3 connection
    dq.enqueue(confirm_order, {"order_id": order_id}, ext=f"order:{order_id}", connection=db)
    db.commit()

`flask --app APP delayq run-due` (stats, migrate, ...) runs the delayq command with the app's settings.

Settings: the app's config keys named like the environment's (DELAYQ_DATABASE_URL, DELAYQ_ALLOWED_MODULES as text or
a list, DELAYQ_PREFIX, DELAYQ_QUEUES as a dict, ...); each wins over the environment and .env.

One client per app, made by init_app (a bad setting fails there, at start-up) and shared by every request and
thread: it pools its connections, and keeps working in workers forked after it was made (gunicorn --preload).
So nothing is closed at a request's teardown; close(app) ends it (tests, or an app factory's shutdown). The
request's own database connection is the app's to open and close (see the sample app's db.py).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

try:
    import click
    from flask import Flask, current_app
    from flask.cli import with_appcontext
except ImportError as exc:                              # pragma: no cover (the extra is not installed)
    raise ImportError("delayq.integrations.flask needs Flask: pip install 'delayq[flask]'") from exc

from .. import default
from ..app import connect
from ..client import Client
from ..errors import ConfigError
from ..store import Cancelled, Inserted
from .settings import as_environment, load, resolved, run_command

EXTENSION = "delayq"          # app.extensions[EXTENSION] holds the app's Client


class DelayQ:
    """The Flask extension: DelayQ(app), or DelayQ() then init_app(app) in an app factory (one instance may serve
    several apps, each with its own client)."""

    def __init__(self, app: Flask | None = None):
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Read the app's DELAYQ_* settings and make its client (ConfigError now for a bad setting)."""
        app.extensions[EXTENSION] = connect(load(settings_of(app)))
        app.cli.add_command(delayq_command)

    @property
    def client(self) -> Client:
        """The current app's client (inside an app or request context)."""
        return client_of(current_app)

    def enqueue(self, call: str | Callable[..., Any], args: Mapping[str, Any] | None = None,
                **options: Any) -> Inserted:
        """Client.enqueue on the current app's client; with connection= (the request's PyMySQL, mysqlclient or
        sqlite3 connection to DELAYQ_DATABASE_URL's database) the job exists if and only if its transaction commits."""
        return self.client.enqueue(call, args, **options)

    def cancel(self, id: int | None = None, ext: str | None = None, queue: str | None = None) -> Cancelled:
        """Client.cancel on the current app's client."""
        return self.client.cancel(id=id, ext=ext, queue=queue)

    def close(self, app: Flask) -> None:
        """Close the app's client (its pooled connections); the app then needs init_app again to enqueue."""
        client = app.extensions.pop(EXTENSION, None)
        if client is not None:
            client.close()


def settings_of(app: Flask) -> dict[str, str]:
    """The app's DELAYQ_* config as environment values (ConfigError for an unknown key or a wrong type)."""
    given = {key[len("DELAYQ_"):]: value for key, value in app.config.items() if key.startswith("DELAYQ_")}
    return as_environment(given, "app.config", "DELAYQ_")


@click.command("delayq", add_help_option=False, context_settings={"ignore_unknown_options": True})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
@with_appcontext
def delayq_command(argv: tuple[str, ...]) -> None:
    """delayq's commands with this app's settings: flask --app APP delayq run-due | stats | migrate | ... (the
    arguments and the exit code are delayq's own; `flask --app APP delayq --help` lists the commands)."""
    raise SystemExit(run_command(list(argv), resolved(settings_of(current_app))))


def client_of(app: Flask) -> Client:
    """An app's client (the testing mode's while one is on: delayq.testing), or ConfigError if init_app was not
    called for it."""
    testing = default.testing_client()
    if testing is not None:
        return testing
    try:
        return app.extensions[EXTENSION]
    except KeyError:
        raise ConfigError(f"delayq is not set up for the Flask app {app.name!r}: call DelayQ().init_app(app)") from None
