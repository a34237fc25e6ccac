"""Jobs for the scale-out chaos scenarios (allowed with DELAYQ_ALLOWED_MODULES=tests.chaos)."""

from __future__ import annotations

import socket

import delayq


@delayq.job
def ping(port: int) -> None:
    """Tell an observer on this host, by one UDP datagram, that this job runs now: the observer times it with
    its own clock, so a runner under faketime cannot misreport when it ran."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(str(delayq.current_job().id).encode(), ("127.0.0.1", port))
