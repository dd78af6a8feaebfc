"""The same periods program gives the same plan however busy the machine. The whole
program tried first (solver.decompose.by_period) is held to `WHOLE_FIRST_NODES` nodes, not
to a second of the clock (whether it was proved within the second decided between its
plan and the rounds'); where it is stopped, what it had found by then must not steer the
rounds. Here the first whole solve is made to stop at two points, one
with an incumbent (a loose solve's plan) and one without, as an idle and a busy machine
would stop it: the rounds after both return the same columns, at the whole program's
optimum."""

from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from models.io.loading import validate_instance
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.decompose import period_passes
from solver.decompose.by_period import solve_periods
from solver.decompose.period_split import split
from solver.program.lp import LinearProgram, Sense, SolveResult, Termination
from solver.settings import SolveSettings
from solver.time.periods import build_time_program

EXACT = SolveSettings(time_limit_s=120.0, mip_gap=1e-6)
LOOSE = SolveSettings(time_limit_s=120.0, mip_gap=0.5)

SHAPE = [1.0] * 8 + [3.0] * 10 + [2.0] * 6


def _instance(r1: float, r2: float, reserved_share: float):
    """Two regions of H100 and H200 (reserved at `reserved_share` of the on-demand price,
    8-GPU servers), one chat workload on a two-level day, region loss."""
    supply = {
        gpu: {
            "max_gpus": 64,
            "price_per_gpu_hour": price,
            "reserved_price_per_gpu_hour": round(reserved_share * price, 2),
        }
        for gpu, price in (("h100-sxm", 2.4), ("h200", 3.1))
    }
    slo = {"ttft_p99_ms": 1000, "tpot_p99_ms": 50, "max_failover_rtt_ms": 50}
    data = {
        "name": "busy",
        "gpus": [{"name": "h100-sxm"}, {"name": "h200"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": [{"name": r, "supply": supply} for r in ("r1", "r2")],
        "links": [["r1", "r2", 20]],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {
                    r: {"peak_requests_per_s": rate, "hourly_profile": SHAPE}
                    for r, rate in (("r1", r1), ("r2", r2))
                },
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": slo,
            }
        ],
        "policy": {"survive": "region", "tensor_parallel": [1, 2], "scale_detection_s": 60},
    }
    return validate_instance(data, "busy.yaml")


class _StoppedFirst:
    """HiGHS, but the whole program's first call (`WHOLE_FIRST_NODES`) ends at its limit
    with `found` (None: no incumbent yet)."""

    def __init__(self, whole_name: str, found: SolveResult | None):
        self.backend = get_backend("highs")
        self.name, self.version = self.backend.name, self.backend.version
        self.capabilities = self.backend.capabilities
        self.is_available = self.backend.is_available
        self.whole_name, self.found, self.first = whole_name, found, True

    def run(self, lp, settings, start=None):
        if self.first and lp.name == self.whole_name:
            self.first = False
            # a work limit, not a second of the clock (half the time left, as a guard)
            assert settings.node_limit == period_passes.WHOLE_FIRST_NODES
            assert settings.time_limit_s > 1.0
            if self.found is None:
                return SolveResult(Termination.TIME_LIMIT, self.name, self.version(), 1.0)
            return SolveResult(
                Termination.FEASIBLE,
                self.name,
                self.version(),
                1.0,
                objective=self.found.objective,
                values=self.found.values,
                mip_gap=self.found.mip_gap,
            )
        return self.backend.run(lp, settings, start=start)


def _integers(lp, values: dict[str, float]) -> dict[str, int]:
    return {name: round(values[name]) for name, v in lp.variables.items() if v.integer}


@examples(max_examples=4, deadline=None)
@given(
    r1=st.just(150.0),
    r2=st.sampled_from([10.0, 25.0, 60.0]),
    reserved_share=st.sampled_from([0.45, 0.6, 0.8]),
)
def test_a_stopped_first_whole_solve_leaves_the_plan_as_it_was(r1, r2, reserved_share):
    """Equal costs (both the exact whole program's optimum) and the same integer columns:
    at these rates the periods have equal-cost layouts (a pool's `pool_at_least` step
    taken or not at 4 replicas) that the stopped solve's incumbent used to pick."""
    inst = _instance(r1, r2, reserved_share)
    lp = build_time_program(inst, build_candidates(inst)).lp
    assert split(lp) is not None  # the rounds run after the stopped first solve
    backend = get_backend("highs")
    whole = backend.run(lp, EXACT.started())
    rough = backend.run(lp, LOOSE.started())  # an incumbent an idle machine may stop at
    assert whole.termination is Termination.OPTIMAL and rough.termination.has_solution
    plans = []
    for found in (None, rough):
        result = solve_periods(lp, _StoppedFirst(lp.name, found), EXACT.started())
        assert result.termination is Termination.OPTIMAL
        assert abs(result.objective - whole.objective) <= 1e-5 * abs(whole.objective)
        plans.append(_integers(lp, result.values))
    assert plans[0] == plans[1]


def test_the_whole_first_solve_is_held_to_nodes_where_the_backend_counts_them():
    """HiGHS counts nodes: the first solve gets `WHOLE_FIRST_NODES` and half the time left
    as a guard (about 120 / 2 = 60 s: no second of the clock). A backend that counts none
    keeps `WHOLE_FIRST_S`."""
    run = EXACT.started()
    highs = period_passes.whole_first(get_backend("highs"), run)
    assert highs.node_limit == period_passes.WHOLE_FIRST_NODES
    assert 50.0 < highs.time_limit_s <= 120.0 * period_passes.WHOLE_FIRST_SHARE
    cbc = get_backend("cbc")
    assert not cbc.capabilities.node_limit
    clock = period_passes.whole_first(cbc, run)
    assert (clock.node_limit, clock.time_limit_s) == (None, period_passes.WHOLE_FIRST_S)


def test_highs_stops_at_its_node_limit():
    """A knapsack HiGHS does not close at its root (unlimited, it takes minutes to prove):
    held to one node it returns what it has, a solution (FEASIBLE) or none (TIME_LIMIT),
    never OPTIMAL. 40 items of weight w_i = 1,000 + 37 i mod 997 and value w_i + 1 in a
    bag of half their weight."""
    lp = LinearProgram(name="knapsack")
    weights = [1000 + (37 * i) % 997 for i in range(40)]
    for i, _ in enumerate(weights):
        lp.add_variable(f"x{i}", 0, 1, integer=True)
    bag = {f"x{i}": float(w) for i, w in enumerate(weights)}
    lp.add_constraint("bag", "bag", bag, Sense.LE, sum(weights) / 2)
    lp.add_objective({f"x{i}": -(w + 1.0) for i, w in enumerate(weights)})
    held = get_backend("highs").solve(lp, mip_gap=0.0, node_limit=1)
    assert held.termination in (Termination.FEASIBLE, Termination.TIME_LIMIT), held
