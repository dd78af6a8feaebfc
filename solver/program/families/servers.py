"""Whole servers: GPUs are bought in servers of `gpus_per_node` (policy.buy_unit: node).

    servers[r,g]         integer, 0 <= . <= floor(max_gpus[r,g] / n_g)
    whole_servers[r,g]:  purchased[r,g] - n_g x servers[r,g] = 0

with n_g = gpus_per_node of GPU type g. purchase[r,g] (solver.program.families.supply) still
asks purchased >= used - existing, so the GPUs bought are the fewest whole servers
that cover the use beyond the existing fleet, which counts as it is (any number of
GPUs): purchased = n_g x ceil(max(0, used - existing) / n_g) at the optimum
(models.operations.site.gpus_bought). The objective prices `purchased` as before, so a server
costs n_g GPUs whether or not all of them serve.

Every replica's stages divide a server or fill whole servers (solver.candidates.table,
models.operations.site.stage_problem), so any number of GPUs of such replicas packs into ceil(GPUs
/ n_g) servers: the row asks for no more than what can be racked. With buy_unit: gpu (or a one-GPU
server) there is no row and `purchased` is continuous, as before. whole_servers is bookkeeping
(its dual is the price of a GPU wherever one is bought) and not reported.
"""

from dataclasses import dataclass
from typing import ClassVar

from models.operations.site import node_gpus
from solver.program.families import add_row, register
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import Index, WholeServersRow
from solver.program.sets import ProgramSets


@dataclass(frozen=True)
class ServersColumn(Index):
    """servers[r,g]: whole servers of GPU type g bought in region r."""

    family: ClassVar[str] = "servers"
    region: str
    gpu: str


WHOLE_SERVERS = register(
    WholeServersRow,
    "GPUs are bought as whole servers of gpus_per_node",
    "$/month per GPU",
    reported=False,
)


def server_offers(sets: ProgramSets) -> dict[tuple[str, str], int]:
    """(r, g) -> GPUs per server, for offers bought in servers of more than one GPU."""
    units = {(r, g): node_gpus(sets.instance, g) for (r, g) in sets.offers}
    return {key: n for key, n in units.items() if n > 1}


def add_server_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """servers[r,g] for every offer bought in whole servers (unbounded when elastic)."""
    for (r, g), n in server_offers(sets).items():
        upper = None if sets.slack else sets.offers[(r, g)].max_gpus // n
        lp.add_variable(ServersColumn(r, g).name(), upper=upper, integer=True)


def add_whole_servers(lp: LinearProgram, sets: ProgramSets) -> None:
    """purchased[r,g] = n_g x servers[r,g] for every offer bought in whole servers."""
    for (r, g), n in server_offers(sets).items():
        terms = {PurchasedColumn(r, g).name(): 1.0, ServersColumn(r, g).name(): -float(n)}
        add_row(lp, WholeServersRow(r, g), terms, Sense.EQ, 0.0)
