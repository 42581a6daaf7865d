"""What ``logwright traces check --out DIR`` writes, from either engine (docs/pipeline.md).

In DIR:

* ``violations.parquet``: one row per refused event: the trace id, its ``seq``, where it is
  (``file:line``), the model, instance and action, the kind (``not enabled``, ``mismatch``,
  ``invariant``), the message (the invariant's name for an invariant), and the abstract states
  before and after, as the twin describes them;
* ``bad_input.parquet``: one row per bad input: where, the trace id (``""`` when the line names
  none) and the reason;
* ``coverage.parquet``: events per (model, action, outcome), outcome one of ``step``,
  ``stutter``, ``outside``, ``refused``, ``bookkeeping``, ``bad input``; and one row per action
  no event took as a step, with outcome ``never`` and 0 events;
* ``states.parquet``: distinct abstract states reached, per model;
* ``summary.json``: the figures, the verdict, and the engine's timings;
* ``coverage.png``: events per action by outcome, and violations by invariant or kind.

The report is a :class:`~logwright.verify.traces.CheckReport`; the Spark job builds one from
its executors' per-trace reports (:func:`report_to_json` and :func:`report_from_json` carry one
across), so both engines write the same files for the same verdicts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from logwright.verify.traces import (
    BadInput,
    CheckReport,
    Failure,
    TraceFormatError,
    never_exercised,
)

OUTCOMES = ("step", "stutter", "outside", "refused", "bookkeeping", "bad input")


def report_to_json(report: CheckReport) -> str:
    """Every figure and finding of ``report`` but its states (sent apart), as JSON text."""
    return json.dumps({
        "files": report.files, "traces": report.traces, "events": report.events,
        "steps": report.steps, "stutters": report.stutters,
        "outside": dict(report.outside), "actions": dict(report.actions),
        "stutter_actions": dict(report.stutter_actions),
        "failures": [asdict(f) for f in report.failures],
        "bad_input": [asdict(b) for b in report.bad_input],
        "outcomes": [[m, a, o, n] for (m, a, o), n in report.outcomes.items()],
    }, sort_keys=True)


def report_from_json(text: str) -> CheckReport:
    """The inverse of :func:`report_to_json` (states empty)."""
    d = json.loads(text)
    return CheckReport(
        files=d["files"], traces=d["traces"], events=d["events"], steps=d["steps"],
        stutters=d["stutters"], outside=Counter(d["outside"]), actions=Counter(d["actions"]),
        stutter_actions=Counter(d["stutter_actions"]),
        failures=[Failure(**f) for f in d["failures"]],
        bad_input=[BadInput(**b) for b in d["bad_input"]],
        outcomes=Counter({(m, a, o): n for m, a, o, n in d["outcomes"]}))


def verdicts(report: CheckReport) -> dict[str, Any]:
    """What two engines must agree on: every finding (sorted) and every count."""
    return {
        "failures": sorted((f.trace, f.seq, f.where, f.model, f.instance, f.action, f.kind,
                            f.message, f.before, f.after) for f in report.failures),
        "bad_input": sorted((b.where, b.trace, b.reason) for b in report.bad_input),
        "counts": (report.traces, report.events, report.steps, report.stutters),
        "outside": dict(sorted(report.outside.items())),
        "outcomes": dict(sorted(report.outcomes.items())),
    }


def summary(report: CheckReport, distinct: Mapping[str, int],
            extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The content of ``summary.json``."""
    by_kind = Counter(f.message.split(" is violated")[0] if f.kind == "invariant" else f.kind
                      for f in report.failures)
    return {
        "verdict": "ok" if report.ok else "failed",
        "files": report.files, "traces": report.traces, "events": report.events,
        "model_steps": report.steps, "stutters": report.stutters,
        "outside_the_model": sum(report.outside.values()),
        "violations": len(report.failures),
        "violations_by_invariant_or_kind": dict(sorted(by_kind.items())),
        "bad_input": len(report.bad_input),
        "traces_with_violations": len({f.trace for f in report.failures}),
        "distinct_abstract_states": dict(distinct),
        "actions_never_exercised": never_exercised(report),
        **(extra or {}),
    }


def write_outputs(report: CheckReport, out: Path, distinct: Mapping[str, int],
                  extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write the files of the module docstring into ``out`` (created); returns the summary.
    Raises TraceFormatError when pyarrow or matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401  (checked here, used by chart)
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise TraceFormatError(f"--out needs pyarrow and matplotlib ({exc.name} is missing): "
                               "pip install 'logwright[spark]'") from exc

    out.mkdir(parents=True, exist_ok=True)
    failures = sorted(report.failures, key=lambda f: (f.trace, f.seq, f.where))
    pq.write_table(pa.table({
        "trace": pa.array([f.trace for f in failures], pa.string()),
        "seq": pa.array([f.seq for f in failures], pa.int64()),
        "where": pa.array([f.where for f in failures], pa.string()),
        "model": pa.array([f.model for f in failures], pa.string()),
        "instance": pa.array([f.instance for f in failures], pa.string()),
        "action": pa.array([f.action for f in failures], pa.string()),
        "kind": pa.array([f.kind for f in failures], pa.string()),
        "message": pa.array([f.message for f in failures], pa.string()),
        "state_before": pa.array([f.before for f in failures], pa.string()),
        "state_after": pa.array([f.after for f in failures], pa.string()),
    }), out / "violations.parquet")
    bad = sorted(report.bad_input, key=lambda b: (b.trace, b.where))
    pq.write_table(pa.table({
        "where": pa.array([b.where for b in bad], pa.string()),
        "trace": pa.array([b.trace for b in bad], pa.string()),
        "reason": pa.array([b.reason for b in bad], pa.string()),
    }), out / "bad_input.parquet")
    rows = sorted(report.outcomes.items())
    never = [(m, a) for m, actions in never_exercised(report).items() for a in actions]
    pq.write_table(pa.table({
        "model": pa.array([m for (m, _, _), _ in rows] + [m for m, _ in never], pa.string()),
        "action": pa.array([a for (_, a, _), _ in rows] + [a for _, a in never], pa.string()),
        "outcome": pa.array([o for (_, _, o), _ in rows] + ["never"] * len(never),
                            pa.string()),
        "events": pa.array([n for _, n in rows] + [0] * len(never), pa.int64()),
    }), out / "coverage.parquet")
    pq.write_table(pa.table({
        "model": pa.array(list(distinct), pa.string()),
        "distinct_states": pa.array(list(distinct.values()), pa.int64()),
    }), out / "states.parquet")
    result = summary(report, distinct, extra)
    (out / "summary.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    chart(report, out / "coverage.png")
    return result


def chart(report: CheckReport, path: Path) -> None:
    """Two panels: events per action, stacked by outcome; violations by invariant or kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    never = {(m, a) for m, names in never_exercised(report).items() for a in names}
    actions = sorted({(m, a) for (m, a, _) in report.outcomes if m not in ("-", "?")} | never)
    labels = [f"{m}.{a}" + ("  (never a step)" if (m, a) in never else "") for m, a in actions]
    by_kind = Counter(f.message.split(" is violated")[0] if f.kind == "invariant" else f.kind
                      for f in report.failures)
    height = max(4.0, 0.22 * len(labels) + 1.5)
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, height),
                                      gridspec_kw={"width_ratios": [3, 1]})
    colours = {"step": "#2b8a3e", "stutter": "#74b816", "outside": "#868e96",
               "refused": "#c92a2a", "bad input": "#e67700"}
    base = [0] * len(actions)
    for outcome, colour in colours.items():
        counts = [report.outcomes.get((m, a, outcome), 0) for m, a in actions]
        if any(counts):
            left.barh(labels, counts, left=base, color=colour, label=outcome)
            base = [b + c for b, c in zip(base, counts, strict=True)]
    left.set_xscale("symlog")
    left.invert_yaxis()
    left.set_xlabel("events (log scale)")
    left.set_title(f"Coverage: {report.events:,} events in {report.traces:,} traces")
    left.legend(loc="lower right", fontsize="small")
    left.tick_params(axis="y", labelsize=7)
    for tick, (m, a) in zip(left.get_yticklabels(), actions, strict=True):
        if (m, a) in never:
            tick.set_color("#c92a2a")
    kinds = sorted(by_kind)
    if kinds:
        right.barh(kinds, [by_kind[k] for k in kinds], color="#c92a2a")
        right.invert_yaxis()
    else:
        right.text(0.5, 0.5, "no violation", ha="center", va="center", fontsize=14,
                   color="#2b8a3e", transform=right.transAxes)
        right.set_yticks([])
        right.set_xticks([])
    right.set_title(f"Violations: {len(report.failures):,}; bad input: "
                    f"{len(report.bad_input):,}")
    right.set_xlabel("events refused")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


__all__ = ["OUTCOMES", "chart", "report_from_json", "report_to_json", "summary", "verdicts",
           "write_outputs"]
