"""The same periods program gives the same plan however busy the machine: where the whole
program tried first (solver.decompose.by_period, `WHOLE_FIRST_S`) is stopped by its time
limit, what it had found by then (an incumbent on an idle machine, none on a busy one)
must not steer the rounds. Here the first whole solve is made to stop at two points, one
with an incumbent (a loose solve's plan) and one without, as an idle and a busy machine
would stop it: the rounds after both return the same columns, at the whole program's
optimum."""

from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from models.io.loading import validate_instance
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.decompose import by_period
from solver.decompose.by_period import solve_periods
from solver.decompose.period_split import split
from solver.program.lp import SolveResult, Termination
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
    """HiGHS, but the whole program's first call (`WHOLE_FIRST_S`) ends at its time limit
    with `found` (None: no incumbent yet, as on a busy machine)."""

    def __init__(self, whole_name: str, found: SolveResult | None):
        self.backend = get_backend("highs")
        self.name, self.version = self.backend.name, self.backend.version
        self.is_available = self.backend.is_available
        self.whole_name, self.found, self.first = whole_name, found, True

    def run(self, lp, settings, start=None):
        if self.first and lp.name == self.whole_name:
            self.first = False
            assert settings.time_limit_s <= by_period.WHOLE_FIRST_S
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
