"""``make fuzz`` / ``logwright fuzz``: an unbounded seeded campaign of the cluster state machine.

The campaign runs the machine (``logwright.verify.stateful_cluster``) in batches of examples, each
batch seeded with the campaign's seed plus the batch number, until interrupted or until
``max_examples`` or ``duration_s`` is reached. Only *when to stop* may depend on the wall clock:
every batch is a seeded, deterministic Hypothesis run, and a verdict is only ever a property that
failed. A failure is shrunk by Hypothesis; the steps of the shrunk example (recorded as its rules
ran) are replayed once more through ``cluster_run.replay`` and, if the replay fails the same way,
written as a trace in ``traces/regressions/`` (the format of ``traces/cluster/``), which
``tests/test_regression_traces.py`` replays. Progress (examples, steps, failures, the current
seed) goes to a stream, stderr from the command line.

``logwright fuzz --help`` says how to run it (the command needs the ``dev`` extra, for
hypothesis).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import invariant, run_state_machine_as_test

from logwright.verify.cluster_run import replay
from logwright.verify.stateful_cluster import KNOWN_DEFECT_RULES, ClusterMachine

DEFAULT_OUT = Path("traces") / "regressions"


@dataclass
class Found:
    """One failure the campaign saved."""

    path: Path | None
    message: str
    seed: int
    reproduced: bool


@dataclass
class CampaignResult:
    """What a campaign did: examples and steps run, its time, and the failures it saved."""

    examples: int = 0
    steps: int = 0
    batches: int = 0
    elapsed_s: float = 0.0
    found: list[Found] = field(default_factory=list)

    def rates(self) -> tuple[float, float]:
        """Examples per minute and steps per second over the whole campaign."""
        t = max(self.elapsed_s, 1e-9)
        return self.examples * 60.0 / t, self.steps / t


def _signature(message: str) -> str:
    """A failure's message with its numbers and ids taken out, to tell repeats apart."""
    first = message.strip().splitlines()[0] if message.strip() else message
    return re.sub(r"[A-Za-z0-9_-]{22}|\d+", "#", first)


def _slug(message: str) -> str:
    text = message.split(": ", 1)[-1]  # without the exception's type
    words = re.findall(r"[a-z]+", _signature(text).lower())
    return "-".join(words[:8]) or "failure"


def _next_number(out_dir: Path) -> int:
    numbers = [int(p.name[:4]) for p in out_dir.glob("[0-9][0-9][0-9][0-9]-*.json")]
    return max(numbers, default=0) + 1


def save_trace(out_dir: Path, trace: dict[str, Any], message: str) -> Path:
    """Write ``trace`` as the next numbered file of ``out_dir``; returns its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{_next_number(out_dir):04d}-{_slug(message)}.json"
    path.write_text(json.dumps(trace, indent=1) + "\n")
    return path


def failure_of(trace: dict[str, Any]) -> str | None:
    """Replay ``trace``, checking every property after every step; the failure's message (its
    exception type and text), or None if it runs clean."""
    try:
        replay(trace)
    except Exception as exc:  # any exception out of a replay is the finding
        return f"{type(exc).__name__}: {exc}"
    return None


def run_campaign(seed: int, *, max_examples: int | None = None, duration_s: float | None = None,
                 out_dir: Path | None = DEFAULT_OUT, avoid: Iterable[str] = (),
                 steps_per_example: int = 40, batch_examples: int = 25,
                 progress: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 light: bool = False) -> CampaignResult:
    """Run batches of seeded examples until ``max_examples`` examples (at least), or
    ``duration_s`` seconds have passed (checked between batches), or KeyboardInterrupt.

    Batch ``i`` is seeded ``seed + i``. Each failure is shrunk, replayed, and saved under
    ``out_dir`` (not saved when ``out_dir`` is None); a failure whose message (numbers aside)
    was already saved by this campaign is counted, not saved again. ``clock`` only decides when
    to stop and what the progress line says. ``light`` leaves out the per-event projections
    of LogStartOffset, ControllerFencing, FetcherFailure and StrayCleanup (most of a run's
    cost): every property of the run, and the LeaderElection and ReplicaMove checks, stay.
    """
    avoided = frozenset(avoid)
    unknown = avoided - KNOWN_DEFECT_RULES
    if unknown:
        raise ValueError(f"cannot avoid {sorted(unknown)}: only {sorted(KNOWN_DEFECT_RULES)}")
    result = CampaignResult()
    counts = {"examples": 0, "steps": 0}

    class Campaign(ClusterMachine):
        avoid = avoided
        per_event_models = not light

        def __init__(self) -> None:
            super().__init__()
            counts["examples"] += 1

        @invariant()
        def count_step(self) -> None:
            counts["steps"] += 1
            if progress is not None and clock() - shown[0] >= 1.0:
                show()

    seen: set[str] = set()
    start = clock()
    shown = [start]
    batch = 0

    def show(final: bool = False) -> None:
        if progress is None:
            return
        shown[0] = clock()
        result.elapsed_s = shown[0] - start
        result.examples, result.steps = counts["examples"], counts["steps"]
        per_min, per_s = result.rates()
        line = (f"fuzz: seed {seed + batch}  examples {counts['examples']}  "
                f"steps {counts['steps']}  failures {len(result.found)}  "
                f"{per_min:.0f} examples/min  {per_s:.0f} steps/s")
        progress.write(("\r" if progress.isatty() else "") + line
                       + ("\n" if final or not progress.isatty() else ""))
        progress.flush()

    try:
        while True:
            if max_examples is not None and counts["examples"] >= max_examples:
                break
            if duration_s is not None and clock() - start >= duration_s:
                break
            examples = batch_examples if max_examples is None else max(
                1, min(batch_examples, max_examples - counts["examples"]))
            Campaign._hypothesis_internal_use_seed = seed + batch
            config = settings(max_examples=examples, stateful_step_count=steps_per_example,
                              deadline=None, database=None, derandomize=False,
                              print_blob=False, report_multiple_bugs=False,
                              suppress_health_check=list(HealthCheck),
                              phases=[Phase.generate, Phase.shrink])
            try:
                run_state_machine_as_test(Campaign, settings=config)
            except Exception as exc:  # a property failed, or the cluster raised: a finding
                result.found.append(_record(exc, seed + batch, out_dir, seen))
            show()
            batch += 1
            result.batches = batch
    except KeyboardInterrupt:
        pass
    result.examples, result.steps = counts["examples"], counts["steps"]
    result.elapsed_s = clock() - start
    batch = max(0, batch - 1)
    show(final=True)
    return result


def _record(exc: Exception, batch_seed: int, out_dir: Path | None, seen: set[str]) -> Found:
    """Save the shrunk failing example of a batch (the machine's last run) as a trace."""
    run = ClusterMachine.last_run
    message = f"{type(exc).__name__}: {exc}"
    if run is None:
        return Found(None, message, batch_seed, False)
    trace: dict[str, Any] = {
        "found_by": f"logwright fuzz (campaign seed {batch_seed}, Hypothesis, shrunk)",
        "what": message.splitlines()[0],
        "status": "open: not yet triaged",
        "seed": batch_seed,
        "cluster": run.cluster_args,
        "steps": run.steps,
    }
    replayed = failure_of(trace)
    reproduced = replayed is not None
    if replayed is not None:
        trace["what"] = replayed.splitlines()[0]
    signature = _signature(trace["what"])
    if out_dir is None or signature in seen:
        return Found(None, trace["what"], batch_seed, reproduced)
    seen.add(signature)
    if not reproduced:
        trace["status"] = "open: did not fail on replay (nondeterminism?)"
    return Found(save_trace(out_dir, trace, trace["what"]), trace["what"], batch_seed, reproduced)
