"""One configuration per pool over the whole day (solver.program.families.simplicity's
day rows, solver.time.day_choice, solver.verify.day_configs).

The instance: llama-3.1-8b in one region, H100 at $2.40 and H200 at $2.90 a GPU-hour,
TP1 or TP2, GPUs bought one at a time, a day of 8 hours at 1x, 8 at 3x and 8 at 8x of
60 requests/s. Hour by hour the cheapest plan runs one H100 where one carries the
hour's warm rate, two H100 at the peak, and one H200 in the hours ahead of a ramp whose
warm rate one H100 no longer carries but one H200 does ($2.90 against 2 x $2.40): two
server images a day. One image all day runs two H100 there instead.
"""

import math

from models.io.loading import validate_instance
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.decompose.by_period import solve_periods
from solver.program.families.simplicity import ConfigInDayRow, DayConfigColumn
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import ConfigsPerDayRow, ReplicasColumn, split_timed
from solver.settings import SolveSettings
from solver.solve import solve
from solver.time.day_choice import DAY_METHOD, choice_of, without_day
from solver.time.periods import build_time_program
from solver.verify.hours import verify_hours

EXACT = SolveSettings(time_limit_s=60.0, mip_gap=1e-9)
DAYS = 730 / 24
H100, H200 = 2.40, 2.90


def _instance(reserved_share: float | None = None):
    data = {
        "name": "day-configs",
        "gpus": [{"name": "h100-sxm"}, {"name": "h200"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": [
            {
                "name": "r1",
                "supply": {
                    "h100-sxm": {"max_gpus": 64, "price_per_gpu_hour": H100},
                    "h200": {"max_gpus": 64, "price_per_gpu_hour": H200},
                },
            }
        ],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {
                    "r1": {
                        "peak_requests_per_s": 60.0,
                        "hourly_profile": [1.0] * 8 + [3.0] * 8 + [8.0] * 8,
                    }
                },
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": {"ttft_p99_ms": 1000, "tpot_p99_ms": 50},
            }
        ],
        "policy": {
            "survive": "none",
            "tensor_parallel": [1, 2],
            "buy_unit": "gpu",
            "scale_detection_s": 60,
        },
    }
    if reserved_share is not None:
        for offer in data["regions"][0]["supply"].values():
            offer["reserved_price_per_gpu_hour"] = round(
                reserved_share * offer["price_per_gpu_hour"], 2
            )
    return validate_instance(data, "day-configs.yaml")


def _gpu_of(column: str) -> str:
    return ReplicasColumn.parse(column).candidate.split(".")[0]


def test_one_image_all_day_costs_what_the_switching_hours_saved():
    """The periods program with its day rows against the same program without them (the
    hour-by-hour limit alone). Dropping rows only relaxes it, so the day-wide optimum is
    never cheaper; here it is dearer by exactly what the H200 hours saved: each hour that
    ran one H200 ($2.90) runs two H100 ($4.80),

        day - hourly = hours on H200 x (2 x 2.40 - 2.90) x 730 / 24   per month,

    and the day plan runs H100 alone (H200 all day would pay $2.90 where one H100 at
    $2.40 carries the night)."""
    instance = _instance()
    program = build_time_program(instance, build_candidates(instance))
    backend = get_backend("highs")
    day = solve_periods(program.lp, backend, EXACT.started())
    hourly = solve_periods(without_day(program.lp), backend, EXACT.started())
    weights = {part.first_hour: part.period.weight_hours for part in program.periods}
    on_h200 = {
        split_timed(name)[1]
        for name, value in hourly.values.items()
        if name.startswith(ReplicasColumn.family) and value > 0.5 and _gpu_of(name) == "h200"
    }
    hours_on_h200 = sum(weights[p] for p in on_h200)
    assert hours_on_h200 >= 1  # the hourly plan switches images
    saved = hours_on_h200 * (2 * H100 - H200) * DAYS
    # within the objective's tie-break on GPUs used (the day runs one more GPU there)
    assert math.isclose(day.objective - hourly.objective, saved, abs_tol=0.01)
    day_gpus = {
        _gpu_of(name)
        for name, value in day.values.items()
        if name.startswith(ReplicasColumn.family) and value > 0.5
    }
    assert day_gpus == {"h100-sxm"}


def test_the_verifier_refuses_a_pool_that_changes_image_between_hours():
    """The solved plan verifies; the same plan with UTC hours 0 and 15 run on one H200
    replica (what the hour-by-hour plan did) is refused by configs_per_day, naming both
    images and their hours, though each hour alone runs one configuration."""
    instance = _instance()
    plan = solve(instance)
    assert verify_hours(instance, plan).ok
    assert len({p.label for h in plan.hours for p in h.pools}) == 1
    h200 = next(
        c
        for c in build_candidates(instance).of("chat")
        if c.gpu == "h200" and c.layout_fields["tp"] == 1
    )

    def on_h200(hour):
        pool = hour.pools[0].model_copy(update={**h200.layout_fields, "count": 1, "gpus": 1})
        return hour.model_copy(update={"pools": (pool,)})

    broken = plan.model_copy(
        update={"hours": tuple(on_h200(h) if h.hour in (0, 15) else h for h in plan.hours)}
    )
    found = {v.requirement: v.message for v in verify_hours(instance, broken).violations}
    message = found[ConfigsPerDayRow("chat", "r1", "unified").name()]
    assert "2 configurations over the day" in message
    assert "h200 fp8 tp1xpp1 unified (KV fp8) in UTC hours 0, 15" in message
    assert "in UTC hours 1-14, 16-23" in message


def _toy() -> LinearProgram:
    """Two periods (t00, t12), two configurations a and b of one pool, K = 1."""
    lp = LinearProgram("toy")
    day = {
        c: lp.add_variable(DayConfigColumn("w", c, "r").name(), upper=1, integer=True) for c in "ab"
    }
    for c in "ab":
        for hour in (0, 12):
            used = lp.add_variable(f"pool_used[w,{c},r]@t{hour:02d}", upper=1, integer=True)
            name = ConfigInDayRow("w", c, "r").at(hour).name()
            lp.add_constraint(name, "config_in_day", {used: 1.0, day[c]: -1.0}, Sense.LE, 0.0)
    row = ConfigsPerDayRow("w", "r", "unified").name()
    lp.add_constraint(row, "configs_per_day", dict.fromkeys(day.values(), 1.0), Sense.LE, 1.0)
    return lp


def test_a_fixed_choice_closes_the_other_configuration_in_every_period():
    """The held fleet runs a: day_config a = 1, b = 0; the fixed program has no day column
    or configs_per_day row, and each period's pool_used of b is held <= 0 by its row (a
    row: the held pass fixes bounds), a's <= 1. Both open is more than K = 1: no choice."""
    lp = _toy()
    choice = choice_of(lp, {"pool_used[w,a,r]": 1.0, "replicas[w,a,r]": 3.0})
    assert choice == {"day_config[w,a,r]": 1.0, "day_config[w,b,r]": 0.0}
    fixed = without_day(lp, choice)
    assert not [n for n in fixed.variables if n.startswith("day_config")]
    assert list(fixed.constraints) == [
        ConfigInDayRow("w", c, "r").at(h).name() for c in "ab" for h in (0, 12)
    ]
    for name, row in fixed.constraints.items():
        assert row.coefficients == {name.replace("config_in_day", "pool_used"): 1.0}
        assert row.rhs == (1.0 if ",a," in name else 0.0)
    assert choice_of(lp, {"pool_used[w,a,r]@t00": 1.0, "pool_used[w,b,r]@t12": 1.0}) is None
    assert without_day(lp).constraints == {}


def test_lifting_the_limit_drops_the_day_rows_too():
    """explain's simplicity re-solve lifts the limit over the day as well as per period."""
    from solver.time.alternatives import without_configs_limit

    instance = _instance()
    program = build_time_program(instance, build_candidates(instance))
    assert day_rows(program.lp)
    lifted = without_configs_limit(program)
    assert not day_rows(lifted.lp)
    assert not [n for n in lifted.lp.variables if n.startswith("day_config")]


def day_rows(lp: LinearProgram) -> list[str]:
    return [
        n for n, r in lp.constraints.items() if r.family in ("configs_per_day", "config_in_day")
    ]


def test_a_committed_day_fixes_the_choice_and_says_so():
    """With reserved prices the periods program splits on the commitment; the day's
    configurations are fixed from a first pass (the held fleet's, the relaxation's) and
    the plan's method says what is proven. The plan runs one image all day."""
    plan = solve(_instance(reserved_share=0.6))
    assert DAY_METHOD in plan.solver.method
    assert len({p.label for h in plan.hours for p in h.pools}) == 1
