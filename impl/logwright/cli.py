"""The ``logwright`` command line."""

from __future__ import annotations

import sys

import click
from rich.console import Console

from logwright import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="logwright")
def main() -> None:
    """logwright: the Kafka broker's log lifecycle, implemented and verified."""


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON, not a table.")
@click.option("--suite", "only", multiple=True, metavar="NAME",
              help="Run only this suite (repeatable): storage, formal; see --list.")
@click.option("--list", "list_suites", is_flag=True, help="List the suites and exit.")
@click.option("--quiet", "-q", is_flag=True,
              help="No progress lines on stderr, only the table (or JSON) and the summary.")
def verify(as_json: bool, only: tuple[str, ...], list_suites: bool, quiet: bool) -> None:
    """Check every safety invariant by every method available.

    Runs, in order: the storage crash campaign (suite "storage"), then the explicit-state model
    checker on every TLA+ module, the Z3 proofs, and TLC when TLA2TOOLS_JAR names a tla2tools.jar
    (suite "formal"). Prints a line on stderr as each check starts and ends, then one table
    (invariant x method -> verdict, checks, time) with the details numbered below it, and a
    summary line. Every check is bounded by counts and z3 resource limits, never by time: the
    verdicts are the same on a fast or a loaded machine.

    \b
    Exit codes (when several apply, the first in this order wins: 1, 3, 5, 4):
      0  every invariant holds, every injected bug is caught (skipped allowed)
      1  a safety invariant is VIOLATED
      2  usage error (an unknown option or suite)
      3  an injected bug was MISSED: a checker is too weak to see it
      4  UNDECIDED: a proof used up its resource limit without deciding
      5  ERROR: a check crashed, or a tool (TLC, SANY) failed
    """
    from logwright.verify import render_json, render_table, run_suites
    from logwright.verify.core import Progress, exit_code, summary
    from logwright.verify.suites import DESCRIPTIONS, SUITES

    if list_suites:
        for name, _ in SUITES:
            click.echo(f"{name:<9} {DESCRIPTIONS.get(name, '')}".rstrip())
        return
    unknown = set(only) - {name for name, _ in SUITES}
    if unknown:
        raise click.BadParameter(f"unknown suite(s): {', '.join(sorted(unknown))}; "
                                 f"choose from: {', '.join(n for n, _ in SUITES)}",
                                 param_hint="--suite")
    chosen = [(n, s) for n, s in SUITES if not only or n in only]
    progress = Progress(None if quiet else sys.stderr)
    rows = run_suites(chosen, progress=progress)
    if as_json:
        click.echo(render_json(rows))
        click.echo(summary(rows), err=True)
    else:
        render_table(rows, Console())
        click.echo(summary(rows))
    sys.exit(exit_code(rows))


@main.command()
@click.option("--seed", default=1, show_default=True, help="Seed of the simulated world.")
@click.option("--real", "real_path", metavar="DIR", default=None,
              help="Run on the real file system under DIR instead of in simulation.")
def demo(seed: int, real_path: str | None) -> None:
    """Run a small 3-broker cluster: produce, crash the leader, fail the controller over."""
    from logwright.cluster.demo import run_demo

    console = Console()
    cluster = run_demo(lambda line: console.print(line, highlight=False), seed, real_path)
    cluster.close()


if __name__ == "__main__":
    main()
