"""Rows of a disaggregated pair: the pair replayed (`solver.simulate.disaggregated`)
and its pools' simulated and analytic latencies, with each engine effect off on request."""

from dataclasses import replace

import numpy as np

from models.serving.replica import ServingContext
from solver.simulate.disaggregated import decode_analytic, prefill_ttft_p99_s, simulate_pair
from solver.simulate.engine import Effects
from solver.simulate.results import (
    EFFECTS,
    Latencies,
    PoolSimulation,
    check_stop,
    measured_ms,
    meets_p99,
    pool_fields,
    quantile,
)


def pair_meets(run, cv: float) -> bool:
    """Every pool of a disaggregated pair, run at burstiness `cv`, meets its SLO."""
    return all(row.meets_slo is not False for row in run(cv)[0])


def simulate_pair_rows(
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
    stop=None,
) -> tuple[list[PoolSimulation], int]:
    """A disaggregated pair (`solver.simulate.disaggregated`): one row per prefill pool
    (TTFT) and per decode pool (TPOT); with `effects`, also each pool's p99 (TTFT of a
    prefill pool, TPOT of a decode pool) with each engine effect off, `stop` (a
    no-argument callable) asked before each of those runs (ReplayStopped: results.
    check_stop)."""
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
        step_s = decode_analytic(ServingContext(config, mix, eff), load * weight / total / n)[0]
        reference = Effects(
            reference_batch=max(
                load * weight / total / n * mix.output_mean_tokens * (step_s or 0.0), 1.0
            ),
            reference_context=mix.prompt_mean_tokens
            + mix.output_mean_tokens * (1 + mix.output_cv**2) / 2,
        )
        for name in ("none", *EFFECTS):
            fx = Effects() if name == "none" else replace(reference, **{name: False})
            if name != "none":
                check_stop(stop)
            off = run if name == "none" else replay(fx)
            for slot, outcome in enumerate(off["prefill_pools"] + off["decode_pools"]):
                members = outcome[0][measured[outcome[0]]]
                key = "ttft_s" if slot < len(prefill) else "tpot_s"
                effect_p99s[slot][f"{name}_off"] = measured_ms(quantile(off[key][members], 0.99))
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
                    ttft_p50_ms=measured_ms(quantile(ttft, 0.5)),
                    ttft_p99_ms=measured_ms(quantile(ttft, 0.99)),
                    tpot_p50_ms=None,
                    tpot_p99_ms=None,
                )
                analytic = Latencies(
                    ttft_p50_ms=None,
                    ttft_p99_ms=measured_ms(
                        prefill_ttft_p99_s(
                            ServingContext(config, mix, efficiency), pool_load / n, n
                        )
                    ),
                    tpot_p50_ms=None,
                    tpot_p99_ms=None,
                )
                meets = meets_p99(ttft, slo.ttft_p99_ms)
                unfinished = int(np.isnan(run["ttft_s"][mine]).sum())
                batch = 0.0
            else:
                many = mine[run["output_tokens"][mine] > 1]
                tpot = run["tpot_s"][many]
                simulated = Latencies(
                    ttft_p50_ms=None,
                    ttft_p99_ms=None,
                    tpot_p50_ms=measured_ms(quantile(tpot, 0.5)),
                    tpot_p99_ms=measured_ms(quantile(tpot, 0.99)),
                )
                step_s, tpot_p99_s = decode_analytic(
                    ServingContext(config, mix, efficiency), pool_load / n
                )
                analytic = Latencies(
                    ttft_p50_ms=None,
                    ttft_p99_ms=None,
                    tpot_p50_ms=None if step_s is None else step_s * 1e3,
                    tpot_p99_ms=None if tpot_p99_s is None else measured_ms(tpot_p99_s),
                )
                meets = meets_p99(tpot, slo.tpot_p99_ms)
                unfinished = int(np.isnan(run["finish_s"][mine]).sum())
                batch = outcome[3] / max(duration_s, 1e-9) / n
            if mine.size == 0:
                meets = None  # no load on this pool in the scenario
            rows.append(
                PoolSimulation(
                    **pool_fields(pool),
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
        **pool_fields(pool),
        replicas=n,
        load_requests_per_s=load,
        simulated=None,
        analytic=None,
        meets_slo=None,
        note=note,
    )
