"""Replay a plan's pools in the discrete-event simulator and set the simulated latency
against the analytic promise and the SLO.

For one scenario of the plan (`none` by default), each unified pool (the replicas of one
configuration serving one workload in one region) gets its share of the region's load:
the scenario's load of the (workload, region, unified) phase split over the pools that
carry it in proportion to their capacity n q(n), n the replicas that survive and q(n)
the physics' capacity per replica in a pool of n (`models.capacity.replica_capacity`).
Arrivals are Poisson (or gamma with a stated coefficient of variation), lengths are
drawn from the workload's distributions, and the replicas run the planner's own step
model (`solver.simulate.engine`). Requests that arrive in the first `warmup_s` are
served but not measured. The analytic numbers are `models.latency.latency_at_rate` at
the same per-replica load and pool size.

Prefill-only and decode-only pools are replayed as a pair (`solver.simulate.
disaggregated`): the prefill rows carry TTFT (with the KV transfer), the decode rows TPOT.
"""

import math
import re
from dataclasses import replace
from functools import partial

import numpy as np
from pydantic import BaseModel, ConfigDict

from models.batch_model import replica_step_model
from models.capacity import replica_capacity
from models.efficiency import efficiency_for
from models.instance import Instance
from models.latency import latency_at_rate
from models.memory import default_kv_precision
from models.replica import LatencyTargets, ReplicaConfig, Role, TrafficMix
from solver.plan import Plan, ReplicaPool
from solver.simulate.disaggregated import decode_analytic, prefill_ttft_p99_s, simulate_pair
from solver.simulate.engine import Effects, PoolTrace, ReplicaEngine, simulate_pool
from solver.simulate.tolerance import tolerated_cv
from solver.simulate.traffic import arrival_times_s, token_lengths

_FROZEN = ConfigDict(extra="forbid", frozen=True)
EFFECTS = ("batching", "preemption", "interference", "hol_blocking")
"""Engine effects the simulator can switch off, in the order reported."""


class Latencies(BaseModel):
    """p50 and p99 TTFT and TPOT, ms (None: unbounded)."""

    model_config = _FROZEN

    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    tpot_p50_ms: float | None
    tpot_p99_ms: float | None


class PoolSimulation(BaseModel):
    """One pool: its load, the simulated and analytic latency, and the SLO verdict."""

    model_config = _FROZEN

    workload: str
    region: str
    role: str
    gpu: str
    precision: str
    tp: int
    pp: int
    replicas: int
    load_requests_per_s: float
    simulated: Latencies | None
    analytic: Latencies | None
    ttft_p99_target_ms: float | None = None
    tpot_p99_target_ms: float | None = None
    meets_slo: bool | None
    """None when the pool was not simulated."""
    requests_measured: int = 0
    unfinished: int = 0
    """Measured requests still unfinished when the run stopped (an unstable pool)."""
    preemptions: int = 0
    mean_batch: float = 0.0
    """Time-averaged decoding sequences per replica in the simulation."""
    tolerated_burstiness_cv: float | None = None
    """Largest coefficient of variation of inter-arrival times (same mean rate, same
    seed) at which the pool still meets its SLO (`solver.simulate.tolerance`; a
    disaggregated pair is judged together). None: not searched, or it misses even at
    the smoothest arrivals searched."""
    effects_ttft_p99_ms: dict[str, float | None] = {}
    """p99 TTFT with each engine effect switched off (`none_off`: all on)."""
    effects_tpot_p99_ms: dict[str, float | None] = {}
    """p99 TPOT with each engine effect switched off (a decode pool of a disaggregated
    pair, whose TTFT is its prefill pool's)."""
    note: str = ""


class PlanSimulation(BaseModel):
    """A plan's scenario replayed in the simulator."""

    model_config = _FROZEN

    instance: str
    scenario: str
    duration_s: float
    warmup_s: float
    seed: int
    burstiness_cv: float
    dispatch: str
    pools: tuple[PoolSimulation, ...]
    events: int = 0

    @property
    def meets_slo(self) -> bool:
        """Every simulated pool within its SLO."""
        return all(pool.meets_slo is not False for pool in self.pools)


def _ms(seconds: float) -> float | None:
    return None if math.isinf(seconds) or math.isnan(seconds) else seconds * 1e3


def _quantile(values: np.ndarray, q: float) -> float:
    """The q-quantile, NaN (a request never served) counted as infinitely late."""
    if values.size == 0:
        return math.nan
    filled = np.where(np.isnan(values), np.inf, values)
    return float(np.quantile(filled, q, method="higher"))


def _surviving(plan: Plan, scenario: str) -> list[tuple[str, str, str, float, dict[str, int]]]:
    """(workload, region, phase, load, {label: surviving count}) of the scenario."""
    names = [s.name for s in plan.scenarios]
    if scenario not in names:
        raise ValueError(
            f"scenario {scenario!r} is not in the plan; it has {', '.join(names) or 'none'}"
        )
    result = []
    for load in next(s for s in plan.scenarios if s.name == scenario).pools:
        counts = {}
        for text in load.pools:
            match = re.fullmatch(r"(\d+) x (.+)", text)
            if match:
                counts[match.group(2)] = int(match.group(1))
        result.append(
            (load.workload, load.region, str(load.phase), load.load_requests_per_s, counts)
        )
    return result


def _config(instance: Instance, pool: ReplicaPool) -> tuple[ReplicaConfig, TrafficMix, object]:
    workload = next(w for w in instance.workloads if w.name == pool.workload)
    entry = instance.model_entry(workload.model)
    gpu = instance.gpu_specs[pool.gpu]
    llm = instance.llm_specs[workload.model]
    kv = pool.kv_precision or entry.kv_precision or default_kv_precision(pool.precision)
    config = ReplicaConfig(
        gpu, llm, pool.precision, kv, pool.tp, pool.pp, pool.role, pool.ep, pool.dp
    )
    efficiency = efficiency_for(gpu.name, pool.precision, instance.efficiency)
    return config, TrafficMix.of(workload), efficiency


def simulate_plan(
    instance: Instance,
    plan: Plan,
    scenario: str = "none",
    duration_s: float = 600.0,
    seed: int = 0,
    burstiness_cv: float = 1.0,
    dispatch: str = "jsq",
    warmup_s: float | None = None,
    effects: bool = False,
    tolerance: bool = False,
) -> PlanSimulation:
    """Replay every unified pool of `plan` under `scenario` (see the module docstring).

    Args:
        duration_s: simulated seconds of arrivals per pool.
        seed: the random seed; the same inputs give the same output.
        burstiness_cv: coefficient of variation of inter-arrival times (1: Poisson).
        dispatch: the router's policy, `jsq` or `round_robin`.
        warmup_s: arrivals before this are not measured (default 10% of the run, at
            most 60 s).
        effects: also run each pool with each engine effect off and report p99 TTFT.
        tolerance: also find the burstiness each pool tolerates (bisection over the
            inter-arrival cv, `solver.simulate.tolerance`; ~9 more runs of each pool).

    Raises ValueError for a scenario the plan does not have or a bad option.
    """
    if duration_s <= 0:
        raise ValueError(f"duration must be > 0 s, got {duration_s}")
    warmup = min(60.0, 0.1 * duration_s) if warmup_s is None else warmup_s
    pools: list[PoolSimulation] = []
    events = 0
    workloads = {w.name: w for w in instance.workloads}
    entries = _surviving(plan, scenario)
    for index, (workload_name, region, phase, load, counts) in enumerate(entries):
        if phase.startswith(str(Role.DECODE)):
            continue  # replayed with its prefill phase
        shares = _shares(instance, plan, workloads[workload_name], region, counts)
        if phase.startswith(str(Role.PREFILL)):
            decode_phase = str(Role.DECODE) + phase[len(str(Role.PREFILL)) :]
            partner = next(
                (e for e in entries if e[:3] == (workload_name, region, decode_phase)), None
            )
            decode_shares = (
                _shares(instance, plan, workloads[workload_name], region, partner[4])
                if partner
                else []
            )

            pair = partial(
                _simulate_pair,
                workloads[workload_name],
                shares,
                decode_shares,
                load,
                (seed, index),
                duration_s,
                warmup,
                dispatch=dispatch,
            )
            rows, count = pair(burstiness_cv, effects=effects)
            if tolerance and any(row.meets_slo is not None for row in rows):
                cv = tolerated_cv(partial(_pair_meets, pair))
                rows = [row.model_copy(update={"tolerated_burstiness_cv": cv}) for row in rows]
            pools.extend(rows)
            events += count
            continue
        total = sum(share[-1] for share in shares) or 1.0
        for offset, (pool, config, mix, efficiency, n, weight) in enumerate(shares):
            one = partial(
                _simulate_one,
                pool,
                workloads[workload_name],
                config,
                mix,
                efficiency,
                n,
                load * weight / total,
                [seed, index, offset],
                duration_s,
                warmup,
                dispatch=dispatch,
            )
            row, count = one(burstiness_cv, effects=effects)
            if tolerance and row.meets_slo is not None:
                cv = tolerated_cv(partial(_one_meets, one))
                row = row.model_copy(update={"tolerated_burstiness_cv": cv})
            pools.append(row)
            events += count
    return PlanSimulation(
        instance=plan.instance or instance.name,
        scenario=scenario,
        duration_s=duration_s,
        warmup_s=warmup,
        seed=seed,
        burstiness_cv=burstiness_cv,
        dispatch=dispatch,
        pools=tuple(pools),
        events=events,
    )


def _one_meets(run, cv: float) -> bool:
    """A unified pool, run at burstiness `cv` (engine effects all on), meets its SLO."""
    return run(cv, effects=False)[0].meets_slo is not False


def _pair_meets(run, cv: float) -> bool:
    """Every pool of a disaggregated pair, run at burstiness `cv`, meets its SLO."""
    return all(row.meets_slo is not False for row in run(cv)[0])


def _shares(instance: Instance, plan: Plan, workload, region: str, counts: dict) -> list:
    """Per pool carrying the phase: (pool, config, mix, efficiency, n, n q(n))."""
    members = [
        p
        for p in plan.replicas
        if p.workload == workload.name
        and p.region == region
        and counts.get(p.label, 0) > 0
        and not p.shared
    ]
    shares = []
    for pool in members:
        config, mix, efficiency = _config(instance, pool)
        n = counts[pool.label]
        capacity = replica_capacity(config, mix, LatencyTargets.of(workload.slo), efficiency, n)
        shares.append((pool, config, mix, efficiency, n, n * capacity.requests_per_s))
    return shares


def _simulate_pair(
    workload,
    prefill: list,
    decode: list,
    load: float,
    rng_seed: tuple[int, int],
    duration_s: float,
    warmup_s: float,
    burstiness_cv: float,
    dispatch: str,
    effects: bool = False,
) -> tuple[list[PoolSimulation], int]:
    """A disaggregated pair (`solver.simulate.disaggregated`): one row per prefill pool
    (TTFT) and per decode pool (TPOT); with `effects`, also each pool's p99 (TTFT of a
    prefill pool, TPOT of a decode pool) with each engine effect off."""
    if not prefill or not decode:
        rows = [
            _unsimulated(pool, n, load, workload, "no partner phase in this scenario")
            for pool, *_, n, _ in prefill + decode
        ]
        return rows, 0
    mix = prefill[0][2]

    def replay(fx: Effects) -> dict:
        return simulate_pair(
            workload,
            mix,
            [(config, eff, n, weight) for _, config, _, eff, n, weight in prefill],
            [(config, eff, n, weight) for _, config, _, eff, n, weight in decode],
            load,
            np.random.default_rng(list(rng_seed)),
            duration_s,
            burstiness_cv,
            dispatch,
            fx,
        )

    run = replay(Effects())
    measured = run["arrival_s"] >= warmup_s
    effect_p99s: list[dict[str, float | None]] = [{} for _ in prefill + decode]
    if effects:
        total = sum(share[-1] for share in decode) or 1.0
        _, config, _, eff, n, weight = decode[0]
        step_s = decode_analytic(config, mix, eff, load * weight / total / n)[0]
        reference = Effects(
            reference_batch=max(
                load * weight / total / n * mix.output_mean_tokens * (step_s or 0.0), 1.0
            ),
            reference_context=mix.prompt_mean_tokens
            + mix.output_mean_tokens * (1 + mix.output_cv**2) / 2,
        )
        for name in ("none", *EFFECTS):
            fx = Effects() if name == "none" else replace(reference, **{name: False})
            off = run if name == "none" else replay(fx)
            for slot, outcome in enumerate(off["prefill_pools"] + off["decode_pools"]):
                members = outcome[0][measured[outcome[0]]]
                key = "ttft_s" if slot < len(prefill) else "tpot_s"
                effect_p99s[slot][f"{name}_off"] = _ms(_quantile(off[key][members], 0.99))
    slo = workload.slo
    rows, events = [], 0
    for side, shares, outcomes in (
        ("prefill", prefill, run["prefill_pools"]),
        ("decode", decode, run["decode_pools"]),
    ):
        total = sum(share[-1] for share in shares) or 1.0
        for (pool, config, _, efficiency, n, weight), outcome in zip(shares, outcomes, strict=True):
            members, preemptions, pool_events = outcome[:3]
            events += pool_events
            mine = members[measured[members]]
            pool_load = load * weight / total
            if side == "prefill":
                ttft = run["ttft_s"][mine]
                simulated = Latencies(
                    ttft_p50_ms=_ms(_quantile(ttft, 0.5)),
                    ttft_p99_ms=_ms(_quantile(ttft, 0.99)),
                    tpot_p50_ms=None,
                    tpot_p99_ms=None,
                )
                analytic = Latencies(
                    ttft_p50_ms=None,
                    ttft_p99_ms=_ms(prefill_ttft_p99_s(config, mix, efficiency, pool_load / n, n)),
                    tpot_p50_ms=None,
                    tpot_p99_ms=None,
                )
                meets = _within(simulated.ttft_p99_ms, slo.ttft_p99_ms)
                unfinished = int(np.isnan(run["ttft_s"][mine]).sum())
                batch = 0.0
            else:
                many = mine[run["output_tokens"][mine] > 1]
                tpot = run["tpot_s"][many]
                simulated = Latencies(
                    ttft_p50_ms=None,
                    ttft_p99_ms=None,
                    tpot_p50_ms=_ms(_quantile(tpot, 0.5)),
                    tpot_p99_ms=_ms(_quantile(tpot, 0.99)),
                )
                step_s, tpot_p99_s = decode_analytic(config, mix, efficiency, pool_load / n)
                analytic = Latencies(
                    ttft_p50_ms=None,
                    ttft_p99_ms=None,
                    tpot_p50_ms=None if step_s is None else step_s * 1e3,
                    tpot_p99_ms=None if tpot_p99_s is None else _ms(tpot_p99_s),
                )
                meets = _within(simulated.tpot_p99_ms, slo.tpot_p99_ms)
                unfinished = int(np.isnan(run["finish_s"][mine]).sum())
                batch = outcome[3] / max(duration_s, 1e-9) / n
            if mine.size == 0:
                meets = None  # no load on this pool in the scenario
            rows.append(
                PoolSimulation(
                    workload=pool.workload,
                    region=pool.region,
                    role=str(pool.role),
                    gpu=pool.gpu,
                    precision=str(pool.precision),
                    tp=pool.tp,
                    pp=pool.pp,
                    replicas=n,
                    load_requests_per_s=pool_load,
                    simulated=simulated,
                    analytic=analytic,
                    ttft_p99_target_ms=slo.ttft_p99_ms if side == "prefill" else None,
                    tpot_p99_target_ms=slo.tpot_p99_ms if side == "decode" else None,
                    meets_slo=meets,
                    requests_measured=int(mine.size),
                    unfinished=unfinished,
                    preemptions=preemptions,
                    mean_batch=batch,
                    note="disaggregated: TTFT includes the KV transfer; TPOT counts the wait "
                    "for a decode slot",
                    **_effect_fields(side, effect_p99s[len(rows)]),
                )
            )
    return rows, events


def _effect_fields(side: str, p99s: dict[str, float | None]) -> dict:
    """A pair's effect runs as PoolSimulation fields (TTFT for prefill, TPOT for decode)."""
    if not p99s:
        return {}
    return {"effects_ttft_p99_ms" if side == "prefill" else "effects_tpot_p99_ms": p99s}


def _unsimulated(pool, n: int, load: float, workload, note: str) -> PoolSimulation:
    return PoolSimulation(
        workload=pool.workload,
        region=pool.region,
        role=str(pool.role),
        gpu=pool.gpu,
        precision=str(pool.precision),
        tp=pool.tp,
        pp=pool.pp,
        replicas=n,
        load_requests_per_s=load,
        simulated=None,
        analytic=None,
        meets_slo=None,
        note=note,
    )


def _simulate_one(
    pool,
    workload,
    config,
    mix,
    efficiency,
    replicas,
    load,
    rng_seed,
    duration_s,
    warmup_s,
    burstiness_cv,
    dispatch,
    effects,
) -> tuple[PoolSimulation, int]:
    """Simulate one pool at `load` requests/s (all replicas together)."""
    slo = workload.slo
    workload_prompt, workload_output = workload.prompt_tokens, workload.output_tokens
    hit = workload.prefix_cache_hit_rate
    rng = np.random.default_rng(rng_seed)
    arrivals = arrival_times_s(load, duration_s, burstiness_cv, rng)
    prompts = token_lengths(workload_prompt, arrivals.size, rng)
    outputs = token_lengths(workload_output, arrivals.size, rng)
    cached = np.floor(prompts * hit)
    offline = replica_capacity(config, mix, LatencyTargets(), efficiency)
    steps = replica_step_model(config, efficiency)
    engine = ReplicaEngine(steps, offline.kv_capacity_tokens, efficiency.max_batch_sequences)
    analytic = latency_at_rate(config, mix, efficiency, load / replicas, replicas)

    def run(fx: Effects) -> PoolTrace:
        return simulate_pool(
            engine, replicas, arrivals, prompts - cached, outputs, cached, fx, dispatch
        )

    trace = run(Effects())
    measured = trace.arrival_s >= warmup_s
    ttft = trace.ttft_s[measured]
    many = trace.output_tokens > 1
    tpot = trace.tpot_s[measured[many]]
    simulated = Latencies(
        ttft_p50_ms=_ms(_quantile(ttft, 0.5)),
        ttft_p99_ms=_ms(_quantile(ttft, 0.99)),
        tpot_p50_ms=_ms(_quantile(tpot, 0.5)),
        tpot_p99_ms=_ms(_quantile(tpot, 0.99)),
    )
    promised = Latencies(
        ttft_p50_ms=_ms(analytic.ttft_p50_s),
        ttft_p99_ms=_ms(analytic.ttft_p99_s),
        tpot_p50_ms=_ms(analytic.tpot_mean_s),
        tpot_p99_ms=_ms(analytic.tpot_p99_s),
    )
    effect_p99: dict[str, float | None] = {}
    if effects:
        reference = Effects(
            reference_batch=max(analytic.batch, 1.0),
            reference_context=mix.prompt_mean_tokens
            + mix.output_mean_tokens * (1 + mix.output_cv**2) / 2,
        )
        effect_p99["none_off"] = simulated.ttft_p99_ms
        for name in EFFECTS:
            off = run(replace(reference, **{name: False}))
            effect_p99[f"{name}_off"] = _ms(_quantile(off.ttft_s[off.arrival_s >= warmup_s], 0.99))
    meets = _within(simulated.ttft_p99_ms, slo.ttft_p99_ms) and _within(
        simulated.tpot_p99_ms, slo.tpot_p99_ms
    )
    if not measured.any():  # no load on this pool in the scenario: nothing to judge
        meets = None
    horizon_s = max(trace.end_s, 1e-9)
    return (
        PoolSimulation(
            workload=pool.workload,
            region=pool.region,
            role=str(pool.role),
            gpu=pool.gpu,
            precision=str(pool.precision),
            tp=pool.tp,
            pp=pool.pp,
            replicas=replicas,
            load_requests_per_s=load,
            simulated=simulated,
            analytic=promised,
            ttft_p99_target_ms=slo.ttft_p99_ms,
            tpot_p99_target_ms=slo.tpot_p99_ms,
            meets_slo=meets,
            requests_measured=int(measured.sum()),
            unfinished=int(np.isnan(trace.finish_s[measured]).sum()),
            preemptions=trace.preemptions,
            mean_batch=trace.busy_batch_s / horizon_s / replicas,
            effects_ttft_p99_ms=effect_p99,
        ),
        trace.events,
    )


def _within(value_ms: float | None, target_ms: float | None) -> bool:
    if target_ms is None:
        return True
    return value_ms is not None and value_ms <= target_ms
