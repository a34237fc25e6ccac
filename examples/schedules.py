"""Recurring schedules (issue 23): what an application's schedule module looks like. Named in
DELAYQ_SCHEDULE_MODULES=examples.schedules, every run-due enqueues their due slots; the demo and the tests use it.
EXAMPLE_SCHEDULE_LOG names a file each run appends one line to (the tests count runs from it)."""

import os

import delayq

LOG = os.environ.get("EXAMPLE_SCHEDULE_LOG", "")


@delayq.job
def note_slot(path: str = "") -> None:
    """Record which slot ran, in which job and process."""
    job = delayq.current_job()
    if path:
        with open(path, "a") as log:
            log.write(f"ran {job.ext} {job.id} {os.getpid()}\n")


@delayq.job
def nightly_report(kind: str) -> None:
    print(f"  {kind} report sent")


delayq.schedule("every-second", note_slot, every="1s", overlap=True, args={"path": LOG})
delayq.schedule("every-minute", note_slot, cron="* * * * *", args={"path": LOG})
delayq.schedule("nightly-report", nightly_report, cron="30 2 * * *", tz="Europe/Berlin", args={"kind": "daily"})
