"""Row and column names through their index types: written and read back in one place,
byte for byte; the elastic program as a build option; the verifier naming the rows it
finds broken with the program's own names."""

import math

import pytest
import yaml

from models.io.loading import load_instance, validate_instance
from solver.candidates.table import build_candidates
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.program.build import build_program
from solver.program.elastic import DEMAND_PENALTY_FACTOR, SUPPLY_PENALTY_FACTOR
from solver.program.families import FAMILIES
from solver.program.families.capacity import CapacityRow
from solver.program.families.demand import UnservedColumn
from solver.program.families.pooling import PoolSizeRow
from solver.program.families.supply import ExtraGpusColumn
from solver.program.families.variables import ModeLoadColumn
from solver.program.lp import Sense
from solver.program.row_names import (
    DemandRow,
    ReplicaSpareRow,
    parse_name,
    split_name,
    split_timed,
    timed_name,
)
from solver.verify.fleet import verify
from tests.paths import INSTANCES
from tests.synthetic import instance, workload

H100 = "h100-sxm"


def test_an_index_writes_the_row_name_and_reads_it_back():
    row = CapacityRow("lose=eu-west", "chat", "us-east", "decode")
    assert row.name() == "capacity[lose=eu-west,chat,us-east,decode]"
    assert parse_name(row.name()) == row
    assert FAMILIES["capacity"].index == "[scenario,workload,region,phase]"


def test_a_row_in_a_period_and_month_carries_them_as_typed_fields():
    """Time is two typed fields of every index, written only in the rendered name."""
    row = CapacityRow("none", "chat", "us-east", "unified").at(7)
    assert (row.period, row.month) == (7, None)
    assert row.name() == "capacity[none,chat,us-east,unified]@t07"
    assert parse_name(row.name()) == row
    in_month = row.at(7, month=3)
    assert in_month.name() == "capacity[none,chat,us-east,unified]@t07@m03"
    assert parse_name(in_month.name()) == in_month
    assert split_timed(in_month.name()) == ("capacity[none,chat,us-east,unified]", 7, 3)
    assert timed_name("capacity[none,chat,us-east,unified]", 7, 3) == in_month.name()
    assert row != CapacityRow("none", "chat", "us-east", "unified")  # the period counts
    assert FAMILIES["capacity"].index == "[scenario,workload,region,phase]"  # not its time


def test_a_mode_load_in_a_period_parses_to_its_own_index_in_that_period():
    load = parse_name(timed_name("disagg-fp8[none,chat,east]", 23))
    assert load == ModeLoadColumn("disagg-fp8", "none", "chat", "east").at(23)


def test_integer_indices_come_back_as_integers():
    step = parse_name("pool_size[chat,h200.fp8.tp8pp1.unified,east,4]")
    assert step == PoolSizeRow("chat", "h200.fp8.tp8pp1.unified", "east", 4)
    assert step.pool == 4


def test_a_mode_load_is_named_by_its_mode():
    load = ModeLoadColumn("disagg-fp8", "none", "chat", "east")
    assert load.name() == "disagg-fp8[none,chat,east]"
    assert parse_name("disagg-fp8[none,chat,east]") == load
    assert parse_name("unified[none,chat,east]") == ModeLoadColumn(
        "unified", "none", "chat", "east"
    )


@pytest.mark.parametrize(
    "name",
    ["capacity[none,chat]", "nosuchfamily[a,b]", "capacity", "[a,b]", "demand[none,chat,east"],
)
def test_malformed_or_unknown_names_are_refused(name):
    with pytest.raises(ValueError):
        parse_name(name)


def _instances():
    paths = sorted(INSTANCES.glob("*.yaml"))
    assert paths  # the folder of scenarios is not empty
    return paths


FIRST_WORKLOADS = {"zipf-20-models": 5}
"""Instances whose programs are built on their first workloads only. zipf-20-models' whole
program took 13.4 s of CPU, nearly all of it the co-location physics of its sixteen
fine-tunes' candidate groups (solver.colocation.groups); its four catalog models and the
first fine-tune give a program of every row and column family the whole one has (shared
groups among them, asserted below; the first four fine-tunes gave the same families) in
1.8 s of CPU against 3.6 s with four fine-tunes (a fresh process). Without a fine-tune
there is no group. The whole instance is still solved by the goldens."""


def _load(path):
    keep = FIRST_WORKLOADS.get(path.stem)
    if keep is None:
        return load_instance(path)
    data = yaml.safe_load(path.read_text())
    data["workloads"] = data["workloads"][:keep]
    return validate_instance(data, path.name)


@pytest.mark.parametrize("path", _instances(), ids=lambda p: p.stem)
def test_every_name_of_every_program_parses_back_to_itself(path):
    """The plain and the elastic program of every instance file (FIRST_WORKLOADS: of its
    first workloads). The elastic one is built over the plain one's shared group
    templates, which it would enumerate again the same way."""
    inst = _load(path)
    table = build_candidates(inst)
    plain = build_program(inst, table)
    if inst.policy.colocation:  # the co-located program's own families are named too
        assert any(split_name(name)[0] == "groups" for name in plain.lp.variables)
    for program in (plain, build_program(inst, table, elastic=True, groups=plain.groups)):
        lp = program.lp
        for row in lp.constraints.values():
            index = parse_name(row.name)
            assert index.name() == row.name
            assert index.family == row.family == split_name(row.name)[0]
        for name in lp.variables:
            assert parse_name(name).name() == name


def test_the_elastic_program_is_the_program_with_priced_slack():
    inst = instance(
        {"east": {H100: (8, 2.0)}, "west": {H100: (8, 3.0)}},
        [workload("chat", {"east": 10.0, "west": 5.0})],
    )
    table = build_candidates(inst)
    plain = build_program(inst, table).lp
    elastic = build_program(inst, table, elastic=True).lp
    assert set(plain.constraints) == set(elastic.constraints)
    # The dearest GPU-month is west's: 3.0 $/GPU-hour x 730 hours.
    supply_penalty = SUPPLY_PENALTY_FACTOR * 3.0 * inst.policy.hours_per_month
    worst = max(c.gpus / c.requests_per_s for c in table.of("chat"))
    largest = max(c.gpus for c in table.of("chat"))
    room = math.ceil(2 * (10.0 + 5.0) * worst) + largest
    for region in ("east", "west"):
        extra = ExtraGpusColumn(region, H100).name()
        row = elastic.constraints[f"gpu_supply[{region},{H100}]"]
        assert row.coefficients[extra] == -1.0 and row.rhs == 8
        assert elastic.variables[extra].upper == room
        assert elastic.objective[extra] == pytest.approx(supply_penalty)
        unserved = UnservedColumn("none", "chat", region).name()
        demand = elastic.constraints[DemandRow("none", "chat", region).name()]
        assert demand.coefficients[unserved] == 1.0 and demand.sense is Sense.EQ
        assert elastic.objective[unserved] == pytest.approx(
            DEMAND_PENALTY_FACTOR * supply_penalty * 2 * worst
        )
        assert elastic.variables[f"purchased[{region},{H100}]"].upper is None
        assert plain.variables[f"purchased[{region},{H100}]"].upper == 8
    for c in table.of("chat"):
        name = f"replicas[chat,{c.key},east]"
        assert plain.variables[name].upper == 8 // c.gpus
        assert elastic.variables[name].upper == (8 + room) // c.gpus
    # Without the slack columns, every row reads as in the program.
    slack = {n for n in elastic.variables if split_name(n)[0] in ("extra_gpus", "unserved")}
    for name, row in plain.constraints.items():
        same = {v: k for v, k in elastic.constraints[name].coefficients.items() if v not in slack}
        assert same == row.coefficients, name


def test_the_verifier_names_the_rows_of_the_program():
    """One region surviving the loss of a replica, served by a lone replica that carries
    its 1 request/s: without that replica nothing is left. The verifier's requirement is
    the program's replica_spare row for the lost pool."""
    inst = instance(
        {"east": {H100: (64, 2.0)}}, [workload("chat", {"east": 1.0})], survive="replica"
    )
    table = build_candidates(inst)
    rows = build_program(inst, table).lp.constraints
    c = next(c for c in table.of("chat") if str(c.role) == "unified")
    assert c.requests_per_s >= 1.0  # one replica carries the demand with no failure
    entry = ReplicaPool(
        workload="chat",
        region="east",
        gpu=c.gpu,
        precision=c.precision,
        tp=c.config.tp,
        pp=c.config.pp,
        role=c.role,
        count=1,
    )
    (violation,) = verify(inst, Plan(replicas=(entry,))).violations
    assert violation.requirement == ReplicaSpareRow("chat", "east", "unified", c.key).name()
    assert violation.requirement in rows
    assert violation.message.endswith("it carries 0.00")
