"""The storage crash-consistency campaign of ``logwright verify``.

For each seed, a workload of storage operations is generated and run once to count the file
system operations each step makes. Then, for every step and every one of its file system
operations, the workload is replayed from the start with a power loss right after that operation,
the broker restarts, and the storage harness checks every invariant against what was acknowledged
and flushed (``logwright.verify.storage_oracle``). A few more steps run after each restart, so
that recovery's own output is exercised too.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from logwright.verify.core import Row, Verdict, run_check
from logwright.verify.storage_oracle import STORAGE_INVARIANTS, InvariantViolation, StorageHarness

Step = tuple[str, int, float]  # (operation, partition, argument)
OPERATIONS = ("produce", "produce", "produce", "flush", "advance_high_watermark",
              "delete_records", "truncate", "pass_time", "clean_restart")
CAMPAIGN_FIRST_SEED = 0
"""The first workload seed of ``make verify``'s crash campaigns (one seed, one campaign)."""


def workload(seed: int, steps: int) -> list[Step]:
    """A reproducible sequence of storage operations."""
    rng = random.Random(seed)
    return [(rng.choice(OPERATIONS), rng.randrange(3), rng.random()) for _ in range(steps)]


def apply(h: StorageHarness, step: Step) -> None:
    """Run one workload step against the harness."""
    op, p, x = step
    tp = h.tps[p]
    if op == "produce":
        h.produce(tp, 1 + int(x * 5))
    elif op == "flush":
        h.flush(tp)
    elif op == "advance_high_watermark":
        h.advance_high_watermark(tp, int(x * 12))
    elif op == "delete_records":
        h.delete_records(tp, x)
    elif op == "truncate":
        h.truncate(tp, x)
    elif op == "pass_time":
        h.pass_time(int(x * 400_000))
    elif op == "clean_restart":
        h.clean_restart()
    else:
        raise ValueError(f"unknown operation {op}")


@dataclass
class CampaignResult:
    """What a campaign explored and the first violation it met, if any."""

    crash_points: int = 0
    checks: int = 0
    seconds: float = 0.0
    violation: InvariantViolation | None = None
    where: str = ""


def run_campaign(*, first_seed: int, seeds: int = 4, steps: int = 24, after: int = 3,
                 max_points_per_step: int = 40, progress: Callable[[int], None] | None = None,
                 bug: str | None = None) -> CampaignResult:
    """Crash at every file system operation of every step of ``seeds`` workloads, seeded
    ``first_seed``, ``first_seed + 1``, ...

    ``bug`` switches on a known storage bug (see ``StorageHarness``); the campaign must then
    report a violation."""
    result = CampaignResult()
    started = time.perf_counter()
    for seed in range(first_seed, first_seed + seeds):
        plan = workload(seed, steps + after)
        # A dry run counts the file system operations each step makes.
        dry = StorageHarness(seed=seed, torn_crashes=True, bug=bug)
        ops_per_step = []
        for step in plan[:steps]:
            before = dry.fs.ops
            apply(dry, step)
            ops_per_step.append(dry.fs.ops - before)
        for i, count in enumerate(ops_per_step):
            stride = max(1, count // max_points_per_step)
            for k in range(1, count + 1, stride):
                h = StorageHarness(seed=seed, torn_crashes=True, bug=bug)
                try:
                    for step in plan[:i]:
                        apply(h, step)
                    h.run(functools.partial(apply, h, plan[i]), crash_after=k)
                    h.check()
                    for step in plan[i + 1:i + 1 + after]:
                        apply(h, step)
                        h.check()
                except InvariantViolation as exc:
                    result.violation = exc
                    result.where = f"seed {seed}, step {i} ({plan[i][0]}), crash after op {k}"
                    result.seconds = time.perf_counter() - started
                    return result
                result.crash_points += 1
                result.checks += h.checks
                if progress is not None:
                    progress(result.crash_points)
    result.seconds = time.perf_counter() - started
    return result


def storage_suite() -> list[Row]:
    """The campaign's verdict, one row per storage invariant, then the bug it must catch.

    Bounded by counts (seeds, steps, crash points per step), never by time."""
    rows = run_check("storage: crash campaign", _campaign_rows,
                     invariant="(storage invariants)", method="storage crash campaign")
    bug = "PeriodicStartOffsetCheckpoint"
    rows += run_check(f"storage: crash campaign, bug {bug}", lambda: _bug_rows(bug),
                      invariant=STORAGE_INVARIANTS[0], method=f"crash campaign, bug {bug}")
    return rows


def _campaign_rows() -> list[Row]:
    result = run_campaign(first_seed=CAMPAIGN_FIRST_SEED)
    rows = []
    for name in STORAGE_INVARIANTS:
        if result.violation is None:
            rows.append(Row(name, "storage crash campaign", Verdict.HOLDS, result.checks,
                            result.seconds, f"{result.crash_points:,} crash points, torn writes"))
        elif result.violation.invariant == name:
            rows.append(Row(name, "storage crash campaign", Verdict.VIOLATED, result.checks,
                            result.seconds, f"{result.where}: {result.violation}"))
        else:
            rows.append(Row(name, "storage crash campaign", Verdict.HOLDS, result.checks,
                            result.seconds, f"not violated before the campaign stopped at "
                            f"{result.where}"))
    return rows


def _bug_rows(bug: str) -> list[Row]:
    caught = run_campaign(first_seed=CAMPAIGN_FIRST_SEED, seeds=8, bug=bug)
    found = caught.violation is not None and caught.violation.invariant == STORAGE_INVARIANTS[0]
    return [Row(STORAGE_INVARIANTS[0], f"crash campaign, bug {bug} (Kafka's)",
                Verdict.CAUGHT if found else Verdict.MISSED, caught.checks, caught.seconds,
                f"{caught.where}: {caught.violation}" if found else
                "the campaign did not notice acknowledged deletions coming back")]
