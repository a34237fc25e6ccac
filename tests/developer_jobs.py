"""Jobs for tests/integration/test_developer_api.py: what an application's job module looks like with the typed
methods (parameters named like enqueue's options, a job that enqueues another, one that remembers its thread)."""

from __future__ import annotations

import threading

import delayq

RAN: list[tuple[str, int, int, object]] = []    # (tag, thread id, attempt, value) of each run, in this process


@delayq.job
def notify(queue: str, delay: int = 0, ext: str = "") -> str:
    """Parameters named like enqueue's options: they are the job's, never taken for delayq's."""
    RAN.append(("notify", threading.get_ident(), delayq.current_job().attempt, [queue, delay, ext]))
    return queue


@delayq.job
def add(a: int, b: int) -> int:
    """A plain function: called directly it just returns."""
    return a + b


@delayq.job
def remember(tag: str, value: object = None) -> None:
    """Records who ran it, in which thread, and the value as the job received it (after JSON)."""
    job = delayq.current_job()
    RAN.append((tag, threading.get_ident(), job.attempt if job else 0, value))


@delayq.job
def chain(tag: str) -> None:
    """Enqueues another job while it runs (inline: that one runs inside this one)."""
    remember.enqueue(tag + ":inner")
    RAN.append((tag + ":outer", threading.get_ident(), delayq.current_job().attempt, None))


@delayq.job
def positional_only(x: int, /) -> None:
    """Cannot be stored by name: refused at enqueue."""
