"""Commands about inputs: `validate`, `catalog`, `schema`."""

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cli.console import out, print_json
from models.catalog import gpu_catalog, llm_catalog


class CatalogKind(StrEnum):
    gpus = "gpus"
    models = "models"


def validate(
    file: Annotated[Path, typer.Argument(help="Instance file (.yaml, .yml or .json).")],
) -> None:
    """Check an instance file: schema, catalog references, cross-references. Exit 0 or 2."""
    from models.loading import load_instance

    instance = load_instance(file)
    demand = sum(d.peak_rps for w in instance.workloads for d in w.demand.values())
    out.print(
        f"{file}: ok: {instance.name}: {len(instance.workloads)} workload(s), "
        f"{len(instance.regions)} region(s), {len(instance.gpus)} GPU type(s), "
        f"{demand:,.1f} peak requests/s in all"
    )


def catalog(
    kind: Annotated[CatalogKind, typer.Argument(help="Which catalog: gpus or models.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON with every field and its sources.")
    ] = False,
) -> None:
    """List the built-in GPUs or LLMs with their numbers and sources."""
    if kind is CatalogKind.gpus:
        gpus = gpu_catalog()
        if as_json:
            print_json([spec.model_dump(mode="json") for spec in gpus.values()])
            return
        table = Table(title="GPU catalog (dense TFLOPS; sources: fleetplan catalog gpus --json)")
        for column in ("name", "HBM GiB", "HBM TB/s", "BF16", "FP8", "FP4", "link GB/s", "$/GPU-h"):
            table.add_column(column, justify="left" if column == "name" else "right")
        for spec in gpus.values():
            tf = spec.dense_tflops
            table.add_row(
                spec.name,
                f"{spec.hbm_gib:g}",
                f"{spec.hbm_tb_s:g}",
                f"{tf.bf16:g}",
                _opt(tf.fp8),
                _opt(tf.fp4),
                f"{spec.scaleup_gb_s:g}",
                f"{spec.price_per_gpu_hour:.2f}",
            )
        out.print(table)
        return
    llms = llm_catalog()
    if as_json:
        print_json(
            [
                {
                    **spec.model_dump(mode="json"),
                    "computed_params_b": round(spec.total_params() / 1e9, 3),
                    "computed_active_params_b": round(spec.active_params() / 1e9, 3),
                }
                for spec in llms.values()
            ]
        )
        return
    table = Table(title="LLM catalog (sources: fleetplan catalog models --json)")
    for column in (
        "name",
        "params B",
        "active B",
        "layers",
        "hidden",
        "heads/kv",
        "attention",
        "context",
    ):
        table.add_column(column, justify="left" if column == "name" else "right")
    for spec in llms.values():
        table.add_row(
            spec.name,
            f"{spec.total_params() / 1e9:.1f}",
            f"{spec.active_params() / 1e9:.1f}",
            str(spec.layers),
            str(spec.hidden_size),
            f"{spec.attention_heads}/{spec.kv_heads}",
            spec.attention.value,
            f"{spec.max_context_tokens:,}",
        )
    out.print(table)


def schema() -> None:
    """Print the JSON Schema of the instance file (for editors and linters)."""
    from models.instance import Instance

    out.print(json.dumps(Instance.model_json_schema(), indent=2), markup=False)


def _opt(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
