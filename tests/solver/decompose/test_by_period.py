"""The periods program solved period by period (solver.decompose.by_period): the split
(one block per period, the commitment the only link), a hand-checked cut, and on small
generated hourly instances the same optimum as the whole program with valid bounds."""

import math
from dataclasses import replace
from unittest.mock import patch

from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from models.io.loading import validate_instance
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.decompose import by_period, period_passes
from solver.decompose.by_period import _Rounds, solve_by_period, solve_periods
from solver.decompose.period_split import split
from solver.program.families.pricing import CommittedColumn, GpuCoverRow
from solver.program.lp import SolveResult, Termination
from solver.program.row_names import split_timed
from solver.settings import SolveSettings
from solver.time.day_choice import without_day
from solver.time.periods import build_time_program

EXACT = SolveSettings(time_limit_s=120.0, mip_gap=1e-6)

SHAPES = (
    [1.0] * 8 + [3.0] * 10 + [2.0] * 6,
    [1.0] * 6 + [2.0, 3.0, 4.0, 4.0, 4.0, 4.0, 3.0, 2.0] + [1.0] * 10,
    [2.0, 1.0, 1.0, 1.0, 1.0, 2.0] * 4,
)
DAYS = {
    "shape": st.sampled_from(SHAPES),
    "reserved_share": st.sampled_from([0.45, 0.6, 0.8]),
    "h200": st.booleans(),
    "cap": st.sampled_from([None, 24]),
    "survive": st.sampled_from(["none", "region"]),
    "buy_unit": st.sampled_from(["node", "gpu"]),
}
"""The hourly instances the properties draw (`_data`): the day's shape, the reserved
price's share, an H200 offer or not, an on-demand cap, region loss, whole servers."""


def _data(rates, shape, reserved_share, h200, cap, survive, buy_unit, start_s):
    supply = {"h100-sxm": {"max_gpus": 64, "price_per_gpu_hour": 2.4}}
    if h200:
        supply["h200"] = {"max_gpus": 64, "price_per_gpu_hour": 3.1}
    for offer in supply.values():
        offer["reserved_price_per_gpu_hour"] = round(
            reserved_share * offer["price_per_gpu_hour"], 2
        )
        if cap is not None:
            offer["max_on_demand_gpus"] = cap
    policy = {
        "survive": survive,
        "tensor_parallel": [1, 2],
        "buy_unit": buy_unit,
        "scale_detection_s": 60,
    }
    if start_s is not None:
        policy["failover_start_s"] = start_s
    return {
        "name": "periods",
        "gpus": [{"name": "h100-sxm"}, *([{"name": "h200"}] if h200 else [])],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": [{"name": r, "supply": supply} for r in rates],
        "links": [["r1", "r2", 20]],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {
                    r: {"peak_requests_per_s": rate, "hourly_profile": list(shape)}
                    for r, rate in rates.items()
                },
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": {
                    "ttft_p99_ms": 1000,
                    "tpot_p99_ms": 50,
                    "max_failover_rtt_ms": 50,
                    "availability": 0.999,
                },
            }
        ],
        "policy": policy,
    }


def _program(data):
    """The periods program as the rounds see it: without the day's configuration rows
    (solver.time.day_choice fixes or drops them before the split; here dropped, the
    hour-by-hour program, so that the commitment is the only link)."""
    inst = validate_instance(data, "periods.yaml")
    program = build_time_program(inst, build_candidates(inst))
    return replace(program, lp=without_day(program.lp))


def _base():
    return _data({"r1": 40.0, "r2": 25.0}, SHAPES[0], 0.6, True, None, "region", "node", None)


def test_the_commitment_is_the_only_link_between_periods():
    """Every block's cover rows are of one period, and every period has a block (here
    each region's pools of a period are a block of their own: with two regions a lost
    region's users go to the other, whose rows name only its own pools)."""
    program = _program(_base())
    parts = split(program.lp)
    assert parts is not None
    assert {o.gpus for o in parts.offers} == {
        CommittedColumn(r, g).name() for r in ("r1", "r2") for g in ("h100-sxm", "h200")
    }
    # 8-GPU servers: levels 0 .. floor(64 / 8) = 8
    assert {(o.per_level, o.lowest, o.highest) for o in parts.offers} == {(8, 0, 8)}
    periods = []
    for block in parts.blocks:
        assert {GpuCoverRow.parse(c.row).period for c in block.covers} == {
            GpuCoverRow.parse(block.covers[0].row).period
        }
        periods.append(GpuCoverRow.parse(block.covers[0].row).period)
    assert sorted(set(periods)) == sorted(p.first_hour for p in program.periods)


def test_a_cut_at_a_point_saves_a_server_s_on_demand_price_per_level():
    """The cut at levels k^ = 0 of a block standing for w hours a day: one level of offer
    o above 0 lowers the bound by s = n x a, a = days x w x p_od the block's on-demand
    price per GPU (pricing's objective): for H100 in r1 at 2.40 $/h, n = 8, days =
    730 / 24, s = 8 x 30.4167 x w x 2.40 = 584 w; two levels 1,168 w, capped at F^."""
    program = _program(_base())
    parts = split(program.lp)
    run = _Rounds(program.lp, parts, get_backend("highs"), EXACT)
    committed = CommittedColumn("r1", "h100-sxm").name()
    for index, block in enumerate(parts.blocks):
        if committed not in {c.committed for c in block.covers}:
            continue
        period = GpuCoverRow.parse(block.covers[0].row).period
        weight = next(p.period.weight_hours for p in program.periods if p.first_hour == period)
        assert math.isclose(run.saving[index][committed], 8 * 730 / 24 * weight * 2.40)
        run._cut(index, {o.gpus: 0 for o in parts.offers}, bound=10_000.0)
        _, rhs, terms = run.cuts[-1]
        assert rhs == 10_000.0
        assert math.isclose(terms[(committed, 1)], min(10_000.0, 584.0 * weight))
        assert math.isclose(terms[(committed, 2)], min(10_000.0, 1168.0 * weight))


def test_a_program_without_a_commitment_is_solved_whole():
    """Without a commitment there is nothing to split on: solve_periods solves whole."""
    data = _base()
    for region in data["regions"]:
        for offer in region["supply"].values():
            offer.pop("reserved_price_per_gpu_hour", None)
    program = _program(data)
    assert split(program.lp) is None
    assert solve_by_period(program.lp, get_backend("highs"), EXACT.started()) is None
    whole = solve_periods(program.lp, get_backend("highs"), EXACT.started())
    assert whole.termination is Termination.OPTIMAL


@examples(max_examples=6, deadline=None)
@given(
    r1=st.sampled_from([15.0, 40.0, 90.0, 200.0]),
    r2=st.sampled_from([10.0, 30.0]),
    **DAYS,
    start_s=st.sampled_from([None, 300]),
)
def test_the_decomposed_optimum_is_the_whole_program_s(
    r1, r2, shape, reserved_share, h200, cap, survive, buy_unit, start_s
):
    """Both proved within 1e-6: equal cost; the decomposition's lower bound never above
    the whole program's optimum, its plan holds every row of the whole program. The
    rounds run to the end here (no hand-over to the whole program on a slow start)."""
    data = _data({"r1": r1, "r2": r2}, shape, reserved_share, h200, cap, survive, buy_unit, start_s)
    program = _program(data)
    backend = get_backend("highs")
    whole = backend.run(program.lp, EXACT.started())
    with (
        patch.object(by_period, "FIRST_GAP", math.inf),
        patch.object(by_period, "STALL_ROUNDS", by_period.MASTER_ROUNDS),
    ):
        parts = solve_by_period(program.lp, backend, EXACT.started())
    if not whole.termination.has_solution:
        assert parts is None or not parts.termination.has_solution
        return
    assert whole.termination is Termination.OPTIMAL
    if parts is None:  # not split: one block, or no commitment
        assert split(program.lp) is None
        return
    assert parts.termination is Termination.OPTIMAL
    tolerance = 1e-5 * abs(whole.objective) + 1e-6
    assert abs(parts.objective - whole.objective) <= tolerance
    lower = parts.objective - parts.mip_gap * abs(parts.objective)
    assert lower <= whole.objective + tolerance
    for row in program.lp.constraints.values():
        assert row.slack(parts.values) >= -1e-6 * max(1.0, abs(row.rhs)), row.name
    for name, var in program.lp.variables.items():
        value = parts.values[name]
        assert value >= var.lower - 1e-9
        assert var.upper is None or value <= var.upper + 1e-9
        if var.integer:
            assert abs(value - round(value)) <= 1e-6


def _held_at(lp, servers: int) -> None:
    """Every committed offer of `lp` held at `servers` 8-GPU servers (a month before the
    lead time holds its commitment at the month before's)."""
    for name, var in list(lp.variables.items()):
        family = name.partition("[")[0]
        if family in ("committed", "committed_servers"):
            level = float(servers * (8 if family == "committed" else 1))
            lp.variables[name] = replace(var, lower=level, upper=level)


class _Spy:
    """The HiGHS backend, each program it is handed recorded by name."""

    def __init__(self):
        self.backend = get_backend("highs")
        self.names: list[str] = []
        self.name = self.backend.name
        self.version = self.backend.version
        self.is_available = self.backend.is_available
        self.capabilities = self.backend.capabilities

    def run(self, lp, settings, start=None):
        self.names.append(lp.name)
        return self.backend.run(lp, settings, start=start)


def test_a_commitment_held_at_one_level_solves_each_period_once():
    """Held at one level (lower = upper on every committed column), the periods are
    programs apart: no whole program first, no priced round, each period solved once,
    and one master round proves their sum, the whole program's optimum."""
    program = _program(_base())
    _held_at(program.lp, 2)
    parts = split(program.lp)
    assert parts is not None and all(o.lowest == o.highest == 2 for o in parts.offers)
    spy = _Spy()
    found = solve_periods(program.lp, spy, EXACT.started())
    whole = get_backend("highs").run(program.lp, EXACT.started())
    assert found.termination is Termination.OPTIMAL
    assert abs(found.objective - whole.objective) <= 1e-5 * abs(whole.objective) + 1e-6
    blocks = len(parts.blocks)
    assert found.message.endswith(f"{blocks} periods, 1 master round, {blocks} period solves")
    assert program.lp.name not in spy.names  # no whole program first
    assert not any(name.endswith("-relaxed") for name in spy.names)  # no prices wanted


def test_the_rounds_come_first_whatever_the_size_of_the_periods():
    """The whole program is never the first call (the module text: a first whole solve
    stopped at its limit cost procurement's months seconds the rounds did not): on either
    side of `WHOLE_AFTER_INTEGERS` the first call is a period's, and the rounds' answer is
    the whole program's optimum."""
    program = _program(_base())
    per_period = program.lp.size()["integer_variables"] / len(split(program.lp).blocks)
    whole = get_backend("highs").run(program.lp, EXACT.started())
    for limit in (math.ceil(per_period) - 1, math.ceil(per_period)):
        spy = _Spy()
        with patch.object(by_period, "WHOLE_AFTER_INTEGERS", limit):
            found = solve_periods(program.lp, spy, EXACT.started())
        assert found.termination is Termination.OPTIMAL
        assert abs(found.objective - whole.objective) <= 1e-5 * abs(whole.objective) + 1e-6
        assert spy.names[0] != program.lp.name


def test_period_solves_in_threads_come_back_in_block_order_with_the_same_answers():
    """Two threads: every block's result, in block order, each the one a solve of that
    block alone gives (the same optimum)."""
    program = _program(_base())
    parts = split(program.lp)
    run = _Rounds(program.lp, parts, get_backend("highs"), EXACT.started())
    levels = {o.gpus: o.lowest for o in parts.offers}
    programs = {i: run._fixed(i, levels) for i in reversed(range(len(parts.blocks)))}
    backend = get_backend("highs")
    with patch.object(period_passes, "machine_threads", lambda: 2):
        found = period_passes.in_threads(
            backend, programs, lambda _i: EXACT.started(), lambda _i: None
        )
    assert [i for i, _ in found] == sorted(programs)
    for i, result in found:
        alone = backend.run(programs[i], EXACT.started())
        assert abs(result.objective - alone.objective) <= 1e-5 * abs(alone.objective) + 1e-6


class _Duals:
    """A backend whose every answer is an LP optimum of `objective` with `duals`."""

    name = "duals"

    def __init__(self, objective: float, duals: dict[str, float]):
        self.objective, self.duals = objective, duals

    def run(self, lp, settings, start=None):
        del lp, settings, start
        return SolveResult(
            Termination.OPTIMAL, self.name, "0", 0.0, objective=self.objective, duals=self.duals
        )


def test_a_price_below_the_floor_is_zero():
    """LP optimum 1,000: the floor is PRICE_FLOOR x 1,000 = 1e-3 $ over an offer's reach,
    8 GPUs x 8 levels = 64 GPUs. A dual of 1e-6 $/GPU moves the cut by 6.4e-5 $: 0. A
    dual of 5 $/GPU (320 $) is kept, summed over the block's cover rows of the offer."""
    program = _program(_base())
    parts = split(program.lp)
    tiny, kept = parts.blocks[0], parts.blocks[1]
    duals = {c.row: 1e-6 for c in tiny.covers} | {c.row: 5.0 for c in kept.covers}
    assert period_passes.PRICE_FLOOR * 1_000.0 == 1e-3
    assert {o.per_level * o.highest for o in parts.offers} == {64}
    prices, _ = period_passes.lp_prices(program.lp, parts, _Duals(1_000.0, duals), EXACT.started())
    assert set(prices[0].values()) == {0.0}
    for offer in {c.committed for c in kept.covers}:
        rows = sum(c.committed == offer for c in kept.covers)
        assert prices[1][offer] == 5.0 * rows


def test_a_gap_of_the_sums_rounding_proves_the_plan():
    """At mip_gap 0 the rounds ended on a plan of $17,410.50 whose bound was its cost to
    6.3e-16 (one round-off of sums of about 10^4), and the plan read 'feasible (gap
    0.000000000000063%)' where the same bound proves it: a gap of the sums' rounding
    (<= 1e-9) proves it, a real one (the 1.76e-7 that solver.plan.schema.gap_percent
    keeps) does not."""
    from solver.decompose.by_period import within_gap
    from solver.plan.schema import plan_status

    assert within_gap(6.3e-16, 0.0)
    assert plan_status(within_gap(6.3e-16, 0.0), 6.3e-16, 0.0) == "optimal"
    assert not within_gap(1.76e-7, 0.0)
    assert plan_status(within_gap(1.76e-7, 0.0), 1.76e-7, 0.0) == "feasible (gap 0.000018%)"
    assert within_gap(1e-3, 1e-3) and not within_gap(1.1e-3, 1e-3)


def test_a_blocks_program_is_its_own_columns_and_rows_at_the_levels_each_time():
    """Each block's program (`_fixed`, its columns and rows gathered once per run): its
    own columns, the very objects of the program, except the integer columns `held`
    names by their static name (held at round(value): 2.6 -> 3) and each cover's
    commitment at per_level x level; renting nothing, the cover's on-demand (and
    servers) at [0, 0]; its rows the program's own; its objective the program's on its
    columns. A priced copy (`_free`, which adds the commitment to its objective) in
    between leaves the next one as it was: each call gets its own dicts."""
    program = _program(_base())
    lp, parts = program.lp, split(program.lp)
    run = _Rounds(lp, parts, get_backend("highs"), EXACT.started())
    levels = {o.gpus: o.highest for o in parts.offers}
    per_level = {o.gpus: o.per_level for o in parts.offers}
    for i, block in enumerate(parts.blocks):
        integers = [name for name in block.columns if lp.variables[name].integer]
        held = {split_timed(integers[0])[0]: 2.6} if integers else {}
        for rent in (True, False):
            run._free(i, {c.committed: 7.0 for c in block.covers})
            sub = run._fixed(i, levels, rent=rent, held=held)
            covers = {c.committed for c in block.covers}
            idle = {n for c in block.covers for n in (c.on_demand, c.servers) if n}
            assert list(sub.variables) == [
                *block.columns,
                *dict.fromkeys(c.committed for c in block.covers),
            ]
            for name, var in sub.variables.items():
                if name in covers:
                    level = float(per_level[name] * levels[name])
                    assert (var.lower, var.upper) == (level, level)
                elif not rent and name in idle:
                    assert (var.lower, var.upper) == (0.0, 0.0)
                elif integers and name == integers[0]:
                    assert (var.lower, var.upper, var.integer) == (3, 3, True)
                else:
                    assert var is lp.variables[name]
            assert sub.constraints == {name: lp.constraints[name] for name in block.rows}
            assert sub.objective == {v: lp.objective[v] for v in block.columns if v in lp.objective}
