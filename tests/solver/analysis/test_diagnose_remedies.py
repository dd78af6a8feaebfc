"""An infeasible instance's remedies apply to it (issue 35): raising max_failover_rtt_ms is
suggested only where a longer bound reaches a region that may serve the users."""

import pytest

from models.io.loading import load_instance
from solver.analysis.lever_edits import lower_kv
from solver.errors import Infeasible
from solver.settings import SolveSettings
from solver.solve import solve
from tests import synthetic
from tests.paths import INSTANCES


def _problems(instance) -> list[str]:
    with pytest.raises(Infeasible) as ended:
        solve(instance, SolveSettings.of(instance, threads=1))
    problems = ended.value.diagnosis.problems
    assert problems
    return [problem.remedy for problem in problems]


def test_a_single_region_instance_is_not_told_to_raise_the_failover_bound():
    # one H100 carries far less than 500 requests/s of chat, and there is nowhere else
    instance = synthetic.instance(
        {"us": {"h100-sxm": (1, 2.0)}},
        [synthetic.workload("chat", {"us": 500.0}, max_failover_rtt_ms=80)],
    )
    (remedy,) = _problems(instance)
    assert "max_failover_rtt_ms" not in remedy
    assert remedy == "offer more GPUs in the regions that may serve these users or loosen the SLO"


def test_users_kept_at_home_are_not_told_to_raise_the_failover_bound():
    # two regions 50 ms apart, no failure to survive: users are served where they are,
    # whatever the failover bound, so raising it cannot serve east's 500 requests/s
    instance = synthetic.instance(
        {"east": {"h100-sxm": (1, 2.0)}, "west": {"h100-sxm": (64, 2.0)}},
        [synthetic.workload("chat", {"east": 500.0}, max_failover_rtt_ms=40)],
        links=[("east", "west", 50)],
    )
    assert not any("max_failover_rtt_ms" in remedy for remedy in _problems(instance))


def test_a_bound_short_of_the_next_region_is_named_with_the_distance():
    # surviving the loss of east: its users must go to west, 50 ms away, beyond the 40 ms
    # bound; raising the bound to 50 ms is the remedy, with both numbers
    instance = synthetic.instance(
        {"east": {"h100-sxm": (64, 2.0)}, "west": {"h100-sxm": (64, 2.0)}},
        [synthetic.workload("chat", {"east": 10.0, "west": 10.0}, max_failover_rtt_ms=40)],
        links=[("east", "west", 50)],
        survive="region",
    )
    remedies = _problems(instance)
    assert any(
        "raise max_failover_rtt_ms of chat (now 40 ms; west is 50 ms from east)" in remedy
        for remedy in remedies
    ), remedies


def test_an_fp4_kv_cache_on_gpus_without_fp4_is_named_as_such():
    # region-loss-3-baseline serves bf16 weights on H100s (no fp4 arithmetic); KV two
    # steps down is fp4: no configuration can hold it, whatever its memory
    fp4 = lower_kv(lower_kv(load_instance(INSTANCES / "region-loss-3-baseline.yaml")))
    with pytest.raises(Infeasible) as ended:
        solve(fp4, SolveSettings.of(fp4, threads=1))
    (problem,) = ended.value.diagnosis.problems
    assert "keeps its KV cache in fp4, which h100-sxm cannot hold" in problem.message
    assert problem.remedy == (
        "set llama-3.1-8b's kv_precision to fp8 or bf16, or offer a GPU with fp4 support"
    )
