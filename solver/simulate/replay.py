"""Replay a plan's pools in the discrete-event simulator and set the simulated latency
against the analytic promise and the SLO.

For one scenario of the plan (`none` by default), each unified pool (the replicas of one
configuration serving one workload in one region) gets its share of the region's load:
the scenario's load of the (workload, region, unified) phase split over the pools that
carry it in proportion to their capacity n q(n), n the replicas that survive and q(n)
the physics' capacity per replica in a pool of n (`models.serving.capacity.replica_capacity`).
Arrivals are Poisson (or gamma with a stated coefficient of variation), lengths are
drawn from the workload's distributions, and the replicas run the planner's own step
model (`solver.simulate.engine`), each request reaching its engine the profile's
request overhead after it arrives (`Efficiency.request_overhead_s`, in its TTFT as in the
planner's). Requests that arrive in the first `warmup_s` are
served but not measured. The analytic numbers are `models.serving.latency.latency_at_rate` at
the same per-replica load and pool size.

In a failure scenario a region's pools that may serve rerouted users are judged at the
p99 TTFT target less the longest such round trip, the target the planner credited them
at and the verifier checks (`solver.simulate.failover`).

An hourly plan is replayed at one UTC hour (solver.simulate.hours: by default its peak
hour, the one its `scenarios` describe): that hour's pools at that hour's scenario loads,
the replicas it starts after a loss counted in their configuration's pool.

The batch an hourly plan soaks into the replayed hour's unified pools (`Hour.batch_soak`,
scenario `none`: in a loss the batch yields) is replayed beside each pool's requests at
the plan's rate (`solver.simulate.soak`: Poisson, the batch's own lengths, one FIFO
queue per replica, no priority); the pool's latencies are its interactive requests'.

A shared group (`policy.colocation`: several models co-resident on one replica) keeps
its share of its members' load (n a[w,t], as the plan credits it) and is not replayed
either: the engine runs one model per replica. It is named in `not_simulated`.

A unified pool that decodes speculatively (`policy.speculative`) is replayed cycle by
cycle: each iteration is one speculation cycle (the planner's `SpeculativeSteps`), each
request's O - 1 tokens take the cycles drawn for it (`traffic.speculation_cycles`, the
planner's acceptance model), its KV grows by E tokens a cycle. A speculating pool the
engine does not replay (a decode pool, with attention DP, or under a closed loop) keeps
its share of the load (n q(n) with the speculation) and is named in `not_simulated`
(a prefill/decode pair whose decode side speculates: the whole pair).

Prefill-only and decode-only pools are replayed as a pair (`solver.simulate.
disaggregated`): the prefill rows carry TTFT (with the KV transfer), the decode rows TPOT.

With a closed-loop client (`arrivals` burst or staggered) each pool, or pair, is instead
driven by C users per replica (per decode replica of a pair) that send their next
request when the last completes, as benchmark tools run them, and set against `perf
--concurrency` (`solver.simulate.closed_rows`).
"""

from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from models.operations.scenarios import ScenarioKind
from models.physics.efficiency import efficiency_for
from models.physics.error_bands import margin_factor
from models.schema.instance import Instance
from models.schema.serving_inputs import latency_targets, pool_replica, traffic_mix
from models.serving.capacity import replica_capacity
from models.serving.latency import REQUESTS_PER_USER, latency_at_rate
from models.serving.replica import ReplicaConfig, Role, ServingContext, TrafficMix
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.plan.time_records import BatchSoak
from solver.simulate.batch_deadline import batch_deadlines
from solver.simulate.closed_rows import CLOSED_LOOP, simulate_closed_pair, simulate_closed_pool
from solver.simulate.disaggregated import cached_tokens, replica_engine, speculates
from solver.simulate.engine import Effects, PoolTrace, simulate_pool
from solver.simulate.failover import failover_workloads, lost_region, unrouted_pools
from solver.simulate.hours import replayed_hour
from solver.simulate.pair_rows import pair_meets, simulate_pair_rows
from solver.simulate.replay_size import check_replay_size, surviving
from solver.simulate.results import (
    EFFECTS,
    Latencies,
    PlanSimulation,
    PoolSimulation,
    ReplayStopped,
    check_stop,
    measured_ms,
    meets_p99,
    pool_fields,
    quantile,
)
from solver.simulate.soak import batch_replays, pool_soaks, with_batch
from solver.simulate.tolerance import STEPS as TOLERANCE_STEPS
from solver.simulate.tolerance import tolerated_cv
from solver.simulate.traffic import arrival_times_s, speculation_cycles, token_lengths

SPECULATION_NOTE = (
    "(speculative decoding: not replayed; the engine decodes one token per iteration)"
)
"""Why a speculating pool is in `PlanSimulation.not_simulated`."""
GROUP_NOTE = "(co-located group: not replayed; the engine runs one model per replica)"
"""Why a shared group is in `PlanSimulation.not_simulated`."""
SHARED_GROUP = "shared group"
"""How a scenario row lists a shared group's replicas (`n x shared group`)."""


def _config(instance: Instance, pool: ReplicaPool) -> tuple[ReplicaConfig, TrafficMix, object]:
    """The pool's configuration (`pool_replica`), its workload's mix and its efficiency."""
    config = pool_replica(instance, pool)
    workload = instance.workload(pool.workload)
    efficiency = efficiency_for(
        config.gpu, config.weight_precision, instance.efficiency, instance.engine
    )
    return config, traffic_mix(workload, instance.policy.prefix_affinity), efficiency


def _group_credit(
    plan: Plan, workload: str, region: str, counts: dict[str, int]
) -> tuple[float, list[str]]:
    """What the shared groups listed in a (workload, region) row carry of the workload,
    sum_t n_t a[w,t] (`GroupMember.requests_per_s_per_replica`, as the plan's scenario
    rows credit them), and `n x shared group ... on label` of each. A row lists them as
    `n x shared group` together, so with several groups their survivors are taken in
    proportion to their replicas. The engine runs one model per replica: the groups
    keep their share of the load and are not replayed."""
    listed = counts.get(SHARED_GROUP, 0)
    groups = [
        p for p in plan.replicas if p.shared and p.region == region and workload in p.workloads
    ]
    whole = sum(p.count for p in groups)
    if listed <= 0 or whole <= 0:
        return 0.0, []
    carried = sum(
        p.count * m.requests_per_s_per_replica
        for p in groups
        for m in p.members
        if m.workload == workload
    )
    named = [f"{p.count} x {SHARED_GROUP} {'+'.join(p.workloads)} on {p.label}" for p in groups]
    return carried * listed / whole, named


def _why(shares: list, groups: list[str], closed: bool) -> str:
    """The reason a row's left-out pools give: speculation, co-location or both."""
    notes = [SPECULATION_NOTE] if _speculating(shares, closed) else []
    return " ".join(notes + ([GROUP_NOTE] if groups else []))


def _unreplayable(config: ReplicaConfig, closed: bool) -> bool:
    """A speculating pool the replay does not run: the engine replays the cycles of an
    open-arrival unified pool without attention DP (`disaggregated.speculates`), not a
    decode pool's, a DP replica's or a closed loop's."""
    return config.speculation is not None and (closed or not speculates(config))


def _speculating(shares: list, closed: bool) -> list[str]:
    """`n x label` of the speculating pools of `shares` the replay does not run
    (`_unreplayable`; a pair's decode side: all of them). They keep their share of the
    load (n q(n) with the speculation); the others are replayed."""
    return [f"{share[4]} x {share[0].label}" for share in shares if _unreplayable(share[1], closed)]


def simulate_plan(
    instance: Instance,
    plan: Plan,
    scenario: str = "none",
    duration_s: float = 600.0,
    seed: int = 0,
    burstiness_cv: float = 1.0,
    dispatch: str = "least_prefill",
    warmup_s: float | None = None,
    effects: bool = False,
    tolerance: bool = False,
    arrivals: str = "open",
    concurrency: int | None = None,
    requests_per_user: int = REQUESTS_PER_USER,
    stop: Callable[[], bool] | None = None,
    hour: int | None = None,
    month: int | None = None,
) -> PlanSimulation:
    """Replay every pool of `plan` under `scenario` (see the module docstring), at one
    hour of an hourly plan (`hour`, `month`: solver.simulate.hours; default its peak).

    Args:
        duration_s: simulated seconds of arrivals per pool.
        seed: the random seed; the same inputs give the same output.
        burstiness_cv: coefficient of variation of inter-arrival times (1: Poisson).
        dispatch: the router's policy, `least_prefill` (the router the planner assumes),
            `jsq` or `round_robin` (`solver.simulate.engine.simulate_pool`).
        warmup_s: arrivals before this are not measured (default 10% of the run, at
            most 60 s).
        effects: also run each pool with each engine effect off and report p99 TTFT.
        tolerance: also find the burstiness each pool tolerates (bisection over the
            inter-arrival cv, `solver.simulate.tolerance`; ~9 more runs of each pool).
        arrivals: `open` (Poisson, or gamma at `burstiness_cv`, at the scenario's load),
            or a closed-loop client of `concurrency` users per replica sending
            `requests_per_user` requests each: `burst` or `staggered`
            (`solver.simulate.closed_rows`; duration, warm-up, burstiness, effects and
            tolerance do not apply).
        stop: asked before each open-arrival pool (or pair) and before each of its runs
            with an effect off: once true, that pool and those after it are not replayed
            and are named in `not_simulated` (a caller's deadline).
        hour: the UTC hour of an hourly plan to replay: its pools at its load.
        month: the month of a plan with months to replay (with `hour`, that hour of it).

    Raises ValueError for a scenario the plan does not have or a bad option,
    HourRefused (a ValueError) for an hour or month the plan does not have, and
    ClosedLoopRefused for a closed loop on a pair of more than one prefill or decode
    pool.
    """
    at = replayed_hour(plan, hour, month)
    plan = at.plan
    if duration_s <= 0:
        raise ValueError(f"duration must be > 0 s, got {duration_s}")
    closed = arrivals != "open"
    if closed and (arrivals not in CLOSED_LOOP or concurrency is None or concurrency < 1):
        raise ValueError(f"arrivals {arrivals!r}: open, or burst/staggered with a concurrency >= 1")
    if not closed:
        runs = 1 + (len(EFFECTS) if effects else 0) + (TOLERANCE_STEPS + 1 if tolerance else 0)
        check_replay_size(plan, scenario, duration_s, runs)
    warmup = min(60.0, 0.1 * duration_s) if warmup_s is None else warmup_s
    pools: list[PoolSimulation] = []
    events = 0
    entries = surviving(plan, scenario)
    stopped: list[str] = []
    unreplayable: list[str] = []
    rerouted = failover_workloads(instance, scenario)  # tighter TTFT targets where users reroute
    soaks = at.soaked if scenario == ScenarioKind.NONE else ()  # in a loss the batch yields
    soaked: set[int] = set()  # the soaks replayed beside their pools (open arrivals only)
    for index, (workload_name, region, phase, load, counts) in enumerate(entries):
        workload = rerouted.get((workload_name, region)) or instance.workload(workload_name)
        if phase.startswith(str(Role.DECODE)):
            continue  # replayed with its prefill phase
        if not closed and (stopped or (stop is not None and stop())):
            stopped.append(f"{workload_name} {region} {phase}")
            continue
        shares = _shares(instance, plan, workload, region, counts)
        total = sum(share[-1] for share in shares)  # the load splits over every pool
        where = f"{workload_name} {region} {phase}"
        if phase.startswith(str(Role.PREFILL)):
            partner = next(
                (e for e in entries if e[:3] == (workload_name, region, _decode_of(phase))), None
            )
            decode = partner[4] if partner else {}
            speculating = _speculating(_shares(instance, plan, workload, region, decode), True)
            if speculating:  # the pair is replayed together or not at all
                unreplayable.append(f"{where}: {', '.join(speculating)} {SPECULATION_NOTE}")
                continue
        else:
            credit, groups = _group_credit(plan, workload_name, region, counts)
            total += credit
            left_out = _speculating(shares, closed) + groups
            if left_out:
                unreplayable.append(
                    f"{where}: {', '.join(left_out)} {_why(shares, groups, closed)}"
                )
                shares = [share for share in shares if not _unreplayable(share[1], closed)]
                if not shares:
                    continue
        if closed and phase.startswith(str(Role.PREFILL)):
            prefill, decode = _closed_pair(
                instance, plan, entries, (workload_name, region, phase), shares
            )
            rows, count = simulate_closed_pair(
                workload,
                prefill,
                decode,
                int(concurrency or 1),
                requests_per_user,
                arrivals,
                [seed, index],
                dispatch,
            )
            pools.extend(rows)
            events += count
            continue
        if phase.startswith(str(Role.PREFILL)):
            decode_phase = str(Role.DECODE) + phase[len(str(Role.PREFILL)) :]
            partner = next(
                (e for e in entries if e[:3] == (workload_name, region, decode_phase)), None
            )
            decode_shares = _shares(instance, plan, workload, region, partner[4]) if partner else []

            pair = partial(
                simulate_pair_rows,
                workload,
                shares,
                decode_shares,
                load,
                (seed, index),
                duration_s,
                warmup,
                dispatch=dispatch,
            )
            try:
                rows, count = pair(burstiness_cv, effects=effects, stop=stop)
            except ReplayStopped:
                stopped.append(f"{workload_name} {region} {phase}")
                continue
            if tolerance and any(row.meets_slo is not None for row in rows):
                cv = tolerated_cv(partial(pair_meets, pair))
                rows = [row.model_copy(update={"tolerated_burstiness_cv": cv}) for row in rows]
            pools.extend(rows)
            events += count
            continue
        entry: list[PoolSimulation] = []
        entry_events = 0
        batches, placed = pool_soaks(instance, soaks, workload_name, region, shares, closed)
        try:
            for offset, (pool, config, mix, efficiency, n, weight) in enumerate(shares):
                if closed:
                    row, count = simulate_closed_pool(
                        pool,
                        workload,
                        ServingContext(config, mix, efficiency),
                        n,
                        int(concurrency or 1),
                        requests_per_user,
                        arrivals,
                        [seed, index, offset],
                        dispatch,
                    )
                else:
                    one = partial(
                        _simulate_one,
                        pool,
                        workload,
                        config,
                        mix,
                        efficiency,
                        n,
                        load * weight / (total or 1.0),
                        [seed, index, offset],
                        duration_s,
                        warmup,
                        dispatch=dispatch,
                        stop=stop,
                        soak=batches[offset],
                    )
                    row, count = one(burstiness_cv, effects=effects)
                    if tolerance and row.meets_slo is not None:
                        cv = tolerated_cv(partial(_one_meets, one))
                        row = row.model_copy(update={"tolerated_burstiness_cv": cv})
                entry.append(row)
                entry_events += count
        except ReplayStopped:  # a pool's effects cut short: the whole entry left out
            stopped.append(f"{workload_name} {region} {phase}")
            continue
        pools.extend(entry)
        events += entry_events
        soaked |= placed
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
        arrivals=arrivals,
        concurrency=concurrency if closed else None,
        not_simulated=(
            *stopped,
            *unreplayable,
            *unrouted_pools(instance, plan, scenario),
            *(_soaked(soaks, soaked)),
        ),
        hour=at.hour,
        month=at.month,
        replayed=at.words,
        batch_deadlines=batch_deadlines(
            instance,
            tuple(p for p in plan.replicas if p.region != lost_region(instance, scenario)),
            at.day,
            at.hour,
            at.month,
        ),
    )


def _soaked(soaks: tuple[BatchSoak, ...], replayed: set[int]) -> list[str]:
    """The batch an hour soaks into pools the replay left out, named (the others' is
    replayed beside their requests: solver.simulate.soak)."""
    return [
        f"{s.batch} soaked into {s.workload} {s.region} {s.configuration}: "
        f"{s.requests_per_s:.2f} requests/s of batch beside the pool, not replayed (a "
        "closed loop, or the pool left out)"
        for index, s in enumerate(soaks)
        if s.requests_per_s > 0 and index not in replayed
    ]


def _decode_of(prefill_phase: str) -> str:
    """The decode phase paired with a prefill phase (`prefill fp8` -> `decode fp8`)."""
    return str(Role.DECODE) + prefill_phase[len(str(Role.PREFILL)) :]


def _closed_pair(instance: Instance, plan: Plan, entries, key, shares) -> tuple:
    """(prefill pool, decode pool) of the pair whose prefill phase is `key`, each as
    (pool, config, mix, efficiency, replicas); refused unless the pair is one prefill
    pool and one decode pool."""
    workload_name, region, phase = key
    decode_phase = str(Role.DECODE) + phase[len(str(Role.PREFILL)) :]
    partner = next((e for e in entries if e[:3] == (workload_name, region, decode_phase)), None)
    workload = instance.workload(workload_name)
    decode = _shares(instance, plan, workload, region, partner[4]) if partner else []
    if len(shares) != 1 or len(decode) != 1:
        raise ClosedLoopRefused(
            f"{workload_name} in {region}: the closed-loop client replays a pair of one "
            f"prefill pool and one decode pool, this has {len(shares)} and {len(decode)}; "
            "use open arrivals"
        )
    return shares[0][:5], decode[0][:5]


class ClosedLoopRefused(ValueError):
    """A closed-loop client asked of a plan it does not replay (a disaggregated pair)."""


def _one_meets(run, cv: float) -> bool:
    """A unified pool, run at burstiness `cv` (engine effects all on), meets its SLO."""
    return run(cv, effects=False)[0].meets_slo is not False


def _shares(instance: Instance, plan: Plan, workload, region: str, counts: dict) -> list:
    """Per pool carrying the phase: (pool, config, mix, efficiency, n, n q(n)), q(n) x
    the `policy.capacity_margin` factor, as the plan's routing reads it."""
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
        capacity = replica_capacity(config, mix, latency_targets(workload.slo), efficiency, n)
        margin = margin_factor(
            instance.policy.capacity_margin,
            instance.engine,
            config.gpu,
            config.llm,
            config.ep,
            config.dp,
        )
        shares.append((pool, config, mix, efficiency, n, n * capacity.requests_per_s * margin))
    return shares


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
    stop=None,
    soak=None,
) -> tuple[PoolSimulation, int]:
    """Simulate one pool at `load` requests/s (all replicas together), the batch it
    soaks (`soak`, solver.simulate.soak) beside; with `effects`, `stop` asked before each
    run with an effect off (ReplayStopped: results.check_stop)."""
    slo = workload.slo
    workload_prompt, workload_output = workload.prompt_tokens, workload.output_tokens
    rng = np.random.default_rng(rng_seed)
    arrivals = arrival_times_s(load, duration_s, burstiness_cv, rng)
    prompts = token_lengths(workload_prompt, arrivals.size, rng)
    outputs = token_lengths(workload_output, arrivals.size, rng)
    serving = ServingContext(config, mix, efficiency)
    cached = cached_tokens(prompts, serving, replicas)
    engine = replica_engine(serving, replicas)
    arrivals, prompts, outputs, cached, kind = with_batch(
        soak, arrivals, prompts, outputs, cached, duration_s, rng_seed
    )
    interactive = kind < 0  # the soaked batch's requests: kind >= 0
    spec = config.speculation
    cycles = (
        speculation_cycles(outputs, spec.tokens, spec.acceptance_rate, rng)
        if speculates(config)
        else None
    )
    analytic = latency_at_rate(serving, load / replicas, replicas)

    def run(fx: Effects) -> PoolTrace:
        return simulate_pool(
            engine,
            replicas,
            arrivals,
            prompts - cached,
            outputs,
            cached,
            fx,
            dispatch,
            request_overhead_s=efficiency.request_overhead_s,
            decode_steps=cycles,
        )

    trace = run(Effects())
    measured = (trace.arrival_s >= warmup_s) & interactive  # the batch has no target
    ttft = trace.ttft_s[measured]
    many = trace.output_tokens > 1
    tpot = trace.tpot_s[measured[many]]
    simulated = Latencies(
        ttft_p50_ms=measured_ms(quantile(ttft, 0.5)),
        ttft_p99_ms=measured_ms(quantile(ttft, 0.99)),
        tpot_p50_ms=measured_ms(quantile(tpot, 0.5)),
        tpot_p99_ms=measured_ms(quantile(tpot, 0.99)),
    )
    promised = Latencies(
        ttft_p50_ms=measured_ms(analytic.ttft_p50_s),
        ttft_p99_ms=measured_ms(analytic.ttft_p99_s),
        tpot_p50_ms=measured_ms(analytic.tpot_mean_s),
        tpot_p99_ms=measured_ms(analytic.tpot_p99_s),
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
            check_stop(stop)
            off = run(replace(reference, **{name: False}))
            effect_p99[f"{name}_off"] = measured_ms(quantile(off.ttft_s[measured], 0.99))
    meets = meets_p99(ttft, slo.ttft_p99_ms) and meets_p99(tpot, slo.tpot_p99_ms)
    if not measured.any():  # no load on this pool in the scenario: nothing to judge
        meets = None
    horizon_s = max(trace.end_s, 1e-9)
    return (
        PoolSimulation(
            **pool_fields(pool),
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
            batch=batch_replays(soak, kind, trace.arrival_s, trace.finish_s, duration_s, warmup_s),
        ),
        trace.events,
    )
