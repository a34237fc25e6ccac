"""The fuzz suite's world: one store per test function, every generated case checked and counted.

A case is either refused (exit 2, or InvalidInput / ConfigError from the library) with the jobs table
exactly as it was, or accepted: the row count grows by what was created. Anything else (exit 1,
"internal error", another exception) fails the test. After the cases, every accepted job is shown by
`list`, `show` and `stats` (and its Prometheus file) and run by a runner pass; each gets an outcome.
"""

from __future__ import annotations

import io
import math
import os
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from delayq import app, commands, config, validate
from delayq.client import Client
from delayq.clock import FakeClock, SystemClock
from delayq.errors import BackendError, ConfigError, InvalidInput
from delayq.index import StoreIndex
from delayq.manager import Manager
from delayq.pull import Queue
from delayq.registry import Registry, name_of
from delayq.runner import Runner
from examples import shop
from tests.conftest import ALLOWED, make_backend
from tests.fuzz.strategies import PATH
from tests.helpers import strict_json

FAR = validate.MAX_TIME + 2 * 366 * 86400.0      # after every due time and deadline validation admits
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
CALLABLES = {"function:noop": shop.noop, "function:Orders.close": shop.Orders.close,
             "function:not_a_job": shop.not_a_job, "lambda": lambda: None, "builtin:print": print,
             "function:Orders": shop.Orders}


@dataclass
class Tally:
    """Cases per entry point, for the summary line (tests/fuzz/conftest.py) and the 10,000 floor."""

    cases: Counter = field(default_factory=Counter)
    accepted: Counter = field(default_factory=Counter)
    internal_errors: int = 0
    rows_left: int = 0
    functions: set = field(default_factory=set)

    def line(self) -> str:
        total = sum(self.cases.values())
        parts = ", ".join(f"{name} {n}" for name, n in sorted(self.cases.items()))
        return (f"fuzzed validation boundary: {total} generated cases ({sum(self.accepted.values())} became jobs "
                f"that were displayed and run), {self.internal_errors} internal errors, {self.rows_left} rows left "
                f"behind by refused cases [{parts}]")


TALLY = Tally()


class World:
    def __init__(self, kind: str, entry: str, tmp_path, monkeypatch):
        self.entry = f"{entry} ({'MariaDB' if kind == 'mysql' else 'SQLite'})"
        self.backend = make_backend(kind, tmp_path, FakeClock())
        self.tmp = tmp_path
        self.effects = str(tmp_path / "effects.log")
        self.env = {"DELAYQ_DATABASE_URL": self.backend.database_url, "DELAYQ_PREFIX": self.backend.prefix,
                    "DELAYQ_ALLOWED_MODULES": ",".join(ALLOWED)}
        for key in [k for k in os.environ if k.startswith("DELAYQ_")]:
            monkeypatch.delenv(key)
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(tmp_path)                  # no .env here: the commands read exactly self.env
        self.manager = app.open_manager(config.load(self.env, None))
        self.client = Client(self.manager)
        self.ids: list[int] = []
        self.known: set[int] = set()
        self.puts: Counter = Counter()
        self.rows = self.count()
        TALLY.functions.add(self.entry)

    def close(self) -> None:
        self.manager.close()
        self.backend.cleanup()

    # -- bookkeeping ---------------------------------------------------------------------------------
    def count(self) -> int:
        with self.manager.store.tx(write=False) as cur:
            cur.execute(f"SELECT COUNT(*) FROM {self.backend.prefix}_jobs")
            return int(cur.fetchone()[0])

    def refused(self, what: str) -> None:
        TALLY.cases[self.entry] += 1
        now = self.count()
        if now != self.rows:
            TALLY.rows_left += now - self.rows
            raise AssertionError(f"refused, yet {now - self.rows} row(s) written: {what}")

    def created(self, ids: list[int]) -> None:
        TALLY.cases[self.entry] += 1
        TALLY.accepted[self.entry] += 1
        new = [job for job in dict.fromkeys(ids) if job not in self.known]     # --unique repeats: one row
        self.ids += new
        self.known.update(new)
        self.rows += len(new)
        assert self.count() == self.rows, ids

    def internal(self, what: str) -> None:
        TALLY.internal_errors += 1
        raise AssertionError(f"internal error: {what}")

    def fill(self, value: Any) -> Any:
        """The PATH placeholder replaced by this world's side-effect file, wherever it appears."""
        if isinstance(value, str):
            return value.replace(PATH, self.effects)
        if isinstance(value, bytes):
            return value.replace(PATH.encode(), self.effects.encode())
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        return value

    def command(self, name: str, argv: list[str]) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = commands.run(name, argv, prog=f"delayq {name}")
            except SystemExit as exc:         # argparse's usage errors: exit 2, as the script exits
                code = exc.code
        return code, out.getvalue(), err.getvalue()

    def usage_error(self, code: int, err: str, what: Any) -> bool:
        """True for a refusal as documented (exit 2, one line); an internal error fails the test."""
        if code != 2 or err.count("\n") != 1 or "Traceback" in err or "internal error" in err:
            self.internal(f"exit {code}: {err[:500]!r} for {what!r}"[:2000])
        return True

    # -- entry points ----------------------------------------------------------------------------------
    def cli(self, argv: list[str]) -> None:
        code, out, err = self.command("enqueue", [self.fill(a) for a in argv] + ["--json"])
        if code == 0:
            self.created([strict_json(out)["id"]])
        elif self.usage_error(code, err, argv):
            self.refused(err)

    def bulk(self, lines: list[bytes]) -> None:
        path = self.tmp / "jobs.jsonl"
        path.write_bytes(b"\n".join(self.fill(line) for line in lines) + b"\n")
        code, out, err = self.command("enqueue", ["--from-file", str(path), "--json"])
        if code == 0:
            self.created(strict_json(out)["ids"])
        elif self.usage_error(code, err, lines):
            assert "nothing was enqueued" in err, err
            self.refused(err)

    def client_enqueue(self, call: Any, args: Any, options: dict) -> None:
        call = CALLABLES.get(call, call) if isinstance(call, str) else call
        args, options = self.fill(args), self.fill(options)
        try:
            result = self.client.enqueue(call, args, **options)
        except InvalidInput as exc:
            self.refused(str(exc))
        except Exception as exc:  # noqa: BLE001 - anything else is the defect this suite looks for
            self.internal(f"{type(exc).__name__}: {exc} for {(call, args, options)!r}"[:2000])
        else:
            self.created([result.id])
            if result.created:
                self._stored_as_validated(result.id, {"call": name_of(call) if callable(call) else call,
                                                      "args": args, **options})

    def _stored_as_validated(self, job_id: int, raw: dict) -> None:
        """What validation made of the input is what the store kept: no column cut it short or rounded it."""
        raw = {k: v for k, v in raw.items() if v is not None and not (k == "unique" and not v)}
        spec = validate.job(raw, self.manager.clock.now(), Registry(ALLOWED))
        job = self.manager.reports.get(job_id)
        kept = (job.call, job.args_json, job.queue, job.ext, job.ladder, job.max_attempts, job.priority,
                job.on_timeout, bool(job.at_most_once))
        meant = (spec.call, spec.args_json, spec.queue, spec.ext, spec.ladder, spec.max_attempts, spec.priority,
                 spec.on_timeout, spec.at_most_once)
        assert kept == meant, (kept, meant)
        for stored, given in ((job.lease, spec.lease), (job.timeout, spec.timeout)):
            assert stored == given or abs(stored - given) <= 1e-6 * given, (stored, given)

    def put(self, tube: Any, data: Any, options: dict) -> None:
        try:
            message = Queue(self.manager).put(tube, data, **options)
        except InvalidInput as exc:
            self.refused(str(exc))
        except Exception as exc:  # noqa: BLE001
            self.internal(f"{type(exc).__name__}: {exc} for {(tube, data, options)!r}"[:2000])
        else:
            self.created([message])
            self.puts[tube] += 1

    def settings(self, env: dict[str, str]) -> None:
        """Settings are refused (ConfigError), or drivers accept them and each configured queue takes a job."""
        try:
            settings = config.load(env, None)
        except ConfigError as exc:
            self.refused(str(exc))
            return
        except Exception as exc:  # noqa: BLE001
            self.internal(f"{type(exc).__name__}: {exc} for {env!r}"[:2000])
        try:
            self._drivers_accept(settings)
            manager = Manager(self.manager.store, StoreIndex(self.manager.store), Registry(ALLOWED), SystemClock(),
                              lease=settings.lease, queues=settings.queues)
            ids = [manager.enqueue("examples.shop:noop", queue=name).id for name in settings.queues]
        except Exception as exc:  # noqa: BLE001 - accepted settings must work: even InvalidInput is a defect here
            self.internal(f"accepted settings failed: {type(exc).__name__}: {exc} for {env!r}"[:2000])
        self.created(ids)

    def _drivers_accept(self, settings: config.Config) -> None:
        """Build the store and index (lazy); for a URL on a closed loopback port, connect: only BackendError."""
        manager = app.open_manager(settings)
        try:
            for url, probe in ((settings.database_url, manager.store.check_schema),
                               (settings.redis_url, manager.index.server_time)):
                parts = urlsplit(url or "")
                if parts.scheme in ("mysql", "redis", "rediss") and parts.hostname in LOOPBACK and parts.port == 1:
                    try:
                        probe()
                    except BackendError:
                        pass
        finally:
            manager.close()

    # -- every accepted job displayed and run ---------------------------------------------------------------
    def display_and_run(self) -> None:
        self._display(every=1)
        fake = Manager(self.manager.store, StoreIndex(self.manager.store), Registry(ALLOWED), FakeClock(FAR))
        queues = sorted({q for q, in self._query("SELECT DISTINCT queue FROM {jobs}") if not q.startswith("~")})
        if queues:
            runner = Runner(fake, queues, batch=1000)
            for _ in range(30):
                if not runner.run_pass().claimed:
                    break
            runner.close()
        pull = Queue(fake)
        for tube, count in self.puts.items():
            got = 0
            while (message := pull.reserve(tube)) is not None:
                pull.delete(message)
                got += 1
            assert got == count, (tube, got, count)
        unrun = self._query("SELECT j.id, j.status FROM {jobs} j WHERE NOT EXISTS "
                            "(SELECT 1 FROM {attempts} a WHERE a.job_id = j.id)")
        assert not unrun, f"jobs without an outcome after the runner's passes: {unrun[:20]}"
        self.rows = self.count()
        self._display(every=10)

    def _display(self, every: int) -> None:
        code, out, err = self.command("list", ["--limit", "10000", "--json"])
        assert code == 0 and "(out of range)" not in out, err
        assert len(strict_json(out)["jobs"]) == min(self.rows, 10_000)
        code, _, err = self.command("list", ["--limit", "10000"])
        assert code == 0, err
        prom = self.tmp / "delayq.prom"
        code, out, err = self.command("stats", ["--json", "--prom", str(prom)])
        assert code == 0, err
        strict_json(out)
        for line in prom.read_text().splitlines():
            assert line.startswith("#") or math.isfinite(float(line.rsplit(" ", 1)[1])), line
        for n, job in enumerate(self.ids):
            if n % every:
                continue
            code, out, err = self.command("show", ["--id", str(job), "--json"])
            assert code == 0 and "(out of range)" not in out, (job, out, err)
            strict_json(out)
            if n % (5 * every) == 0:
                code, out, err = self.command("show", ["--id", str(job)])
                assert code == 0, (job, err)

    def _query(self, sql: str) -> list[tuple]:
        prefix = self.backend.prefix
        with self.manager.store.tx(write=False) as cur:
            cur.execute(sql.format(jobs=f"{prefix}_jobs", attempts=f"{prefix}_attempts"))
            return [tuple(row) for row in cur.fetchall()]
