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
def verify(as_json: bool) -> None:
    """Check every safety invariant by every method available; exit 1 on any violation."""
    from logwright.verify import render_json, render_table, run_suites
    from logwright.verify.suites import SUITES

    console = Console(stderr=as_json)
    with console.status("verifying...") as status:
        rows = run_suites(SUITES, on_start=lambda name: status.update(f"running {name}..."))
    if as_json:
        click.echo(render_json(rows))
    else:
        render_table(rows, console)
    sys.exit(1 if any(r.verdict.failed for r in rows) else 0)


if __name__ == "__main__":
    main()
