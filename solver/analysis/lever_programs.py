"""Levers whose program is the base plan's own: not solved again.

A lever changes the instance; the solver sees the program. Where the change does not
reach the program (a lower weight precision that no GPU on offer computes in, a latency
target already loose enough that no candidate's capacity moves), the lever's program is
the base's, column for column and row for row, and so is its optimum: re-solving it
would prove again what the base solve proved. Each static lever's candidate table and
program are therefore built first (both then serve the lever's own solve,
`solver.solve.solve_program(table=..., program=...)`, so nothing is built twice) and the
program's digest compared with the base program's:

    digest(P_lever) = digest(P_base)  =>  the lever's result is the base plan's,

its status and gap the base's, noted `SAME_PROGRAM_NOTE`. Only a base plan proven
within the gap answers for a lever (an unproven one would answer with less than the
lever's own time limit could prove). Hourly and month plans solve the periods program,
not this one: they are always solved, but for the levers below.

An `allow GPU` lever whose candidate table is the base's, candidate for candidate
(`offers_nothing`: no configuration on the type it offers fits a model at its SLO, an
a100 where every model is fp8 only, a one-GPU gh200 where tensor parallelism starts at
2), changes the question by an offer no replica can use: a plan of its program that
buys the type buys GPUs that serve nothing, at a price above 0, so its optimum is the
base's, on every horizon (static, hourly, months), and the base plan answers for it
as for the same program, noted `UNUSED_OFFER_NOTE`, without its program built. On
diurnal-chat-batch two of its eleven GPU levers (a100, gh200), each a re-solve of the
periods program as long as the base's.
"""

import hashlib
from dataclasses import dataclass
from typing import Any

from models.operations.time_demand import uses_time
from models.schema.instance import Instance
from solver.analysis.capacity_bands import uncertain_pools
from solver.analysis.paid import buys_whole_servers, servers_bought
from solver.backends import get_backend
from solver.candidates.table import CandidateTable
from solver.plan.schema import Plan
from solver.program.build import FleetProgram
from solver.program.lp import LinearProgram
from solver.settings import SolveSettings
from solver.solve import StaticStep
from solver.stages import candidate_table, solving

DIGEST_HEX_DIGITS = 16
SAME_PROGRAM_NOTE = "the base plan's own program (the change does not reach it): not re-solved"
UNUSED_OFFER_NOTE = (
    "no configuration on the offered type serves a workload (the base's candidates): not re-solved"
)


def program_digest(lp: LinearProgram) -> str:
    """SHA-256 (16 hex digits) of what the program is, in no particular order: every
    column (name, bounds, integrality, cost), every row (name, sense, right-hand side,
    nonzero coefficients by column name), the objective's constant. Row families and the
    program's name do not count (they name, they do not constrain)."""
    hasher = hashlib.sha256()
    for name in sorted(lp.variables):
        var = lp.variables[name]
        cost = lp.objective.get(name, 0.0)
        hasher.update(repr((name, var.lower, var.upper, var.integer, cost)).encode())
    for name in sorted(lp.constraints):
        row = lp.constraints[name]
        terms = sorted((column, coef) for column, coef in row.coefficients.items() if coef)
        hasher.update(repr((name, str(row.sense), row.rhs, terms)).encode())
    hasher.update(repr(lp.objective_constant).encode())
    return hasher.hexdigest()[:DIGEST_HEX_DIGITS]


def static_program(instance: Instance, table: CandidateTable, settings: SolveSettings):
    """The static program the pipeline builds for the instance from `table`
    (`static_fleet_program`'s)."""
    return static_fleet_program(instance, table, settings).lp


def static_fleet_program(
    instance: Instance, table: CandidateTable, settings: SolveSettings
) -> FleetProgram:
    """The static program the pipeline builds for the instance from `table`, with its
    sets (solver.solve.StaticStep: its size guard, pre-solve checks and build; no
    workload part started: the program is looked at first, and solved as it is)."""
    step = StaticStep(instance, table, settings)
    step.check_size()
    step.build(get_backend(settings.backend), solving(settings), parts=False)
    return step.program


@dataclass(frozen=True)
class BaseProgram:
    """The base plan's program, as the levers compare theirs with it: its digest, and
    the fields of the base plan a lever with the same program reports."""

    digest: str
    total_gpus: int | None
    servers: int
    whole_servers: bool
    uncertain: tuple[str, ...]

    def fields(self) -> dict[str, Any]:
        """The base plan's `plan_fields`, as a lever answered by it reports them."""
        return {
            "total_gpus": self.total_gpus,
            "servers": self.servers,
            "whole_servers": self.whole_servers,
            "uncertain": self.uncertain,
        }

    @classmethod
    def of(cls, lp: LinearProgram, plan: Plan) -> "BaseProgram | None":
        """The base's program, or None where its plan is not proven within the gap."""
        if not plan.optimal:
            return None
        return cls(program_digest(lp), **plan_fields(plan))


def plan_fields(plan: Plan) -> dict[str, Any]:
    """What a lever's result reports of the plan it ends on (and `BaseProgram` holds of
    the base's): its GPUs, servers bought, whether it buys whole servers, and its pools
    resting on a borrowed generation or an unmeasured regime."""
    return {
        "total_gpus": plan.total_gpus,
        "servers": servers_bought(plan),
        "whole_servers": buys_whole_servers(plan),
        "uncertain": uncertain_pools(plan),
    }


def unused_offers(
    instance: Instance,
    plan: Plan,
    lp: LinearProgram | None,
    table: CandidateTable | None,
    backend: str | None,
) -> "tuple[CandidateTable, BaseProgram] | None":
    """What a GPU lever's table is compared with (`offers_nothing`) and the answer it then
    takes: the base plan's candidate table as a lever's is built (`candidate_table` of the
    whole instance: `table`, the static program's, or for an hourly or month plan, whose
    program is its peak period's with a batch workload's candidates left out, the
    instance's built again) and the base's program (`lp`) as `BaseProgram`; None without
    them or where the base plan is not proven."""
    answer = BaseProgram.of(lp, plan) if lp is not None else None
    if table is None or answer is None:
        return None
    if uses_time(instance):
        table = candidate_table(instance, SolveSettings.of(instance, backend=backend, threads=1))
    return table, answer


def offers_nothing(table: CandidateTable, base: CandidateTable) -> bool:
    """Whether an `allow GPU` lever's candidate `table` is the `base` plan's, candidate
    for candidate (module text): the type it offers serves no workload."""
    return table.by_workload == base.by_workload


def lever_table(
    instance: Instance,
    settings: SolveSettings,
    base: BaseProgram,
    table: CandidateTable | None = None,
) -> tuple[CandidateTable, FleetProgram, bool]:
    """The lever's candidate table (`table` where built already) and static program, and
    whether the program is the base's."""
    table = table if table is not None else candidate_table(instance, settings)
    program = static_fleet_program(instance, table, settings)
    return table, program, program_digest(program.lp) == base.digest


def rounding_note(result: Any, base: Plan) -> str:
    """ "rounded to whole servers: N GPUs saved, 0 servers" where a lever moves the GPUs in
    use but neither the servers bought nor the bill (it saves less than a cent); else "".
    """
    if result.total_gpus is None or result.saving_per_month is None:
        return ""
    if not (result.whole_servers or buys_whole_servers(base)):
        return ""
    moved = (base.total_gpus or 0) - result.total_gpus
    if not moved or result.servers != servers_bought(base) or abs(result.saving_per_month) >= 0.01:
        return ""
    gpus = f"{abs(moved)} GPU{'s' if abs(moved) != 1 else ''}"
    return f"rounded to whole servers: {gpus} {'saved' if moved > 0 else 'more'}, 0 servers"
