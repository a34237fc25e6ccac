"""The runner: claims due jobs, runs them at once in worker processes or threads, records outcomes.

    supervisor.py   Runner: what to claim and when, group commits, stopping (SIGTERM, window end)
    processes.py    ProcessExecutor: forked workers; a job that ends its process takes only its worker
    threads.py      ThreadExecutor: threads of the runner itself (--processes 0; the tests' fake clock)
    execute.py      run_job: one job in the current thread, whatever it raises, as a Result
    decide.py       decide/outcome: a Result to succeeded, a retry or snooze, failed, timed_out
    summary.py      the summary line, one log line per outcome
"""

from .decide import decide, outcome
from .execute import Result, describe_error, job_args, run_job
from .summary import Summary
from .supervisor import DEFAULT_CONCURRENCY, DEFAULT_GRACE, DEFAULT_TIMEOUT, FLUSH_EVERY, Runner

__all__ = ["DEFAULT_CONCURRENCY", "DEFAULT_GRACE", "DEFAULT_TIMEOUT", "FLUSH_EVERY", "Result", "Runner", "Summary",
           "decide", "describe_error", "job_args", "outcome", "run_job"]
