"""A ledger file (runner/ledger.py, runner/orphans.py) is read by another runner only once no process that had it
open lives: the lock its maker takes is inherited by the processes it forks, and held by any of them."""

from __future__ import annotations

import os

from delayq.runner.ledger import ENDED, Ledger


def test_a_ledger_is_taken_over_only_once_every_process_that_had_it_open_is_gone(tmp_path):
    path = str(tmp_path / "w1.ledger")
    ledger = Ledger(8, 2, path)
    slot = ledger.take(42)
    ledger.end(slot, "ok", 1.0, 2.0, None)
    r, w = os.pipe()
    child = os.fork()
    if child == 0:                      # a worker: it has the file open (inherited) and lives on
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    os.close(r)
    ledger.close()                      # its maker is gone
    assert Ledger.left_behind(path) is None, "taken over while a process that had it open lives"
    os.write(w, b"x")
    os.close(w)
    os.waitpid(child, 0)
    found = Ledger.left_behind(path)
    assert found is not None
    assert [(k.job_id, k.state, k.kind) for k in found.known().values()] == [(42, ENDED, "ok")]
    found.close(remove=True)
    assert not os.path.exists(path)


def test_a_file_that_is_not_a_whole_ledger_is_left_alone(tmp_path):
    path = tmp_path / "w2.ledger"
    path.write_bytes(b"\0" * 100)
    assert Ledger.left_behind(str(path)) is None and path.exists()
    link = tmp_path / "w3.ledger"
    os.symlink(str(tmp_path / "elsewhere"), link)
    assert Ledger.left_behind(str(link)) is None          # a symlink in the folder is never followed
