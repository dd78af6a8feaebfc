"""Growth without a horizon: `monthly_growth` and `lead_time_months` plan months, and
without `policy.horizon_months` there are none; the values were dropped without a word
(`solve instances/diurnal-chat-batch.yaml --set policy.monthly_growth=0.05` planned
today's demand). Now each says so on stderr; the plan is unchanged."""

from models.io.loading import load_instance, validate_instance
from models.schema.checks import input_warnings
from tests.paths import INSTANCES


def _with(path: str, **policy):
    data = load_instance(INSTANCES / path).model_dump(mode="json", exclude_unset=True)
    data["policy"].update(policy)
    return validate_instance(data, path)


def test_growth_and_lead_time_without_a_horizon_are_each_warned_about():
    warnings = input_warnings(_with("diurnal-chat-batch.yaml", monthly_growth=0.05))
    growth = [w for w in warnings if "horizon_months" in w]
    assert growth == [
        "policy.monthly_growth: 0.05 has no effect without policy.horizon_months (the "
        "months to plan); the plan is of today's demand alone: give horizon_months or drop it"
    ]
    both = _with("diurnal-chat-batch.yaml", monthly_growth=0.05, lead_time_months=2)
    assert sum("horizon_months" in w for w in input_warnings(both)) == 2


def test_a_workload_growth_without_a_horizon_is_warned_about():
    data = load_instance(INSTANCES / "region-loss-3.yaml").model_dump(
        mode="json", exclude_unset=True
    )
    data["workloads"][0]["monthly_growth"] = 0.1
    warnings = input_warnings(validate_instance(data, "region-loss-3.yaml"))
    assert any(w.startswith("workloads[chat].monthly_growth: 0.1 has no effect") for w in warnings)


def test_an_instance_with_a_horizon_or_no_growth_is_not_warned_about():
    for name in ("growth-horizon.yaml", "procurement-3region.yaml", "diurnal-chat-batch.yaml"):
        assert not any(
            "horizon_months" in w for w in input_warnings(load_instance(INSTANCES / name))
        )
