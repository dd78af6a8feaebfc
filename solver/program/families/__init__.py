"""Constraint families of the fleet program, one module each, each opening with its math.

Every family is registered once, with the index type that writes and reads its row
names (solver.program.row_names), a one-line description and the unit of its dual, so that a
row name such as `capacity[lose=eu-west,chat,us-east,decode]` can be read back as a
sentence in the report, with its shadow price in the right unit.

Adding a family (say co-location groups) is one module under solver/program/families/:

    '''colocation[f,g,r]: ... (the math first, its labels mirrored by the code)'''

    @dataclass(frozen=True)
    class ColocationRow(Index):
        family: ClassVar[str] = "colocation"
        scenario: str
        group: str
        region: str
        # int fields (a pool size) are parsed back as int

    COLOCATION = register(
        ColocationRow,
        "the engines of a group fit on the GPUs they share",
        "$/month per GPU",
    )

    def add_colocation(lp: LinearProgram, sets: ProgramSets) -> None:
        for ...:
            add_row(lp, ColocationRow(f.name, g, r), terms, Sense.LE, rhs)

plus one line in solver.program.build.build_program (the table of contents). Its columns
declare index types the same way (see solver.program.families.variables), and name terms by
`ReplicasColumn(w, c.key, r).name()`, never by f-strings. `parse_name` then reads any of
its names back into the index object. A family that should stay feasible in the elastic
program (solver.program.elastic) adds its slack column when `sets.slack` is set, as demand and
gpu_supply do.
"""

from dataclasses import dataclass

from solver.program.lp import Constraint, LinearProgram, Sense
from solver.program.row_names import Index


@dataclass(frozen=True)
class Family:
    """A named group of rows that say the same thing for different indices."""

    name: str
    index: str
    """The index tuple, e.g. `[scenario,workload,region,phase]`."""
    description: str
    """One line: what every row of the family requires."""
    dual_unit: str
    """Unit of the shadow price: the objective ($/month) per unit of right-hand side."""
    reported: bool = True
    """Whether its rows appear among the binding constraints (bookkeeping rows do not)."""
    index_type: type[Index] = Index
    """The index type that writes and reads its row names."""


FAMILIES: dict[str, Family] = {}


def register(
    index_type: type[Index], description: str, dual_unit: str, reported: bool = True
) -> Family:
    """Declare a family once, by its index type; a second declaration is a bug."""
    name = index_type.family
    if name in FAMILIES:
        raise ValueError(f"constraint family {name} registered twice")
    family = Family(name, index_type.index_text(), description, dual_unit, reported, index_type)
    FAMILIES[name] = family
    return family


def add_row(
    lp: LinearProgram, index: Index, terms: dict[str, float], sense: Sense, rhs: float
) -> Constraint:
    """Add the row of a registered family at `index`: sum(terms) SENSE rhs."""
    if index.family not in FAMILIES:
        raise ValueError(f"row family {index.family} is not registered")
    return lp.add_constraint(index.name(), index.family, terms, sense, rhs)
