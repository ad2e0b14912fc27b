"""etl-craft test: hermetic tests of a pipeline's tasks over JSONL fixtures (etlcraft/testing).

Its exit codes are its own (docs/adr/0007): 0 passed, 1 an expectation failed, 2 invalid manifest, fixture,
metadata or usage, 4 a safety policy violated, 5 internal failure; a suite exits with the most severe.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from etlcraft.cli.context import CliContext
from etlcraft.testing import errors


@click.command("test")
@click.argument("target", required=False)
@click.option("--format", "output_format", type=click.Choice(["text", "json", "md"]), default="text",
              show_default=True, help="Text for people, JSON for CI, or Markdown.")
@click.option("--output", "output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Publish the report to this new file (atomically; an identical report there is a no-op, a "
                   "different file is never overwritten).")
@click.option("--generate", "generate", metavar="PIPELINE.TASK", default=None,
              help="Write a starting manifest for this task from its SELECT instead of running tests.")
@click.option("--workers", "workers", type=click.IntRange(min=1), default=None,
              help="Processes to spread the tests over: by default one per available CPU once the suite has enough "
                   "tests to pay for it; 1 runs every test in this process. The report is the same either way.")
@click.pass_obj
def command(ctx: CliContext, target: str | None, output_format: str, output: Path | None,
            generate: str | None, workers: int | None) -> None:
    """Run hermetic tests: TARGET is a manifest (tests/NAME.test.yaml), a pipeline code (its tests/CODE*.test.yaml)
    or the project root (.), at most 100 direct tests/*.test.yaml. No credentials, network or warehouse.

    Exit codes (this command's own): 0 passed, 1 an expectation failed, 2 invalid manifest, fixture, metadata or
    usage, 4 a safety policy violated (path, symlink, size, time), 5 internal failure.
    """
    from etlcraft.testing.suite import publish, render, run_suite

    if generate is not None:
        from etlcraft.testing.generate import generate_manifest

        try:
            written = generate_manifest(ctx.project_dir, generate)
        except errors.HermeticError as exc:
            click.echo(f"error: {exc.code}: {exc}")
            sys.exit(exc.exit_code)
        click.echo(f"wrote {written}: fill in its fixtures and expectations, then run etl-craft test {written}")
        return
    if target is None:
        click.echo("error: usage: etl-craft test TARGET (a manifest, a pipeline code or .)")
        sys.exit(errors.INVALID)
    try:
        suite = run_suite(ctx.project_dir, target, workers)
    except Exception as exc:  # the last line of defence: no message text (it could hold a value)
        click.echo(f"error: internal: etl-craft test failed unexpectedly ({type(exc).__name__})")
        sys.exit(errors.INTERNAL)
    text = render(suite, output_format)
    code = suite["exit_code"]
    if output is None:
        click.echo(text, nl=False)
    else:
        try:
            result = publish(output, text, output_format)
        except errors.HermeticError as exc:
            click.echo(f"error: {exc.code}: {exc}")
            sys.exit(errors.worst([code, exc.exit_code]))
        click.echo(f"report {output.name}: {result}; exit {code}")
    sys.exit(code)
