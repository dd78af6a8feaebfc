"""The names of the program's rows and columns: `family[index,...]`, one index type each.

A name is the report's vocabulary (binding constraints, diagnoses, verifier violations),
so it is written and read in one place: every family of rows and every kind of column
declares a frozen dataclass whose fields are its index, in order, and whose `family` is
the text before the bracket. `name()` writes the name; `parse_name` reads any registered
name back into its index object, through the registry of families, never by splitting
strings at the call site:

    CapacityRow("lose=eu-west", "chat", "us-east", "decode").name()
        == "capacity[lose=eu-west,chat,us-east,decode]"
    parse_name("capacity[lose=eu-west,chat,us-east,decode]")
        == CapacityRow("lose=eu-west", "chat", "us-east", "decode")

Time is a dimension of every family, not a family of its own: every index carries two
typed fields beside its own, `period` (the first UTC hour of the period of the day its
row is in; None in a static program, whose one period is the day) and `month` (the month
of the procurement horizon; None without one). They are set with `at` and written
only when the name is rendered for the program (`timed_name`: `name@tHH`, then `@mMM`):

    CapacityRow("none", "chat", "us-east", "unified").at(7).name()
        == "capacity[none,chat,us-east,unified]@t07"
    parse_name("capacity[none,chat,us-east,unified]@t07").period == 7

This module sits beside the plan schema (solver.plan.schema) as its vocabulary, and imports
nothing from solver/: the independent verifier names the requirements a fleet breaks
with the same names as the program's rows, so the index types it needs live here
(replicas, demand, gpu_supply, replica_spare, whole_servers, power, rack_space,
configs_per_pool, configs_per_day, and the phase label). Every other family
declares its index type in its own module under solver.program.families.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from functools import cache
from operator import attrgetter
from typing import ClassVar, Self

from models.serving.replica import Role

_INDEX_TYPES: dict[str, type["Index"]] = {}

PERIOD_MARK = "@t"
"""Written before a period's first UTC hour in a rendered name (`@t07`)."""
MONTH_MARK = "@m"
"""Written before the month of the horizon in a rendered name (`@m03`)."""
TIME_FIELDS = ("period", "month")
"""The fields every index has beside its own: where in time its row is."""


def timed_name(name: str, period: int | None = None, month: int | None = None) -> str:
    """`name` in `period` (first UTC hour) and `month`: `name@tHH@mMM`, either mark left
    out when None. The one place the marks are written (the program's names, and the
    verifier's requirements that repeat them)."""
    if period is not None:
        name = f"{name}{PERIOD_MARK}{period:02d}"
    if month is not None:
        name = f"{name}{MONTH_MARK}{month:02d}"
    return name


def split_timed(name: str) -> tuple[str, int | None, int | None]:
    """(the name without its marks, its period, its month): `timed_name` read back."""
    month = period = None
    base, mark, number = name.rpartition(MONTH_MARK)
    if mark and number.isdigit():
        name, month = base, int(number)
    base, mark, number = name.rpartition(PERIOD_MARK)
    if mark and number.isdigit():
        name, period = base, int(number)
    return name, period, month


@dataclass(frozen=True)
class Index:
    """The index of one row (or column) of a family; subclasses add the fields in order,
    after the time fields every index has (keyword-only)."""

    family: ClassVar[str] = ""
    """The text before the bracket; one index type per family."""
    period: int | None = field(default=None, kw_only=True)
    """The first UTC hour of the row's period of the day (None: a static program's row)."""
    month: int | None = field(default=None, kw_only=True)
    """The month of the procurement horizon (None: a program without months)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.family:
            return
        if cls.family in _INDEX_TYPES:
            raise ValueError(f"row family {cls.family} has two index types")
        _INDEX_TYPES[cls.family] = cls

    def values(self) -> tuple[str | int, ...]:
        """The index, in order."""
        return _getter(type(self))(self)

    def name(self) -> str:
        """`family[index,...]`, marked with its period and month where set: the row's
        (or column's) name in the program."""
        name = f"{self.family}[{','.join(map(str, self.values()))}]"
        if self.period is None and self.month is None:
            return name
        return timed_name(name, self.period, self.month)

    def at(self, period: int | None, month: int | None = None) -> Self:
        """The same index in `period` (first UTC hour) and `month`."""
        return replace(self, period=period, month=month)

    @classmethod
    def owns(cls, family: str) -> bool:
        """Whether `family` names rows of this type (one fixed name, unless overridden)."""
        return family == cls.family

    @classmethod
    def index_text(cls) -> str:
        """The index tuple as the report shows it: `[scenario,workload,region,phase]`."""
        return "[" + ",".join(f.name for f in _own_fields(cls)) + "]"

    @classmethod
    def parse(cls, name: str) -> Self:
        """The index of a name of this family (fields typed `int` read as integers), its
        period and month read from their marks."""
        base, period, month = split_timed(name)
        family, parts = split_name(base)
        if family != cls.family:
            raise ValueError(f"{name!r} is not a {cls.family} name")
        own = _own_fields(cls)
        if len(parts) != len(own):
            raise ValueError(f"{name!r}: {cls.family} has {len(own)} indices {cls.index_text()}")
        values = (int(p) if f.type is int else p for f, p in zip(own, parts, strict=True))
        return cls(*values, period=period, month=month)


@cache
def _own_fields(index_type: type) -> tuple:
    """The fields of an index type's own index, in order (not the time fields)."""
    return tuple(f for f in fields(index_type) if f.name not in TIME_FIELDS)


@cache
def _getter(index_type: type) -> Callable[[object], tuple]:
    """Reads an index's fields as a tuple, in order (built once per type: the program
    writes a name for every row and column)."""
    names = tuple(f.name for f in _own_fields(index_type))
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda index: (one(index),)
    return attrgetter(*names)


def family_of(name: str) -> str:
    """The family of a rendered name: the text before its index (the whole name where it
    has none)."""
    return name.partition("[")[0]


def split_name(name: str) -> tuple[str, tuple[str, ...]]:
    """`family[a,b,c]` -> (family, (a, b, c))."""
    opening = name.find("[")
    if opening < 1 or not name.endswith("]"):
        raise ValueError(f"{name!r} is not of the form family[index,...]")
    return name[:opening], tuple(name[opening + 1 : -1].split(","))


def parse_name(name: str) -> Index:
    """The index object of a row or column name, through the registry of families.

    Raises:
        ValueError: the name is malformed or its family has no registered index type
            (its module is not imported).
    """
    base, period, month = split_timed(name)
    family, _ = split_name(base)
    index_type = _INDEX_TYPES.get(family) or next(
        (t for t in _INDEX_TYPES.values() if t.owns(family)), None
    )
    if index_type is None:
        raise ValueError(f"{name!r}: no index type is registered for family {family!r}")
    index = index_type.parse(base)
    return index if period is None and month is None else index.at(period, month)


def phase_label(role: Role, precision: str | None, split_precisions: bool) -> str:
    """The phase index of capacity and replica_spare rows: `unified`, `prefill`,
    `decode`, or `prefill-fp8` / `decode-fp8` when the workload's disaggregated
    configurations come in more than one weight precision."""
    if role is Role.UNIFIED or not split_precisions or precision is None:
        return str(role)
    return f"{role}-{precision}"


# --- the rows and columns the verifier names too ----------------------------------------


@dataclass(frozen=True)
class ReplicasColumn(Index):
    """replicas[w,c,r]: integer replicas of candidate c (its key) for w in region r."""

    family: ClassVar[str] = "replicas"
    workload: str
    candidate: str
    region: str


@dataclass(frozen=True)
class DemandRow(Index):
    """demand[f,w,o]: the users of w in origin o are served under scenario f."""

    family: ClassVar[str] = "demand"
    scenario: str
    workload: str
    origin: str


@dataclass(frozen=True)
class GpuSupplyRow(Index):
    """gpu_supply[r,g]: GPUs of type g used in r stay within what r has and can buy."""

    family: ClassVar[str] = "gpu_supply"
    region: str
    gpu: str


@dataclass(frozen=True)
class ReplicaSpareRow(Index):
    """replica_spare[w,d,phase,c]: the phase still carries its load without one replica
    of candidate c (its key)."""

    family: ClassVar[str] = "replica_spare"
    workload: str
    region: str
    phase: str
    candidate: str


@dataclass(frozen=True)
class GroupsColumn(Index):
    """groups[t,r]: integer replicas of the shared group template t (its key, e.g.
    `chat+code@h100-sxm.bf16.tp1pp1`) in region r (policy.colocation)."""

    family: ClassVar[str] = "groups"
    template: str
    region: str


@dataclass(frozen=True)
class PowerRow(Index):
    """power[r]: the GPUs installed in region r draw no more than its power_kw."""

    family: ClassVar[str] = "power"
    region: str


@dataclass(frozen=True)
class GroupSpareRow(Index):
    """group_spare[w,d,t]: w's load in d is still carried without one replica of the
    shared group t (survive: replica)."""

    family: ClassVar[str] = "group_spare"
    workload: str
    region: str
    template: str


@dataclass(frozen=True)
class RackSpaceRow(Index):
    """rack_space[r]: the servers installed in region r fit in its racks."""

    family: ClassVar[str] = "rack_space"
    region: str


@dataclass(frozen=True)
class ConfigsPerPoolRow(Index):
    """configs_per_pool[w,d,phase]: the phase of w in d mixes at most
    policy.max_configs_per_pool configurations."""

    family: ClassVar[str] = "configs_per_pool"
    workload: str
    region: str
    phase: str


@dataclass(frozen=True)
class ConfigsPerDayRow(Index):
    """configs_per_day[w,d,phase]: over the periods of one day (of one month of a
    horizon), the phase of w in d runs at most policy.max_configs_per_pool
    configurations: one server image per pool all day."""

    family: ClassVar[str] = "configs_per_day"
    workload: str
    region: str
    phase: str


@dataclass(frozen=True)
class OnePrecisionRow(Index):
    """one_precision[w]: workload w runs one weight precision
    (policy.one_precision_per_workload)."""

    family: ClassVar[str] = "one_precision"
    workload: str


@dataclass(frozen=True)
class WholeServersRow(Index):
    """whole_servers[r,g]: GPUs of type g are bought in r as whole servers."""

    family: ClassVar[str] = "whole_servers"
    region: str
    gpu: str
