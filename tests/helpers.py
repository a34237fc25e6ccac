"""The suite's shared helpers, one per concept: a script as a subprocess, its JSON, a poll with a timeout, runner
passes, a side-effect log.

Plain functions; fixtures live in the conftest.py files (tests/conftest.py: `backend`, `q`, `clock`;
tests/acceptance/conftest.py: `world`, the private servers).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import time
from collections import Counter
from typing import Any, Callable

from delayq.runner import Runner
from tests.conftest import ROOT

BIN = os.path.join(ROOT, "bin")


def command(name: str, *args, python: str = sys.executable) -> list:
    """The argv of bin/NAME ARGS, or of `python -m delayq ARGS` when name is "delayq"; args may be bytes."""
    return [python, "-m", "delayq", *args] if name == "delayq" else [python, os.path.join(BIN, name), *args]


def environ(env, **settings) -> dict[str, str]:
    """A subprocess environment: env (a dict, or a Backend: its env()) with `settings` added, each as a string."""
    base = env.env() if hasattr(env, "env") else env
    return {**base, **{key: str(value) for key, value in settings.items()}}


def script(env, name: str, *args, check: int | None = None, timeout: float = 300, cwd=ROOT,
           python: str = sys.executable, **settings) -> subprocess.CompletedProcess:
    """bin/NAME (or `delayq`) ARGS as cron runs it, in env (see environ) plus settings; stdout and stderr decoded;
    check=None returns the CompletedProcess whatever its exit code, check=N asserts exit code N (the output in the
    message)."""
    argv = command(name, *args, python=python)
    done = subprocess.run(argv, capture_output=True, env=environ(env, **settings), cwd=cwd, timeout=timeout)
    done.stdout, done.stderr = (out.decode("utf-8", "replace") for out in (done.stdout, done.stderr))
    if check is not None:
        assert done.returncode == check, (f"{name} {' '.join(map(str, args))}: exit {done.returncode}, expected "
                                          f"{check}\nstdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}")
    return done


def as_json(done: subprocess.CompletedProcess) -> Any:
    """A script's stdout, parsed as JSON."""
    return json.loads(done.stdout)


def strict_json(text: str) -> Any:
    """JSON as the standard has it: Infinity and NaN are refused (ValueError), as jq and most parsers refuse them."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def effects(path) -> Counter:
    """How many lines of a jobs' side-effect log start with each word (an empty Counter while there is no log)."""
    return Counter(line.split()[0] for line in path.read_text().splitlines()) if path.exists() else Counter()


def until(condition: Callable[[], Any], timeout: float = 20.0, every: float = 0.05, detail: Any = None) -> Any:
    """Poll condition() every `every` s until it returns something true, and return that; past `timeout` s,
    AssertionError naming what was awaited (and `detail`, or what `detail()` returns, if given)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            said = detail() if callable(detail) else detail
            raise AssertionError(f"not true within {timeout:g} s: {_awaited(condition)} (last value {value!r})"
                                 + ("" if detail is None else f"; {said!r}"))
        time.sleep(every)


def _awaited(condition) -> str:
    """A condition as its source says it: a function's name, a lambda's line."""
    name = getattr(condition, "__name__", repr(condition))
    if name != "<lambda>":
        return name
    try:
        return " ".join(line.strip() for line in inspect.getsource(condition).splitlines())
    except (OSError, TypeError):
        return repr(condition)


def run(q, queues=("default",), batch: int = 200):
    """One runner pass over manager q (on its clock: the test's fake clock) for `queues`; the pass's Summary."""
    return Runner(q, list(queues), batch).run_pass()


def drain(q, queues=("default",), batch: int = 200) -> int:
    """Runner passes over manager q until one claims nothing (its clock unmoved); how many jobs succeeded."""
    ran = 0
    while True:
        summary = run(q, queues, batch)
        ran += summary.succeeded
        if not summary.claimed:
            return ran
