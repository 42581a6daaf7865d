"""Every TLA+ module's Python twin is TLC's machine: the same figures on every .cfg.

One test for all the modules registered in ``logwright.model.SPECS``, against the TLC figures
checked in as spec/tlc_figures.json (so it needs no TLC): on each correct .cfg the same distinct
states, depth and generated states; on each bug .cfg the same violated invariant and shortest
trace length, and, one state at a time, the same counts at the point TLC stops. Both engines
are checked (the generic one where the model is small enough to be quick); with TLC installed,
TLC itself is run on every bug .cfg too. A module whose twin takes minutes on its correct .cfg
(:data:`SUITE_CFG`) is compared here on a smaller correct .cfg; ``logwright verify`` compares the
full one (distinct, depth and generated states).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logwright.model import SPECS, check
from logwright.model.packed import PackedSpec
from logwright.verify.formal import bug_of, configs, spec_dir, tlc_figures
from logwright.verify.tlc import find_tools, run_tlc

SPEC = spec_dir()
FIGURES = tlc_figures(SPEC)
GENERIC_MAX_STATES = 200_000  # above this the one-state-at-a-time engine takes tens of seconds

SUITE_CFG = {
    # The generic engine only (no packed encoding): about 7 minutes on LeaderElection.cfg's
    # 2,426,891 states, a few seconds on two replicas (21,343 states: acknowledgements, the ELR,
    # recovery elections, a follower recording its leader's epoch).
    "LeaderElection": "LeaderElection_small.cfg",
}
"""The correct .cfg this file checks for a module whose own correct .cfg is too slow for every
run (``logwright verify`` checks that one)."""

CORRECT = [(module, SPEC / SUITE_CFG[module] if module in SUITE_CFG else configs(module, SPEC)[0])
           for module in sorted(SPECS)]
BUGGY = [(module, cfg) for module in sorted(SPECS) for cfg in configs(module, SPEC)[1]]


def _engines(module: str, cfg: Path) -> list[bool]:
    engines = [True] if issubclass(SPECS[module], PackedSpec) else []
    if FIGURES[cfg.name].get("distinct", 0) <= GENERIC_MAX_STATES or not engines:
        engines.append(False)
    return engines


def test_every_module_has_a_cfg_figures_and_bugs() -> None:
    assert set(SPECS) == {"LogStartOffset", "ControllerFencing", "StrayCleanup",
                          "ReplicaMove", "FetcherFailure", "LeaderElection"}
    for module, cfg in [*CORRECT, *[(m, configs(m, SPEC)[0]) for m in SUITE_CFG]]:
        assert cfg.is_file() and cfg.name in FIGURES, module
        assert FIGURES[cfg.name]["violation"] is None
    for module in SPECS:
        assert configs(module, SPEC)[1], f"{module} has at least one bug .cfg"
    for _, cfg in BUGGY:
        assert FIGURES[cfg.name]["violation"], cfg.name


@pytest.mark.parametrize(("module", "cfg"), CORRECT, ids=[m for m, _ in CORRECT])
def test_correct_cfg_has_tlc_s_figures(module: str, cfg: Path) -> None:
    want = FIGURES[cfg.name]
    spec = SPECS[module].from_cfg(cfg)  # type: ignore[attr-defined]
    for packed in _engines(module, cfg):
        result = check(spec, packed=packed)
        assert result.violation is None and result.complete, (module, packed)
        assert (result.distinct, result.depth, result.generated) == (
            want["distinct"], want["depth"], want["generated"]), (module, packed)


@pytest.mark.parametrize(("module", "cfg"), BUGGY, ids=[c.stem for _, c in BUGGY])
def test_every_bug_is_caught_with_tlc_s_shortest_trace(module: str, cfg: Path) -> None:
    want = FIGURES[cfg.name]
    spec = SPECS[module].from_cfg(cfg)  # type: ignore[attr-defined]
    assert spec.config.bug == bug_of(cfg)
    if want["violation"] in getattr(spec.config, "properties", ()):
        # A bug whose only symptom is lost progress: every state is safe, and TLC explores the
        # whole graph before its lasso (tests/test_model_<module>.py runs the lasso check).
        result = check(spec)
        assert result.violation is None and result.complete
        assert (result.distinct, result.depth) == (want["distinct"], want["depth"])
        return
    traces = {}
    for packed in _engines(module, cfg):
        result = check(spec, packed=packed)
        assert result.violation is not None, f"{cfg.name}: the injected bug went unnoticed"
        assert result.violation.invariant == want["violation"]
        assert len(result.violation) == want["depth"]
        if not packed:  # one state at a time stops exactly where TLC stops
            assert (result.distinct, result.generated) == (want["distinct"], want["generated"])
        traces[packed] = [action for action, _ in result.violation.steps]
    assert len(set(map(tuple, traces.values()))) == 1, "both engines find the same trace"


@pytest.mark.skipif(find_tools() is None, reason="TLC not installed (set TLA2TOOLS_JAR)")
@pytest.mark.parametrize("module", sorted(SUITE_CFG))
def test_tlc_has_the_figures_of_every_suite_cfg(module: str) -> None:
    cfg = SPEC / SUITE_CFG[module]
    result = run_tlc(SPEC / f"{module}.tla", cfg)
    assert result.ok and result.violation is None, result.error
    assert (result.distinct, result.depth, result.generated) == (
        FIGURES[cfg.name]["distinct"], FIGURES[cfg.name]["depth"], FIGURES[cfg.name]["generated"])


@pytest.mark.skipif(find_tools() is None, reason="TLC not installed (set TLA2TOOLS_JAR)")
@pytest.mark.parametrize(("module", "cfg"), BUGGY, ids=[c.stem for _, c in BUGGY])
def test_tlc_catches_every_bug(module: str, cfg: Path) -> None:
    result = run_tlc(SPEC / f"{module}.tla", cfg)
    assert result.ok, result.error
    assert (result.violation, result.depth) == (FIGURES[cfg.name]["violation"],
                                                FIGURES[cfg.name]["depth"])
