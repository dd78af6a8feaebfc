"""How a program was solved: the backend's result, the method and what it took."""

from dataclasses import dataclass, replace
from enum import StrEnum

from solver.program.lp import SolveResult


class Method(StrEnum):
    """How a program was solved."""

    ONE_PROGRAM = "one program"
    BY_WORKLOAD = "decomposed by workload"
    BY_COUPLED_WORKLOADS = "decomposed by coupled workloads"
    BY_REGION = "decomposed by region"
    COVERED = "covered without a solver"


@dataclass(frozen=True)
class Optimised:
    """A backend result and how it was reached."""

    result: SolveResult
    method: Method = Method.ONE_PROGRAM
    programs: int = 1
    """Programs solved: 1, or one per part when decomposed."""
    processes: int = 1
    """Processes that solved them side by side (solver.decompose.parallel): 1 is this process."""
    competing: int = 0
    """Parts that are workloads solved together because, solved apart, they asked more
    of some shared row (a region's supply of a GPU type, say) than it holds
    (solver.decompose.join)."""
    mended: int = 0
    """Workloads re-solved so that their join fits a region's supply: together around
    the region, or within shares of it (solver.decompose.join_mend)."""
    by_scip: int = 0
    """Parts solved by SCIP rather than the backend (solver.decompose.workload_parts,
    `part_backend`)."""
    cuts: int = 0
    """Hall rows added for the failover scenarios (solver.decompose.scenario_cuts)."""
    cut_rounds: int = 0
    """Rounds the scenario cuts took (LP and integer solves, each integer one by the method
    above)."""
    coordinated: int = 0
    """Plans of the workload programs a master over server counts chose among, when its
    plan is the join (whole servers: solver.decompose.server_master); 0 otherwise."""
    by_region: int = 0
    """Regions whose own programs, with the routing between regions held, bought the
    join's servers (solver.decompose.regions.join); 0 otherwise."""
    from_regions: bool = False
    """The join the one program started from was the regions' plan
    (solver.decompose.regions.join), not the workload programs'."""
    failover: str = ""
    """How failover entered the program where it was by routing rows in place of the cut
    rows asked for (solver.decompose.scenario_cuts.failover_rows); appended to the line."""
    searched: int = 0
    """Neighbourhoods of a few regions re-solved from the regions' plan, the rest held
    (solver.decompose.regions.search); 0 when there was no search."""
    search_improved: int = 0
    """Of those, the ones whose plan was cheaper and taken."""
    search_stopped: bool = False
    """Whether the time limit ended that search before every neighbourhood was tried
    (its plan then depends on the machine's speed and load)."""
    independent: bool = False
    """Decomposed by region where no row links two regions (no failover, nothing shared
    between regions): the region programs are the whole program, their plans joined its
    plan (solver.decompose.regions.join.independent)."""
    covered: int = 0
    """Regions (by workload: parts, solver.decompose.join_values) whose plan is the cover
    built without a solver (each pool's cheapest configuration in whole servers:
    solver.decompose.cover.covering_plan) because the clock stopped their programs before
    a plan or at a dearer one (solver.decompose.regions.plan takes the cover's columns
    then); with `Method.COVERED`, the whole plan is."""
    join_gap: float | None = None
    """One program solved from a join of the workload programs that held but was not
    within the gap (whole servers rounded, say): that join's gap to their bound."""

    @property
    def description(self) -> str:
        """The line below, and the failover rows' note where there is one."""
        line = self._solved
        return f"{line}; {self.failover}" if self.failover else line

    @property
    def _solved(self) -> str:
        """One line for the report, e.g. `decomposed by workload: 3 independent programs
        joined`, `... joined (10 of them solved by SCIP), solved in 2 parallel
        processes`, `decomposed by coupled workloads: 47 independent programs joined,
        1 of them workloads that compete for supply, ...`, or `one program, started
        from the joined workload programs (gap 4.07% to their bound)`."""
        if self.cut_rounds:
            solved = replace(self, cuts=0, cut_rounds=0).description
            return (
                f"{solved}; failover scenarios by {self.cuts} Hall rows in {self.cut_rounds} rounds"
            )
        if self.method in (Method.BY_WORKLOAD, Method.BY_COUPLED_WORKLOADS):
            joined = f"{self.method}: {self.programs} independent programs joined"
            if self.by_scip:
                joined += f" ({self.by_scip} of them solved by SCIP)"
            if self.competing:
                joined += f", {self.competing} of them workloads that compete for supply"
            if self.coordinated:
                joined += f", whole servers shared by a master over {self.coordinated} plans"
            elif self.by_region:
                joined += f", whole servers bought by {self.by_region} region programs"
            elif self.mended:
                joined += f", {self.mended} re-solved to fit a region's supply"
            if self.covered:
                joined += (
                    f", {self.covered} of them covered without a solver (the time limit"
                    " stopped them before a plan or at a dearer one)"
                )
            if self.processes > 1:
                joined += f", solved in {self.processes} parallel processes"
            return joined
        if self.method is Method.COVERED:
            return (
                f"{self.method}: each pool's cheapest configuration on top of the others, in"
                " whole servers (the time limit stopped every solve before a plan)"
            )
        if self.method is Method.BY_REGION and self.independent:
            joined = (
                f"{self.method}: {self.programs} independent region programs joined (no row"
                " links two regions), whole servers bought for every workload of a region"
            )
            if self.covered:
                joined += (
                    f"; {self.covered} of them covered without a solver (the time limit"
                    " stopped their programs before a plan or at a dearer one)"
                )
            return joined
        if self.method is Method.BY_REGION:
            joined = (
                f"{self.method}: {self.programs} region programs joined, whole servers"
                " bought for every workload of a region, fleets raised for failover"
            )
            if self.searched:
                joined += f", then {self.searched} neighbourhoods of regions re-solved"
                joined += f" ({self._search_outcome})"
            return joined
        if self.join_gap is not None:
            joined = "region" if self.from_regions else "workload"
            if self.searched:
                joined += f" programs and {self.searched} neighbourhoods of regions re-solved"
                joined += f" ({self._search_outcome})"
            else:
                joined += " programs"
            return (
                f"{self.method}, started from the joined {joined} (gap "
                f"{self.join_gap:.2%} to their bound)"
            )
        return str(self.method)

    @property
    def _search_outcome(self) -> str:
        """`2 cheaper`, or `2 cheaper, stopped by the time limit` when the limit ended the
        search before every neighbourhood was tried."""
        outcome = f"{self.search_improved} cheaper"
        return f"{outcome}, stopped by the time limit" if self.search_stopped else outcome
