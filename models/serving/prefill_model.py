"""The prompt lane of a prefill-only (disaggregated) replica at a load: its p99 TTFT.

Notation: P = P (1-h) the mean new prompt tokens, P99 the p99 prompt's, cv_p^2 their
spread, r the replica's prefill rate at full chunks (tokens/s,
`StepModel.prefill_tokens_per_s`), C = chunk the token budget of one iteration (of one
lane, see "Pipeline stages" below), lambda the prompts/s fed to the replica and
rho = lambda P / r its utilisation.

A prefill engine runs iterations back to back: each takes the queued prompts in arrival
order up to C tokens (a prompt longer than what is left is split and finishes in a later
iteration), and every prompt in an iteration gets its first token when the whole
iteration ends. An iteration of q tokens takes ~ q / r, so one of C tokens takes C / r.
A prompt's TTFT is therefore made of
    wait      the M/G/c wait of the pool's prompt queue, service P / r
              (`models.serving.queueing.pooled_wait_p99_s`: the work ahead of it)
    residual  the iteration in progress on its replica, which it cannot join: whole and
              length-biased, min(C, P (1 + cv_p^2)) / r (a single prompt's iteration,
              E[P^2] / E[P]), times the chance rho that the replica is iterating
    own       S(P), its own prefill (`StepModel.prefill_s`)
    ride      the other prompts' tokens that finish in the same iteration as it: those
              that arrived while it waited are behind it in the queue and ride along up
              to the room left in its last iteration,
                  ride = min(room(P) / r, rho x waited),
                  room(P) = ceil(P / C) C - P
    transfer  the KV transfer to the decode pool (`models.serving.replica_layout.kv_transfer_s`)
    overhead  o, the engine profile's fixed cost of a request before the engine
              (`Efficiency.request_overhead_s`: HTTP, tokenisation, scheduling), paid
              once, outside the queue: the arrivals reach the engine o later, which
              leaves their queueing as it is
so own + ride is the iteration (or iterations) that complete its prefill at the load's
iteration size: the prompt alone at low load (ride -> 0, TTFT -> S(P) + transfer),
whole iterations of C tokens once the queue is deep enough to fill them (own + ride ->
S(P) + (ceil(P/C) C - P) / r, i.e. ceil(P/C) x C / r when S(P) = P / r). The p99
combines the p99 wait (with its ride) and the p99 prompt's extra time in quadrature, as
the unified model does:
    TTFT99 = o + residual + S(P) + T(P) + sqrt((W99 + ride(W99 + residual))^2
                                               + (S(P99) + T(P99) - S(P) - T(P))^2)
exact with no load (o + S(P99) + T(P99)).

Conservative side: the residual counts the whole length-biased iteration, not half of
it, and the ride puts the prompt at the head of its last iteration with every token
that arrived while it waited behind it (a prompt further back shares less). The pool's
wait is M/G/c for a router that dispatches by least prompt work queued
(`models.serving.queueing.pooled_wait_p99_s`); a router blind to queued prompt work pools
less well. Optimistic side: above ~93% utilisation the M/G/c tail of a deep queue runs
short of a simulated one (`solver.simulate`); pools the planner sizes to a latency
target sit below that. Against the simulator the model is
within ~15% of the simulated p99 TTFT from 60% to 90% utilisation (pools of 1 to 12
Llama-70B replicas), mostly above it.

Pipeline stages (pp > 1): the engine keeps pp iterations in flight, one per stage (vLLM's
virtual engines), each taking up to one chunk from the shared queue and spending pp stage
passes on it. The replica is then pp lanes, each an iteration of C = chunk tokens at r / pp
(a full lane iteration takes pp x chunk / r), and a pool of c replicas is M/G/(c pp) with
service pp P / r; S(P) is the prompt's own pass through the stages as before. pp = 1 is
one lane of C = chunk at r.

A smaller chunk C shrinks the ride (less room in a prompt's last iteration) but adds an
iteration overhead per chunk and re-reads the weights more often; the planner keeps the
engine's configured `prefill_chunk_tokens`.
"""

import math
from dataclasses import dataclass

from models.physics.efficiency import Efficiency
from models.physics.step_time import StepModel
from models.serving.queueing import pooled_wait_p99_s
from models.serving.replica import MixTokens, ReplicaConfig
from models.serving.replica_layout import kv_transfer_s


@dataclass(frozen=True)
class PrefillLane:
    """One prefill-only replica's prompt lanes (module docstring for the model)."""

    token_rate: float
    """r: the replica's prefill tokens/s at full chunks."""
    budget_tokens: float
    """C: tokens one lane iteration takes (the chunk)."""
    prompt_tokens: float
    """P (1-h): mean new tokens of a prompt."""
    prompt_scv: float
    """cv_p^2 of the prompt length."""
    own_s: float
    """S(P): the mean prompt's own prefill."""
    own_p99_s: float
    """S(P99): the p99 prompt's own prefill."""
    transfer_s: float = 0.0
    """T(P): the mean prompt's KV transfer."""
    transfer_p99_s: float = 0.0
    """T(P99): the p99 prompt's KV transfer."""
    pool_replicas: float = 1
    """Replicas behind one router (M/G/c, c = pool_replicas x lanes)."""
    lanes: int = 1
    """Iterations in flight per replica: pp (module docstring, "Pipeline stages")."""
    request_overhead_s: float = 0.0
    """o: the fixed cost of a request before the engine, in every TTFT."""

    @property
    def service_s(self) -> float:
        """P / r: the mean prompt's share of the replica."""
        return self.prompt_tokens / self.token_rate

    def utilisation(self, rate: float) -> float:
        """rho = lambda P / r."""
        return rate * self.service_s

    def iteration_s(self, tokens: float) -> float:
        """A lane iteration of `tokens` tokens: tokens / (r / lanes)."""
        return tokens * self.lanes / self.token_rate

    def residual_s(self, rate: float) -> float:
        """The iteration in progress, whole: rho x iteration(min(C, P (1 + cv_p^2)))."""
        single = min(self.budget_tokens, self.prompt_tokens * (1 + self.prompt_scv))
        return self.utilisation(rate) * self.iteration_s(single)

    def room_tokens(self) -> float:
        """Room other prompts can fill in the mean prompt's last iteration:
        ceil(P / C) C - P."""
        iterations = math.ceil(self.prompt_tokens / self.budget_tokens - 1e-12)
        return max(iterations, 1) * self.budget_tokens - self.prompt_tokens

    def ride_s(self, rate: float, waited_s: float) -> float:
        """Other prompts' tokens in the mean prompt's last iteration, in seconds:
        min(iteration(room), rho x waited) (module docstring)."""
        return min(self.iteration_s(self.room_tokens()), self.utilisation(rate) * waited_s)

    def own_iterations_s(self, rate: float, waited_s: float) -> float:
        """The iteration(s) that complete the mean prompt's prefill: S(P) + ride."""
        return self.own_s + self.ride_s(rate, waited_s)

    def wait_p99_s(self, rate: float) -> float:
        """The pool's p99 wait for a lane: M/G/(c x lanes) fed rate / lanes prompts/s per
        lane, service lanes x P / r (`pooled_wait_p99_s`)."""
        return pooled_wait_p99_s(
            rate / self.lanes,
            self.lanes * self.service_s,
            self.prompt_scv,
            self.pool_replicas * self.lanes,
        )

    def ttft_p99_s(self, rate: float) -> float:
        """p99 TTFT at `rate` prompts/s per replica (module docstring); math.inf at or
        past saturation."""
        wait_s = self.wait_p99_s(rate)
        if math.isinf(wait_s):
            return math.inf
        residual_s = self.residual_s(rate)
        queued_s = wait_s + self.ride_s(rate, wait_s + residual_s)
        extra_s = self.own_p99_s + self.transfer_p99_s - self.own_s - self.transfer_s
        alone_s = self.request_overhead_s + residual_s + self.own_s + self.transfer_s
        return alone_s + math.hypot(queued_s, extra_s)


def prefill_lane(
    config: ReplicaConfig,
    m: MixTokens,
    efficiency: Efficiency,
    steps: StepModel,
    pool_replicas: float = 1,
) -> PrefillLane:
    """The lane of a prefill-only replica of `config` serving the mix `m`: r at full
    chunks of the mean prompt, C = pp x chunk, S(P), S(P99), the KV transfers and the
    profile's request overhead."""
    return PrefillLane(
        token_rate=steps.prefill_tokens_per_s(m.new_prompt, m.cached_prompt),
        budget_tokens=float(steps.chunk_tokens),
        prompt_tokens=m.new_prompt,
        prompt_scv=m.prompt_scv,
        own_s=steps.prefill_s(m.new_prompt, m.cached_prompt),
        own_p99_s=steps.prefill_s(m.new_prompt_p99, m.prompt_p99 * m.hit),
        transfer_s=kv_transfer_s(config, m.prompt, efficiency),
        transfer_p99_s=kv_transfer_s(config, m.prompt_p99, efficiency),
        pool_replicas=pool_replicas,
        lanes=steps.pp,
        request_overhead_s=efficiency.request_overhead_s,
    )
