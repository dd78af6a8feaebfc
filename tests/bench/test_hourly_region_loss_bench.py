"""Why an hourly day with region loss and two workloads proves slowly (issue 33): the
period rounds' master bound stalls about 1% under the best plan, and the whole program
that then takes over cannot raise its own bound that far. Run by `make bench` only (not
`make test`); no timed assertions.

Instance: `tests.synthetic_time.hourly_data(3, 2, 2, "region", 0, deadline_batch=False)`
(three regions, two workloads, two GPU types, region loss, no batch; `buy_unit: gpu`,
TP 1-8, configurations per pool free): 20 period blocks (period_split.split), 6 offers
(3 regions x 2 GPU types) committed in single GPUs, 2,052 columns (933 integer), 2,259
rows. Measured 2026-12-07 on the shared two-core machine, load 2-3.5, time limit 60 s,
gap 0.1% (`fleetplan solve FILE --time-limit 60`; `logging` at debug for
solver.decompose.by_period, the rounds wrapped to print each block's shortfall):

    pass / round       levels (r00 h100, r00 h200, r01 h100, r01 h200, r02 h100, r02 h200)
                                          bound      plan     gap   sum of shortfalls
    LP relaxation (whole)                 16,655
    priced pass (Lagrangian, LP duals)    20,148
    held fleet                            [1, 6, 5, 0, 4, 3]
    round 1   [0, 3, 6, 0, 5, 0]          20,607.7  22,819.8  9.7%  4,519 (19 blocks)
    round 2   [2, 2, 5, 0, 5, 0]          20,614.7  21,340.6  3.4%  2,757
    round 3   [0, 5, 4, 0, 5, 0]          20,619.0  21,340.6  3.4%  2,296
    round 4   [1, 4, 4, 0, 5, 0]          20,619.8  20,866.8  1.2%    893
    round 5   [0, 5, 3, 0, 6, 0]          20,622.0  20,833.9  1.0%  1,633
    round 6   [4, 0, 5, 0, 5, 0]          20,624.4  20,833.9  1.0%  3,774
    round 7 (the stall rule: 1.0% is not half of round 4's 1.2%) -> the whole program

    then the whole program from the plan: 43 s, its own bound 19,826 -> 20,020 (4%
    below the rounds' 20,624), no better plan; the answer 20,833.90 "feasible (gap
    1.00%)", "one program over 20 periods of the day", 48.8 s wall, 41.3 s CPU.

- The blocks are not slow: a round's 10-20 block solves take 0.6-0.8 s together (218
  block solves in 11.8 s over 12 rounds).
- The master's bound is what stalls. Rounds kept going (STALL_ROUNDS 1000): round 13
  bound 20,629.9, round 26 20,642.4, 27 rounds by the deadline in 48.2 s (44.8 s CPU,
  load 3.7), plan still 20,833.90, 0.92% (today: 1.00% in 48.1 s, 44.7 s CPU, load 3.1);
  the point cuts add 22 to round 1's bound in 12 rounds, the priced cuts and the first
  passes gave 20,608 of it. The shortfalls (a block's cheapest known cost at the master's
  levels less its theta) are spread over all 20 blocks, 75-300 each, not a few weak
  ones; the master's levels jump between substitutes ([0, 8, 0, 0, 5, 0], [0, 0, 10, 0,
  5, 0], [4, 0, 5, 0, 5, 0]): a cut at a point says nothing once any offer is raised
  (each level above k^ saves up to a GPU's on-demand price in the block), and with 6
  offers of single GPUs that can stand in for one another across the region-loss
  scenarios, the master always finds a mix no point cut has seen. The master's own
  solve grows to half the round (14.5 s of 28 s by round 12).
- Unit of commitment, not region loss alone: the same day at whole servers
  (`buy_unit: node`, configurations free) proves in 1 master round (0.84 s, $27,156);
  at the policy defaults (whole servers, one configuration per pool) in 0.3 s; `survive:
  none` (60 blocks, one per region and period) in 2 rounds (0.95 s, $13,502.57);
  single GPUs with one configuration per pool stall the rounds at 1.05% too (round 5:
  21,234.3 against 21,457.1) but that whole program proves in 0.75 s (each pool's
  configuration held all day: $21,215.62 optimal, 11.2 s wall).
- The whole program alone (HiGHS 1.16 on the exported periods program, 1 thread, gap
  0.1%, 300 s): best 21,146.28, bound 20,201.77, 4.47% after 10,459 nodes. Its
  optimum is not known; the best bounds are the rounds' (20,630) and its best plan the
  rounds' 20,833.90. With the commitment fixed at the plan's levels [1, 4, 4, 0, 5, 0]
  (so 20 blocks that nothing joins, each proved by the rounds in about 50 ms) HiGHS
  holds 20,833.90 at 0.35% after 60 s (bound 20,760.33, 9,324 nodes); within one
  level of it either way, 21,404.22 at 5.39% after 150 s (no start given). The whole
  program's search is slow even where the blocks are apart, so after the rounds it
  spends the deadline and leaves the answer as it was (the rounds' plan and bound).
- Tried: a second Lagrangian cut per block and round at the duals of the block's LP
  relaxation at the master's levels (the module text's dead end on a procurement
  month, here too): the bound rises a little faster (round 10: 20,651 against
  20,628) but each round costs 2x, the plan reached 20,904.77 by the hand-over and
  the run ended at 1.21% (23 s rounds + the whole program).

Left alone (not an exact fix): stopping the hand-over where the whole program's
relaxation is far below the rounds' bound would save 43 s here for the same plan and
gap, but changes the answer wherever the whole program would have found a better plan
(the procurement month with region loss it proves in one solve); it needs that
measured on the goldens and the procurement months first.

The test below solves the instance three ways (today; the rounds to the deadline, no
stall rule; whole servers) and `survive: none`, prints each run's rounds and the
answers, and checks that every plan is verified (`solve_program` raises otherwise) and
costs no less than the last round's bound (a lower bound on every plan).
"""

import logging
import os
import resource
import time

import pytest

from models.io.loading import validate_instance
from solver.decompose import by_period
from solver.solve import SolveSettings, solve_program
from tests.bench.tables import print_table
from tests.synthetic_time import hourly_data

LIMIT_S = 60.0
ROWS: list[tuple] = []
ROUNDS: list[tuple] = []


class _Rounds(logging.Handler):
    """The by_period debug lines of one run: (round, levels, bound, plan)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.rows: list[tuple] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("round "):
            number, levels, bound, plan = record.args[:4]
            self.rows.append((number, levels, bound, plan))


def _instance(way: str):
    data = hourly_data(
        3, 2, 2, "none" if way == "survive none" else "region", 0, deadline_batch=False
    )
    if way == "whole servers":
        data["policy"]["buy_unit"] = "node"
    return validate_instance(data, data["name"] + ".yaml")


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = ("way", "wall s", "CPU s", "load", "status", "gap", "$/month", "rounds", "method")
    print_table(f"hourly_data(3, 2, 2) without the batch, {LIMIT_S:g} s, 0.1%", header, ROWS)
    header = ("way", "round", "levels", "bound", "plan")
    print_table("the rounds (by_period debug)", header, ROUNDS)


@pytest.mark.parametrize(
    "way", ["today", "rounds to the deadline", "whole servers", "survive none"]
)
def test_hourly_region_loss(way, monkeypatch):
    inst = _instance(way)
    if way == "rounds to the deadline":
        monkeypatch.setattr(by_period, "STALL_ROUNDS", 1000)
    log = logging.getLogger("solver.decompose.by_period")
    handler, level = _Rounds(), log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    load = f"{os.getloadavg()[0]:.1f}"
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    try:
        plan = solve_program(inst, SolveSettings.of(inst, time_limit_s=LIMIT_S, mip_gap=1e-3)).plan
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    wall_s = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    gap = "-" if plan.solver.mip_gap is None else f"{plan.solver.mip_gap:.2%}"
    ROWS.append(
        (
            way,
            f"{wall_s:.1f}",
            f"{cpu_s:.1f}",
            load,
            plan.status.split()[0],
            gap,
            f"{plan.cost_per_month:,.2f}",
            len(handler.rows),
            plan.solver.method,
        )
    )
    for number, levels, bound, best in handler.rows:
        ROUNDS.append((way, number, levels, f"{bound:,.2f}", best))
    if handler.rows:  # the master's bound is a lower bound on every plan of the program
        assert plan.cost_per_month >= handler.rows[-1][2] * (1 - 1e-6)
