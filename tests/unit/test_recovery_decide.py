"""What recovery decides for the jobs of a dead process: by the lease (nothing known), and from a ledger
(runner/postmortem.py). Pure: no server."""


import signal

from delayq import recovery
from delayq.config import load
from delayq.jobs import Job
from delayq.runner import decide
from delayq.runner.ledger import ENDED, QUEUED, RUNNING, Known
from delayq.runner.postmortem import GRACE, HUNG, TIMED_OUT, Death, fault_ident, judge, verdicts

NOW = 1000.0
KILL9 = signal.SIGKILL          # a wait status: killed by this signal
SEGV = signal.SIGSEGV


def exited(code: int) -> int:
    return code << 8


def job(id=1, **kw):
    base = dict(id=id, queue="q", call="examples.shop:noop", args_json="{}", attempts=1, max_attempts=3,
                ladder="10", due_at=0.0, started_at=900.0, token="t")
    return Job(**{**base, **kw})


def running(id, slot, ident=0):
    return Known(id, RUNNING, started=NOW - 5, limit=30, ident=ident, slot=slot)


# -- by the lease: nothing is known -------------------------------------------------------
def test_by_lease_an_ordinary_job_runs_again_now_and_the_attempt_counts():
    r = recovery.by_lease(NOW)(job())
    assert r.kind == "vanished"
    assert decide(job(), r) == ("pending", NOW, False)


def test_by_lease_a_worker_process_s_job_is_interrupted_never_blamed_nor_failed():
    """A worker process runs nothing but jobs, and dies with its supervisor: its runner's death is nobody's doing."""
    worker = job(attempts=3, crashes=2, token=recovery.ISOLATED + "abc")
    r = recovery.by_lease(NOW)(worker)
    assert r.kind == "interrupted" and decide(worker, r) == ("pending", NOW, False)


def test_by_lease_no_attempts_left_fails():
    assert decide(job(attempts=3), recovery.by_lease(NOW)(job(attempts=3)))[0] == "failed"


def test_by_lease_at_most_once_begun_or_manual_step_running_is_unknown_and_fails():
    for j in (job(at_most_once=True, max_attempts=1), job(manual_running=1)):
        assert decide(j, recovery.by_lease(NOW)(j))[0] == "failed"


def test_by_lease_at_most_once_never_begun_is_handed_back():
    assert recovery.by_lease(NOW)(job(at_most_once=True, started_at=None)) is None


def test_a_runner_that_ran_jobs_in_its_own_process_and_died_three_times_under_one_is_a_poison_pill():
    assert decide(job(crashes=2, max_attempts=9), recovery.by_lease(NOW)(job(crashes=2, max_attempts=9)))[0] == "failed"


# -- from a ledger -------------------------------------------------------------------------
def test_os_exit_names_its_job_and_only_it():
    known = {1: running(1, 0), 2: running(2, 1), 3: running(3, 2)}
    assert verdicts(Death(exited(1), culprit_slot=1), known) == (1, False)
    one, solo = judge(Death(exited(1), culprit_slot=1), known, NOW, NOW)
    assert [one(job(i)).kind for i in (1, 2, 3)] == ["interrupted", "crashed", "interrupted"]
    assert [solo(job(i)) for i in (1, 2, 3)] == [False, True, False]


def test_a_fatal_signal_names_the_thread_its_report_names():
    report = "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f00000000ab (most recent call first):"
    assert fault_ident(report) == 0x7f00000000ab
    known = {1: running(1, 0, ident=0x11), 2: running(2, 1, ident=0x7f00000000ab)}
    assert verdicts(Death(SEGV, fault_ident=0x7f00000000ab), known) == (1, False)


def test_a_kill_from_outside_blames_nobody_and_several_running_run_alone_from_now_on():
    known = {1: running(1, 0), 2: running(2, 1)}
    assert verdicts(Death(KILL9), known) == (None, True)
    assert verdicts(Death(KILL9), {1: running(1, 0)}) == (None, False)      # alone: not its fault, nothing to learn


def test_the_oom_killer_blames_a_job_alone_and_isolates_several():
    assert verdicts(Death(KILL9, oom=True), {1: running(1, 0)}) == (0, False)
    assert verdicts(Death(KILL9, oom=True), {1: running(1, 0), 2: running(2, 1)}) == (None, True)


def test_a_death_by_itself_with_one_job_running_blames_that_job():
    known = {1: running(1, 0), 2: Known(2, QUEUED, slot=1)}
    assert verdicts(Death(exited(70)), known) == (0, False)


def test_never_started_is_handed_back_ended_keeps_its_outcome():
    known = {1: Known(1, QUEUED, slot=0), 2: Known(2, ENDED, 990.0, 991.0, kind="ok", slot=1),
             3: Known(3, ENDED, 990.0, 991.0, kind="error", slot=2)}
    one, _ = judge(Death(KILL9), known, NOW, NOW)
    assert one(job(1)) is None and one(job(4)) is None               # 4: claimed, its reply never arrived
    assert (one(job(2)).kind, one(job(2)).finished) == ("ok", 991.0)
    assert one(job(3)).kind == "error" and "lost" in one(job(3)).error


def test_an_at_most_once_job_whose_begin_committed_is_unknown_even_if_the_ledger_had_not_marked_it():
    one, _ = judge(Death(KILL9), {}, NOW, NOW)
    j = job(at_most_once=True, max_attempts=1)
    assert decide(j, one(j))[0] == "failed"
    assert one(job(at_most_once=True, started_at=None)) is None


def test_the_supervisor_s_own_kills_blame_nobody():
    known = {1: running(1, 0), 2: running(2, 1)}
    for why in (GRACE, HUNG):
        blamed, _ = verdicts(Death(KILL9, killed=why), known)
        assert blamed is None
    one, solo = judge(Death(KILL9, killed=TIMED_OUT, timed_out={1: 3.0}), known, NOW, NOW)
    assert one(job(1)).kind == "timeout" and one(job(1)).error == "timed out after 3s"
    assert one(job(2)).kind == "interrupted" and not solo(job(2))


def test_queue_defaults_and_secrets_stay_out_of_repr():
    settings = load({"DELAYQ_QUEUES": '{"report": {"lease": 3600}, "sms.fast": {"ladder": "15,30", "max_attempts": 3}}',
                     "DELAYQ_ALERT_WEBHOOK": "https://h/x?token=abc", "DELAYQ_ALERT_SECRET": "s3cret"}, None)
    assert settings.queues["report"] == {"lease": 3600}
    assert settings.queues["sms.fast"]["max_attempts"] == 3
    assert "abc" not in repr(settings) and "s3cret" not in repr(settings)



