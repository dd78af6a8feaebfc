"""explain --levers' 'prefix-cache hit +10 points' never lowers a hit rate: a workload
whose declared prefixes set its hit rate (no explicit prefix_cache_hit_rate: the rate is
where the prefixes live) has no one number to raise, and the lever leaves it as it is.

Before, the lever wrote 0 + 0.10 as the explicit rate, which replaces the derived one
(models.schema.instance): on kv-tiers-doc-qa, whose 2,000-token system prompt (every
request) and 150 customers' 20,000-token documents (0.5% each) give its TP4 pools a 70%
hit rate from HBM and host DRAM, the lever read $98,112/month on 56 GPUs against the
plan's $42,048 on 24, a 'saving' of -$56,064 for a hit rate 60 points lower."""

import pytest

from models.io.loading import load_instance, validate_instance
from solver.analysis.lever_edits import HIT_RATE_STEP, more_prefix_hits
from tests.paths import INSTANCES


def test_a_hit_rate_set_by_declared_prefixes_is_left_as_it_is():
    instance = load_instance(INSTANCES / "kv-tiers-doc-qa.yaml")
    assert instance.workloads[0].prefixes
    assert more_prefix_hits(instance) is None  # nothing to raise: no lever


def test_an_explicit_hit_rate_beside_prefixes_is_raised():
    data = load_instance(INSTANCES / "kv-tiers-doc-qa.yaml").model_dump(
        mode="json", exclude_unset=True
    )
    second = {**data["workloads"][0], "name": "plain", "prefixes": []}
    data["workloads"][0]["prefix_cache_hit_rate"] = 0.3  # stated: it wins over the prefixes
    data["workloads"].append(second)
    lever = more_prefix_hits(validate_instance(data, "two.yaml"))
    stated, plain = lever.workloads
    assert stated.prefix_cache_hit_rate == pytest.approx(0.3 + HIT_RATE_STEP)
    assert plain.prefix_cache_hit_rate == pytest.approx(0.0 + HIT_RATE_STEP)
