"""Hypothesis strategies for every way into delayq: CLI flags, bulk lines, client arguments, pull puts, settings.

Each mixes values a user means (so that many cases become jobs that must display and run) with hostile ones:
lone surrogates (what a non-UTF-8 argv or a JSON "\\udc80" escape gives), control characters, nan and inf,
numbers at and just past every documented bound, integers too large for a float, times before 1970 and
after 3000, nesting past 64 and past the interpreter's recursion limit, values of the wrong type.

A job argument named `path` is where the example jobs append their side effects: the strategies write the
PATH placeholder, and the harness puts its own temporary file there (never a path Hypothesis made up).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal

from hypothesis import strategies as st

from delayq import validate

PATH = "@PATH@"
NOW = time.time()
DAY = 86400.0

# -- scalars -------------------------------------------------------------------------------------------
CHARS = st.one_of(st.characters(), st.characters(categories=["Cs"]),
                  st.sampled_from(list("\x00\t\n\r\x1b\x7f :,.-_~%'\"{}[]\\/@?#=é中")))
TEXT = st.text(CHARS, max_size=24)
PRINTABLE = st.text(st.characters(categories=["L", "N", "P", "S"]), min_size=1, max_size=40)
BOUNDS = [0, 1, -1, 0.5, 0.999, 1.0001, 60, 1000, 1001, -1000, -1001, 1024, 1025, 10_000, 10_001,
          validate.MAX_DELAY, validate.MAX_DELAY + 1, validate.MAX_LEASE, validate.MAX_LEASE + 1,
          366 * DAY, 366 * DAY + 1, validate.MAX_TIME, validate.MAX_TIME + 1, NOW, NOW + 60, NOW - 3600,
          1e20, -1e20, 1e300, 5e-324, -0.0, 2 ** 53 + 1, 2 ** 63, 2 ** 64, 10 ** 400, -(10 ** 400), 10 ** 5000]
NUMBERS = st.one_of(st.sampled_from(BOUNDS), st.integers(-2 ** 70, 2 ** 70), st.floats())
SPECIAL = st.sampled_from([
    "", " ", "0", "-0", "1", "-1", "1e20", "1e400", "-1e400", "inf", "-inf", "Infinity", "nan", "NaN", "0x10",
    "1_000", "١٢٣", "15s", "3m", "2h", "1d", "5w", "1.5h", ".5", "5.", "99999999999999999999", "36500d",
    "36501d", "367d", "366d", "604800", "604801", "10000", "10001", "1000", "1001", "-1001", "true",
    "9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00", "1969-12-31T23:59:59Z", "3000-01-01T00:00:00Z",
    "2999-12-31T23:59:59+14:00", "2030-01-01", "2030-01-01T00:00:00\udc80", "2030-02-30T00:00:00",
    "wechat", "alipay", "stepped", "exp:5:3600:10", "exp:0:1:1", "exp:1:31622401:5", "15,30,inf",
    ",".join(["1"] * 1001), ",".join(["1"] * 128), ",".join(["1"] * 129), "order:\udcff", "order:\x00", "a" * 192, "x" * 70_000, "{}", "[]", "null",
    '{"a":' * 5000 + "1" + "}" * 5000, "os:system", "~sms", "default", "q" * 65,
])
NUMBER_TEXT = NUMBERS.map(lambda n: "1" + "0" * 5000 if isinstance(n, int) and n.bit_length() > 10_000 else str(n))
DATETIMES = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31),
                         timezones=st.none() | st.builds(timezone, st.timedeltas(timedelta(hours=-23),
                                                                                 timedelta(hours=23))))
TIMEDELTAS = st.one_of(st.timedeltas(), st.sampled_from([timedelta.max, timedelta.min, timedelta(0)]))
ODD = st.sampled_from([Decimal("1e20"), Decimal("NaN"), Decimal("5"), complex(1, 1), b"15", bytearray(b"1"),
                       {1, 2}, (1, 2), object(), float, print])
VALUE = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT, SPECIAL, NUMBER_TEXT, DATETIMES, TIMEDELTAS, ODD,
                  st.binary(max_size=4), st.lists(st.integers(), max_size=3),
                  st.dictionaries(TEXT, st.integers(), max_size=2))


def deep(depth: int) -> dict:
    root = node = {}
    for _ in range(depth):
        node["a"] = node = {}
    return root


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats() | TEXT,
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(TEXT, kids, max_size=3),
                    max_leaves=8)
DEEP = st.sampled_from([63, 64, 65, 200]).map(deep)     # 5,000 deep: as text, in SPECIAL

# -- what a user means, per field: (as CLI text, as a Python value) ----------------------------------------
FUTURE = st.floats(min_value=NOW + 120, max_value=validate.MAX_TIME - 1)
ZONES = {"Z": 0, "+08:00": 8, "-12:00": -12, "+14:00": 14}


def _iso(stamp: float, zone: str | None) -> str:
    """ISO-8601 text for an epoch time: naive (the local time zone, as the CLI reads it) or with an offset."""
    if zone is None:
        return datetime.fromtimestamp(stamp).isoformat()
    local = datetime.fromtimestamp(stamp, timezone(timedelta(hours=ZONES[zone])))
    return local.replace(tzinfo=None).isoformat() + zone


ISO = st.builds(_iso, FUTURE, st.sampled_from([None, *ZONES]))
DURATION_TEXT = st.one_of(st.sampled_from(["0", "5", "90s", "15m", "2h", "1d", "1.5h", "0.25"]),
                          st.integers(0, int(validate.MAX_DELAY)).map(str))
LEASE_TEXT = st.one_of(st.sampled_from(["1", "30s", "5m", "1h", "7d"]), st.integers(1, 604800).map(str))
LADDER_TEXT = st.one_of(st.sampled_from(["wechat", "alipay", "stepped", "15,30,3m", "exp:5:3600:10", "0",
                                         "366d", "0,0", "1,2,3"]),
                        st.lists(st.integers(0, 366 * 86400), min_size=1, max_size=40).map(
                            lambda xs: ",".join(map(str, xs))))
QUEUES = ["default", "sms", "report", "mail.eu", "a-b_c"]
MEANT_TEXT = {
    "delay": DURATION_TEXT, "at": ISO | FUTURE.map(lambda t: str(int(t))), "ext": PRINTABLE,
    "queue": st.sampled_from(QUEUES), "ladder": LADDER_TEXT, "max_attempts": st.integers(1, 10_000).map(str),
    "deadline": st.sampled_from(["1d", "3m", "2h", "36500d"]) | ISO, "priority": st.integers(-1000, 1000).map(str),
    "lease": LEASE_TEXT, "timeout": LEASE_TEXT, "on_timeout": st.sampled_from(["examples.shop:noop"]),
}
MEANT_VALUE = {
    **MEANT_TEXT,
    "delay": DURATION_TEXT | st.floats(0, validate.MAX_DELAY) | st.integers(0, 10 ** 6) |
    st.timedeltas(timedelta(0), timedelta(days=36_000)),
    "at": ISO | FUTURE | st.datetimes(datetime(2040, 1, 1), datetime(2990, 1, 1)),
    "ladder": LADDER_TEXT | st.lists(st.one_of(st.integers(0, 86400), st.sampled_from(["15s", "3m"])),
                                     min_size=1, max_size=4),
    "max_attempts": st.integers(1, 10_000), "priority": st.integers(-1000, 1000),
    "lease": st.floats(1, validate.MAX_LEASE) | LEASE_TEXT, "timeout": st.integers(1, 604800),
    "unique": st.booleans(),
}
FIELDS = ["delay", "at", "ext", "queue", "ladder", "max_attempts", "deadline", "priority", "lease", "timeout",
          "on_timeout"]


def field_text(name: str):
    """A flag's value as text: meant, hostile, or a number at a bound; no NUL (argv cannot carry one)."""
    return st.one_of(MEANT_TEXT[name], MEANT_TEXT[name], TEXT, SPECIAL, NUMBER_TEXT).map(lambda t: t.replace("\x00", ""))


def field_value(name: str):
    return st.one_of(MEANT_VALUE[name], MEANT_VALUE[name], VALUE)


# built once: drawing from a strategy is cheap, building one is not
FIELD_TEXT = {name: field_text(name) for name in MEANT_TEXT}
FIELD_VALUE = {name: field_value(name) for name in MEANT_VALUE}
SOME_FIELDS = st.sets(st.sampled_from(FIELDS), max_size=4)
SOME_KEYS = st.sets(st.sampled_from(FIELDS + ["unique"]), max_size=4)
MEANT_RAW = {name: MEANT_VALUE[name] if name in ("max_attempts", "priority", "unique") else MEANT_TEXT[name]
             for name in FIELDS + ["unique"]}
ANY_RAW = {name: st.one_of(meant, st.integers(-2 ** 70, 2 ** 70), st.floats(), TEXT, SPECIAL, JSON)
           for name, meant in MEANT_RAW.items()}


# -- callables and their arguments ---------------------------------------------------------------------
ORDER = st.integers(-2 ** 70, 2 ** 70)
CALLS = {
    "examples.shop:noop": st.just({}),
    "examples.shop:auto_confirm": st.fixed_dictionaries({"order_id": ORDER}),
    "examples.shop:refund_rejected": st.fixed_dictionaries({"order_id": ORDER}),
    "examples.shop:flaky_sync": st.fixed_dictionaries({"order_id": ORDER}, optional={
        "fail_times": st.integers(0, 3), "path": st.just(PATH)}),
    "examples.shop:record": st.fixed_dictionaries({"path": st.just(PATH), "tag": PRINTABLE | TEXT}),
    "examples.shop:Orders.close": st.fixed_dictionaries({"order_id": ORDER}),
    "examples.shop:Orders.ping": st.just({}),
    "examples.shop:Payments.refund": st.fixed_dictionaries({"order_id": ORDER}),
    "examples.shop:charge": st.fixed_dictionaries({"path": st.just(PATH)}, optional={"fail": st.booleans()}),
    "examples.shop:SendGift": st.fixed_dictionaries({"path": st.just(PATH)}, optional={
        "star_failures": st.integers(0, 2), "charge_fails": st.booleans()}),
    "examples.shop:poll_payment": st.fixed_dictionaries({"trade_no": PRINTABLE, "path": st.just(PATH)}, optional={
        "paid_after": st.integers(-1, 3)}),
    "examples.shop:mark_timed_out": st.fixed_dictionaries({"path": st.just(PATH)}),
}
REFUSED_CALLS = ["os:system", "builtins:eval", "subprocess:run", "examples.shop:not_a_job", "examples.shop:_effect",
                 "examples.__init__:noop", "examples.shop.__init__:noop", "examples.shop", "examples.shop:Orders",
                 "examples.shop:Orders._secret", "examples.nope:x", "examples.shop:nope", "examples:shop",
                 "examples.shop:noop.__call__", "examples.shop:__builtins__", " examples.shop:noop", "a" * 300]
CALL_NAME = st.one_of(st.sampled_from(sorted(CALLS)), st.sampled_from(sorted(CALLS)), st.sampled_from(REFUSED_CALLS),
                      TEXT)
ARGS = st.one_of(st.just({}), JSON.filter(lambda v: isinstance(v, dict)), JSON, DEEP,
                 st.dictionaries(st.sampled_from(["order_id", "path", "tag", "x", "\ud800"]), JSON, max_size=3))


@st.composite
def call_and_args(draw, meant: bool = False):
    """(callable name, its arguments): a marked example job with arguments that fit, or (not meant) anything."""
    if meant:
        call = draw(st.sampled_from(sorted(CALLS)))
        return call, draw(CALLS[call])
    call = draw(CALL_NAME)
    args = draw(CALLS[call]) if call in CALLS and draw(st.integers(0, 3)) else draw(ARGS)
    return call, args


def json_text(value) -> str:
    """JSON as a hostile sender may write it: Infinity and NaN tokens, \\udc80 escapes, 5,000 levels."""
    try:
        return json.dumps(value, allow_nan=True)
    except (ValueError, RecursionError):
        return '{"a":' * 5000 + "1" + "}" * 5000


# -- the entry points ----------------------------------------------------------------------------------
@st.composite
def cli_argv(draw) -> list[str]:
    """Flags as a user types them (six cases in ten), or with hostile values and tokens."""
    meant = draw(st.integers(0, 9)) < 6
    call, args = draw(call_and_args(meant))
    argv = []
    if meant or draw(st.integers(0, 19)):
        argv.append("--call=" + call.replace("\x00", ""))
    if args != {} or draw(st.booleans()):
        text = json_text(args) if meant else draw(st.one_of(st.just(json_text(args)), TEXT, SPECIAL))
        argv.append("--args=" + text.replace("\x00", ""))
    for name in draw(SOME_FIELDS):
        value = draw(MEANT_TEXT[name] if meant else FIELD_TEXT[name])
        argv.append(f"--{name.replace('_', '-')}=" + value.replace("\x00", ""))
    if draw(st.integers(0, 5)) == 0:
        argv.append("--unique")
    if not meant and draw(st.integers(0, 10)) == 0:
        argv.append(draw(st.sampled_from(["--bogus", "positional", "--delay", "--", "--from-file=/nonexistent",
                                          "--unique=yes", "--queue"])))
    return draw(st.permutations(argv))


@st.composite
def raw_job(draw) -> dict:
    """One bulk line's object: the flags' names as keys (plus, now and then, one that is not)."""
    meant = draw(st.integers(0, 9)) < 8
    call, args = draw(call_and_args(meant))
    job = {"call": call} if meant or draw(st.integers(0, 19)) else {}
    if args != {} or draw(st.booleans()):
        job["args"] = args if meant else draw(st.one_of(st.just(args), JSON, TEXT))
    for name in draw(SOME_KEYS):
        job[name] = draw(MEANT_RAW[name] if meant else ANY_RAW[name])
    if not meant and draw(st.integers(0, 10)) == 0:
        job[draw(TEXT)] = draw(JSON)
    return job


BAD_LINES = st.sampled_from([b"{broken", b"[1, 2]", b'"text"', b"\xff\xfe{}", b"{}", b"null", b"1e400",
                             b'{"call": "examples.shop:noop", "args": ' + b'[' * 5000 + b']' * 5000 + b"}",
                             b'{"call": "examples.shop:noop"} trailing', b"\x00", b'{"call": "\xc3("}'])


@st.composite
def bulk_lines(draw) -> list[bytes]:
    """A JSON-lines file: all of it is written, or none of it (a bad line names its number)."""
    lines = []
    for job in draw(st.lists(raw_job(), min_size=1, max_size=3)):
        ascii_only = draw(st.booleans())
        text = json.dumps(job, allow_nan=True, ensure_ascii=ascii_only) if _dumpable(job) else "{}"
        lines.append(text.encode("utf-8", "surrogatepass"))   # a lone surrogate as bytes: not UTF-8
    if draw(st.integers(0, 7)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(BAD_LINES | st.just(b"") | st.just(b"   ")))
    return lines


def _dumpable(job: dict) -> bool:
    try:
        json.dumps(job, allow_nan=True)
        return True
    except (ValueError, RecursionError, TypeError):
        return False


CALLABLES = st.sampled_from(["examples.shop:noop", "function:noop", "function:Orders.close", "function:not_a_job",
                             "lambda", "builtin:print", "function:Orders"])


@st.composite
def client_call(draw) -> tuple:
    """(call, args, options) for Client.enqueue; call may be a function object or a name."""
    meant = draw(st.integers(0, 9)) < 6
    call, args = draw(call_and_args(meant))
    if draw(st.integers(0, 5)) == 0:
        call = draw(CALLABLES)
    if not meant and draw(st.integers(0, 3)) == 0:
        args = draw(st.one_of(VALUE, st.just(json_text(args)), DEEP))
    options = {}
    for name in draw(SOME_KEYS):
        options[name] = draw(MEANT_VALUE[name] if meant else FIELD_VALUE[name])
    return call, args, options


@st.composite
def pull_put(draw) -> tuple:
    meant = draw(st.integers(0, 9)) < 6
    tubes = st.sampled_from(["sms", "mail.eu", "q-1"])
    tube = draw(tubes if meant else st.one_of(tubes, st.sampled_from(["~sms", "a" * 65, ""]), TEXT, VALUE))
    data = draw(JSON.filter(lambda v: _dumpable({"v": v})) if meant else st.one_of(JSON, DEEP, VALUE))
    options = {}
    for name, value in (("delay", DURATION_TEXT | st.floats(0, 1e6)), ("priority", st.integers(-1000, 1000)),
                        ("ttr", LEASE_TEXT | st.integers(1, 604800))):
        if draw(st.integers(0, 2)) == 0:
            options[name] = draw(value if meant else st.one_of(value, VALUE))
    return tube, data, options


# -- settings ------------------------------------------------------------------------------------------
HOSTS = st.sampled_from(["127.0.0.1", "localhost", "[::1]", "::1", "a" * 64 + ".example", "db", "",
                         "[::1", "h\x00st", "é.example", "xn--bcher-kva.example", "1.2.3.4.5", "a..b", "-a", "_a",
                         "h st", "[fe80::1%25eth0]", "[::ffff:127.0.0.1]"]) | TEXT
PORTS = st.sampled_from(["", ":1", ":0", ":65535", ":65536", ":99999", ":-1", ":abc", ":", ":3306x"])
QUERIES = st.sampled_from(["", "?db=x", "?db=1", "?socket_timeout=0", "?socket_connect_timeout=1",
                           "?max_connections=-1", "?max_connections=5", "?protocol=9", "?health_check_interval=x",
                           "?ssl_cert_reqs=bogus", "?decode_responses=maybe", "?x=\udc80", "?retry_on_timeout=yes"])


@st.composite
def url(draw) -> str:
    scheme = draw(st.sampled_from(["mysql", "mysql", "sqlite", "redis", "redis", "rediss", "unix", "postgres",
                                   "http", ""]) | TEXT)
    if scheme in ("sqlite", "unix") and draw(st.booleans()):
        return scheme + ":" + draw(st.sampled_from(["///", "//", "/", "////"])) + draw(TEXT | st.just("x.db"))
    user = draw(st.sampled_from(["", "root@", "shop:s3cret@", ":pw@", "密码:密码@", "u:%ff@", "u:\udc80@"]) | TEXT)
    path = draw(st.sampled_from(["", "/", "/0", "/test", "/15", "/abc", "/db/x", "/\udc80"]) | TEXT)
    return f"{scheme}://{user}{draw(HOSTS)}{draw(PORTS)}{path}{draw(QUERIES)}"


QUEUE_DEFAULTS = st.dictionaries(
    st.sampled_from(QUEUES) | TEXT,
    st.one_of(st.dictionaries(st.sampled_from(sorted(validate.QUEUE_DEFAULT_KEYS)) | TEXT,
                              st.one_of(JSON, LADDER_TEXT, st.integers(0, 20_000), st.floats()), max_size=4), JSON),
    max_size=3)
SETTINGS = {
    "DELAYQ_DATABASE_URL": url() | st.just("sqlite:///fuzz.db") | TEXT,
    "DELAYQ_REDIS_URL": url() | st.just("redis://127.0.0.1:1/0") | TEXT,
    "DELAYQ_PREFIX": st.sampled_from(["delayq", "a", "A" * 40, "a" * 41, "1a", "a-b", "a b", "_a", "ä"]) | TEXT,
    "DELAYQ_LEASE": FIELD_TEXT["lease"],
    "DELAYQ_DB_TIMEOUT": FIELD_TEXT["lease"],
    "DELAYQ_REDIS_TIMEOUT": FIELD_TEXT["lease"],
    "DELAYQ_QUEUES": QUEUE_DEFAULTS.map(lambda q: json.dumps(q, allow_nan=True)) | TEXT | SPECIAL,
    "DELAYQ_ALLOWED_MODULES": st.sampled_from(["examples", "examples,os", "", ",", " examples "]) | TEXT,
    "DELAYQ_EVENT_MODULES": st.sampled_from(["examples.events", ""]) | TEXT,
    "DELAYQ_LOG_FORMAT": st.sampled_from(["kv", "json", "xml", ""]) | TEXT,
    "DELAYQ_APP_PATH": TEXT,
}
ENV = st.fixed_dictionaries({}, optional=SETTINGS)
