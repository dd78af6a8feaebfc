"""Which engine effects bind in each pool of a plan: a short, fixed-seed replay of the
plan's pools with each effect switched off in turn (`solver.simulate.engine.Effects`).

The four effects the planner's queue formulas do not model one by one:

- `batching`: the iteration time grows with the batch (off: every iteration priced at
  the pool's mean batch and context);
- `preemption`: the KV cache is finite, and a full cache evicts a sequence to recompute
  (off: unlimited KV);
- `interference`: prompt chunks riding in a decode iteration lengthen it for every
  decoding sequence (off: the two parts overlap perfectly);
- `hol_blocking`: prompts are admitted in arrival order, so a long prompt delays the
  short ones behind it (off: shortest prompt first).

An effect binds in a pool when switching it off lowers the pool's simulated p99 (TTFT of
a unified or prefill pool, TPOT of a decode pool) by at least `BIND_SHARE` of its value
with every effect on, or turns an unbounded p99 (requests never served) into a bounded
one. The replay is short (`EXPLAIN_DURATION_S` of arrivals per pool, seed
`EXPLAIN_SEED`, the first 10% not measured) so that `fleetplan explain` stays
interactive: at 100 requests/s that is ~11,000 measured requests, and the p99 of 11,000
samples has a relative standard error of a few percent, which is why the threshold is
not smaller. A caller's `stop` (its deadline) is asked before each pool and each run
with an effect off, so that at most one run of one pool passes it (`effects_until`).
`fleetplan simulate --effects` runs the same comparison at any length.
"""

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from models.schema.instance import Instance
from solver.plan.schema import Plan
from solver.simulate.replay import EFFECTS, simulate_plan

BIND_SHARE = 0.05
"""An effect binds when it adds at least 5% to the pool's p99 (above the p99's sampling
error at `EXPLAIN_DURATION_S`)."""
EXPLAIN_DURATION_S = 120.0
"""Seconds of arrivals per pool in explain's replay (five runs: all on, each effect off)."""
EXPLAIN_SEED = 0

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class PoolEffects(BaseModel):
    """The engine effects of one pool: p99 with all on, with each off, and which bind."""

    model_config = _FROZEN

    workload: str
    region: str
    pool: str
    """`count x label` of the pool."""
    metric: str
    """`ttft` (unified and prefill pools) or `tpot` (decode pools)."""
    p99_ms: float | None
    """Simulated p99 with every effect on (None: some requests never served)."""
    off_p99_ms: dict[str, float | None]
    """Effect name -> p99 with that effect switched off."""
    binding: tuple[str, ...]
    """Effects that add at least `BIND_SHARE` to the p99, largest first."""


def binds(on_ms: float | None, off_ms: float | None) -> bool:
    """Whether an effect whose removal takes the p99 from `on_ms` to `off_ms` binds."""
    if off_ms is None:
        return False
    if on_ms is None:
        return True
    return on_ms - off_ms >= BIND_SHARE * on_ms


def engine_effects(
    instance: Instance,
    plan: Plan,
    scenario: str = "none",
    duration_s: float = EXPLAIN_DURATION_S,
    seed: int = EXPLAIN_SEED,
) -> tuple[PoolEffects, ...]:
    """Each simulated pool's engine effects at the plan's load (module docstring)."""
    return effects_until(instance, plan, None, scenario, duration_s, seed)[0]


def effects_until(
    instance: Instance,
    plan: Plan,
    stop: Callable[[], bool] | None,
    scenario: str = "none",
    duration_s: float = EXPLAIN_DURATION_S,
    seed: int = EXPLAIN_SEED,
) -> tuple[tuple[PoolEffects, ...], tuple[str, ...]]:
    """`engine_effects` until `stop()` is true: the pools' effects replayed before then,
    and the `workload region phase` of those left out (`PlanSimulation.not_simulated`)."""
    result = simulate_plan(instance, plan, scenario, duration_s, seed, effects=True, stop=stop)
    rows = []
    for pool in result.pools:
        metric, p99s = "ttft", pool.effects_ttft_p99_ms
        if not p99s:
            metric, p99s = "tpot", pool.effects_tpot_p99_ms
        if not p99s or pool.meets_slo is None:
            continue
        on_ms = p99s.get("none_off")
        off = {name: p99s.get(f"{name}_off") for name in EFFECTS}
        binding = sorted(
            (name for name in EFFECTS if binds(on_ms, off[name])),
            key=lambda name: off[name] if off[name] is not None else 0.0,
        )
        rows.append(
            PoolEffects(
                workload=pool.workload,
                region=pool.region,
                pool=f"{pool.replicas} x {pool.configuration}"
                if pool.configuration
                else f"{pool.replicas} x {pool.gpu} {pool.precision} tp{pool.tp}xpp{pool.pp} "
                f"{pool.role}",
                metric=metric,
                p99_ms=on_ms,
                off_p99_ms=off,
                binding=tuple(binding),
            )
        )
    # the deadline's (`workload region phase`); the rest say why in their own words
    # (`...: n x label (why)`, a soaked batch), which no time limit explains
    return tuple(rows), tuple(n for n in result.not_simulated if ": " not in n)
