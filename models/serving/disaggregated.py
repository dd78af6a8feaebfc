"""A disaggregated pair at a closed-loop concurrency: P prefill workers feeding D decode
workers, with the prompt's KV crossing between them.

Notation: C users, each sending its next request when the last completes; a request has
P prompt tokens (P (1-h) of them new, after prefix-cache hits) and O output tokens. The
prefill side is P_w workers of pp lanes each (`models.serving.prefill_model`: a worker
with pp stages keeps pp iterations of one chunk in flight), L = P_w pp lanes; a lane
iteration of q prompt tokens takes t_p(q) (`StepModel.iteration_s` with no decode
batch), and a worker prefills r tokens/s at full chunks, so one prompt is
S_p = P (1-h) / r of a worker. The decode side is D workers of at most `seats`
sequences each (the decode replica's offline batch ceiling: KV memory, the engine's
batch cap); an iteration at batch B takes t_d(B) (the planner's decode-only iteration,
`models.serving.batch_model.BatchModel.decode_only_s`). A request's life:
    prefill   the router sends it to the lane with the fewest prompt tokens queued
              (least work left, the planner's router, which waits as one FCFS queue
              before the lanes would: `models.serving.queueing`); the lane takes its
              queue in order up to its chunk each iteration, and the prompt's first
              token comes when the iteration that finishes it ends;
    transfer  its KV, K = P x KV bytes per token (`kv_transfer_bytes`), crosses to a
              decode worker in K / W, W the link of one transfer: by default the slower
              side's scale-out NICs (gpus x NIC bytes/s x scaleout fraction,
              `nic_bytes_per_s`; the planner prices each side on its own NICs, the
              same figure when the sides have as many GPUs); a pure delay (NICs
              uncontended);
    decode    it joins a decode worker (the one with the fewest sequences, ties in
              rotation) at the next
              iteration boundary once a seat is free and decodes O - 1 tokens, one per
              iteration (the first came from prefill).
    TTFT = o + prefill wait + own prefill + K / W  (the planner's disaggregated TTFT; o
                                                    the profile's fixed cost of a request
                                                    before the engine, paid once: the
                                                    request reaches a lane o after it is
                                                    sent, `Efficiency.request_overhead_s`)
    TPOT = (decode done - first token) / (O - 1)   (a wait for a seat counts here, as in
                                                    the simulator's pair, solver.simulate)
The planner's decode replica holds a sequence O iterations (B / (O t(B)) generations/s);
this model holds it O - 1, so its decode rate at a batch is O / (O - 1) the planner's.

Throughput caps (requests/s of the pair), each if the other sides were unlimited:
    prefill   X_p = P_w / S_p
    decode    X_d = D B_c / ((O - 1) t_d(B_c)),  B_c = min(seats, C / D)  (every user
              decoding, as many as the seats hold)
    link      X_k = min(P_w W_p, D W_d) / K  (each worker's NICs; min(P_w, D) W when the
              link is given)
The side with the smallest cap limits (`limit`); each side's utilisation is X / cap.

Two ways the users arrive (`perf --arrivals`):
- burst: all C start together with fixed lengths (the benchmark tools' client,
  `models.serving.closed_loop`), replayed event by event (`replay_pair`): lanes,
  transfers and decode iterations on their own clocks.
- steady: staggered users, the closed-loop fixed point. At pair throughput X, each decode
  worker decodes at its share: B(X) with D B / ((O - 1) t_d(B)) = X (bisection), and
      C = X (o + W_q(X) + S_own + K / W + (O - 1) t_d(B(X)))      (Little's law)
  with W_q the M/G/c mean wait of the prefill queue (`mgc_mean_wait_s`: c = L lanes,
  service pp S_p per lane, arrivals at X taken as Poisson, an upper bound for a finite
  population). The right side rises with X; X solves it by bisection below the smaller
  of X_p and the caps at the seat ceiling. Users beyond what the pair holds at that
  ceiling queue in front of the side that binds: (C - C_edge) / X more of TTFT (prefill,
  link) or of the O - 1 decode tokens (decode seats).

Assumptions: fixed lengths in the burst (the mean prompt and output); one KV precision on
both sides; the decode workers' KV holds `seats` sequences each at the mix's mean
footprint; no preemption.
"""

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from models.serving.batch_model import BatchModel
from models.serving.capacity import replica_capacity
from models.serving.closed_loop import MAX_ITERATIONS
from models.serving.edge_search import bisect_edge
from models.serving.latency import REQUESTS_PER_USER
from models.serving.prefill_model import prefill_lane
from models.serving.prefix_kv import pool_mix_tokens
from models.serving.queueing import mgc_mean_wait_s
from models.serving.replica import LatencyTargets, Role, ServingContext
from models.serving.replica_layout import (
    kv_transfer_bytes,
    nic_bytes_per_s,
    replica_step_model,
)

PREFILL, DECODE, LINK = "prefill", "decode", "kv transfer"
"""The sides that can limit a pair."""

BISECTION_STEPS = 80
"""Halvings of a bracket in the steady fixed point."""


class SideDoesNotFit(ValueError):
    """One side's layout cannot hold the model or the mix (the message names the side)."""


@dataclass(frozen=True)
class PrefillSide:
    """The prefill workers as the pair's models see them (module docstring)."""

    workers: int
    lanes_per_worker: int
    chunk_tokens: int
    """Tokens one lane iteration takes at most."""
    service_s: float
    """S_p = P (1-h) / r: one prompt's share of a worker."""
    own_s: float
    """A lone prompt's prefill."""
    prompt_scv: float
    iteration_s: Callable[[float], float]
    """t_p(q): a lane iteration of q prompt tokens."""
    request_overhead_s: float = 0.0
    """o: the fixed cost of a request before the engine; it reaches a lane o after it is
    sent."""

    @property
    def lanes(self) -> int:
        return self.workers * self.lanes_per_worker

    @property
    def max_rate(self) -> float:
        """X_p = P_w / S_p."""
        return self.workers / self.service_s

    def mean_wait_s(self, rate: float) -> float:
        """W_q: M/G/c mean wait, c = lanes, service pp S_p per lane, arrivals at `rate`."""
        return mgc_mean_wait_s(
            rate, self.lanes_per_worker * self.service_s, self.prompt_scv, self.lanes
        )


@dataclass(frozen=True)
class DecodeSide:
    """The decode workers as the pair's models see them (module docstring)."""

    workers: int
    seats: int
    iteration_s: Callable[[float], float]
    """t_d(B): a decode iteration at batch B."""

    def rate(self, batch: float, tokens: int) -> float:
        """Requests/s of the side at batch B per worker, `tokens` = O - 1 iterations each:
        D B / ((O - 1) t_d(B))."""
        if batch <= 0:
            return 0.0
        return self.workers * batch / (tokens * self.iteration_s(batch))

    def batch_at(self, rate: float, tokens: int) -> float:
        """B(X): the batch per worker that decodes `rate` requests/s (within the seats)."""
        low, _ = bisect_edge(
            lambda b: self.rate(b, tokens) <= rate, 0.0, float(self.seats), BISECTION_STEPS
        )
        return low


@dataclass(frozen=True)
class PairPoint:
    """What the pair does at C users: the tools' figures and what limits."""

    arrivals: str
    """`burst` or `steady` (module docstring)."""
    users: int | float
    throughput_requests_per_s: float
    ttft_mean_s: float
    prefill_wait_mean_s: float
    """TTFT less the request overhead, a lone prompt's prefill and the transfer: the
    queue for a lane and the prompts sharing its iterations."""
    tpot_mean_s: float
    decode_batch: float
    """Mean sequences decoding per decode worker (time-weighted in a burst)."""
    caps: dict[str, float]
    """X_p, X_d, X_k (requests/s), by side."""
    saturated: bool
    """Users queue in front of the binding side beyond what the pair holds."""

    @property
    def limit(self) -> str:
        """The side with the smallest cap."""
        return min(self.caps, key=lambda side: self.caps[side])

    def utilisation(self, side: str) -> float:
        """X / cap of the side."""
        cap = self.caps[side]
        return self.throughput_requests_per_s / cap if cap > 0 else math.inf


def _caps(
    prefill: PrefillSide, decode: DecodeSide, link_cap: float, users: float, tokens: int
) -> dict[str, float]:
    batch = min(float(decode.seats), users / decode.workers)
    return {PREFILL: prefill.max_rate, DECODE: decode.rate(batch, tokens), LINK: link_cap}


def steady_pair(
    prefill: PrefillSide,
    decode: DecodeSide,
    transfer_s: float,
    link_cap: float,
    users: float,
    output_tokens: int,
) -> PairPoint:
    """The steady closed-loop fixed point (module docstring). Raises ValueError for
    fewer than one user or fewer than two output tokens."""
    if users < 1:
        raise ValueError(f"concurrency must be >= 1, got {users}")
    if output_tokens < 2:
        raise ValueError(f"a pair decodes at least one token: output tokens {output_tokens}")
    tokens = output_tokens - 1

    def in_system(rate: float) -> float:
        wait_s = prefill.mean_wait_s(rate)
        batch = decode.batch_at(rate, tokens)
        ttft_s = prefill.request_overhead_s + wait_s + prefill.own_s + transfer_s
        return rate * (ttft_s + tokens * decode.iteration_s(batch))

    seat_cap = decode.rate(float(decode.seats), tokens)
    edges = {PREFILL: prefill.max_rate, DECODE: seat_cap, LINK: link_cap}
    side = min(edges, key=lambda s: edges[s])
    edge = edges[side]
    held = in_system(edge) if side != PREFILL else math.inf
    extra_ttft_s = extra_tpot_s = 0.0
    if users > held:
        rate = edge
        extra_s = (users - held) / edge
        if side == DECODE:
            extra_tpot_s = extra_s / tokens
        else:
            extra_ttft_s = extra_s
    else:
        rate, _ = bisect_edge(lambda x: in_system(x) <= users, 0.0, edge, BISECTION_STEPS)
    batch = decode.batch_at(rate, tokens)
    wait_s = prefill.mean_wait_s(rate) + extra_ttft_s
    return PairPoint(
        arrivals="steady",
        users=users,
        throughput_requests_per_s=rate,
        ttft_mean_s=prefill.request_overhead_s + wait_s + prefill.own_s + transfer_s,
        prefill_wait_mean_s=wait_s,
        tpot_mean_s=decode.iteration_s(batch) + extra_tpot_s,
        decode_batch=batch,
        caps=_caps(prefill, decode, link_cap, users, tokens),
        saturated=users > held,
    )


def replay_pair(
    prefill: PrefillSide,
    decode: DecodeSide,
    transfer_s: float,
    link_cap: float,
    users: int,
    requests_per_user: int,
    prompt_tokens: int,
    output_tokens: int,
) -> PairPoint:
    """The burst: `users` users start together, each sending `requests_per_user`
    requests of `prompt_tokens` new prompt tokens and `output_tokens` output tokens,
    replayed event by event (module docstring). Each prompt goes to the lane with the
    fewest prompt tokens queued (then the fewest prompts, ties in rotation) when it
    reaches the engine, the request overhead after it is sent, and the lane takes
    its queue in order up to its chunk each iteration; a prompt's first token comes at
    the end of the iteration that finishes it, its KV lands `transfer_s` later at the
    decode worker with the fewest sequences (ties in rotation), which seats it at its
    next iteration boundary when a seat is free. The events of one instant all land
    before any lane or decode worker starts its next iteration.
    Raises ValueError for arguments that cannot run or a replay past MAX_ITERATIONS."""
    if users < 1 or requests_per_user < 1:
        raise ValueError(f"users and requests must be >= 1, got {users}, {requests_per_user}")
    if prompt_tokens < 1 or output_tokens < 2:
        raise ValueError(
            f"a pair needs a prompt token and two output tokens, got {prompt_tokens}, "
            f"{output_tokens}"
        )
    tokens = output_tokens - 1
    total = users * requests_per_user
    fill = max(1, min(decode.seats, users // decode.workers))
    if total * tokens / fill + total * prompt_tokens / prefill.chunk_tokens > MAX_ITERATIONS:
        raise ValueError(
            f"a replay of {total:,} requests of {output_tokens:,} output tokens is past "
            f"{MAX_ITERATIONS:,} iterations"
        )
    events: list[tuple[float, int, str, int, tuple]] = []
    order = 0

    def push(at_s: float, kind: str, index: int, data: tuple = ()) -> None:
        nonlocal order
        heapq.heappush(events, (at_s, order, kind, index, data))
        order += 1

    lanes, workers = prefill.lanes, decode.workers
    queued: list[deque[list]] = [deque() for _ in range(lanes)]  # [user, sent, tokens left]
    backlog = [0] * lanes  # prompt tokens a lane has queued, its iteration's included
    lane_chunk: list[list[tuple[list, int]]] = [[] for _ in range(lanes)]
    waiting: list[deque] = [deque() for _ in range(workers)]  # (user, sent, first)
    seated: list[list[list]] = [[] for _ in range(workers)]  # [user, sent, first, left]
    decoding = [False] * workers
    turns = [0, 0]  # the routers' rotation: prefill, decode
    left = dict.fromkeys(range(users), requests_per_user)
    ttfts: list[float] = []
    tpots: list[float] = []
    batch_s = 0.0
    now = 0.0

    def route(loads: list[tuple], which: int) -> int:
        """The least loaded, ties in rotation from the last one chosen (as
        `solver.simulate.engine.simulate_pool`'s router)."""
        count, turn = len(loads), turns[which]
        chosen = min(range(count), key=lambda i: (loads[i], (i - turn) % count))
        turns[which] = (chosen + 1) % count
        return chosen

    def send(user: int, at_s: float) -> None:
        if prefill.request_overhead_s > 0:  # it reaches the engine o later
            push(at_s + prefill.request_overhead_s, "enter", user, (at_s,))
        else:
            enter(user, at_s)

    def enter(user: int, sent_s: float) -> None:
        lane = route([(backlog[i], len(queued[i])) for i in range(lanes)], 0)
        queued[lane].append([user, sent_s, prompt_tokens])
        backlog[lane] += prompt_tokens

    def start_lane(lane: int, at_s: float) -> None:
        if lane_chunk[lane]:
            return
        budget, chunk = prefill.chunk_tokens, []
        for entry in queued[lane]:
            if budget <= 0:
                break
            take = min(entry[2], budget)
            chunk.append((entry, take))
            budget -= take
        if chunk:
            lane_chunk[lane] = chunk
            step_s = prefill.iteration_s(float(prefill.chunk_tokens - budget))
            push(at_s + step_s, "prefill", lane)

    def start_decode(worker: int, at_s: float) -> None:
        nonlocal batch_s
        if decoding[worker]:
            return
        while waiting[worker] and len(seated[worker]) < decode.seats:
            user, sent, first = waiting[worker].popleft()
            seated[worker].append([user, sent, first, tokens])
        batch = len(seated[worker])
        if batch:
            decoding[worker] = True
            step_s = decode.iteration_s(float(batch))
            batch_s += batch * step_s
            push(at_s + step_s, "decode", worker)

    def kick(at_s: float) -> None:
        """At the end of all events of one instant: every idle lane takes its queue's
        prompts up to its chunk, every idle decode worker seats its waiting."""
        for lane in range(lanes):
            start_lane(lane, at_s)
        for worker in range(workers):
            start_decode(worker, at_s)

    for user in range(users):
        send(user, 0.0)
    kick(0.0)
    while events:
        now, _, kind, index, data = heapq.heappop(events)
        if kind == "prefill":
            chunk, lane_chunk[index] = lane_chunk[index], []
            for entry, take in chunk:
                entry[2] -= take
                backlog[index] -= take
            while queued[index] and queued[index][0][2] == 0:
                user, sent, _ = queued[index].popleft()
                ttfts.append(now + transfer_s - sent)
                push(now + transfer_s, "kv", user, (sent, now + transfer_s))
        elif kind == "enter":
            enter(index, data[0])
        elif kind == "kv":
            worker = route([len(seated[w]) + len(waiting[w]) for w in range(workers)], 1)
            waiting[worker].append((index, *data))
        else:
            decoding[index] = False
            for entry in seated[index]:
                entry[3] -= 1
            for entry in [e for e in seated[index] if e[3] == 0]:
                seated[index].remove(entry)
                user, _, first, _ = entry
                tpots.append((now - first) / tokens)
                left[user] -= 1
                if left[user]:
                    send(user, now)
        if not events or events[0][0] > now:
            kick(now)
    ttft_mean_s = sum(ttfts) / total
    return PairPoint(
        arrivals="burst",
        users=users,
        throughput_requests_per_s=total / now,
        ttft_mean_s=ttft_mean_s,
        prefill_wait_mean_s=max(
            0.0, ttft_mean_s - prefill.request_overhead_s - prefill.own_s - transfer_s
        ),
        tpot_mean_s=sum(tpots) / total,
        decode_batch=batch_s / (now * decode.workers),
        caps=_caps(prefill, decode, link_cap, users, tokens),
        saturated=users > decode.workers * decode.seats,
    )


@dataclass(frozen=True)
class PairLayout:
    """A disaggregated pair: the prefill and the decode workers' configurations (roles
    PREFILL and DECODE, one model, one mix), their counts and the link of one KV
    transfer (None: the slower side's scale-out NICs)."""

    prefill: ServingContext
    decode: ServingContext
    prefill_workers: int
    decode_workers: int
    link_bytes_per_s: float | None = None


@dataclass(frozen=True)
class PairReport:
    """`pair_at_concurrency`'s answer: the point and the figures it rests on."""

    point: PairPoint
    prompt_tokens: float
    output_tokens: float
    gpus: int
    """P_w x prefill GPUs per worker + D x decode GPUs per worker."""
    kv_transfer_bytes: float
    """K: the mean prompt's KV."""
    link_bytes_per_s: float
    link_given: bool
    kv_transfer_s: float
    prefill_s: float
    """A lone mean prompt's prefill."""
    decode_seats: int

    @property
    def total_tokens_per_s(self) -> float:
        """X (P + O): prompt and output tokens per second."""
        return self.point.throughput_requests_per_s * (self.prompt_tokens + self.output_tokens)

    @property
    def output_tokens_per_s(self) -> float:
        """X O: output tokens per second."""
        return self.point.throughput_requests_per_s * self.output_tokens

    def per_gpu(self, tokens_per_s: float) -> float:
        """A rate over the pair's GPUs."""
        return tokens_per_s / self.gpus


def pair_sides(layout: PairLayout) -> tuple[PrefillSide, DecodeSide, float, float, float]:
    """(prefill side, decode side, K bytes, W bytes/s, X_k) of the layout. Raises
    SideDoesNotFit naming the side whose layout cannot hold the model or the mix, and
    ValueError for worker counts below one or a role that is not the side's."""
    p_workers, d_workers = layout.prefill_workers, layout.decode_workers
    for name, count in (("prefill", p_workers), ("decode", d_workers)):
        if count < 1 or int(count) != count:
            raise ValueError(f"{name} workers must be a whole number >= 1, got {count}")
    pre, dec = layout.prefill, layout.decode
    if pre.config.role is not Role.PREFILL or dec.config.role is not Role.DECODE:
        raise ValueError("a pair is a prefill configuration and a decode configuration")
    offline = {}
    for name, serving, count in (("prefill", pre, p_workers), ("decode", dec, d_workers)):
        capacity = replica_capacity(
            serving.config, serving.mix, LatencyTargets(), serving.efficiency, count
        )
        if not capacity.fits:
            raise SideDoesNotFit(f"{name} side: {capacity.reason}")
        offline[name] = capacity
    steps_p = replica_step_model(pre.config, pre.efficiency)
    m_p = pool_mix_tokens(pre, p_workers)
    lane = prefill_lane(pre.config, m_p, pre.efficiency, steps_p, p_workers)
    prefill_context = (m_p.cached_prompt + m_p.new_prompt / 2) * (1 + m_p.prompt_scv)

    @cache
    def prefill_iteration_s(tokens: float) -> float:
        return steps_p.iteration_s(0, m_p.context, tokens, prefill_context)

    prefill = PrefillSide(
        workers=p_workers,
        lanes_per_worker=steps_p.pp,
        chunk_tokens=steps_p.chunk_tokens,
        service_s=lane.service_s,
        own_s=lane.own_s,
        prompt_scv=m_p.prompt_scv,
        iteration_s=prefill_iteration_s,
        request_overhead_s=lane.request_overhead_s,
    )
    m_d = pool_mix_tokens(dec, d_workers)
    model = BatchModel(
        replica_step_model(dec.config, dec.efficiency), m_d, Role.DECODE, 0.0, 0.0, d_workers
    )
    decode = DecodeSide(
        workers=d_workers,
        seats=max(1, math.floor(offline["decode"].batch)),
        iteration_s=cache(model.decode_only_s),
    )
    kv_bytes = kv_transfer_bytes(pre.config, m_p.prompt)
    nic_p = nic_bytes_per_s(pre.config, pre.efficiency)
    nic_d = nic_bytes_per_s(dec.config, dec.efficiency)
    if layout.link_bytes_per_s is None:
        link = min(nic_p, nic_d)
        link_cap = min(p_workers * nic_p, d_workers * nic_d) / kv_bytes
    else:
        link = layout.link_bytes_per_s
        link_cap = min(p_workers, d_workers) * link / kv_bytes
    return prefill, decode, kv_bytes, link, link_cap


def pair_at_concurrency(
    layout: PairLayout,
    concurrency: float,
    arrivals: str = "burst",
    requests_per_user: int = REQUESTS_PER_USER,
) -> PairReport:
    """The pair at `concurrency` users (module docstring): `burst` replays whole users
    with the mix's mean lengths, `steady` solves the fixed point. Raises SideDoesNotFit
    or ValueError as `pair_sides`, and ValueError for a concurrency below one, a burst of
    a fractional number of users, or fewer than two output tokens."""
    prefill, decode, kv_bytes, link, link_cap = pair_sides(layout)
    m_p = pool_mix_tokens(layout.prefill, layout.prefill_workers)
    transfer_s = kv_bytes / link
    output = max(1, round(m_p.output))
    if arrivals == "burst":
        if concurrency != int(concurrency):
            raise ValueError(f"a burst replays whole users, got {concurrency:g}")
        point = replay_pair(
            prefill,
            decode,
            transfer_s,
            link_cap,
            int(concurrency),
            requests_per_user,
            max(1, round(m_p.new_prompt)),
            output,
        )
    elif arrivals == "steady":
        point = steady_pair(prefill, decode, transfer_s, link_cap, concurrency, output)
    else:
        raise ValueError(f"arrivals must be burst or steady, got {arrivals!r}")
    pre, dec = layout.prefill.config, layout.decode.config
    return PairReport(
        point=point,
        prompt_tokens=m_p.prompt,
        output_tokens=m_p.output,
        gpus=layout.prefill_workers * pre.gpus + layout.decode_workers * dec.gpus,
        kv_transfer_bytes=kv_bytes,
        link_bytes_per_s=link,
        link_given=layout.link_bytes_per_s is not None,
        kv_transfer_s=transfer_s,
        prefill_s=prefill.own_s,
        decode_seats=decode.seats,
    )
