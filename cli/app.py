"""The `fleetplan` application: registers every command and maps errors to exit codes."""

import sys

import typer
from rich.markup import escape

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
    """Console entry point: run the app and map every way it can end to an exit code.

    Input errors exit 2. Input that exhausts the interpreter (a recursion or memory
    limit) exits 2 with a message, not a traceback. Anything else unexpected is a bug in
    fleetplan: one line naming the exception, exit 70 (EX_SOFTWARE).
    """
    try:
        app()
    except InputError as error:
        report_input_error(error)
        sys.exit(ExitCode.BAD_INPUT)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except (RecursionError, MemoryError) as error:
        err.print(
            f"[bold red]error:[/] the input is too large or too deeply nested to process "
            f"({type(error).__name__}); see the limits in models/limits.py",
        )
        sys.exit(ExitCode.BAD_INPUT)
    except Exception as error:  # the last line of defence: anything else is a bug
        err.print(
            "[bold red]internal error:[/] this is a bug in fleetplan, please report it "
            f"with the command and input: {escape(_one_line(error))}"
        )
        sys.exit(ExitCode.INTERNAL_ERROR)


def _one_line(error: BaseException) -> str:
    """`Type: message` on one line, cut to a readable length."""
    message = " ".join(str(error).split())
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


if __name__ == "__main__":
    main()
