"""The `fleetplan` application: registers every command and maps errors to exit codes."""

import sys

import typer

from cli import batch, estimate, inputs, perf, simulate, solve
from cli.console import err, report_input_error
from cli.exit_codes import ExitCode
from models.errors import InputError

app = typer.Typer(
    name="fleetplan",
    help="Plan GPU fleets for LLM serving: what to buy, where, laid out how, at what cost.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command()(inputs.validate)
app.command()(inputs.catalog)
app.command()(inputs.schema)
app.command()(estimate.estimate)
app.command()(estimate.headroom)
app.command()(solve.solve)
app.command()(solve.verify)
app.command()(solve.explain)
app.command()(batch.batch)
app.command()(perf.perf)
app.command()(simulate.simulate)


def main() -> None:
    """Console entry point: run the app, turn input errors into exit code 2."""
    try:
        app()
    except InputError as error:
        report_input_error(error)
        sys.exit(ExitCode.BAD_INPUT)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
