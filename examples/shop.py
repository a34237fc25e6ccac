"""Example jobs for the demo (`make run`) and the tests: what an app's job module looks like."""

import os

import delayq


@delayq.job
def auto_confirm(order_id: int) -> None:
    """Confirm receipt of an order the buyer did not confirm (seed 004)."""
    print(f"  order {order_id}: receipt confirmed automatically")


@delayq.job
def flaky_sync(order_id: int, fail_times: int = 1, path: str = "") -> None:
    """Sync to the ERP; fails its first `fail_times` attempts, then succeeds."""
    attempt = delayq.current_job().attempt
    if attempt <= fail_times:
        raise ConnectionError(f"ERP timed out (attempt {attempt})")
    print(f"  order {order_id}: synced to ERP on attempt {attempt}")


@delayq.job
def refund_rejected(order_id: int) -> None:
    """A business error that retrying cannot fix (the seed's error code 10000)."""
    raise delayq.Permanent(f"order {order_id} was already refunded")


@delayq.job
def noop() -> None:
    """Does nothing: for throughput measurements."""


@delayq.job
def record(path: str, tag: str) -> None:
    """Append one line to a side-effect log, so tests count executions from outside."""
    _effect(path, tag)


@delayq.job
class Orders:
    """A marked class: its public methods are jobs ('examples.shop:Orders.close')."""

    def close(self, order_id: int) -> None:
        print(f"  order {order_id}: closed")

    @staticmethod
    def ping() -> str:
        return "pong"


def not_a_job() -> None:
    """Not marked: enqueueing it is refused."""


def _effect(path: str, tag: str) -> None:
    with open(path, "a") as log:
        log.write(f"{tag} {delayq.current_job().id} {os.getpid()}\n")


@delayq.job(at_most_once=True)
def charge(path: str, fail: bool = False) -> None:
    """Charge a user: must never run twice on its own (seed 003's manual task)."""
    _effect(path, "charge")
    if fail:
        raise RuntimeError("payment gateway said no")


@delayq.job
def hang(path: str, seconds: float) -> None:
    """Record, then take a while: for crash tests (a runner killed mid-job)."""
    import time

    _effect(path, "hang")
    time.sleep(seconds)


@delayq.job
class SendGift:
    """Seed 003's gift job: independent steps; charging the user is manual (at most once)."""

    steps = {"add_week_star": "auto", "charge_user": "manual", "notify": "auto"}

    def add_week_star(self, path: str, star_failures: int = 0, charge_fails: bool = False) -> None:
        _effect(path, "star")
        if delayq.current_job().attempt <= star_failures:
            raise ConnectionError("week-star service timed out")

    def charge_user(self, path: str, star_failures: int = 0, charge_fails: bool = False) -> None:
        _effect(path, "charge")
        if charge_fails:
            raise RuntimeError("payment gateway said no")

    def notify(self, path: str, **_: object) -> None:
        _effect(path, "notify")


@delayq.job(at_most_once=True)
class Payments:
    """A class marked at-most-once: every method, static ones included, gets one attempt."""

    @staticmethod
    def refund(order_id: int) -> None:
        print(f"  order {order_id}: refunded")


@delayq.job
def poll_payment(trade_no: str, path: str, paid_after: int = 0) -> None:
    """Follow the upstream payment status (seed 001): not paid yet -> Snooze, polled again on the ladder."""
    _effect(path, "poll")
    if delayq.current_job().attempt <= paid_after or paid_after < 0:
        raise delayq.Snooze()
    _effect(path, "paid")


@delayq.job
def mark_timed_out(path: str, trade_no: str = "", **_: object) -> None:
    """The timeout handler: mark the order as timed out (runs once, as its own job)."""
    _effect(path, "timeout")


# -- for the runner's tests and benchmarks (issue 11) -------------------------------------
@delayq.job
def span(path: str, seconds: float = 0.2, tag: str = "span") -> None:
    """Record when it starts and ends, waiting `seconds` in between (overlap is observed, not assumed)."""
    import time

    start = time.time()
    time.sleep(seconds)
    with open(path, "a") as log:
        log.write(f"{tag} {delayq.current_job().id} {os.getpid()} {start:.6f} {time.time():.6f}\n")


@delayq.job
def wait_ms(ms: float = 20) -> None:
    """An I/O-bound job: waits `ms` milliseconds as on an upstream call, using no CPU."""
    import time

    time.sleep(ms / 1000)


@delayq.job
def spin_ms(ms: float = 10) -> None:
    """A CPU-bound job: computes for `ms` milliseconds, holding the GIL."""
    import time

    end = time.perf_counter() + ms / 1000
    x = 0
    while time.perf_counter() < end:
        x += 1


@delayq.job
def die(path: str) -> None:
    """A poison pill: ends its own process at once (as os._exit, a segfault or the OOM killer would)."""
    _effect(path, "die")
    os._exit(1)


@delayq.job
def raise_system_exit(path: str, code: int = 0) -> None:
    """Raises SystemExit (a job calling sys.exit): it must fail like any job, not end the runner."""
    _effect(path, "exit")
    raise SystemExit(code)


@delayq.job(timeout=120)
def slow(path: str, seconds: float = 50) -> None:
    """A long job that says so: its own time limit is 120 s."""
    import time

    _effect(path, "slow")
    time.sleep(seconds)
    _effect(path, "slow-done")


@delayq.job(at_most_once=True)
def charge_slowly(path: str, seconds: float = 30) -> None:
    """Charge, then hang (the gateway never answers): past its time limit its outcome is unknown."""
    import time

    _effect(path, "charge")
    time.sleep(seconds)


@delayq.job
class SlowGift:
    """A multi-step job whose first step hangs."""

    steps = {"reserve": "auto", "notify": "auto"}

    def reserve(self, path: str, seconds: float = 30) -> None:
        import time

        _effect(path, "reserve")
        time.sleep(seconds)

    def notify(self, path: str, **_: object) -> None:
        _effect(path, "notify")
