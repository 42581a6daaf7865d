"""Shared machinery for the Z3 encodings: a transition system, proved with Spacer, refuted by BMC.

A :class:`TransitionSystem` lists its variables (integers and booleans, unbounded), its initial
condition, its actions (each a guard and the new values of the variables it changes, possibly
with parameters chosen freely at each step, as TLA+'s ``\\E``), its invariants and its constant
parameters (fixed along a behaviour, e.g. a segment size, constrained by ``assumptions``).

* :func:`prove_spacer` proves an invariant for every reachable state, unbounded: the constrained
  Horn clauses ``Init => Reach``, ``Reach /\\ Next => Reach'``, ``Reach /\\ ~Inv => false`` are
  handed to Spacer (z3's Fixedpoint engine), which finds an inductive strengthening by itself;
  unsat means the invariant holds, and the strengthening it found is reported.
* :func:`bmc` unrolls the transition relation step by step and returns the shortest behaviour
  reaching a violation, as readable steps ("DeleteRecords(o=3): logStart=[3, 0] ...").
* :func:`prove_inductive` proves an invariant by induction with strengthening invariants stated
  by hand, for models where Spacer is slow.
* :func:`prove_or_refute` does both: a proof when Spacer says unsat, a BMC counterexample when it
  says sat. A bug switch is refuted by :func:`refute_bmc` alone.

Every z3 call runs under a deterministic resource limit (z3's ``rlimit``, a count of its internal
work, never wall-clock time), so a verdict does not depend on the machine's speed or load. A
check that uses up its limit is *undecided* (``ProofResult.undecided``), never a proof and never
a reason to search further. The defaults below are 5 to 50 times what the checks of spec/ use
(each result's detail reports ``rlimit <used> of <limit>``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3
from logwright.model.core import ProofResult

Vars = Mapping[str, Any]
"""A state as z3 terms: variable name -> z3 expression (Int or Bool)."""

Guard = Any
"""A z3 Boolean expression."""

RLIMIT_SPACER = 30_000_000
"""Default resource limit of one Spacer query (and of the BMC that may follow it)."""
RLIMIT_INDUCTION = 5_000_000
"""Default resource limit of one induction proof, all its SMT checks together."""
RLIMIT_BMC = 150_000_000
"""Default resource limit of one bounded search, all its steps together."""


class Undecided(Exception):
    """z3 could not decide a check: it answered unknown."""


class ResourceLimitExceeded(Undecided):
    """z3 ran out of its deterministic resource limit (``rlimit``) before deciding."""


def rlimit_count() -> int:
    """z3's resource counter of the main context: it only grows, deterministically with the work
    done (it is what ``rlimit`` limits), unlike wall-clock time."""
    count = z3.Solver().statistics().get_key_value("rlimit count")
    return int(count)


class Meter:
    """A budget of z3's resource count shared by several checks, and how much of it was used."""

    def __init__(self, rlimit: int) -> None:
        assert rlimit > 0, "a resource limit must be positive"
        self.rlimit = rlimit
        self.start = rlimit_count()

    @property
    def used(self) -> int:
        """Resource count consumed since the meter started."""
        return rlimit_count() - self.start

    def note(self) -> str:
        """``rlimit 12,345 of 20,000,000``: how much of its budget the check used."""
        return f"rlimit {self.used:,} of {self.rlimit:,}"

    def check(self, solver: z3.Solver, what: str, *assumptions: Any) -> Any:
        """``solver.check(*assumptions)`` within what is left of the budget: sat or unsat.

        Raises :class:`ResourceLimitExceeded` when the budget runs out, :class:`Undecided` when
        z3 answers unknown for another reason (an incomplete theory)."""
        left = self.rlimit - self.used
        if left <= 0:
            raise ResourceLimitExceeded(f"undecided: rlimit {self.rlimit:,} used up before {what}")
        solver.set("rlimit", left)
        answer = solver.check(*assumptions)
        if answer == z3.unknown and self.used >= self.rlimit:
            raise ResourceLimitExceeded(f"undecided: rlimit {self.rlimit:,} used up in {what}")
        if answer == z3.unknown:
            raise Undecided(f"undecided: z3 unknown ({solver.reason_unknown()}) in {what}")
        return answer


@dataclass(frozen=True)
class ActionDef:
    """One action: ``fn(state, params)`` returns (guard, {changed variable: new value})."""

    name: str
    fn: Callable[[Vars, Mapping[str, Any]], tuple[Guard, dict[str, Any]]]
    params: Sequence[str] = ()
    """Names of integer parameters chosen freely at each step (TLA+ ``\\E o \\in ...``)."""


@dataclass
class TransitionSystem:
    """A transition system over unbounded integer and Boolean variables."""

    name: str
    int_vars: Sequence[str]
    bool_vars: Sequence[str]
    init: Callable[[Vars], Guard]
    actions: Sequence[ActionDef]
    invariants: Sequence[tuple[str, Callable[[Vars], Guard]]]
    constants: Sequence[str] = ()
    """Integer parameters fixed along a behaviour (never changed by an action)."""
    assumptions: Callable[[Vars], Guard] = field(default=lambda _v: z3.BoolVal(True))
    """Constraints on the constants (TLA+ ``ASSUME``)."""

    @property
    def var_names(self) -> list[str]:
        """Every state component: constants, then integers, then Booleans."""
        return [*self.constants, *self.int_vars, *self.bool_vars]

    def state(self, suffix: str) -> dict[str, Any]:
        """Fresh z3 constants for one state, named ``<var>_<suffix>``."""
        s: dict[str, Any] = {n: z3.Int(f"{n}_{suffix}") for n in self.constants}
        s.update({n: z3.Int(f"{n}_{suffix}") for n in self.int_vars})
        s.update({n: z3.Bool(f"{n}_{suffix}") for n in self.bool_vars})
        return s

    def step(self, action: ActionDef, s: Vars, t: Vars, params: Mapping[str, Any]) -> Guard:
        """``action`` takes ``s`` to ``t``: its guard, its updates, everything else unchanged."""
        guard, updates = action.fn(s, params)
        unknown = set(updates) - set(self.int_vars) - set(self.bool_vars)
        assert not unknown, f"{action.name} updates unknown variables {unknown}"
        frame = [t[n] == updates.get(n, s[n]) for n in [*self.int_vars, *self.bool_vars]]
        frame += [t[n] == s[n] for n in self.constants]
        return z3.And(guard, *frame)

    def params(self, action: ActionDef, suffix: str) -> dict[str, Any]:
        """Fresh z3 integer constants for an action's parameters at one step."""
        return {p: z3.Int(f"{action.name}_{p}_{suffix}") for p in action.params}

    def next(self, s: Vars, t: Vars, suffix: str) -> Guard:
        """The disjunction of every action (``Next``), parameters existentially free."""
        return z3.Or(*[self.step(a, s, t, self.params(a, suffix)) for a in self.actions])

    def invariant(self, name: str) -> Callable[[Vars], Guard]:
        """The invariant called ``name``."""
        for n, fn in self.invariants:
            if n == name:
                return fn
        raise KeyError(f"{self.name} has no invariant {name}")


def prove_spacer(ts: TransitionSystem, invariant: str,
                 rlimit: int = RLIMIT_SPACER) -> tuple[str, str]:
    """Ask Spacer whether a state violating ``invariant`` is reachable, within ``rlimit``.

    Returns (``"unsat"`` = the invariant holds | ``"sat"`` = violated | ``"unknown"`` = Spacer
    could not decide within its resource limit, detail). The limit is z3's deterministic
    resource count, never wall-clock time, so the answer is the same on a loaded machine.
    """
    meter = Meter(rlimit)
    fp = z3.Fixedpoint()
    fp.set(engine="spacer")
    fp.set("rlimit", rlimit)
    s, t = ts.state("s"), ts.state("t")
    sorts = [s[n].sort() for n in ts.var_names]
    reach = z3.Function(f"Reach_{ts.name}", *sorts, z3.BoolSort())
    fp.register_relation(reach)
    params = {a.name: ts.params(a, "p") for a in ts.actions}
    fp.declare_var(*s.values(), *t.values(),
                   *[p for ps in params.values() for p in ps.values()])

    def r(v: Vars) -> Guard:
        return reach(*[v[n] for n in ts.var_names])

    fp.rule(r(s), [ts.assumptions(s), ts.init(s)])
    for a in ts.actions:  # one clause per action keeps each clause small for Spacer
        fp.rule(r(t), [r(s), ts.step(a, s, t, params[a.name])])
    try:
        answer = fp.query(z3.And(r(s), z3.Not(ts.invariant(invariant)(s))))
    except z3.Z3Exception as exc:  # the resource limit surfaces as an exception
        return "unknown", f"Spacer: undecided, {meter.note()} ({exc})"
    if answer == z3.unsat:
        return "unsat", (f"Spacer found an inductive invariant of {_lemmas(fp.get_answer())} "
                         f"lemmas, {meter.note()}")
    if answer == z3.sat:
        return "sat", f"Spacer: a violating state is reachable, {meter.note()}"
    return "unknown", f"Spacer: undecided ({fp.reason_unknown()}), {meter.note()}"


def _lemmas(answer: Any) -> int:
    """How many conjuncts Spacer's answer ``ForAll(vs, Reach(vs) == And(...))`` has."""
    body = answer.body() if z3.is_quantifier(answer) else answer
    definition = body.arg(1) if z3.is_eq(body) and body.num_args() == 2 else body
    return definition.num_args() if z3.is_and(definition) else 1


def _value(model: z3.ModelRef, term: Any) -> str:
    v = model.eval(term, model_completion=True)
    return str(v)


def bmc(ts: TransitionSystem, invariant: str, max_steps: int = 16,
        describe: Callable[[Mapping[str, str]], str] | None = None,
        rlimit: int = RLIMIT_BMC) -> list[str] | None:
    """The shortest behaviour (at most ``max_steps`` actions) reaching a state that violates
    ``invariant``, as readable steps; None if there is none that short.

    Bounded twice: by ``max_steps`` and by ``rlimit``, z3's resource count over the whole search;
    :class:`ResourceLimitExceeded` if the search runs out of it before either answer
    (:class:`Undecided` if z3 answers unknown).
    """
    meter = Meter(rlimit)
    states = [ts.state("0")]
    solver = z3.Solver()
    solver.add(ts.assumptions(states[0]), ts.init(states[0]))
    chosen: list[list[tuple[ActionDef, dict[str, Any], Any]]] = []
    for k in range(max_steps + 1):
        solver.push()
        solver.add(z3.Not(ts.invariant(invariant)(states[k])))
        answer = meter.check(solver, f"BMC at step {k} of {max_steps}")
        if answer == z3.sat:
            return _render(ts, solver.model(), states, chosen, describe)
        solver.pop()
        nxt = ts.state(str(k + 1))
        options = []
        for a in ts.actions:
            ps = ts.params(a, str(k))
            options.append((a, ps, ts.step(a, states[k], nxt, ps)))
        solver.add(z3.Or(*[o[2] for o in options]))
        chosen.append(options)
        states.append(nxt)
    return None


def _render(ts: TransitionSystem, model: z3.ModelRef, states: list[dict[str, Any]],
            chosen: list[list[tuple[ActionDef, dict[str, Any], Any]]],
            describe: Callable[[Mapping[str, str]], str] | None) -> list[str]:
    def show(s: dict[str, Any]) -> str:
        values = {n: _value(model, s[n]) for n in ts.var_names}
        if describe is not None:
            return describe(values)
        return ", ".join(f"{n}={v}" for n, v in values.items())

    steps = [f"Init: {show(states[0])}"]
    for k, options in enumerate(chosen):
        for a, ps, formula in options:
            if z3.is_true(model.eval(formula, model_completion=True)):
                args = ", ".join(f"{p}={_value(model, v)}" for p, v in ps.items())
                if not ps:
                    label = a.name
                elif a.name.endswith(")"):  # "CrashRestart(2)" + h -> "CrashRestart(2, h=0)"
                    label = f"{a.name[:-1]}, {args})"
                else:
                    label = f"{a.name}({args})"
                steps.append(f"{label}: {show(states[k + 1])}")
                break
        else:  # pragma: no cover - the model satisfies the disjunction, so one option holds
            steps.append(f"?: {show(states[k + 1])}")
    return steps


def prove_inductive(ts: TransitionSystem, invariant: str,
                    strengthening: Sequence[tuple[str, Callable[[Vars], Guard]]],
                    rlimit: int = RLIMIT_INDUCTION) -> ProofResult:
    """Prove ``invariant`` by induction (k = 1) on its conjunction with stated strengthening
    invariants: Init implies all of them, and each action preserves all of them.

    Unbounded and sound: the conjunction is inductive, so it holds in every reachable state, and
    so does ``invariant``. Fails (holds=False, no counterexample) naming the first conjunct that
    is not preserved and by which action, which is a missing strengthening, not a bug. Every SMT
    check together gets ``rlimit`` of z3's resource count; running out of it is undecided.
    """
    started = time.perf_counter()
    meter = Meter(rlimit)
    conjuncts = [(invariant, ts.invariant(invariant)), *strengthening]
    s, t = ts.state("s"), ts.state("t")

    def holds_in(v: Vars) -> Guard:
        return z3.And(*[fn(v) for _, fn in conjuncts])

    def failed(detail: str, *, undecided: bool = False) -> ProofResult:
        return ProofResult(invariant, "z3 induction", False, time.perf_counter() - started,
                           detail, undecided=undecided)

    try:
        solver = z3.Solver()
        solver.add(ts.assumptions(s), ts.init(s))
        for name, fn in conjuncts:
            if meter.check(solver, f"Init => {name}", z3.Not(fn(s))) != z3.unsat:
                return failed(f"Init does not imply {name}")
        for a in ts.actions:
            solver = z3.Solver()
            solver.add(ts.assumptions(s), holds_in(s), ts.step(a, s, t, ts.params(a, "p")))
            for name, fn in conjuncts:
                if meter.check(solver, f"{a.name} preserves {name}", z3.Not(fn(t))) != z3.unsat:
                    return failed(f"{a.name} does not preserve {name}: strengthen further")
    except Undecided as exc:
        return failed(str(exc), undecided=True)
    names = ", ".join(n for n, _ in strengthening)
    return ProofResult(invariant, "z3 induction", True, time.perf_counter() - started,
                       f"inductive with the stated strengthening: {names}; {meter.note()}")


def refute_bmc(ts: TransitionSystem, invariant: str, max_steps: int = 12,
               describe: Callable[[Mapping[str, str]], str] | None = None,
               rlimit: int = RLIMIT_BMC) -> ProofResult:
    """Look for the shortest behaviour of at most ``max_steps`` actions violating ``invariant``,
    within ``rlimit`` of z3's resource count.

    holds=False with the readable steps when found; holds=True otherwise, a bounded result only
    (the detail says so); undecided (holds=False, no steps) when the resource limit ran out.
    """
    started = time.perf_counter()
    meter = Meter(rlimit)
    try:
        steps = bmc(ts, invariant, max_steps, describe, rlimit)
    except Undecided as exc:
        return ProofResult(invariant, "z3 BMC", False, time.perf_counter() - started, str(exc),
                           undecided=True)
    if steps is None:
        return ProofResult(invariant, "z3 BMC", True, time.perf_counter() - started,
                           f"no violation within {max_steps} steps (bounded, not a proof), "
                           f"{meter.note()}")
    return ProofResult(invariant, "z3 BMC", False, time.perf_counter() - started,
                       f"violated after {len(steps) - 1} steps, {meter.note()}", steps)


def prove_or_refute(ts: TransitionSystem, invariant: str, *, max_steps: int = 16,
                    rlimit: int = RLIMIT_SPACER,
                    describe: Callable[[Mapping[str, str]], str] | None = None) -> ProofResult:
    """Spacer's verdict on ``invariant``, with a BMC counterexample when it is violated.

    Spacer undecided within ``rlimit`` is the verdict (``undecided``): no bounded search follows,
    since none could prove the invariant. Only when Spacer says a violation is reachable does a
    BMC (bounded by ``max_steps`` and by ``rlimit`` again) look for the shortest one to show.
    """
    started = time.perf_counter()
    verdict, detail = prove_spacer(ts, invariant, rlimit)
    if verdict == "unsat":
        return ProofResult(invariant, "z3 spacer (CHC)", True, time.perf_counter() - started,
                           detail)
    if verdict == "unknown":
        return ProofResult(invariant, "z3 spacer (CHC)", False, time.perf_counter() - started,
                           detail, undecided=True)
    try:
        steps = bmc(ts, invariant, max_steps, describe, rlimit)
    except Undecided as exc:
        return ProofResult(invariant, "z3 spacer (CHC) + BMC", False,
                           time.perf_counter() - started, f"{detail}; {exc}", undecided=True)
    if steps is not None:
        return ProofResult(invariant, "z3 spacer (CHC) + BMC", False,
                           time.perf_counter() - started,
                           f"violated after {len(steps) - 1} steps ({detail})", steps)
    # Spacer says reachable, BMC finds nothing that short: the two disagree within their bounds.
    return ProofResult(invariant, "z3 spacer (CHC) + BMC", False, time.perf_counter() - started,
                       f"{detail}; no counterexample within {max_steps} steps", undecided=True)


def limits(rlimit: int | None) -> dict[str, int]:
    """``{"rlimit": rlimit}``, or nothing when None (the callee's default applies)."""
    return {} if rlimit is None else {"rlimit": rlimit}


def min_of(terms: Sequence[Any]) -> Any:
    """The least of some integer terms."""
    out = terms[0]
    for t in terms[1:]:
        out = z3.If(t < out, t, out)
    return out


def max_of(terms: Sequence[Any]) -> Any:
    """The greatest of some integer terms."""
    out = terms[0]
    for t in terms[1:]:
        out = z3.If(t > out, t, out)
    return out


# -- the Z3 transition relation against the Python twin -------------------------------------

Value = int | bool | tuple[int | bool, ...]
"""One Z3 variable's value in a concrete state (an array: its values at the view's indices)."""

Abstract = Callable[[Any], Mapping[str, Value]]
"""A twin state seen by a Z3 encoding: every Z3 variable (constants too) -> its value."""


@dataclass(frozen=True)
class TwinView:
    """How one Z3 encoding sees its Python twin, for one twin configuration.

    ``abstract`` maps a twin state to the Z3 variables (the abstraction function; an encoding
    that abstracts, one partition of many say, has one view per choice). ``exact`` pairs a Z3
    action with the twin steps it stands for: from every reachable twin state the two give the
    same successors. ``bounds`` restricts a Z3 successor to the twin's constants (Z3 has no bound
    on epochs or records; the twin stops at its .cfg's). Every other twin step must be a Z3 step
    or leave the abstract state unchanged (:func:`compare_with_twin` checks both).
    """

    name: str
    abstract: Abstract
    exact: Sequence[tuple[str, Callable[[Any], Any]]]
    bounds: Callable[[Vars], Guard] = field(default=lambda _v: z3.BoolVal(True))
    array_indices: Sequence[int] = ()
    """Where an array variable's values are read (elsewhere it holds its sort's default)."""
    normalize: Callable[[dict[str, Value]], dict[str, Value]] = field(default=lambda v: v)
    """Canonical values for what no action reads (a ghost's fields while it is empty, say):
    applied to every Z3 successor read, so it compares with the twin's abstraction."""


@dataclass
class TwinComparison:
    """What :func:`compare_with_twin` found: counts, and every disagreement (none: equal)."""

    states: int = 0
    abstract_states: int = 0
    z3_checks: int = 0
    exact_pairs: int = 0
    steps_covered: int = 0
    mismatches: list[str] = field(default_factory=list)
    undecided: str | None = None


def _key(values: Mapping[str, Value]) -> tuple[tuple[str, Value], ...]:
    return tuple(sorted(values.items()))


def _const(v: int | bool) -> Any:
    return z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v)


def _pin(state: Mapping[str, Any], values: Mapping[str, Value],
         indices: Sequence[int] = ()) -> list[Any]:
    out = []
    for n, v in values.items():
        if isinstance(v, tuple):  # an array: its sort's default, but for the given indices
            sort = state[n].sort().range()
            arr = z3.K(z3.IntSort(), z3.BoolVal(False) if sort == z3.BoolSort() else z3.IntVal(0))
            for i, x in zip(indices, v, strict=True):
                arr = z3.Store(arr, i, _const(x))
            out.append(state[n] == arr)
        else:
            out.append(state[n] == _const(v))
    return out


def _scalar(v: Any) -> int | bool:
    """A z3 value of a model as a Python int or bool."""
    return z3.is_true(v) if z3.is_bool(v) else v.as_long()


def _read(ts: TransitionSystem, model: z3.ModelRef, state: Mapping[str, Any],
          indices: Sequence[int] = ()) -> dict[str, Value]:
    out: dict[str, Value] = {}
    for n in ts.var_names:
        if z3.is_array(state[n]):
            out[n] = tuple(_scalar(model.eval(z3.Select(state[n], i), model_completion=True))
                           for i in indices)
        else:
            out[n] = _scalar(model.eval(state[n], model_completion=True))
    return out


def _differs(state: Mapping[str, Any], values: Mapping[str, Value],
             indices: Sequence[int]) -> Any:
    """Some variable of ``state`` is not as in ``values`` (a blocking clause)."""
    terms = []
    for n, v in values.items():
        if isinstance(v, tuple):
            terms += [z3.Select(state[n], i) != _const(x) for i, x in zip(indices, v, strict=True)]
        else:
            terms.append(state[n] != _const(v))
    return z3.Or(*terms)


def compare_with_twin(ts: TransitionSystem, views: Sequence[TwinView],
                      states: Sequence[Any], twin_steps: Callable[[Any], Any],
                      rlimit: int = RLIMIT_INDUCTION, max_models: int = 64) -> TwinComparison:
    """Check the Z3 transition relation ``ts`` against the twin on the twin's ``states``.

    For every state, every view and every exact pair (Z3 action, twin steps): the Z3 action's
    successors from the abstract state, within the view's bounds (enumerated with blocking
    clauses, at most ``max_models``), equal the abstract states of the twin's successors. And
    every twin step (``twin_steps(s)``: all of ``Next``) maps to a Z3 step of some action, or to
    the same abstract state (a step the encoding abstracts away). Z3 work is cached per abstract
    state; each z3 check runs within ``rlimit`` of z3's resource count, and running out is
    undecided (``TwinComparison.undecided``), never a verdict.
    """
    result = TwinComparison(states=len(states))
    by_name = {a.name: a for a in ts.actions}
    s_vars, t_vars = ts.state("s"), ts.state("t")

    def solver_of(*constraints: Any) -> z3.Solver:
        solver = z3.Solver()
        solver.set("rlimit", rlimit)
        solver.add(*constraints)
        return solver

    try:
        for view in views:
            abstract = [view.abstract(s) for s in states]
            keys = [_key(a) for a in abstract]
            result.abstract_states = max(result.abstract_states, len(set(keys)))
            known: dict[Any, set[Any]] = {}  # abstract state -> Z3 successors found so far
            # each exact pair: the same successors
            for action_name, twin_fn in view.exact:
                action = by_name[action_name]
                solver = solver_of(ts.step(action, s_vars, t_vars, ts.params(action, "p")),
                                   view.bounds(t_vars))
                cache: dict[Any, frozenset[Any]] = {}
                for s, a, ka in zip(states, abstract, keys, strict=True):
                    if ka not in cache:
                        cache[ka] = _successors(ts, solver, s_vars, t_vars, a, view,
                                                f"{view.name}: {action_name}", max_models)
                        known.setdefault(ka, set()).update(cache[ka])
                        result.z3_checks += len(cache[ka]) + 1
                    twin = frozenset(_key(view.abstract(t)) for t in twin_fn(s))
                    result.exact_pairs += 1
                    if twin != cache[ka]:
                        only_z3 = [dict(x) for x in cache[ka] - twin][:2]
                        only_twin = [dict(x) for x in twin - cache[ka]][:2]
                        result.mismatches.append(
                            f"{view.name}: {action_name} from {dict(a)}: Z3 alone gives "
                            f"{only_z3}, the twin alone {only_twin}")
            # every twin step is a Z3 step (or a stutter of the abstraction)
            nxt = solver_of(ts.next(s_vars, t_vars, "p"), view.bounds(t_vars))
            every: dict[Any, frozenset[Any]] = {}  # abstract state -> all its Z3 successors
            for s, a, ka in zip(states, abstract, keys, strict=True):
                for t in twin_steps(s):
                    kb = _key(view.abstract(t))
                    result.steps_covered += 1
                    if kb == ka or kb in known.setdefault(ka, set()):
                        continue
                    if ka not in every:
                        every[ka] = _successors(ts, nxt, s_vars, t_vars, a, view,
                                                f"{view.name}: Next", max_models)
                        result.z3_checks += len(every[ka]) + 1
                        known[ka] |= every[ka]
                    if kb not in every[ka]:
                        result.mismatches.append(
                            f"{view.name}: the twin steps from {dict(a)} to "
                            f"{dict(view.abstract(t))}, which no Z3 action allows")
    except Undecided as exc:
        result.undecided = str(exc)
    return result


def _check(solver: z3.Solver, what: str) -> Any:
    answer = solver.check()
    if answer == z3.unknown:
        raise Undecided(f"undecided: z3 unknown ({solver.reason_unknown()}) in {what}")
    return answer


def _successors(ts: TransitionSystem, solver: z3.Solver, s_vars: Mapping[str, Any],
                t_vars: Mapping[str, Any], values: Mapping[str, Value], view: TwinView,
                what: str, max_models: int) -> frozenset[Any]:
    """Every successor of the state ``values`` that ``solver``'s relation allows."""
    found: set[Any] = set()
    solver.push()
    solver.add(*_pin(s_vars, values, view.array_indices))
    try:
        while _check(solver, what) == z3.sat:
            t = _read(ts, solver.model(), t_vars, view.array_indices)
            found.add(_key(view.normalize(dict(t))))
            if len(found) > max_models:
                raise Undecided(f"{what}: more than {max_models} successors (a missing bound?)")
            solver.add(_differs(t_vars, t, view.array_indices))
    finally:
        solver.pop()
    return frozenset(found)
