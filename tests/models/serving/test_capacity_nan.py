"""A latency that is not a number never passes for a verdict (models.serving.capacity):
the capacity search refuses a NaN p99 where it reads one, and where assertions are off
(`python -O`) the reason a configuration "cannot meet the SLO at any load" names what
failed. It used to say nothing after the colon: a NaN p99 TPOT at the search's first
point (growth-horizon's subnormal Erlang C, fixed in reply_life) is neither within the
target nor beyond it, so the search found the point infeasible and no target missed."""

import math
import subprocess
import sys

import pytest

from models.physics.catalog import gpu, llm
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.serving import batch_model
from models.serving.capacity import replica_capacity
from models.serving.capacity_reasons import slo_unreachable_reason
from models.serving.prefill_model import PrefillLane
from models.serving.replica import LatencyTargets, ReplicaConfig, Role, TrafficMix
from tests.paths import REPO

FP8 = Precision.FP8
TARGETS = LatencyTargets(0.8, 0.05)


def _capacity(role=Role.UNIFIED, targets=TARGETS):
    config = ReplicaConfig(gpu("h100-sxm"), llm("llama-3.1-8b"), FP8, FP8, 1, 1, role)
    mix = TrafficMix.fixed(1000, 200)
    return replica_capacity(config, mix, targets, efficiency_for(config.gpu, FP8))


@pytest.fixture
def nan_tpot(monkeypatch):
    """Every p99 TPOT NaN, no operating point kept from an earlier search."""
    monkeypatch.setattr(batch_model, "_POINTS", type(batch_model._POINTS)())
    monkeypatch.setattr(batch_model.BatchModel, "tpot_p99_s", lambda self, batch: math.nan)


def test_a_nan_p99_tpot_is_refused_where_the_search_reads_it(nan_tpot):
    with pytest.raises(AssertionError, match=r"p99 TPOT nan s"):
        _capacity()


def test_a_nan_prefill_ttft_is_refused_where_the_search_reads_it(monkeypatch):
    monkeypatch.setattr(PrefillLane, "ttft_p99_s", lambda self, rate: math.nan)
    with pytest.raises(AssertionError, match=r"p99 TTFT at .* is NaN"):
        _capacity(Role.PREFILL, LatencyTargets(ttft_p99_s=1.0))


def test_without_assertions_the_reason_names_the_nan():
    """`python -O`: the first point's NaN p99 TPOT misses its target (not within it), and
    the reason says the latency model gave no number, not an empty list of misses."""
    code = (
        "import math\n"
        "from models.serving import batch_model\n"
        "from tests.models.serving.test_capacity_nan import _capacity\n"
        "batch_model.BatchModel.tpot_p99_s = lambda self, batch: math.nan\n"
        "c = _capacity()\n"
        "print(c.meets_slo, c.requests_per_s)\n"
        "print(c.reason)\n"
    )
    run = subprocess.run(
        [sys.executable, "-O", "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    verdict, reason = run.stdout.splitlines()
    assert verdict == "False 0.0"
    assert reason.endswith(
        "cannot meet the SLO at any load: the latency model gives no number (NaN) for the "
        "p99 TPOT at vanishing load (target 50 ms)"
    )


def test_the_unreachable_reason_is_never_empty():
    """Whatever the verdict read, the reason names it: no target flagged (a case the
    search never sends, kept for the reader) gives the two p99s it had."""
    reason = slo_unreachable_reason(
        "x", TARGETS, False, False, 0.05, 0.01, floor_p99_s=(0.05, math.inf)
    )
    assert (
        reason == "x cannot meet the SLO at any load: p99 TTFT 50 ms and p99 TPOT inf ms "
        "at vanishing load"
    )
    both = slo_unreachable_reason(
        "x", TARGETS, True, True, 0.05, 0.01, floor_p99_s=(math.nan, math.nan)
    )
    assert both.count("no number (NaN)") == 2
