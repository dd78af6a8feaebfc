"""The checks behind the README's figures: each runs the command the README shows beside
them and formats what it gives as the README prints it.

A check returns a dict of figures (for a `<!-- check NAME: ... -->` marker) or the text of
a fenced block (for `<!-- output NAME -->`). Shipped instances' default plans are read
from their golden files where a solve would be slow: `make test` runs `fleetplan batch
instances --check`, which holds the tool to them (GPUs exact, cost within the golden's
tolerance, a cheaper plan reported as an improvement).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from tests.readme import calibration_checks, deploy_checks  # noqa: F401  (they register)
from tests.readme.registry import CHECKS, DEMO, check, pct, span, usd
from tests.readme.runner import Runner, golden

__all__ = ["CHECKS"]


def _lines_between(text: str, first: str, last: str) -> list[str]:
    """The lines from the one starting with `first` to the next starting with `last`."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(last))
    return lines[start : end + 1]


# --- the default instance ---------------------------------------------------------------


@check("demo", DEMO)
def _demo(run: Runner) -> str:
    """The plan's first lines and its GPU table (the pools' tables are left out: layouts
    that cost the same may come out in another order from run to run)."""
    text = run.text(DEMO)
    head = text.split("\n")[:2]
    return "\n".join([*head, "...", *_lines_between(text, "GPUs by region and type", "total ")])


@check("cost-split", DEMO)
def _cost_split(run: Runner) -> dict[str, str]:
    plan = run.json(DEMO)
    rows = plan["cost_attribution"]
    east = next(row for row in rows if row["region"] == "us-east")
    return {
        "prefill": span([row["prefill_share"] for row in rows]),
        "decode": span([row["decode_share"] for row in rows]),
        "cost": usd(plan["cost_per_month"]),
        "east_input": f"${east['usd_per_million_input_tokens']:.2f}",
        "east_output": f"${east['usd_per_million_output_tokens']:.2f}",
    }


IDLE_SERVERS = "fleetplan solve instances/disaggregated.yaml"


@check("idle-servers", IDLE_SERVERS)
def _idle_servers(run: Runner) -> dict[str, str]:
    """The row of a plan whose servers hold idle GPUs is the bill, not the GPUs in use."""
    plan = run.json(IDLE_SERVERS)
    (use,) = plan["gpus"]
    (row,) = plan["cost_attribution"]
    return {
        "used": str(use["used"]),
        "servers": str(use["purchased"] // 8),
        "row": usd(row["cost_per_month"]),
        "in_use": usd(use["used"] * use["price_per_gpu_hour"] * 730),
    }


# --- deciding with it --------------------------------------------------------------------

LEVERS = "fleetplan explain instances/region-loss-3.yaml --levers"


@check("levers", LEVERS)
def _levers(run: Runner) -> dict[str, str]:
    result = run.json(LEVERS)
    levers = result["levers"]
    figures = {
        "base": usd(result["cost_per_month"]),
        "base_gpus": f"instead of {result['plan']['total_gpus']}",
    }
    for rank, lever in enumerate(levers[:3], start=1):
        figures[f"lever{rank}"] = lever["lever"]
        figures[f"saving{rank}"] = usd(lever["saving_per_month"])
    survive = next(lever for lever in levers if lever["lever"].startswith("drop survive"))
    figures["survive_gpus"] = f"{survive['total_gpus']} GPUs"
    figures["survive_note"] = survive["note"]
    return figures


COMPARE = "fleetplan compare instances/region-loss-3.yaml instances/region-loss-3-baseline.yaml"


@check("compare", COMPARE)
def _compare(run: Runner) -> str:
    return f"$ {COMPARE}\n{run.text(COMPARE).rstrip()}"


# --- co-location --------------------------------------------------------------------------

ZIPF = "fleetplan solve instances/zipf-20-models.yaml"
ZIPF_DEDICATED = f"{ZIPF} --set policy.colocation=false"


@check("zipf", ZIPF_DEDICATED)
def _zipf(run: Runner) -> dict[str, str]:
    dedicated, shared = run.json(ZIPF_DEDICATED), golden("zipf-20-models")
    return {
        "dedicated_gpus": f"{dedicated['total_gpus']} GPUs",
        "dedicated_cost": usd(dedicated["cost_per_month"]),
        "dedicated_idle": pct(dedicated["idle_fraction"], 1),
        "shared_gpus": f"{shared['total_gpus']} GPUs",
        "shared_cost": usd(shared["cost_per_month"]),
        "saved": usd(dedicated["cost_per_month"] - shared["cost_per_month"]),
    }


@check("zipf-packing", ZIPF, slow=True)
def _zipf_packing(run: Runner) -> dict[str, str]:
    plan = run.json(ZIPF)
    packing = plan["colocation"]
    return {
        "idle": pct(plan["idle_fraction"], 1),
        "packing": usd(packing["packing_cost"]),
        "bound": usd(packing["lp_bound"]),
        "gap": pct(packing["gap"]),
    }


@check("group-rows", ZIPF, slow=True)
def _group_rows(run: Runner) -> dict[str, str]:
    """Shared groups' members hold rows: the rows add up to the plan's cost."""
    plan = run.json(ZIPF)
    rows = plan["cost_attribution"]
    return {
        "rows": str(len(rows)),
        "attributed": usd(sum(row["cost_per_month"] for row in rows)),
        "cost": usd(plan["cost_per_month"]),
    }


# --- buying it ------------------------------------------------------------------------------

TPOT = "fleetplan solve instances/tpot-pooling.yaml"
TPOT_LONE = f"{TPOT} --set policy.credit_tpot_pooling=false"


@check("tpot-pooling", TPOT_LONE)
def _tpot_pooling(run: Runner) -> dict[str, str]:
    return {
        "pooled": f"{golden('tpot-pooling')['total_gpus']} H100",
        "lone": str(run.json(TPOT_LONE)["total_gpus"]),
    }


CATALOG = "fleetplan catalog gpus"


@check("server-power", CATALOG)
def _server_power(run: Runner) -> dict[str, str]:
    """An 8 x H100 server at PUE 1.3: tdp_w x server_power_factor (1.82) x pue x 8."""
    h100 = next(gpu for gpu in run.json(CATALOG) if gpu["name"] == "h100-sxm")
    return {"h100_server_kw": f"{h100['tdp_w'] * 1.82 * 1.3 * 8 / 1000:.1f} kW"}


# --- the KV cache ------------------------------------------------------------------------------

AFFINITY = "fleetplan solve instances/prefix-affinity-doc-qa.yaml"
RANDOM = f"{AFFINITY} --set policy.prefix_affinity=false"
SPLIT = f"{AFFINITY} --set policy.warm_cold_split=true"
TIERS_SPLIT = "fleetplan solve instances/kv-tiers-doc-qa.yaml --set policy.warm_cold_split=true"


@check("affinity", RANDOM)
def _affinity(run: Runner) -> dict[str, str]:
    homed, scattered = run.json(AFFINITY), run.json(RANDOM)
    return {
        "saving": usd(scattered["cost_per_month"] - homed["cost_per_month"]),
        "random": f"{scattered['total_gpus']} GPUs random",
        "affinity": f"{homed['total_gpus']} with affinity",
    }


def _split_cost(plan: dict[str, Any]) -> float:
    """The warm/cold split's cost: the plan's own when it took it, else the note's."""
    if plan["warm_cold_split"]:
        return plan["cost_per_month"]
    note = next(note for note in plan["notes"] if note.startswith("warm/cold split"))
    return float(note.split("$", 1)[1].split("/", 1)[0].replace(",", ""))


@check("warm-cold", SPLIT)
def _warm_cold(run: Runner) -> dict[str, str]:
    affinity, tiers = run.json(SPLIT), run.json(TIERS_SPLIT)
    return {
        "split": usd(_split_cost(affinity)),
        "whole": usd(affinity["warm_cold_unsplit_cost_per_month"]),
        "tiers_split": usd(_split_cost(tiers)),
        "tiers_whole": usd(tiers["warm_cold_unsplit_cost_per_month"]),
    }


# --- speculative decoding and the performance model ------------------------------------------

PERF_70B = "fleetplan perf -g h100-sxm -m llama-3.3-70b -p fp8 --tp 8 -i 1000 -o 300"
SPECULATE = f"{PERF_70B} --speculative-tokens 3 --acceptance-rate 0.7 --draft-model llama-3.1-8b"


@check("speculation", SPECULATE)
def _speculation(run: Runner) -> dict[str, str]:
    table = run.json(SPECULATE)["speculation"]
    by_batch = {row["batch"]: row for row in table["table"]}
    return {
        "speedup1": f"{by_batch[1]['speedup']:.2f}x",
        "tpot1": f"{by_batch[1]['tpot_ms']:.2f} ms",
        "plain1": f"{by_batch[1]['decode_step_ms']:.2f} ms",
        "speedup64": f"{by_batch[64]['speedup']:.2f}x",
        "speedup128": f"{by_batch[128]['speedup']:.2f}x",
        "crossover": f"batch {table['crossover_batch']}",
    }


@check("tpot-70b", PERF_70B)
def _tpot_70b(run: Runner) -> dict[str, str]:
    return {"batch1_tpot": f"{run.json(PERF_70B)['best_tpot_ms']:.1f} ms"}


# --- voice -------------------------------------------------------------------------------------

VOICE = (
    "fleetplan voice --first-audio-ms 800 --network-rtt-ms 60 --endpointing-ms 300"
    " --asr-ms 40 --tts-first-audio-ms 180 --first-clause-tokens 10"
)
VOICE_AGENT = "fleetplan solve instances/voice-agent.yaml"


def _voice_share(share: float) -> str:
    return f"{VOICE_AGENT} --set 'workloads[voice].voice.ttft_share={share}'"


@check("voice-budget", VOICE)
def _voice_budget(run: Runner) -> dict[str, str]:
    budget, plan = run.json(VOICE), golden("voice-agent")
    return {
        "left": f"{budget['llm_ms']:.0f} ms",
        "ttft": f"TTFT {budget['ttft_p99_ms']:.0f} ms",
        "tpot": f"TPOT {budget['tpot_p99_ms']:.0f} ms",
        "gpus": f"{plan['total_gpus']} H100",
    }


@check("voice-share", _voice_share(0.3))
def _voice_shares(run: Runner) -> dict[str, str]:
    plans = {share: run.json(_voice_share(share)) for share in (0.3, 0.5, 0.6, 0.8)}

    def per_replica(share: float) -> str:
        (pool,) = plans[share]["replicas"]
        return f"{pool['requests_per_s_per_replica']:.1f}"

    return {
        "rate03": per_replica(0.3),
        "rate05": per_replica(0.5),
        "gpus03": f"{plans[0.3]['total_gpus']} GPUs",
        "gpus05": f"{plans[0.5]['total_gpus']} GPUs",
        "gpus06": f"{plans[0.6]['total_gpus']} GPUs",
        "gpus08": f"{plans[0.8]['total_gpus']} GPUs",
    }


# --- over the day and the months (slow: `make readme`) ----------------------------------------

DIURNAL = "fleetplan solve instances/diurnal-chat-batch.yaml"
HORIZON = "fleetplan solve instances/growth-horizon.yaml"


@check("diurnal-headroom", DIURNAL, slow=True)
def _diurnal_headroom(run: Runner) -> dict[str, str]:
    plan = run.json(DIURNAL)
    (east,) = [
        pool
        for pool in plan["headroom"]
        if pool["workload"] == "chat"
        and pool["region"] == "us-east"
        and pool["configuration"] == "h100-sxm.fp8.tp2pp1.unified"  # the README's TP2 pool
    ]
    return {
        "east_replicas": f"{east['peak_replicas']} replicas",
        "east_kv": pct(east["kv_usage_scale_out"]),
    }


@check("diurnal-budget", DIURNAL, slow=True)
def _diurnal_budget(run: Runner) -> dict[str, str]:
    losses = run.json(DIURNAL)["error_budget_minutes_used"]
    return {
        "budget": f"{losses[0]['budget_minutes']:.1f} minutes",
        "worst": f"{max(loss['budget_minutes_used'] for loss in losses):.1f} minutes",
    }


@check("horizon", HORIZON, slow=True)
def _horizon(run: Runner) -> dict[str, str]:
    plan = run.json(HORIZON)
    months = plan["months"]

    def total(month: dict[str, Any], key: str) -> int:
        return round(sum(offer[key] for offer in month["offers"]))

    first, last = months[0], months[-1]
    (order,) = [  # the one server ordered within the horizon
        (server["order_month"], month["month"])
        for month in months
        for server in month["servers_ordered"]
        if server["order_month"] >= 0
    ]
    return {
        "growth": f"{last['growth_factor']:.2f}x",
        "peak": f"{total(first, 'peak_need_gpus')} to {total(last, 'peak_need_gpus')}",
        "reserved": f"{total(first, 'committed_gpus')} to {total(last, 'committed_gpus')} GPUs",
        "order": f"month {order[0]} for month {order[1]}",
        "cost": f"{usd(first['cost_per_month'])} to {usd(last['cost_per_month'])}",
        "horizon": usd(plan["horizon_cost"]),
    }


PROCUREMENT = "fleetplan solve instances/procurement-3region.yaml"


@check("day-configs", PROCUREMENT, slow=True)
def _day_configs(run: Runner) -> dict[str, str]:
    """One configuration per pool all day: eu-west's reasoning and assistant pools run
    one image in every hour of month 0 (the hours they serve), and what the month costs."""
    plan = run.json(PROCUREMENT)

    def images(workload: str) -> str:
        found: dict[str, set[int]] = {}
        for hour in plan["hours"]:
            for pool in hour["pools"]:
                if (pool["workload"], pool["region"]) == (workload, "eu-west"):
                    label = f"{pool['gpu']} TP{pool['tp']}"
                    found.setdefault(label, set()).add(hour["hour"])
        return "; ".join(f"{label} in {len(hours)} hours" for label, hours in sorted(found.items()))

    return {
        "reasoning": images("reasoning"),
        "assistant": images("assistant"),
        "month0": usd(plan["cost_per_month"]),
        "horizon": usd(plan["horizon_cost"]),
    }


TWO_A_DAY = f"{PROCUREMENT} --set policy.max_configs_per_pool=2"


@check("two-configs-a-day", TWO_A_DAY, slow=True)
def _two_configs_a_day(run: Runner) -> dict[str, str]:
    """Month 0 of procurement-3region with two configurations a pool a day, against one."""
    return {
        "two": usd(run.json(TWO_A_DAY)["cost_per_month"]),
        "one": usd(golden("procurement-3region")["cost_per_month"]),
    }


INFEASIBLE = (
    "fleetplan solve instances/region-loss-3.yaml"
    " --set 'regions[us-east].supply.h100-sxm.max_gpus=3'"
)


@check("infeasible", INFEASIBLE)
def _infeasible(run: Runner) -> dict[str, str]:
    (problem,) = run.json(INFEASIBLE)["diagnosis"]["problems"]
    message = problem["message"]

    def after(text: str, stop: str) -> str:
        return message.split(text, 1)[1].split(stop, 1)[0].strip()

    return {
        "demand": f"{after('= ', ' requests/s')} requests/s",
        "servable": f"at most {after('but at most', ' can be served')}",
        "regions": after("(at most ", " requests/s per region"),
    }


TIERS_8B = (
    "fleetplan perf -g h100-sxm -m llama-3.1-8b -p fp8 -i 4000 -o 300 --kv-tiers"
    " --prefix-tokens 2000 --prefix-share 1 --nvme-tb-per-node 30 --nvme-gb-s-per-node 25"
)
TIERS_70B = (
    "fleetplan perf -g h100-sxm -m llama-3.3-70b -p fp8 --tp 8 -i 4000 -o 300 --kv-tiers"
    " --prefix-tokens 2000 --prefix-share 1 --host-memory-gib-per-gpu 256"
    " --nvme-tb-per-node 30 --nvme-gb-s-per-node 25 --nvme-dwpd 1"
)


@check("kv-tiers", TIERS_8B)
def _kv_tiers(run: Runner) -> dict[str, str]:
    ssd = next(tier for tier in run.json(TIERS_8B)["kv_tiers"] if tier["tier"] == "ssd")
    lifetime = run.json(TIERS_70B)["ssd_lifetime_days"]
    return {
        "ssd_fetch": f"{ssd['fetch_ms_per_1k_tokens']:.2f} ms",
        "recompute": f"{ssd['recompute_ms_per_1k_tokens']:.2f} ms",
        "lifetime": f"{lifetime:.1f} days",
    }


SWAP_SOURCE = "models/colocation/swap.py"


@check("swap", SWAP_SOURCE)
def _swap(run: Runner) -> dict[str, str]:
    """Library figures (no command prints them): swap_in_s over the H100's host link, and
    a rank-16 adapter's bytes (models/colocation/lora.py)."""
    from models.colocation.lora import adapter_bytes
    from models.colocation.swap import host_link_gb_s, swap_in_s
    from models.physics.catalog import gpu, llm
    from models.physics.memory import weight_bytes_per_gpu
    from models.physics.precision import Precision

    link = host_link_gb_s(gpu("h100-sxm"))
    small = weight_bytes_per_gpu(llm("llama-3.1-8b"), Precision.FP8, 1)
    large = weight_bytes_per_gpu(llm("qwen3-32b"), Precision.BF16, 1)
    return {
        "small_gb": f"{small / 1e9:.1f} GB",
        "small_s": f"{swap_in_s(small, link):.2f} s",
        "large_gb": f"{large / 1e9:.1f} GB",
        "large_s": f"{swap_in_s(large, link):.1f} s",
        "adapter": f"{adapter_bytes(llm('llama-3.1-8b'), 16) / 2**20:.0f} MiB",
    }


SIMULATE = "fleetplan simulate instances/chat-3region.yaml plan.json --no-tolerance"


SIMULATE_SOAK = "fleetplan simulate instances/diurnal-chat-batch.yaml plan.json --no-tolerance"


@check("simulate-soak", SIMULATE_SOAK, slow=True)
def _simulate_soak(run: Runner) -> dict[str, str]:
    """diurnal-chat-batch's peak hour replayed with the batch us-east's chat pool soaks."""
    with tempfile.TemporaryDirectory() as folder:
        plan = Path(folder) / "plan.json"
        plan.write_text(json.dumps(run.json(DIURNAL)))
        pools = run.json(SIMULATE_SOAK.replace("plan.json", str(plan)))["pools"]
    (east,) = [pool for pool in pools if pool["batch"]]
    (batch,) = east["batch"]
    return {
        "tpot": f"{east['simulated']['tpot_p99_ms']:.1f} ms",
        "planned": f"{batch['planned_requests_per_s']:.2f} requests/s",
        "finished": f"{batch['achieved_requests_per_s']:.2f}",
    }


@check("simulate-default", SIMULATE, slow=True)
def _simulate_default(run: Runner) -> dict[str, str]:
    """`make demo`'s plan replayed (seed 0, nothing lost, 10 minutes of arrivals)."""
    with tempfile.TemporaryDirectory() as folder:
        plan = Path(folder) / "plan.json"
        plan.write_text(json.dumps(run.json(DEMO)))
        pools = run.json(SIMULATE.replace("plan.json", str(plan)))["pools"]
    served = [pool for pool in pools if pool["load_requests_per_s"] > 0]

    def above(role: str, metric: str) -> str:
        ratios = [
            pool["analytic"][metric] / pool["simulated"][metric] - 1
            for pool in served
            if pool["role"] == role
        ]
        return span(ratios)

    unified = next(  # the README names us-east's unified pool (us-west may have one too)
        pool for pool in served if pool["role"] == "unified" and pool["region"] == "us-east"
    )
    return {
        "meets": f"{sum(pool['meets_slo'] for pool in served)} of {len(served)} pools",
        "prefill": above("prefill", "ttft_p99_ms"),
        "decode": above("decode", "tpot_p99_ms"),
        "unified_ttft": f"{unified['analytic']['ttft_p99_ms']:.0f} ms p99 TTFT against "
        f"{unified['simulated']['ttft_p99_ms']:.0f} ms",
        "unified_tpot": f"{unified['analytic']['tpot_p99_ms']:.1f} ms p99 TPOT against "
        f"{unified['simulated']['tpot_p99_ms']:.1f} ms",
    }


SMALL = "fleetplan solve instances/region-loss-3.yaml"


@check("small-plan", SMALL)
def _small_plan(run: Runner) -> str:
    """The first line, one region's pools and the utilisation table of a one-layout plan."""
    text = run.text(SMALL)
    lines = text.split("\n")
    east = _lines_between(text, "us-east", "└")
    use = _lines_between(text, "Utilisation by scenario", "└")
    return "\n".join([lines[0], "...", *east, "...", *use])


PAIR = (
    "fleetplan perf -m llama-3.3-70b -g h100-sxm -p fp8 --tp 4 --prefill-workers 13"
    " --decode-workers 2 --concurrency 256 -i 4000 -o 300"
)


@check("pair", PAIR)
def _pair(run: Runner) -> dict[str, str]:
    """A disaggregated pair at a closed-loop concurrency (`perf --prefill-workers ...`)."""
    pair = run.json(PAIR)
    return {
        "gpus": str(pair["gpus"]),
        "throughput": f"{pair['throughput_requests_per_s']:.2f} req/s",
        "output": f"{pair['output_tokens_per_s']:,.0f} tokens/s",
        "ttft": f"{pair['ttft_mean_ms']:.1f} ms",
        "wait": f"{pair['prefill_wait_mean_ms']:.1f} ms",
        "prefill": f"{pair['prefill_ms']:.1f} ms",
        "transfer": f"{pair['kv_transfer_ms']:.1f} ms",
        "tpot": f"{pair['tpot_mean_ms']:.2f} ms",
        "limit": pair["limit"],
    }


@check("sglang-overhead", "models/physics/catalog/efficiency.yaml")
def _sglang_overhead(run: Runner) -> dict[str, str]:
    """The request overhead of the sglang-0.5 profile per generation, as the planner reads
    it (models.physics.efficiency.efficiency_for)."""
    from models.physics.efficiency import efficiency_for

    def ms(gpu: str) -> str:
        overhead = efficiency_for(gpu, "fp8", engine="sglang-0.5").request_overhead_s
        return f"{overhead * 1e3:.1f} ms"

    return {"b200": ms("b200"), "a100": ms("a100-80gb-sxm"), "hopper": ms("h100-sxm")}


@check("bands", PERF_70B)
def _bands(run: Runner) -> dict[str, str]:
    """The error band `perf` prints under the 70B figures."""
    (record,) = run.json(PERF_70B)["model_error"]
    return {"dense": record["text"]}


@check("engine-latency", PERF_70B)
def _engine_latency(run: Runner) -> dict[str, str]:
    """The latency constants of the default profile (models/physics/catalog/efficiency.yaml:
    Hopper over NVLink, Ada's L40S over PCIe) and the batch-1 TPOT they give."""
    from models.physics.efficiency import efficiency_for

    hopper, ada = efficiency_for("h100-sxm", "fp8"), efficiency_for("l40s", "fp8")
    return {
        "overhead": f"{hopper.step_overhead_s * 1e3:.1f} ms",
        "nvlink": f"{hopper.allreduce_latency_s * 1e6:.0f} us",
        "pcie": f"{ada.allreduce_latency_s * 1e6:.1f} us",
        **_tpot_70b(run),
    }


HORIZON_CAPACITY = (
    "fleetplan solve instances/procurement-3region.yaml --set policy.horizon_months=120"
)


@check("horizon-capacity", HORIZON_CAPACITY)
def _horizon_capacity(run: Runner) -> dict[str, str]:
    """The pre-solve check that names the first month the regions' power cannot hold."""
    (problem,) = run.json(HORIZON_CAPACITY)["diagnosis"]["problems"]
    message = problem["message"]
    needed = message.split("needs at least ", 1)[1].split(" kW", 1)[0]
    held = float(message.split("hold at most ", 1)[1].split(" kW", 1)[0])
    return {
        "month": problem["requirement"].split("[", 1)[1].rstrip("]"),
        "power": f"{needed} kW needed, {held:g} held",
    }
