import random

import pytest

from delayq import ladders
from delayq.errors import InvalidInput


def test_named_ladders_match_the_seeds():
    assert ladders.parse("wechat").steps == (15, 15, 30, 180, 600, 1200, 1800, 1800, 1800, 3600,
                                             10800, 10800, 10800, 21600, 21600)
    assert ladders.parse("alipay").steps == (240, 600, 600, 3600, 7200, 21600, 54000)
    stepped = ladders.parse("stepped")
    assert [stepped.delay(n) for n in (1, 5, 6, 10, 11, 20, 21, 99)] == [1, 1, 5, 5, 10, 10, 30, 30]


def test_default_is_wechat_with_one_attempt_per_step_plus_the_first():
    ladder = ladders.parse(None)
    assert ladder.spec == "wechat" and ladder.default_max_attempts == 16


def test_explicit_list_repeats_its_last_step():
    ladder = ladders.parse("15, 1m ,2h")
    assert [ladder.delay(n) for n in (1, 2, 3, 4)] == [15, 60, 7200, 7200]


def test_exponential_with_jitter_stays_within_half_and_full_step():
    ladder = ladders.parse("exp:5:60:6")
    rng = random.Random(7)
    for attempt, full in zip(range(1, 8), (5, 10, 20, 40, 60, 60, 60)):
        delays = [ladder.delay(attempt, rng) for _ in range(50)]
        assert all(full / 2 <= d <= full for d in delays)
        assert len(set(delays)) > 1


@pytest.mark.parametrize("spec", ["fibonacci", "15,x", "-5", "exp:0:10:3", "exp:10:5:3", ""])
def test_bad_ladders_are_refused(spec):
    if spec == "":
        assert ladders.parse(spec).spec == "wechat"
        return
    with pytest.raises(InvalidInput):
        ladders.parse(spec)
