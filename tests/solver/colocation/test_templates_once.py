"""The periods program builds the shared group templates (policy.colocation) once per
demand they read, not once per period.

Before: solver.time.periods built every period's program with its own templates, so a
day of 7 periods ran the co-location physics 7 times (8.6 s each on a loaded machine, a
3-workload co-located hourly instance past the default 60 s limit) although the
templates read the hour's demand only through the tail's peaks. Here a chat follows a
profile and two small adapters are flat: every period has the tail at the same peaks.

The physics of a group (`_evaluate`, `_meets_at_peak`) is stubbed with a count: the
tests are about how often it runs and what each period receives, not its numbers."""

import pytest

from models.io.loading import validate_instance
from models.operations.procurement import month_instance
from models.operations.time_demand import hour_instance
from models.serving.replica import Limit
from solver.candidates.table import build_candidates
from solver.colocation import groups
from solver.colocation.templates import TemplateMemo, all_templates
from solver.time.periods import build_time_program, day_periods, interactive_table

DIURNAL = [1, 1, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1]


def _instance(tail_profile: list[float] | None = None):
    def chat(name: str, model: str, rate: float, profile) -> dict:
        level = {"peak_requests_per_s": rate}
        if profile is not None:
            level["hourly_profile"] = profile
        return {
            "name": name,
            "model": model,
            "demand": {"east": level},
            "prompt_tokens": {"mean": 2000, "p99": 6000},
            "output_tokens": {"mean": 200, "p99": 600},
            "slo": {"ttft_p99_ms": 1500, "tpot_p99_ms": 50},
        }

    data = {
        "name": "tail-flat",
        "gpus": [{"name": "h100-sxm"}],
        "models": [
            {"name": "llama-3.1-8b", "weight_precisions": ["fp8"]},
            {
                "name": "support-8b",
                "base": "llama-3.1-8b",
                "rank": 16,
                "weight_precisions": ["fp8"],
            },
            {"name": "sales-8b", "base": "llama-3.1-8b", "rank": 16, "weight_precisions": ["fp8"]},
        ],
        "regions": [
            {"name": "east", "supply": {"h100-sxm": {"max_gpus": 128, "price_per_gpu_hour": 2.4}}}
        ],
        "workloads": [
            chat("chat", "llama-3.1-8b", 400.0, DIURNAL),
            chat("support", "support-8b", 0.5, tail_profile),
            chat("sales", "sales-8b", 0.3, None),
        ],
        "policy": {
            "survive": "none",
            "colocation": True,
            "tensor_parallel": [1],
            "pipeline_parallel": [1],
        },
    }
    return validate_instance(data, "tail-flat.yaml")


@pytest.fixture
def evaluated(monkeypatch):
    """The groups the stubbed physics evaluated, as (member, peak) pairs; one replica of
    a group carries twice its members' peaks."""
    calls: list[tuple[tuple[str, float], ...]] = []

    def evaluate(instance, group, factor, edges, kinds, at_peaks=None):
        del factor, edges, kinds, at_peaks
        calls.append(tuple((o.workload, o.peak_requests_per_s) for o in group))
        layout, members, _ = groups._physics(instance, group)
        config = group[0].candidate.config
        return groups.Template(
            members=tuple(m.name for m in members),
            gpu=config.gpu.name,
            precision=config.weight_precision,
            kv_precision=config.kv_precision,
            layout=layout,
            capacity_requests_per_s=tuple(2 * m.requests_per_s for m in members),
            load_scale=2.0,
            limit=Limit.TPOT,
            limiting_member=members[0].name,
        )

    monkeypatch.setattr(groups, "_evaluate", evaluate)
    monkeypatch.setattr(
        groups, "_meets_at_peak", lambda instance, group, factor, edges, kinds, at_peaks: True
    )
    return calls


def test_a_flat_tail_is_evaluated_once_for_every_period(evaluated):
    inst = _instance()
    periods = day_periods(inst)
    assert len(periods) > 1  # the chat's profile: 1, 2, 3, 4 x its base rate
    program = build_time_program(inst, build_candidates(inst))
    # one group (support+sales, 0.5 + 0.3 requests/s in every hour), evaluated once
    assert evaluated == [(("support", 0.5), ("sales", 0.3))]
    keys = {
        part.first_hour: [t.key for t in part.program.groups.templates] for part in program.periods
    }
    assert all(k == keys[periods[0].hours[0]] and len(k) == 1 for k in keys.values())


def test_every_period_receives_the_templates_its_own_build_gives(evaluated):
    inst = _instance(DIURNAL)  # the tail follows the profile too: one build per period
    table = build_candidates(inst)
    program = build_time_program(inst, table)
    assert len(evaluated) == len(program.periods) > 1
    memo = TemplateMemo(interactive_table(inst, table))
    for part in program.periods:
        alone = all_templates(hour_instance(inst, part.period.values), memo.table)
        assert part.program.groups.templates == alone.templates
        assert part.program.groups.tail == alone.tail
        # support's capacity is twice its warm rate in that period (the stub's 2 x peak)
        support = part.period.values[("support", "east")]
        assert part.program.groups.templates[0].capacity_of("support") == 2 * support


def test_the_memo_builds_once_per_tail_peaks(evaluated):
    inst = _instance()
    table = interactive_table(inst, build_candidates(inst))
    memo = TemplateMemo(table)
    periods = day_periods(inst)
    built = [memo.templates(hour_instance(inst, p.values)) for p in periods]
    assert len(evaluated) == 1
    assert all(b.templates == built[0].templates for b in built)


def _months(months: int):
    """The flat-tail day over `months` months, the chat growing 50% a month and the tail
    not at all."""
    data = _instance().model_dump(mode="json", exclude_unset=True)
    data["policy"]["horizon_months"] = months
    data["workloads"][0]["monthly_growth"] = 0.5
    return validate_instance(data, "tail-flat-months.yaml")


def test_the_months_of_a_horizon_share_one_memo(evaluated):
    inst = _months(3)
    table = build_candidates(inst)
    memo = TemplateMemo(interactive_table(inst, table))
    for month in (1, 2):  # the chat at 1.5 and 2.25 x, the tail at 0.5 and 0.3 in both
        grown = month_instance(inst, month)
        build_time_program(grown, table, periods=day_periods(grown), templates=memo)
    assert evaluated == [(("support", 0.5), ("sales", 0.3))]
