"""Swapped group templates: the coldest tail shares one GPU with weights paged in on demand.

With `policy.colocation: true`, tail workloads (the rule of `solver.colocation.groups`: peak below
`TAIL_REPLICAS` lone replicas) whose weights do NOT all fit on one GPU together may still
share it by swapping (`models.colocation.swap_group`): one model's weights resident at a time, the
others copied in from host memory when a request finds its model cold. Which groups are
offered, on each GPU type g, for 2..`MAX_GROUP_SIZE` tail workloads at a (weight, KV)
precision their single-GPU candidates share:

    not co-resident:  sum_w (weights_w + reserve) > HBM(g)   (else `solver.colocation.groups` offers
                                                              the group without any swap)
    one slot fits:    max_w weights_w + n x reserve <= HBM(g)
    load:             sum_w D_w / q_w(g) <= 1
    swap rate:        rho_swap = sum_w D_w P(cold)_w swap_w <= SWAP_BUSY_MAX
    TTFT:             swap_w + max_{v != w} swap_v < TTFT target_w   (cold members only)

(cheap: no latency model runs), then the physics (`evaluate_swapped_group`) at the peaks
and, when it holds, the bisection for the load scale s*: a[w,t] = s* D_w, at most
`MAX_SWAP_EVALUATIONS` groups in all (a safety budget; the note says when it was hit).
The feasible loads are down-closed member by member: the TTFT bound adds the wait
whenever P(cold) > 0, whatever its size, and the swap rate of one LRU slot rises with
every member's rate, so a[w,t] is safe as a per-replica coefficient.
"""

import itertools
import math

from models.colocation.shared_layout import SharedLayout
from models.colocation.swap import cold_probabilities_lru, host_link_gb_s, swap_in_s
from models.colocation.swap_group import (
    RESIDENT_SLOTS,
    SWAP_BUSY_MAX,
    evaluate_swapped_group,
    swapped_capacity_scale,
)
from models.physics.efficiency import efficiency_for
from models.physics.memory import weight_bytes_per_gpu
from models.schema.instance import Instance
from models.schema.serving_inputs import latency_targets
from models.serving.replica import Limit, Role
from solver.candidates.table import CandidateTable
from solver.colocation.groups import (
    INTERFERENCE_FACTOR,
    MAX_GROUP_SIZE,
    SEARCH_STEPS,
    TAIL_REPLICAS,
    Template,
    _common_layout,
    _Option,
    _physics,
    check_deadline,
)
from solver.settings import SolveSettings

MAX_SWAP_EVALUATIONS = 40
"""Most swapped groups the physics evaluates (each a bisection of ~15 group evaluations)."""


def swapped_templates(
    instance: Instance, table: CandidateTable, settings: SolveSettings | None = None
) -> list[Template]:
    """The swapped group templates of an instance (none unless `policy.colocation`);
    past `settings`' deadline, TimeLimitReached (checked before each group)."""
    if not instance.policy.colocation:
        return []
    workloads = [w.name for w in instance.workloads]
    peaks = {
        w.name: max((level.peak_rps for level in w.demand.values()), default=0.0)
        for w in instance.workloads
    }
    lone = {
        w: [c for c in table.of(w) if c.role is Role.UNIFIED and c.gpus == 1] for w in workloads
    }
    tail = [
        w
        for w in workloads
        if lone[w] and 0 < peaks[w] < TAIL_REPLICAS * max(c.requests_per_s for c in lone[w])
    ]
    templates: list[Template] = []
    budget = MAX_SWAP_EVALUATIONS
    for gpu in sorted({c.gpu for w in tail for c in lone[w]}):
        options = {w: [_Option(w, c, peaks[w]) for c in lone[w] if c.gpu == gpu] for w in tail}
        usable = [w for w in tail if options[w]]
        known: dict = {}
        for size in range(2, MAX_GROUP_SIZE + 1):
            for names in itertools.combinations(usable, size):
                check_deadline(settings)
                group = _common_layout([options[w] for w in names])
                if group is None or not _worth_evaluating(instance, group, known):
                    continue
                if budget == 0:
                    return templates
                budget -= 1
                template = _evaluate(instance, group)
                if template is not None:
                    templates.append(template)
    return templates


def _worth_evaluating(instance: Instance, group, known: dict) -> bool:
    """The cheap pre-filters of the module docstring. `known`: the reserve by weight
    precision and each member's weights by (workload, weight precision), kept across
    the groups of one GPU type."""
    config = group[0].candidate.config
    gpu, precision = config.gpu, config.weight_precision
    if precision not in known:
        efficiency = efficiency_for(gpu, precision, instance.efficiency, instance.engine)
        known[precision] = gpu.hbm_bytes * efficiency.memory_reserve_fraction
    reserve = known[precision]
    for o in group:
        if (o.workload, precision) not in known:
            llm = o.candidate.config.llm
            known[(o.workload, precision)] = weight_bytes_per_gpu(llm, precision, 1, 1)
    weights = [known[(o.workload, precision)] for o in group]
    if math.fsum(weights) + len(group) * reserve <= gpu.hbm_bytes:
        return False  # co-resident: solver.colocation.groups offers it without swapping
    if max(weights) + len(group) * reserve > gpu.hbm_bytes:
        return False
    if math.fsum(o.fraction for o in group) > 1.0:
        return False
    swaps = [swap_in_s(b, host_link_gb_s(gpu)) for b in weights]
    rates = [o.peak_requests_per_s for o in group]
    colds = cold_probabilities_lru(rates, RESIDENT_SLOTS)
    if math.fsum(r * p * s for r, p, s in zip(rates, colds, swaps, strict=True)) > SWAP_BUSY_MAX:
        return False
    for i, o in enumerate(group):
        wait = swaps[i] + max(s for j, s in enumerate(swaps) if j != i)
        target = latency_targets(instance.workload(o.workload).slo).ttft_p99_s
        if colds[i] > 0 and target is not None and wait >= target:
            return False
    return True


def _evaluate(instance: Instance, group) -> Template | None:
    """The swapped template of `group` at its members' peaks, or None when it fails."""
    layout, members, efficiency = _physics(instance, group)
    if not evaluate_swapped_group(layout, members, efficiency, INTERFERENCE_FACTOR).meets_slo:
        return None
    scale = swapped_capacity_scale(
        layout, members, efficiency, INTERFERENCE_FACTOR, bisection_steps=SEARCH_STEPS
    )
    if scale < 1.0:
        return None
    config = group[0].candidate.config
    return Template(
        members=tuple(m.name for m in members),
        gpu=config.gpu.name,
        precision=config.weight_precision,
        kv_precision=config.kv_precision,
        layout=SharedLayout(config.gpu, config.weight_precision, config.kv_precision, 1, 1),
        capacity_requests_per_s=tuple(scale * m.requests_per_s for m in members),
        load_scale=scale,
        limit=Limit.TTFT_QUEUEING,
        limiting_member=members[0].name,
        swapped=True,
    )
