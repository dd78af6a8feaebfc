"""Commands about inputs: `validate`, `catalog`, `schema`."""

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.options import JsonOnly, JsonOut, SetOption, check_not_read_by, emit_json, load
from cli.render.console import failure_output, out
from cli.render.tables import TableSpec, markdown_tables, print_tables
from models.io.output_files import one_line
from models.physics.catalog import gpu_catalog, llm_catalog
from models.schema.quantities import counted


class CatalogKind(StrEnum):
    gpus = "gpus"
    models = "models"


MarkdownFlag = Annotated[
    bool, typer.Option("--markdown", help="Print the table as Markdown instead.")
]


def validate(
    file: Annotated[Path, typer.Argument(help="Instance file (.yaml, .yml or .json).")],
    json_out: JsonOut = None,
    sets: SetOption = None,
) -> None:
    """Check an instance file: schema, catalog references, cross-references. Exit 0 or 2.

    With --json, a bad instance is data too: `{"ok": false, "problems": [{"file", "line",
    "field", "message"}]}` (still exit 2).
    """
    from models.io.output_files import check_target, is_stdout
    from models.io.output_kinds import JSON
    from models.schema.errors import InputError

    if json_out is not None:
        check_target(json_out, (file,), kind=JSON)
    try:
        instance = load(file, sets)
    except InputError as error:
        if json_out is None:
            raise
        with failure_output():  # a reader gone: the problems on stderr, exit 2 still
            emit_json(json_out, _problems_json(file, error), (file,))
        raise
    check_not_read_by(instance, (json_out,))  # not as data: it would be written there
    demand = sum(d.peak_rps for w in instance.workloads for d in w.demand.values())
    growth = instance.demand_factor  # the planner's factor on every rate
    record = {
        "file": str(file),
        "ok": True,
        "name": instance.name,
        "workloads": len(instance.workloads),
        "regions": len(instance.regions),
        "gpu_types": len(instance.gpus),
        "peak_requests_per_s": demand,
        "demand_growth": growth,
    }
    emit_json(json_out, record, (file,))
    if json_out is not None and is_stdout(json_out):
        return
    out.print(
        f"{file}: ok: {one_line(instance.name)}: {counted(len(instance.workloads), 'workload')}, "
        f"{counted(len(instance.regions), 'region')}, {counted(len(instance.gpus), 'GPU type')}, "
        f"{demand:,.1f} peak requests/s in all"
        + (
            f", {demand * growth:,.1f} as planned (x demand_growth {growth:g})"
            if growth != 1
            else ""
        ),
        markup=False,
    )


def catalog(
    kind: Annotated[CatalogKind, typer.Argument(help="Which catalog: gpus or models.")],
    as_json: JsonOnly = None,
    as_markdown: MarkdownFlag = False,
) -> None:
    """List the built-in GPUs or LLMs with their numbers and sources."""
    if as_json and as_markdown:
        raise typer.BadParameter("give --json or --markdown, not both", param_hint="--markdown")
    if as_json:
        emit_json(as_json, gpu_catalog_json() if kind is CatalogKind.gpus else llm_catalog_json())
        return
    spec = gpu_catalog_table() if kind is CatalogKind.gpus else llm_catalog_table()
    if as_markdown:
        sys.stdout.write(markdown_tables([], [spec]))
    else:
        print_tables([], [spec])


def gpu_catalog_json() -> list[dict[str, Any]]:
    """Every catalog GPU with all its fields and sources."""
    return [spec.model_dump(mode="json") for spec in gpu_catalog().values()]


def llm_catalog_json() -> list[dict[str, Any]]:
    """Every catalog LLM with all its fields, plus the parameter counts computed from its
    shape (billions)."""
    return [
        {
            **spec.model_dump(mode="json"),
            "computed_params_b": round(spec.total_params() / 1e9, 3),
            "computed_active_params_b": round(spec.active_params() / 1e9, 3),
        }
        for spec in llm_catalog().values()
    ]


def gpu_catalog_table() -> TableSpec:
    """The GPU catalog as a table: memory, bandwidth, dense TFLOPS by precision, scale-up
    link and list price."""
    rows = []
    for spec in gpu_catalog().values():
        tf = spec.dense_tflops
        rows.append(
            (
                spec.name,
                f"{spec.hbm_gib:,g}",
                f"{spec.hbm_tb_s:g}",
                f"{tf.bf16:,g}",  # 1,978 as every other count reads
                _opt(tf.fp8),
                _opt(tf.fp4),
                f"{spec.scaleup_gb_s:,g}",
                f"{spec.price_per_gpu_hour:.2f}",
            )
        )
    return TableSpec(
        title="GPU catalog (dense TFLOPS; sources: fleetplan catalog gpus --json)",
        columns=("name", "HBM GiB", "HBM TB/s", "BF16", "FP8", "FP4", "link GB/s", "$/GPU-h"),
        rows=tuple(rows),
    )


def llm_catalog_table() -> TableSpec:
    """The LLM catalog as a table: parameters (total and active), shape and context."""
    rows = tuple(
        (
            spec.name,
            f"{spec.total_params() / 1e9:.1f}",
            f"{spec.active_params() / 1e9:.1f}",
            str(spec.layers),
            f"{spec.hidden_size:,}",
            f"{spec.attention_heads}/{spec.kv_heads}",
            spec.attention.value,
            f"{spec.max_context_tokens:,}",
        )
        for spec in llm_catalog().values()
    )
    return TableSpec(
        title="LLM catalog (sources: fleetplan catalog models --json)",
        columns=(
            "name",
            "params B",
            "active B",
            "layers",
            "hidden",
            "heads/kv",
            "attention",
            "context",
        ),
        rows=rows,
    )


def schema(json_out: JsonOut = None) -> None:
    """Print the JSON Schema of the instance file (for editors and linters).

    Every field carries its description (the attribute docstring under it in the schema's
    source): editors show it as hover help. It is JSON already: --json FILE writes it to
    a file.
    """
    from models.schema.schema_docs import instance_schema

    emit_json(json_out or Path("-"), json.dumps(instance_schema(), indent=2))


def _problems_json(file: Path, error) -> dict[str, Any]:
    """An input error as data: one record per problem."""
    return {
        "file": str(file),
        "ok": False,
        "problems": [
            {"file": i.file, "line": i.line, "field": i.path, "message": i.message}
            for i in error.issues
        ],
    }


def _opt(value: float | None) -> str:
    return "-" if value is None else f"{value:,g}"
