"""The same periods program gives the same plan however busy the machine: the periods
program (solver.decompose.by_period) makes no call whose end the clock decides before its
rounds (a whole program tried first and stopped by a second of the clock, or by its share
of a busy machine's time, used to decide between its plan and the rounds'). Here the
rounds run on instances whose periods have equal-cost layouts (a pool's `pool_at_least`
step taken or not at 4 replicas): the whole program is never their first call and their
plan is at the exact whole program's optimum."""

from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from models.io.loading import validate_instance
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.decompose.by_period import solve_periods
from solver.decompose.period_split import split
from solver.program.lp import LinearProgram, Sense, Termination
from solver.settings import SolveSettings
from solver.time.day_choice import without_day
from solver.time.periods import build_time_program

EXACT = SolveSettings(time_limit_s=120.0, mip_gap=1e-6)

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


class _Calls:
    """HiGHS, recording the name of each program it is given."""

    def __init__(self):
        self.backend = get_backend("highs")
        self.name, self.version = self.backend.name, self.backend.version
        self.capabilities = self.backend.capabilities
        self.is_available = self.backend.is_available
        self.names: list[str] = []

    def run(self, lp, settings, start=None):
        self.names.append(lp.name)
        return self.backend.run(lp, settings, start=start)


@examples(max_examples=4, deadline=None)
@given(
    r1=st.just(150.0),
    r2=st.sampled_from([10.0, 25.0, 60.0]),
    reserved_share=st.sampled_from([0.45, 0.6, 0.8]),
)
def test_the_rounds_come_first_and_end_at_the_optimum(r1, r2, reserved_share):
    """The first call is a period's (never the whole program's), and the plan is the exact
    whole program's optimum (equal costs within 1e-5)."""
    inst = _instance(r1, r2, reserved_share)
    lp = without_day(build_time_program(inst, build_candidates(inst)).lp)  # the rounds' program
    assert split(lp) is not None  # the rounds run
    whole = get_backend("highs").run(lp, EXACT.started())
    assert whole.termination is Termination.OPTIMAL
    calls = _Calls()
    result = solve_periods(lp, calls, EXACT.started())
    assert result.termination is Termination.OPTIMAL
    assert abs(result.objective - whole.objective) <= 1e-5 * abs(whole.objective)
    assert calls.names[0] != lp.name


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
