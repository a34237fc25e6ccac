"""What a secondary index on the jobs table costs a job: mariadbd's CPU a job of the no-op burst, with and without.

    .venv/bin/python benchmarks/index_cost.py "by_finished (finished_at)" "by_queue (queue, id)"
    .venv/bin/python benchmarks/index_cost.py --column "done TINYINT AS (finished_at IS NOT NULL) VIRTUAL" \
        "by_done (done, id)"

Each argument is one index (name, then its columns in parentheses); all of them together make the variant. On a
private mariadbd and redis-server (tmpdir, removed at the end): two prefixes, the store's own schema on both and the
variant's indexes added to one; then BENCH_SCALE_BURST no-op jobs (default 20,000) due at once and one runner with
delayq's defaults, on each prefix in turn, BENCH_INDEX_RUNS times (default 4). Prints the median jobs/s and
mariadbd's CPU µs a job of each side and their ratio: what docs/PERFORMANCE.md quotes when it says why an index
was added or left out. `--column DEFINITION` (repeatable) adds a column to the variant first (a generated
column an index then uses). The machine should be quiet: mariadbd's CPU is read from /proc, whoever else runs.
"""

from __future__ import annotations

import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from delayq_side import World  # noqa: E402
from scale import N_BURST, burst_on  # noqa: E402
from tests.chaos.servers import PrivateMariaDB, PrivateRedis  # noqa: E402

RUNS = int(os.environ.get("BENCH_INDEX_RUNS", "4"))
INDEX = re.compile(r"([A-Za-z_][A-Za-z0-9_]*) \(([A-Za-z0-9_, ]+)\)")


def main(argv: list[str]) -> int:
    columns = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--column"]
    argv = [a for i, a in enumerate(argv) if a != "--column" and (i == 0 or argv[i - 1] != "--column")]
    indexes = [INDEX.fullmatch(a) for a in argv]
    if not argv or not all(indexes):
        print("usage: index_cost.py [--column 'definition' ...] 'name (column, ...)' ...", file=sys.stderr)
        return 2
    db, redis = PrivateMariaDB(buffer_pool="2G", extra_args=("--innodb-log-file-size=1G",)), PrivateRedis()
    try:
        base, variant = World(db.url, redis.url), World(db.url, redis.url)
        for column in columns:
            variant.sql(f"ALTER TABLE {{jobs}} ADD COLUMN {column}")
        for m in indexes:
            variant.sql(f"CREATE INDEX {variant.prefix}_{m.group(1)} ON {{jobs}} ({m.group(2)})")
        figures: dict[str, dict[str, list[float]]] = {"base": {"rate": [], "cpu": []},
                                                      "variant": {"rate": [], "cpu": []}}
        for run in range(RUNS):
            for side, w in (("base", base), ("variant", variant)):
                used: dict[str, float] = {}
                rate = burst_on(w, N_BURST, servers={"mariadbd": lambda: db.proc.pid}, cpu=used)
                figures[side]["rate"].append(rate)
                figures[side]["cpu"].append(used["mariadbd"])
                print(f"run {run + 1} {side}: {rate:.0f} jobs/s, mariadbd {used['mariadbd']:.1f} µs a job",
                      file=sys.stderr, flush=True)
        b, v = ({k: statistics.median(x) for k, x in figures[s].items()} for s in ("base", "variant"))
        print(f"indexes {', '.join(argv)}{''.join(f' (column {c})' for c in columns)}: {N_BURST} no-op jobs a burst, median of {RUNS}")
        print(f"  jobs/s            {b['rate']:8.0f} -> {v['rate']:8.0f}  ({v['rate'] / b['rate']:.3f})")
        print(f"  mariadbd µs a job {b['cpu']:8.1f} -> {v['cpu']:8.1f}  ({v['cpu'] / b['cpu']:.3f})")
        base.close()
        variant.close()
        return 0
    finally:
        redis.stop()
        db.remove()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
