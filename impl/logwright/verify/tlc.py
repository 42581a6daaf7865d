"""Running SANY and TLC (the TLA+ tools) as subprocesses, and reading what they print.

What it upholds: the TLA+ modules are checked by the reference tool itself whenever it is
installed, and its figures (generated, distinct, depth), the violated invariant and the
counterexample are parsed into a :class:`TlcResult` that the verify table and the figure file
compare with the Python checker. When TLC is absent, :func:`tlc_missing` says so plainly and how
to install it; nothing is ever downloaded.

Every run gets its own temporary ``-metadir`` (TLC otherwise writes ``states/`` next to the spec,
and two concurrent runs would share it) and ``-noGenerateSpecTE`` (TLC otherwise writes a trace
spec into spec/ on a violation).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

NOT_INSTALLED = ("TLC not installed: set TLA2TOOLS_JAR to a tla2tools.jar "
                 "(https://github.com/tlaplus/tlaplus/releases) and install Java 17")
"""What the verify table says when TLC cannot run."""


@dataclass(frozen=True)
class TlaTools:
    """Where the TLA+ tools are: the java executable and tla2tools.jar."""

    java: str
    jar: Path


@dataclass
class TlcState:
    """One state of a TLC counterexample: the action label and each variable's printed value."""

    action: str
    variables: dict[str, str]

    def format(self) -> str:
        """The state as ``action: var = value, ...`` on one line."""
        return f"{self.action}: " + ", ".join(f"{k} = {v}" for k, v in self.variables.items())


@dataclass
class SanyResult:
    """The outcome of parsing one module with SANY."""

    ok: bool
    seconds: float
    output: str


@dataclass
class TlcResult:
    """The outcome of one TLC run, as TLC printed it.

    ``ok`` means TLC ran to its end without an error of its own (a parse error, an undefined
    operator, a crash); an invariant violation is still ``ok``, and names ``violation``.
    """

    module: str
    cfg: str
    ok: bool
    seconds: float
    generated: int | None = None
    distinct: int | None = None
    depth: int | None = None
    left_on_queue: int | None = None
    violation: str | None = None
    trace: list[TlcState] = field(default_factory=list)
    error: str | None = None
    output: str = ""

    @property
    def states_per_second(self) -> float:
        """Distinct states per second of wall time, JVM start-up included."""
        if not self.distinct:
            return 0.0
        return self.distinct / self.seconds if self.seconds > 0 else float(self.distinct)

    def summary(self) -> str:
        """One line with TLC's figures and verdict."""
        if not self.ok:
            return f"{self.cfg}: TLC error: {self.error}"
        verdict = ("no violation" if self.violation is None
                   else f"{self.violation} violated ({len(self.trace)} states)")
        return (f"{self.cfg}: {self.generated or 0:,} generated, {self.distinct or 0:,} distinct, "
                f"depth {self.depth}, {self.seconds:.1f}s: {verdict}")


def find_tools() -> TlaTools | None:
    """The TLA+ tools named by ``TLA2TOOLS_JAR`` with java on the PATH, or None."""
    jar = os.environ.get("TLA2TOOLS_JAR")
    java = shutil.which("java")
    if not jar or java is None or not Path(jar).is_file():
        return None
    return TlaTools(java, Path(jar))


def tlc_missing() -> str | None:
    """None when TLC can run, else the sentence saying what is missing and how to install it."""
    jar = os.environ.get("TLA2TOOLS_JAR")
    if shutil.which("java") is None:
        return NOT_INSTALLED + " (java is not on the PATH)"
    if not jar:
        return NOT_INSTALLED
    if not Path(jar).is_file():
        return NOT_INSTALLED + f" (TLA2TOOLS_JAR={jar} is not a file)"
    return None


def run_sany(tla: str | Path, tools: TlaTools | None = None, timeout_s: float = 120) -> SanyResult:
    """Parse and check one module with SANY."""
    tools = tools or find_tools()
    if tools is None:
        return SanyResult(False, 0.0, NOT_INSTALLED)
    path = Path(tla)
    started = time.perf_counter()
    proc = subprocess.run([tools.java, "-cp", str(tools.jar), "tla2sany.SANY", path.name],
                          cwd=path.parent, capture_output=True, text=True, timeout=timeout_s,
                          check=False)
    out = proc.stdout + proc.stderr
    failed = (proc.returncode != 0 or "***Parse Error***" in out or "Semantic errors" in out
              or "Fatal errors" in out or "Could not parse" in out)
    return SanyResult(not failed, time.perf_counter() - started, out)


_COUNTS = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found, "
                     r"([\d,]+) states left on queue")
_DEPTH = re.compile(r"The depth of the complete state graph search is (\d+)")
_VIOLATED = re.compile(r"^Error: (?:Invariant|Action property) (\S+) is violated", re.MULTILINE)
"""An invariant, or an action property (``[][A]_v``, checked on each step like one), violated."""
_TEMPORAL = re.compile(r"^Error: Temporal properties were violated", re.MULTILINE)
TEMPORAL = "temporal properties"
"""``violation`` when TLC reports a temporal property violated and the .cfg lists several (TLC
does not say which); with one, ``violation`` is its name."""
_STATE = re.compile(r"^State (\d+): (.*)$")
_VAR = re.compile(r"^(?:/\\ )?([A-Za-z_][A-Za-z0-9_]*) = (.*)$")


def _num(text: str) -> int:
    return int(text.replace(",", ""))


def _label(header: str) -> str:
    """``<DeleteRecords(1) line 145, col 5 to ... of module M>`` -> ``DeleteRecords(1)``."""
    inner = header.strip()
    if inner.startswith("<") and inner.endswith(">"):
        inner = inner[1:-1]
    return re.split(r" line \d+, col \d+", inner, maxsplit=1)[0].strip()


def parse_trace(output: str) -> list[TlcState]:
    """The counterexample states TLC printed (``State N: <label>`` blocks), in order."""
    states: list[TlcState] = []
    current: TlcState | None = None
    last_var: str | None = None
    for line in output.splitlines():
        m = _STATE.match(line)
        if m:
            current = TlcState(_label(m.group(2)), {})
            states.append(current)
            last_var = None
            continue
        if current is None:
            continue
        if not line.strip():
            current, last_var = None, None
            continue
        v = _VAR.match(line)
        if v:
            last_var = v.group(1)
            current.variables[last_var] = v.group(2).strip()
        elif last_var is not None:  # a long value TLC wrapped over several lines
            current.variables[last_var] += " " + line.strip()
    return states


def parse_tlc_output(output: str, module: str = "", cfg: str = "",
                     seconds: float = 0.0, properties: tuple[str, ...] = ()) -> TlcResult:
    """Read TLC's figures, violated invariant or property and counterexample from its output.

    A temporal violation is named after the .cfg's property when it lists one (``properties``),
    else :data:`TEMPORAL`; its trace is TLC's lasso (a witness, not the shortest), so ``depth``
    stays the depth of the state graph."""
    result = TlcResult(module, cfg, ok=True, seconds=seconds, output=output)
    counts = _COUNTS.findall(output)
    if counts:
        generated, distinct, left = counts[-1]  # the final line, after the progress reports
        result.generated, result.distinct = _num(generated), _num(distinct)
        result.left_on_queue = _num(left)
    depth = _DEPTH.search(output)
    if depth:
        result.depth = int(depth.group(1))
    violated = _VIOLATED.search(output)
    if violated:
        result.violation = violated.group(1)
        result.trace = parse_trace(output)
        result.depth = len(result.trace) or result.depth
    elif _TEMPORAL.search(output):
        result.violation = properties[0] if len(properties) == 1 else TEMPORAL
        result.trace = parse_trace(output)
    elif "Model checking completed. No error has been found." not in output:
        errors = [ln for ln in output.splitlines()
                  if ln.startswith("Error:") or "***Parse Error***" in ln or "Exception" in ln]
        result.ok = False
        result.error = " ".join(errors[:3]) or "TLC did not finish (no result line)"
    return result


def run_tlc(tla: str | Path, cfg: str | Path | None = None, *, workers: int = 1,
            check_deadlock: bool = False, tools: TlaTools | None = None,
            timeout_s: float = 600) -> TlcResult:
    """Model-check ``tla`` with ``cfg`` (default: the .cfg of the same name) in a subprocess.

    Runs from the module's directory, with a private temporary metadir that is removed after.
    Temporal properties are checked once, on the complete state graph (``-lncheck final``), so
    the figures of a run that violates one do not depend on when TLC's periodic check ran.
    """
    from logwright.model.cfg import parse_cfg

    path = Path(tla)
    cfg_path = Path(cfg) if cfg is not None else path.with_suffix(".cfg")
    tools = tools or find_tools()
    if tools is None:
        return TlcResult(path.stem, cfg_path.name, ok=False, seconds=0.0, error=NOT_INSTALLED)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="logwright-tlc-") as metadir:
        args = [tools.java, "-XX:+UseParallelGC", "-cp", str(tools.jar), "tlc2.TLC",
                "-workers", str(workers), "-noGenerateSpecTE", "-lncheck", "final",
                "-metadir", metadir,
                "-config", str(cfg_path.resolve()), path.name]
        if not check_deadlock:
            args.insert(args.index("-workers"), "-deadlock")
        try:
            proc = subprocess.run(args, cwd=path.parent, capture_output=True, text=True,
                                  timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return TlcResult(path.stem, cfg_path.name, ok=False,
                             seconds=time.perf_counter() - started,
                             error=f"TLC did not finish within {timeout_s:.0f}s")
    properties = tuple(parse_cfg(cfg_path)["properties"]) if cfg_path.is_file() else ()
    return parse_tlc_output(proc.stdout + proc.stderr, path.stem, cfg_path.name,
                            time.perf_counter() - started, properties)


def module_of(cfg: str | Path) -> Path:
    """The module a .cfg checks: ``X.cfg`` and ``X_bug_Y.cfg`` both check ``X.tla``."""
    p = Path(cfg)
    return p.with_name(p.stem.split("_bug_")[0] + ".tla")
