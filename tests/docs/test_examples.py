"""Every shell and Python example in README.md and docs/*.md runs here, so that none can go stale; every relative
link and #anchor there resolves.

How a doc's fenced blocks are treated (the rules a writer of docs follows):

- ```python: executed. A doc's Python blocks run in order in one fresh interpreter (tests/docs/session.py), sharing
  one namespace, as in one session: a later block may use what an earlier one defined.
- ```sh, ```bash: run command by command (a command may go on over lines with `\\` or an open quote; `# comments`
  are allowed), all in one bash per block, from the doc's application directory. Each command must exit 0, or the
  status its comment names: `delayq cancel --id 9   # exits 3: nothing pending`.
- ```console: the same, with a `$ ` before each command and its output under it. Each output line shown must
  appear in what the command printed, in that order (lines left out are not checked; `...` in a shown line is any
  text; runs of spaces compare equal, and so do any two ISO-8601 times and any two decimal numbers: durations).
- A command whose comment says `until Ctrl-C` is a server or a watch: it runs for UNTIL_STOPPED seconds, must still
  be running then, and is stopped with SIGINT.
- ```cron: each line's command (after the five time fields) runs once, as cron would run it: `cd /srv/shop && ...`.
- A block whose first line names a file, `# shop/jobs.py` or `# .env` (in ```python, ```ini, ```jsonl and the like),
  is a file of the doc's sample application: every such block is written into the application directory before the
  doc's first block runs (and .py files are compiled), so the docs define their own sample app, helpers included.
  JSON has no comments: there, the line that names the file is not written.
  A path appears once in a doc, unless a later block's first line says `(continued)`: it is appended.
- ```python blocks whose first line is `# file: PATH` are exempt by rule: they are copies of the sample apps'
  files (examples/django_app, examples/flask_app), and tests/unit/test_integration_docs.py checks that they match.
- ```text and unmarked ``` blocks are output or diagrams and are not run; one that holds a `$ ` command is refused.
- `<!-- not run: REASON -->` on the line before a block exempts it; the reason is required, and exemptions are
  counted (MAX_EXEMPT).

Each doc runs in a temporary application directory holding a copy of examples/ (the repository's example jobs,
so that commands written for the repository's root run there without writing into the checkout), `.venv` (a link
to the venv running these tests, with delayq installed: "the application's virtualenv") and the doc's sample-app
files, with a clean environment: PATH (that venv first), HOME, TZ=UTC, its own DELAYQ_PREFIX, and no
DELAYQ_DATABASE_URL: the embedded SQLite default, unless the doc names a server. Servers, paths and durations
the docs write for a reader are replaced by the test's, in one table: PLACEHOLDERS (and put back in what the
commands print before it is compared). What a block leaves running (a loop.sh run outlives its loop, as under
cron) is waited for before the next block. Afterwards the doc's tables and keys are dropped from the test MariaDB
and Redis. The docs run side by side, DELAYQ_DOCS_PARALLEL (2) at a time: each is one process that mostly waits.

What is not run: the blocks marked `<!-- not run: ... -->` (pip install, make test itself, private Redis clusters;
the test lists them when there are too many) and the sample-app copies above.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.conftest import MYSQL_URL, REDIS_URL, ROOT, drop_mysql, drop_redis, new_prefix, require
from tests.unit.test_integration_docs import DOCS as SAMPLE_COPY_DOCS

DOCS = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
MAX_EXEMPT = 12
SESSION_TIMEOUT = 240
PARALLEL = int(os.environ.get("DELAYQ_DOCS_PARALLEL", "2"))   # docs run at once

_mysql = urlsplit(MYSQL_URL)
_redis = urlsplit(REDIS_URL)
MYSQL_SHOWN = f"mysql://{_mysql.hostname}:{_mysql.port or 3306}{_mysql.path}"      # as delayq prints a URL
REDIS_SHOWN = f"redis://{_redis.hostname}:{_redis.port or 6379}{_redis.path}"
PYMYSQL_ARGS = (f'host="{_mysql.hostname}", port={_mysql.port or 3306}, user="{_mysql.username or "root"}", '
                f'password="{_mysql.password or ""}", database="{_mysql.path.lstrip("/")}"')

# What the docs write for a reader -> what runs here. {app}: the doc's application directory; {srv}: where that
# doc's /srv/shop is (its application, unless SRV below says otherwise).
PLACEHOLDERS = [
    ("mysql://app:secret@db1:3306/shop", MYSQL_URL),                    # the shop's MySQL: the test MariaDB
    ('host="db1", user="app", password="secret", database="shop"', PYMYSQL_ARGS),   # the same, as PyMySQL's kwargs
    ("redis://cache1:6379/0", REDIS_URL),                               # the shop's Redis: the test Redis, a db != 0
    ("/srv/shop", "{srv}"),                                             # the application's directory
    ("/opt/delayq", ROOT),                                              # a checkout of delayq: this one
    ("/var/log/delayq", "{app}/log"),
    ("/var/lib/node_exporter/textfile_collector", "{app}/textfile"),
    ("--for 55", "--for 1"),                                            # a cron minute's runner: one second here
    ("127.0.0.1:9109", "127.0.0.1:{port1}"),                            # the metrics endpoint: a free port
    ("127.0.0.1:8080", "127.0.0.1:{port2}"),                            # the dashboard: a free port
    ("0.0.0.0:8080", "0.0.0.0:{port2}"),
    ("mysql://app:wrong@db1:3306/shop", urlunsplit(_mysql._replace(netloc=f"{_mysql.username or 'root'}:wrong@"
                                                                          f"{_mysql.hostname}:{_mysql.port or 3306}"))),
    ("mysql://app:secret@db1:3306/shpo", urlunsplit(_mysql._replace(path="/shpo"))),   # a misspelt database
    ("redis://app:wrong@cache1:6379/0", urlunsplit(_redis._replace(netloc=f"app:wrong@{_redis.hostname}:"
                                                                          f"{_redis.port or 6379}"))),
]
SRV = {"docs/DJANGO.md": "examples/django_app", "docs/FLASK.md": "examples/flask_app"}   # the sample project is the app
UNTIL_STOPPED = 2           # seconds a command that runs `until Ctrl-C` runs here
LOOP_SECONDS = "2"          # bin/loop.sh's minute (DELAYQ_LOOP_SECONDS), so that a loop line ends in 2 s

RUN_LANGS = {"python", "sh", "bash", "shell", "console", "cron"}
FILE_LANGS = {"python", "ini", "dotenv", "env", "toml", "yaml", "json", "jsonl"}
NO_COMMENTS = {"json", "jsonl"}          # their file blocks are written without the line that names the file
FENCE = re.compile(r"^( {0,3})(`{3,})\s*([\w+-]*)[^`]*$")
MARKER = re.compile(r"^<!--\s*not run(?::\s*(.*?))?\s*-->\s*$")
FILE_HEADER = re.compile(r"^#\s+((?:[\w.-]+/)*[\w-]*\.[\w.]+)(?=$|[\s:,])(.*)$")
EXPECTED_EXIT = re.compile(r"#.*?\bexits? (\d+)\b")


@dataclass
class Block:
    doc: str
    line: int               # of the opening fence, 1-based
    lang: str
    text: str
    exempt: str | None      # the reason of a <!-- not run: ... --> marker ("" when it gives none)

    @property
    def first(self) -> str:
        return self.text.split("\n", 1)[0]

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def kind(self) -> str:
        if self.exempt is not None:
            return "exempt"
        if self.lang == "python" and self.first.startswith("# file: "):
            return "sample-copy"
        if self.lang in FILE_LANGS and FILE_HEADER.match(self.first):
            return "file"
        return self.lang if self.lang in RUN_LANGS else "output"


def read(doc: str) -> list[str]:
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        return f.read().split("\n")


def blocks(doc: str) -> list[Block]:
    lines, found, i = read(doc), [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = len(m.group(1)), m.group(2), m.group(3).lower()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), None)
        assert end is not None, f"{doc}:{i + 1}: a code block that never closes"
        text = "\n".join(line[indent:] for line in lines[i + 1:end])
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(before.strip())
        found.append(Block(doc, i + 1, lang, text, (marker.group(1) or "") if marker else None))
        i = end + 1
    return found


def prose(doc: str) -> list[tuple[int, str]]:
    """The doc's lines outside code blocks, numbered."""
    lines, inside, out = read(doc), None, []
    for n, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if inside is None and m:
            inside = m.group(2)
        elif inside is not None and line.strip() == inside:
            inside = None
        elif inside is None:
            out.append((n, line))
    return out


# -- the plan of one doc ----------------------------------------------------------------------------------------

@dataclass
class Command:
    run: str
    line: int
    exit: int = 0
    output: list | None = None


def complete(text: str) -> bool:
    if text.rstrip().endswith("\\"):
        return False
    try:
        shlex.split(text, comments=True)
    except ValueError:          # an open quote: the command goes on
        return False
    return True


def until_stopped(text: str) -> bool:
    return "until Ctrl-C" in text.rstrip().rsplit("\n", 1)[-1]


def expected_exit(text: str) -> int:
    m = EXPECTED_EXIT.search(text.rstrip().rsplit("\n", 1)[-1])
    return int(m.group(1)) if m else 0


def shell_commands(block: Block) -> list[Command]:
    commands: list[Command] = []
    pending: list[str] = []
    start = 0
    for n, line in enumerate(block.text.split("\n"), block.line + 1):
        if block.lang == "console" and not pending:
            if line.startswith("$ "):
                pending, start = [line[2:]], n
            else:
                assert commands or not line.strip(), f"{block.doc}:{n}: a console block starts with a `$ ` command"
                if commands and line.strip():
                    commands[-1].output.append(line)
                continue
        elif not pending:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pending, start = [line], n
        else:
            pending.append(line)
        text = "\n".join(pending)
        if complete(text):
            command = Command(text, start, expected_exit(text), [] if block.lang == "console" else None)
            if until_stopped(text):     # timeout(1) exits 124 when the command was still running: that is the check
                command.run, command.exit = f"timeout -s INT -k 5 {UNTIL_STOPPED} bash -c {shlex.quote(text)}", 124
            commands.append(command)
            pending = []
    assert not pending, f"{block.doc}:{start}: a command that never ends"
    return commands


def cron_commands(block: Block) -> list[Command]:
    """Each crontab line's command, in a subshell of its own (cron runs each line in a shell of its own)."""
    commands = []
    for n, line in enumerate(block.text.split("\n"), block.line + 1):
        line = line.strip()
        if not line or line.startswith("#") or re.match(r"^[A-Z_]+=", line):
            continue                    # comments, and SHELL=, PATH=, MAILTO= lines
        fields = line.split(None, 1 if line.startswith("@") else 5)
        assert len(fields) == (2 if line.startswith("@") else 6), f"{block.doc}:{n}: not a crontab line: {line}"
        commands.append(Command(f"( {fields[-1]}\n)", n))
    return commands


_ports: set[int] = set()           # given to a session already (sessions run side by side)


def free_port() -> int:
    """A port nobody listens on now, and not given to another session of this run."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _ports:
            _ports.add(port)
            return port


@dataclass
class Session:
    doc: str
    app: str
    prefix: str

    def __post_init__(self):
        self.ports = {"port1": free_port(), "port2": free_port()}

    @property
    def srv(self) -> str:
        return os.path.join(self.app, SRV[self.doc]) if self.doc in SRV else self.app

    def sub(self, text: str) -> str:
        for shown, actual in PLACEHOLDERS:
            text = text.replace(shown, actual.format(app=self.app, srv=self.srv, **self.ports))
        return text

    def reverse(self) -> list[tuple[str, str]]:
        """What the commands print -> how the docs show it (longest first)."""
        pairs = [(MYSQL_URL, "mysql://app:secret@db1:3306/shop"), (MYSQL_SHOWN, "mysql://db1:3306/shop"),
                 (MYSQL_SHOWN.rsplit("/", 1)[0] + "/", "mysql://db1:3306/"),
                 (REDIS_URL, "redis://cache1:6379/0"), (REDIS_SHOWN, "redis://cache1:6379/0"),
                 (self.srv, "/srv/shop"), (self.app, "/srv/shop"), (ROOT, "/opt/delayq"), (self.prefix, "delayq"),
                 (f":{self.ports['port1']}", ":9109"), (f":{self.ports['port2']}", ":8080")]
        return sorted(pairs, key=lambda pair: -len(pair[0]))

    def env(self) -> dict[str, str]:
        home = os.path.join(self.app, "..", "home")
        tmp = os.path.join(self.app, "..", "tmp")
        for d in (home, tmp):
            os.makedirs(d, exist_ok=True)
        return {"PATH": f"{sys.prefix}/bin:/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": tmp,
                "LANG": "C.UTF-8", "TZ": "UTC", "PYTHONDONTWRITEBYTECODE": "1",
                "DELAYQ_PREFIX": self.prefix, "DELAYQ_LOOP_SECONDS": LOOP_SECONDS}

    def make_app(self, found: list[Block]) -> None:
        shutil.copytree(os.path.join(ROOT, "examples"), os.path.join(self.app, "examples"),
                        ignore=shutil.ignore_patterns("__pycache__", "*.db", "*.db-*"))
        for d in {self.app, self.srv}:
            os.symlink(sys.prefix, os.path.join(d, ".venv"))
        for d in ("log", "textfile"):
            os.makedirs(os.path.join(self.app, d))
        written: set[str] = set()
        for block in found:
            if block.kind == "file":
                self.write(block, written)

    def write(self, block: Block, written: set[str]) -> None:
        path, rest = FILE_HEADER.match(block.first).groups()
        again = "(continued)" in rest
        assert again == (path in written), (f"{block.where}: {path} " + ("is written twice: say (continued) to add "
                                             "to it" if path in written else "says (continued) but comes first"))
        written.add(path)
        target = os.path.join(self.app, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        text = self.sub(block.text.split("\n", 1)[1] if block.lang in NO_COMMENTS else block.text) + "\n"
        with open(target, "a" if again else "w", encoding="utf-8") as f:
            f.write(text)
        if path.endswith(".py"):
            with open(target, encoding="utf-8") as f:
                compile(f.read(), f"{block.where} ({path})", "exec")
        package = os.path.dirname(target)                   # shop/jobs.py makes shop/ a package
        while package != self.app and not os.path.exists(os.path.join(package, "__init__.py")):
            open(os.path.join(package, "__init__.py"), "w").close()
            package = os.path.dirname(package)

    def steps(self, found: list[Block]) -> list[dict]:
        steps = []
        for block in found:
            if block.kind == "python":
                steps.append({"kind": "python", "where": block.where, "code": self.sub(block.text)})
            elif block.kind in ("sh", "bash", "shell", "console", "cron"):
                commands = cron_commands(block) if block.kind == "cron" else shell_commands(block)
                steps.append({"kind": block.kind, "where": block.where, "commands": [
                    {"run": self.sub(c.run), "where": f"{block.doc}:{c.line}", "exit": c.exit, "output": c.output}
                    for c in commands]})
        return steps


def runnable(doc: str) -> bool:
    return any(b.kind in RUN_LANGS for b in blocks(doc))


# -- the tests --------------------------------------------------------------------------------------------------

RUNNABLE = [d for d in DOCS if runnable(d)]


def run_session(doc: str, where) -> str | None:
    """Runs one doc's examples in a fresh directory; returns what went wrong, or None."""
    session = Session(doc, str(where / "app"), new_prefix())
    found = blocks(doc)
    os.makedirs(session.app)
    try:
        session.make_app(found)
        plan = {"steps": session.steps(found), "reverse": session.reverse()}
        with open(where / "plan.json", "w", encoding="utf-8") as f:
            json.dump(plan, f)
        with open(where / "session.log", "w") as log:
            proc = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "session.py"),
                                   str(where / "plan.json"), str(where / "result.json")],
                                  cwd=session.app, env=session.env(), stdout=log, stderr=subprocess.STDOUT,
                                  timeout=SESSION_TIMEOUT)
        with open(where / "session.log", encoding="utf-8", errors="replace") as f:
            log_text = f.read()
        if proc.returncode != 0 or not os.path.exists(where / "result.json"):
            return f"the session died:\n{log_text[-4000:]}"
        with open(where / "result.json", encoding="utf-8") as f:
            result = json.load(f)
        failure = result["failure"]
        if failure:
            return (f"{failure['where']}: {failure['what']}\n{failure['detail'][-3000:]}\n"
                    f"--- the session so far ({where / 'session.log'}):\n{log_text[-3000:]}")
        assert result["ran"] == len(plan["steps"])
        return None
    except Exception as exc:        # a doc that cannot even be planned (a broken file block, a command that never ends)
        return f"{type(exc).__name__}: {exc}"
    finally:
        drop_mysql(session.prefix)
        drop_redis(session.prefix)
        for ledgers in glob.glob(f"/dev/shm/delayq-{os.getuid()}-{session.prefix}-*"):   # of a runner ended by force
            shutil.rmtree(ledgers, ignore_errors=True)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """Every doc's session, PARALLEL at a time (each is one process that mostly waits on the servers), the longest
    first; each test below waits for its own."""
    require("mysql")
    require("redis")
    costs = {doc: sum(len(b.text) for b in blocks(doc) if b.kind in RUN_LANGS) for doc in RUNNABLE}
    with ThreadPoolExecutor(PARALLEL) as pool:
        yield {doc: pool.submit(run_session, doc, tmp_path_factory.mktemp("docs"))
               for doc in sorted(RUNNABLE, key=lambda d: -costs[d])}


@pytest.mark.parametrize("doc", RUNNABLE)
def test_examples_run(doc, sessions):
    problem = sessions[doc].result(timeout=SESSION_TIMEOUT * 2)
    assert problem is None, problem


@pytest.mark.parametrize("doc", DOCS)
def test_exemptions_name_a_reason_and_mark_a_block_that_would_run(doc):
    for block in blocks(doc):
        if block.exempt is not None:
            assert block.exempt.strip(), f"{block.where}: <!-- not run: ... --> needs a reason"
            assert block.lang in RUN_LANGS, f"{block.where}: a ```{block.lang or 'text'} block is not run anyway"
    lines = read(doc)
    for n, line in enumerate(lines, 1):
        if MARKER.match(line.strip()):
            after = next((l for l in lines[n:] if l.strip()), "")
            assert FENCE.match(after), f"{doc}:{n}: a not-run marker must stand on the line before a code block"


def test_exemptions_are_few():
    exempt = [(b.where, b.exempt) for doc in DOCS for b in blocks(doc) if b.kind == "exempt"]
    assert len(exempt) <= MAX_EXEMPT, f"{len(exempt)} blocks are not run (at most {MAX_EXEMPT}): {exempt}"


@pytest.mark.parametrize("doc", DOCS)
def test_no_command_hides_in_an_output_block(doc):
    """A `$ command` in a ```text block would never run: write it as ```console (or mark it not run)."""
    for block in blocks(doc):
        if block.kind == "output":
            prompts = [line for line in block.text.split("\n") if line.startswith("$ ")]
            assert not prompts, f"{block.where}: a command in a ```{block.lang or 'text'} block: {prompts[0]}"


@pytest.mark.parametrize("doc", DOCS)
def test_sample_copies_are_checked(doc):
    """`# file: PATH` blocks are exempt only where test_integration_docs compares them with the sample apps."""
    copies = [b.where for b in blocks(doc) if b.kind == "sample-copy"]
    assert not copies or doc in SAMPLE_COPY_DOCS, f"{copies}: add {doc} to tests/unit/test_integration_docs.py"


# -- links ------------------------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+).*?\1")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower case, punctuation but - and _ dropped, spaces to -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = re.sub(r"<[^>]+>", "", text).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose(os.path.relpath(path, ROOT)):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            out.add(base if base not in seen else f"{base}-{seen[base]}")
            seen[base] = seen.get(base, 0) + 1
    return out


@pytest.mark.parametrize("doc", DOCS)
def test_links_resolve(doc):
    bad = []
    for n, line in prose(doc):
        for _, target in LINK.findall(CODE_SPAN.sub("", line)):
            if re.match(r"^[a-z][a-z+.-]*:", target):
                continue                            # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(ROOT, os.path.dirname(doc), path)) if path else os.path.join(ROOT, doc)
            if not os.path.exists(full):
                bad.append(f"{doc}:{n}: {target}: no such file")
            elif anchor and not (full.endswith(".md") and anchor in anchors(full)):
                bad.append(f"{doc}:{n}: {target}: no heading with that anchor in {os.path.relpath(full, ROOT)}")
    assert not bad, "\n".join(bad)


def test_slugs_follow_github():
    assert slug("1. Order completed: one event, several handlers (seed 000)") == \
        "1-order-completed-one-event-several-handlers-seed-000"
    assert slug("The fault checker: the runner's invariants under random faults (`make chaos`)") == \
        "the-fault-checker-the-runners-invariants-under-random-faults-make-chaos"
    assert slug("Bulk actions: retry, cancel and purge by filter") == "bulk-actions-retry-cancel-and-purge-by-filter"
    assert slug("`stats`: per queue") == "stats-per-queue"
    assert slug("阶梯降频轮询 (stepped polling)") == "阶梯降频轮询-stepped-polling"
