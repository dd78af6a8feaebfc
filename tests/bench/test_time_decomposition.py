"""Hourly and month programs whole against period by period (issue 33), side by side in
one run. Run by `make bench` only (not `make test`).

Two instances, written out here:

- `hourly-failover-3`: Llama 3.3 70B chat in three regions with their peaks at
  different UTC hours (21 periods of the day), reserved at 60% of on demand, 99.9%
  availability with region loss and a 300 s failover start, TP [1, 2, 4, 8].
- `procurement-3x3-12`: three regions (power caps 600 / 300 / 200 kW), three workloads
  (Llama 3.3 70B chat, Llama 3.1 8B assistant, Qwen3-235B-A22B reasoning) on one
  24-hour profile, reserved at 62% of on demand, 12 months growing 5% a month, orders
  two months ahead; whole servers (the policy's default).
- `procurement-3x3-12-region-loss`: the same surviving the loss of a region.

Each is solved through `solve_program` to a verified plan twice in this process: once
with the periods program handed whole to the backend (today's code before the
decomposition: `by_period.split` patched to refuse every program) and once period by
period (solver.decompose.by_period). The table prints the wall time from the start of
`solve_program` to the verified plan, this process's CPU time (its threads included:
the period solves run in threads; worker processes, where candidates go to them, not
counted), the one-minute load average when the row started (the machine is shared:
compare rows of one run), the month-0 cost, the horizon's total where there is one, the
gap and status of month 0's program and, period by period, the rounds of the first
periods program (month 0). Both are proved within the same gap (0.1%), so their costs
may differ by up to that much where several plans lie within it.
"""

import os
import time

import pytest

from models.io.loading import validate_instance
from solver.decompose import by_period
from solver.errors import NoSolution
from solver.solve import SolveSettings, solve_program
from solver.time import day_choice
from tests.bench.tables import print_table

ROWS: list[tuple] = []

PROFILE_EAST = [1, 1, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1]
PROFILE_WEST = [1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1, 1]
PROFILE_EU = [2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1]
PROFILE_ONE = [1, 1, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1]


def _offer(on_demand: float, max_gpus: int, reserved_share: float) -> dict:
    return {
        "max_gpus": max_gpus,
        "price_per_gpu_hour": on_demand,
        "reserved_price_per_gpu_hour": round(reserved_share * on_demand, 2),
    }


def hourly_failover() -> dict:
    """The issue's 3-region hourly failover instance at TP [1, 2, 4, 8]."""
    return {
        "name": "hourly-failover-3",
        "gpus": [{"name": "h100-sxm"}, {"name": "h200"}],
        "models": [{"name": "llama-3.3-70b", "weight_precisions": ["fp8"]}],
        "regions": [
            {
                "name": "us-east",
                "supply": {"h100-sxm": _offer(2.4, 256, 0.6), "h200": _offer(3.1, 128, 0.6)},
            },
            {
                "name": "us-west",
                "supply": {"h100-sxm": _offer(2.5, 256, 0.6), "h200": _offer(3.2, 128, 0.6)},
            },
            {"name": "eu-west", "supply": {"h100-sxm": _offer(2.9, 256, 0.6)}},
        ],
        "links": [
            ["us-east", "us-west", 60],
            ["us-east", "eu-west", 75],
            ["us-west", "eu-west", 140],
        ],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.3-70b",
                "demand": {
                    "us-east": {"requests_per_day": 1_500_000, "hourly_profile": PROFILE_EAST},
                    "us-west": {"requests_per_day": 1_000_000, "hourly_profile": PROFILE_WEST},
                    "eu-west": {"requests_per_day": 800_000, "hourly_profile": PROFILE_EU},
                },
                "prompt_tokens": {"mean": 1500, "p99": 6000},
                "output_tokens": {"mean": 300, "p99": 1000},
                "slo": {
                    "ttft_p99_ms": 1000,
                    "tpot_p99_ms": 60,
                    "availability": 0.999,
                    "max_failover_rtt_ms": 150,
                },
            }
        ],
        "policy": {
            "survive": "region",
            "failover_start_s": 300,
            "tensor_parallel": [1, 2, 4, 8],
            "pipeline_parallel": [1],
            "hours_per_month": 730,
            "scale_detection_s": 60,
        },
        "solver": {"backend": "highs", "time_limit_s": 120, "mip_gap": 0.001},
    }


def _workload(name: str, model: str, per_day: dict[str, int], tokens, slo) -> dict:
    return {
        "name": name,
        "model": model,
        "demand": {
            region: {"requests_per_day": count, "hourly_profile": PROFILE_ONE}
            for region, count in per_day.items()
        },
        "prompt_tokens": {"mean": tokens[0], "p99": tokens[1]},
        "output_tokens": {"mean": tokens[2], "p99": tokens[3]},
        "slo": slo,
    }


def procurement() -> dict:
    """The issue's 3-region, 3-workload, 12-month procurement instance."""
    supply = {"h100-sxm": _offer(2.4, 256, 0.62), "h200": _offer(3.1, 128, 0.62)}
    regions = [
        {"name": name, "power_kw": kw, "supply": supply}
        for name, kw in (("us-east", 600), ("us-west", 300), ("eu-west", 200))
    ]
    chat_slo = {"ttft_p99_ms": 1000, "tpot_p99_ms": 60}
    return {
        "name": "procurement-3x3-12",
        "gpus": [{"name": "h100-sxm"}, {"name": "h200"}],
        "models": [
            {"name": "llama-3.3-70b", "weight_precisions": ["fp8"]},
            {"name": "llama-3.1-8b", "weight_precisions": ["fp8"]},
            {"name": "qwen3-235b-a22b", "weight_precisions": ["fp8"]},
        ],
        "regions": regions,
        "links": [
            ["us-east", "us-west", 60],
            ["us-east", "eu-west", 75],
            ["us-west", "eu-west", 140],
        ],
        "workloads": [
            _workload(
                "chat",
                "llama-3.3-70b",
                {"us-east": 1_200_000, "us-west": 600_000, "eu-west": 400_000},
                (1500, 6000, 300, 1000),
                chat_slo,
            ),
            _workload(
                "assistant",
                "llama-3.1-8b",
                {"us-east": 2_000_000, "us-west": 1_000_000, "eu-west": 800_000},
                (800, 3000, 200, 600),
                {"ttft_p99_ms": 500, "tpot_p99_ms": 40},
            ),
            _workload(
                "reasoning",
                "qwen3-235b-a22b",
                {"us-east": 200_000, "us-west": 100_000, "eu-west": 50_000},
                (2000, 8000, 1500, 4000),
                {"ttft_p99_ms": 2000, "tpot_p99_ms": 80},
            ),
        ],
        "policy": {
            "tensor_parallel": [2, 4, 8],
            "pipeline_parallel": [1],
            "hours_per_month": 730,
            "scale_detection_s": 60,
            "horizon_months": 12,
            "monthly_growth": 0.05,
            "lead_time_months": 2,
        },
        "solver": {"backend": "highs", "time_limit_s": 120, "mip_gap": 0.001},
    }


def _recorded(methods: list[str]):
    """solve_by_period, its first answer's method (periods, rounds, solves) kept."""
    solve = by_period.solve_by_period

    def recorded(*args):
        result = solve(*args)
        if result is not None and not methods:
            methods.append(result.message)
        return result

    return recorded


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = ("instance", "periods program", "wall s", "cpu s", "load", "$/month", "horizon $")
    header += ("gap", "status", "method")
    title = "hourly and month programs: whole vs by period (highs, 0.1% gap)"
    print_table(title, header, ROWS)


def procurement_region_loss() -> dict:
    """The procurement instance surviving a region loss (every workload may fail over
    within 150 ms): six offers whose commitments trade against each other."""
    data = procurement()
    data["name"] += "-region-loss"
    data["policy"]["survive"] = "region"
    for workload in data["workloads"]:
        workload["slo"]["max_failover_rtt_ms"] = 150
    return data


CASES = [(hourly_failover, 120.0), (procurement, 120.0), (procurement_region_loss, 400.0)]
"""Each instance and its time limit (the last one's whole program takes minutes)."""


@pytest.mark.parametrize("make,limit_s", CASES, ids=["hourly", "months", "months-region-loss"])
def test_whole_against_by_period(make, limit_s, monkeypatch):
    data = make()
    inst = validate_instance(data, data["name"] + ".yaml")
    costs, proved, methods = {}, {}, []
    for way in ("whole", "by period"):
        if way == "whole":
            monkeypatch.setattr(by_period, "split", lambda _lp: None)
            begin = by_period.begin_periods  # each day's choice whole: its split not passed
            monkeypatch.setattr(day_choice, "begin_periods", lambda *a, _b=begin: _b(*a[:5]))
        else:
            monkeypatch.undo()
            monkeypatch.setattr(by_period, "solve_by_period", _recorded(methods))
        settings = SolveSettings.of(inst, time_limit_s=limit_s, mip_gap=1e-3)
        load = f"{os.getloadavg()[0]:.1f}"
        started, cpu = time.perf_counter(), time.process_time()
        try:
            plan = solve_program(inst, settings).plan
        except NoSolution as stopped:
            wall_s = time.perf_counter() - started
            ROWS.append((data["name"], way, f"{wall_s:.2f}", "-", load, *["-"] * 4, str(stopped)))
            continue
        wall_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        costs[way] = plan.cost_per_month
        proved[way] = plan.status == "optimal"
        gap = "-" if plan.solver.mip_gap is None else f"{plan.solver.mip_gap:.3%}"
        horizon = "-" if plan.horizon_cost is None else f"{plan.horizon_cost:,.0f}"
        ROWS.append(
            (
                data["name"],
                way,
                f"{wall_s:.2f}",
                f"{cpu_s:.2f}",
                load,
                f"{plan.cost_per_month:,.0f}",
                horizon,
                gap,
                plan.status.split()[0],
                methods[0] if way == "by period" and methods else plan.solver.method,
            )
        )
    if len(costs) == 2 and all(proved.values()):  # both within 0.1% of the optimum
        assert abs(costs["by period"] - costs["whole"]) <= 2e-3 * costs["whole"]
