"""`delayq web` as a user starts it: safe by default (no other address than loopback without a password), and an
optional extra: the core wheel alone runs every other command, and `delayq web` says how to install the extra."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.helpers import script


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0", "example.com:8080", "10.1.2.3:8080"])
def test_a_bind_beyond_loopback_without_a_password_refuses_to_start(listen, tmp_path):
    env = dict(os.environ, DELAYQ_DATABASE_URL=f"sqlite:///{tmp_path}/d.db")
    env.pop("DELAYQ_WEB_PASSWORD", None)
    done = script(env, "web.py", "--listen", listen, timeout=60)
    host = listen.rsplit(":", 1)[0].strip("[]")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"web.py: error: refusing to listen on {host}:") and done.stderr.count("\n") == 1
    assert "DELAYQ_WEB_PASSWORD" in done.stderr
    assert not os.path.exists(tmp_path / "d.db")           # refused before touching the database


def test_a_short_password_is_refused_too(tmp_path):
    env = dict(os.environ, DELAYQ_DATABASE_URL=f"sqlite:///{tmp_path}/d.db", DELAYQ_WEB_PASSWORD="pa55w0rd")
    done = script(env, "web.py", "--listen", "0.0.0.0:0", timeout=60)
    assert done.returncode == 2 and "DELAYQ_WEB_PASSWORD is too short" in done.stderr and "pa55w0rd" not in done.stderr


@pytest.fixture(scope="module")
def core_python():
    """The python of a venv holding only the core wheel (make test builds it: DELAYQ_TEST_PYTHON), else built now."""
    python = os.environ.get("DELAYQ_TEST_PYTHON")
    if not python:
        done = subprocess.run([os.path.join(ROOT, "scripts", "wheel_env.sh")], capture_output=True, text=True,
                              cwd=ROOT, env=dict(os.environ, PY=sys.executable), timeout=600)
        assert done.returncode == 0, done.stderr
        python = done.stdout.strip().splitlines()[-1]
    return python


def test_the_core_wheel_runs_without_flask_and_web_says_how_to_install_the_extra(core_python, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DELAYQ_", "PYTHONPATH"))}
    env["DELAYQ_DATABASE_URL"] = f"sqlite:///{tmp_path}/d.db"
    probe = subprocess.run([core_python, "-c", "import importlib.util as u, sys, delayq, delayq.commands, "
                            "delayq.commands.web; print(u.find_spec('flask') is None, 'flask' in sys.modules, "
                            "'/lib/delayq' in delayq.__file__)"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert probe.stdout.split() == ["True", "False", "False"], probe.stderr
    helped = subprocess.run([core_python, "-m", "delayq", "--help"], capture_output=True, text=True, env=env,
                            cwd=tmp_path)
    assert helped.returncode == 0 and "  web " in helped.stdout and "run-due" in helped.stdout
    enqueued = subprocess.run([core_python, "-m", "delayq", "migrate"], capture_output=True, text=True, env=env,
                              cwd=tmp_path)
    assert enqueued.returncode == 0, enqueued.stderr
    refused = subprocess.run([core_python, "-m", "delayq", "web"], capture_output=True, text=True, env=env,
                             cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == ("delayq web: error: the web dashboard needs the web extra: pip install 'delayq[web]' "
                              "(Flask and waitress)\n")
    shipped = subprocess.run([core_python, "-c", "from importlib import resources; w = resources.files('delayq') / "
                              "'web'; print((w / 'templates' / 'job.html').is_file(), (w / 'static' / 'delayq.css')"
                              ".is_file())"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert shipped.stdout.split() == ["True", "True"], shipped.stderr        # the wheel carries the templates
