"""StepStore on SQL: the steps of multi-step jobs, each begun (committed) before it runs."""

from __future__ import annotations

from typing import Any

from .base import Step


class StepsSql:
    run: Any
    tx: Any

    def steps(self, job_id: int) -> list[Step]:
        with self.tx(write=False) as cur:
            return [Step(*row) for row in self.run(cur, "select_steps", id=job_id).fetchall()]

    def ensure_steps(self, job_id: int, declared: list[tuple[str, str]], now: float) -> None:
        with self.tx() as cur:
            known = {row[0] for row in self.run(cur, "select_steps", id=job_id).fetchall()}
            for position, (name, mode) in enumerate(declared):
                if name not in known:
                    self.run(cur, "insert_step", id=job_id, name=name, mode=mode, position=position, now=now)

    def begin_step(self, job_id: int, name: str, token: str, now: float) -> bool:
        with self.tx() as cur:
            if self.run(cur, "lock_job_claim", id=job_id, token=token, now=now).fetchone() is None:
                return False     # the claim was lost: recovery owns this job now
            return self.run(cur, "begin_step", now=now, id=job_id, name=name).rowcount == 1

    def finish_step(self, job_id: int, name: str, status: str, error: str | None, now: float) -> None:
        with self.tx() as cur:
            self.run(cur, "finish_step", status=status, error=error, now=now, id=job_id, name=name)
