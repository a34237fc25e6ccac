"""Rate and concurrency limits as rules (limits.py): the settings, the key from a job's arguments, and `decide`,
which the store runs under the gates' locks (tests/integration/test_store_contract.py runs it on the rows)."""

import pytest

import delayq
from delayq.errors import InvalidInput
from delayq.limits import RECHECK, Allowance, Candidate, QueueLimit, decide, key_of, lock_of, rate, refill
from delayq.validate import queue_defaults

NOW = 1_800_000_000.0


def test_rates_per_second_minute_and_hour():
    assert (rate("10/s"), rate("600/m"), rate("36/h"), rate(" 2.5 / s ")) == (10.0, 10.0, 0.01, 2.5)
    assert rate(2.5) == 2.5                     # a checked value, checked again
    for bad in ("10", "0/s", "10/d", "ten/s", 0, True, "1e9/s", float("nan")):
        with pytest.raises(InvalidInput, match="starts per second, minute or hour"):
            rate(bad)


def test_queue_settings_take_rate_and_max_running_and_refuse_bad_ones():
    checked = queue_defaults({"psp": {"rate": "10/s", "max_running": 5, "concurrency": 4}})
    assert checked == {"psp": {"rate": 10.0, "max_running": 5, "concurrency": 4}}
    with pytest.raises(InvalidInput, match=r"DELAYQ_QUEUES\['psp'\].max_running"):
        queue_defaults({"psp": {"max_running": 0}})


def test_a_bucket_holds_a_tenth_of_a_second_of_its_rate_at_least_one_start():
    assert QueueLimit(rate=10).burst == 1 and QueueLimit(rate=1 / 60).burst == 1 and QueueLimit(rate=100).burst == 10
    assert refill(0.0, NOW, NOW + 0.5, QueueLimit(rate=100)) == 10.0         # capped at its burst
    assert refill(0.0, NOW, NOW + 0.05, QueueLimit(rate=10)) == pytest.approx(0.5)


def test_the_key_comes_from_the_arguments_and_a_missing_one_is_named():
    assert key_of("order:{order_id}", {"order_id": 7, "x": 1}, "shop:f") == "order:7"
    with pytest.raises(InvalidInput, match="names argument 'order_id'"):
        key_of("order:{order_id}", {"id": 7}, "shop:f")
    assert lock_of("order:7") == lock_of("order:7") and lock_of("order:7").startswith("key#")


@pytest.mark.parametrize("options, says", [
    ({"limit": 1}, "needs limit_key"), ({"limit_key": "o:{a.b}"}, "name arguments only"),
    ({"limit_key": "o:{a!r}"}, "name arguments only"), ({"limit_key": "o:{a}", "limit": 0}, "1 to 10000"),
    ({"limit_key": ""}, "format string"),
])
def test_a_bad_limit_declaration_fails_at_the_decorator(options, says):
    with pytest.raises(TypeError, match=says):
        delayq.job(**options)


def test_decide_starts_in_order_while_the_gates_allow_and_spreads_the_rest():
    jobs = [Candidate(i, "r", 0) for i in range(4)] + [Candidate(9, "free", 0)]
    out = decide(jobs, Allowance(tokens={"r": 2.0}, rates={"r": 10.0}), NOW)
    assert out.start == [0, 1, 9] and out.used == {"r": 2.0}
    assert [(c.id, round(due - NOW, 3)) for c, due in out.held] == [(2, 0.1), (3, 0.2)]


def test_decide_holds_a_key_at_its_limit_and_a_full_queue_for_a_recheck_but_not_the_others():
    jobs = [Candidate(1, "q", 0, "a", 1), Candidate(2, "q", 0, "a", 1), Candidate(3, "q", 0, "b", 2),
            Candidate(4, "q", 0, "b", 2), Candidate(5, "m", 0)]
    out = decide(jobs, Allowance(key_running={"b": 1}, queue_slots={"m": 0}), NOW)
    assert out.start == [1, 3]
    assert [(c.id, due) for c, due in out.held] == [(2, NOW + RECHECK), (4, NOW + RECHECK), (5, NOW + RECHECK)]


def test_a_claim_of_limited_queues_asks_for_what_they_may_start_soon():
    from delayq.limits import claim_size
    limits = {"r": QueueLimit(rate=10.0), "m": QueueLimit(max_running=3), "both": QueueLimit(rate=100.0, max_running=4)}
    assert claim_size(["r"], limits, 64) == 6                    # half a second (5) and its burst (1)
    assert claim_size(["both"], {"both": QueueLimit(rate=100.0, max_running=4)}, 64) == 4
    assert claim_size(["m"], limits, 64) == 3 and claim_size(["both"], limits, 64) == 4
    assert claim_size(["r", "free"], limits, 64) == 64           # a queue without a limit: as asked
    assert claim_size(["r"], limits, 2) == 2


def test_a_key_s_backlog_held_in_one_claim_is_spread_a_recheck_per_limit():
    jobs = [Candidate(i, "q", 0, "hot", 2) for i in range(7)]
    out = decide(jobs, Allowance(key_running={"hot": 2}), NOW)
    assert [round(due - NOW, 3) for _, due in out.held] == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0]
    full = decide([Candidate(i, "m", 0) for i in range(4)], Allowance(queue_slots={"m": 0}, queue_max={"m": 2}), NOW)
    assert [round(due - NOW, 3) for _, due in full.held] == [1.0, 1.0, 2.0, 2.0]


def test_a_claim_that_read_its_time_before_the_last_one_committed_does_not_count_the_time_twice():
    from delayq.limits import refill
    limit = QueueLimit(rate=100.0)                              # burst 10
    assert refill(0.0, NOW, max(NOW - 0.1, NOW), limit) == 0.0  # the store takes max(now, at): no token from the past
