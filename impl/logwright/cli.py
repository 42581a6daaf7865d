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
              help="Run only this suite (repeatable); see --list.")
@click.option("--list", "list_suites", is_flag=True, help="List the suites and exit.")
def verify(as_json: bool, only: tuple[str, ...], list_suites: bool) -> None:
    """Check every safety invariant by every method available; exit 1 on any violation.

    Runs, in order: the storage crash campaign, the explicit-state model checker on every TLA+
    module, the Z3 proofs, and TLC when TLA2TOOLS_JAR names a tla2tools.jar. Prints one table:
    invariant x method -> verdict, checks, time.
    """
    from logwright.verify import render_json, render_table, run_suites
    from logwright.verify.suites import SUITES

    if list_suites:
        for name, _ in SUITES:
            click.echo(name)
        return
    unknown = set(only) - {name for name, _ in SUITES}
    if unknown:
        raise click.BadParameter(f"unknown suite(s): {', '.join(sorted(unknown))}; "
                                 f"choose from: {', '.join(n for n, _ in SUITES)}",
                                 param_hint="--suite")
    chosen = [(n, s) for n, s in SUITES if not only or n in only]
    console = Console(stderr=as_json)
    if not console.is_terminal:
        console = Console(stderr=as_json, width=180)  # a log file or pipe: keep rows whole
    with console.status("verifying...") as status:
        rows = run_suites(chosen, on_start=lambda name: status.update(f"running {name}..."))
    if as_json:
        click.echo(render_json(rows))
    else:
        render_table(rows, console)
    sys.exit(1 if any(r.verdict.failed for r in rows) else 0)


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
