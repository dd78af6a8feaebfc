"""The p99 TPOT of a unified replica as the life of a reply (`ReplyLife`), the prompts'
prefill work it meets as a whole-prompt compound Poisson sum (the model is summarised in
the `models.serving.batch_model` docstring, "TPOT").

A reply of m iterations after its first token lives
    T = sum of its m iterations = m t_0(B_T) + U + A(T)
(work conservation: every iteration is the decode step of the batch it runs at plus the
prompt tokens riding in it), where
- t_0(B_T) is the decode step at the batch B_T the reply lives through;
- U is the prompt work queued behind the reply when its first token comes out: first come
  first served, it is the work that arrived while the reply waited, all of it prefilled
  in the reply's life;
- A(T) is the prefill work of the prompts that reach the replica while the reply lives,
  but for its last gap: an engine chooses an iteration's prompt tokens at its start, so
  the prompts that arrive during gap j ride in gap j + 1 at the earliest, and those of
  the last gap in the iteration after the reply's end. A reply of m gaps meets the
  arrivals of m - 1 of them, (1 - 1/m) of its life (a 2-token reply, one gap, meets only
  U). Each prompt whole: a prompt longer than the token budget L is prefilled in consecutive
  iterations of the same reply (chunks of L), so the reply meets its whole work at once.
  Taking a reply's iterations as independent draws of the iteration mixture (what the
  model did before) splits such a prompt into independent full-lane iterations, and a
  reply meets the variance of the chunks, not of the prompt: the 8B's 4,000 / p99
  16,000-token prompts put 8.5% of the prompts past an 8,192-token lane and 1.35x the
  variance in them.
T is a busy period: a reply that meets more prompt work lives longer and meets more. A
reply's p99 life T99 is where
    P(U + A(T) > T - m t_0(B_T)) = 1%
(the probability that the work it met exceeds the room its life leaves beside its own
decode steps; a slower reply has more room; T99 is the root of 48 log halvings, found by
Brent's method and the halvings replayed, `ReplyLife._tail_s`). Over a fixed
window this is an upper bound of the busy period's exceedance, which asks that the work
stayed ahead at every moment of the life, not only at its end.

The prompt work. Prompts reach a lone replica at rate lambda (Poisson), each bringing
s = c(P) (t(min(P, L)) - t_0) seconds of prefill beyond the decode step (c(P) = max(1,
P / L) iterations), lambda E[s] = rho the prefill share of the iteration time (taken from
the iteration mixture, which counts prompts sharing an iteration's weight read, so E[s]
and E[s^2] are scaled to it). In the m - 1 gaps, T' = T (1 - 1/m), N ~ Poisson(lambda T')
prompts arrive: A has an atom P(N = 0) = e^-lambda T' and, given N >= 1, mean
lambda T' E[s] / (1 - e^-lambda T') and second moment (lambda T' E[s^2] +
(lambda T' E[s])^2) / (1 - e^-lambda T'). The atom is what makes a short reply's p99 the
bare decode step where a prompt joins fewer than 1% of replies (its p99 TPOT is t(B),
7.9 ms for 70B on H100 TP8 at 0.1 requests/s, where the normal law of the iteration
mixture at the tail batch said 50 ms). Counting the arrivals of the last gap too priced
a 2-token reply at lambda t(B) = 1% whatever its backlog (fuzz31: seed-chat-sizing with
2-token replies bought 296 H100s, 0.317 requests/s a TP1 replica at any pool size, where
replies of mean 3 / p99 4,000 bought 48, and the simulator measured the decode step).
Given N >= 1 the work is taken as lognormal of those moments (right-skewed as the
compound sum is; near one prompt its law is the prompt's own, lognormal, and with many
prompts its skew, 3 cv + cv^3 for cv the sum's, exceeds the sum's E[s^3] / (E[s^2]^1.5
sqrt(lambda T')): the conservative side).

The backlog U. The work a departing prompt leaves behind is that of the prompts that
arrived during its sojourn, each whole (not started: chunked prefill takes them at the
next iteration); the number a departure leaves behind has the law arrivals find (M/G/1).
So U is 0 with probability 1 - C (C the Erlang C probability of waiting in the pool's
M/G/c, `models.serving.queueing`, rho for one lane), else K = 1 + Poisson(lambda E[W_q] /
C) whole prompts (the first, and those that reach the lane while the queue waits: for
one lane E[K] = 1 + E[W_q] / E[s], the mean number an arrival finds in the system given
it waits, to first order), E[W_q] the Allen-Cunneen mean. A lane serves a prompt in its
iteration, the prefill and the decode step beside it: its busy share is 1 - (1 - share
of iterations with prompts) t_0 / t(B) (`lane_busy`), rho plus the decode steps of the
prompts' iterations, and the service C and E[W_q] take. U and A together: no prompt
with probability (1 - C) e^-lambda T', else lognormal of the moments given some (A's
count lambda T' over the m - 1 gaps).
The backlog was once exponential of the mean wait (a prompt's residual, mean E[s^2] /
(2 E[s])) with C = rho: right for the wait of an arrival, short of what a reply meets,
whole prompts. A 2-token reply lives on U alone; with the residual law and the last
gap's arrivals dropped, the simulator measured 1.86% of 2-token replies above 50 ms on a
lone 70B TP8 at the capacity it planned (0.572 requests/s), 9.6% in a pool of 4 (8.37);
with whole prompts and the lane's busy share, 0.94% (0.296) and 0.92% (3.911), the 8B
on 4,000 / p99 16,000-token prompts 0.87% (0.363).

The batch. A reply in the tail lives through a congestion that slows every sequence on
the replica alike: the batch grows until as many requests finish as start, and by
Little's law the sequences in flight at a mean gap tau are B_T = lambda O tau = B tau /
t(B) (at tau = t(B), B). So the decode step at the tail is t_0(B tau / t), longer than at
B, and the longer steps hold the replies longer still: the 8B on long prompts lives its
top 1% of replies at a batch of 75 against a mean of 20 in the simulator, at a p99 TPOT
of 69 ms where lambda O tau gives 68. t_0 is taken affine in the batch, through its
values at B and 2B (weights read once, each sequence's KV: a dense model's decode step is
affine; an MoE's expert reads make it concave, below that secant between B and 2B and
above it beyond).

Pools. Behind a router that sends each request to the replica with the least prompt work
queued (`models.serving.queueing.pooled_wait_p99_s`), a replica's prompts arrive as two
limits bound them:
- whole prompts at lambda, a slowed replica sent fewer: the 1/n share of the pool's
  arrivals feeds the extra life of a slowed reply and its batch (n = 1: all of it), so
  arrivals come over T_n = m t + (T - m t) / n and B_T = B + (B tau / t - B) / n. This
  is the short-window limit: a prompt lands whole on one replica;
- the pool's work evened over its n lanes: in a congestion least-work-left dispatch
  raises every replica's backlog alike, so each lane meets 1/n of the pool's work (the
  same mean, 1/n of the variance), and every replica is slowed together: the whole
  feedback, B_T = B tau / t. The long-window limit. The chance that a reply meets no
  prompt stays the replica's own, e^-(lambda T): taking the pool's n lambda prompts a
  second, each 1/n of a prompt, made it e^-(n lambda T), which vanished as n grew, so a
  short reply's p99 rose with the pool and the capacity per replica fell (70B TP2, replies
  of mean 3 / p99 4,000 tokens: 3.16 requests/s at n = 12, 0.87 at n = 64), against the
  pooling ladder's rule that q never falls as the pool grows.
Each is optimistic in the other's regime (measured in the simulator, at the capacity the
earlier model planned: the 8B's long prompts in a pool of 4, O = 100: 38 ms by the
first, 58 by the second, 60 simulated; 70B on B200 in a pool of 37, replies 60 / p99
250: 58 by the first, 36 by the second, 52 simulated), so the p99 is the larger of the
two. For n = 1 they are one law.

Assumptions: arrivals Poisson; prefill ahead of decode in every iteration (the engine
fills the lane beside the decode tokens); the lane's cap, a reply's iteration never
longer than a full lane at its batch, bounds tau from above; replies whose lengths spread
with cv_o count m / (1 + cv_o^2) iterations' worth of spread (E[1/m] = (1 + cv_o^2) / m,
lognormal lengths).
Not modelled: in a pool a short reply meets fewer prompts than its replica's share,
since the router sends the next request to a replica with fewer in flight: the pools'
short replies are conservative (5-token replies on 70B TP1 in a pool of 4: the model
stops at 0.109 requests/s, where the simulator measures the decode step). The spread of
reply lengths enters through the fold m / (1 + cv_o^2), right for the mean gap's
variance but not for the chance of meeting a prompt (it goes as E[m - 1], not as a
harmonic mean): where most replies are 1-2 tokens and a few are long (mean 3 / p99
4,000) the folded life is 0.009 iterations and meets only U, and a pool of 4 of 70B TP1
at the planned 1.015 requests/s measures 1.48% of its replies above 50 ms (2.32% at the
1.177 planned before whole-prompt backlogs).
"""

import math
from dataclasses import dataclass

from models.serving.edge_search import find_edge, signed_margin
from models.serving.iteration_mixture import PREFILL_SHARE_CAP
from models.serving.queueing import erlang_c, mgc_mean_wait_s

TAIL = 0.01
"""The share of replies above the p99."""
BISECTIONS = 48
"""Halvings of the bracket [t(B), full lane] of the mean gap at the p99 (in its log:
a relative precision of ~1e-14). The root is their last high end (`ReplyLife._tail_s`),
found by Brent's method and the halvings replayed around it."""
NOISE = 1e-9
"""Relative distance from a root within which the exceedance's sign may be its rounding's:
near the root it is noisy, the variance of U + A being its second moment less its mean
squared (10 x 20 x 6 region loss at the defaults: a pooled 70B reply of 499 iterations
meeting 6,231 prompts, 1,148 s of work in a room of 1,157 s, reads +2.9e-13 and -2.6e-13
alternately over 1e-13 of the gap, and its bisection's root is 8e-12 below the sign change
Brent's method found). A replayed halving's midpoint this near Brent's bracket is
evaluated rather than told by it (`ReplyLife._halved`): at 1e-11, 2 of the 42,320 p99
gaps of chat-3region and that instance differed from the bisection's, at 1e-10 none;
1e-9 keeps a hundredfold margin for ~6 exceedances a root. A pool's evened limit is asked
this far below the first limit's root (`ReplyLife.tail_s`), so that a root it skips is
below the first's beyond that noise."""
TAIL_REL_TOL = 1e-10
"""Width of the bracket Brent's method finds the root in before the halvings are replayed
(`ReplyLife._tail_s`), relative to the gap: narrower buys nothing, the replay evaluating
every midpoint within `NOISE` of it."""


@dataclass(frozen=True)
class ReplyLife:
    """What the p99 of a reply's mean gap depends on (module docstring), at mean batch B."""

    iterations: float
    """m: the reply's iterations after its first token (lengths' spread folded in)."""
    batch: float
    """B: the mean batch."""
    mean_s: float
    """t(B): the mean iteration."""
    decode_s: float
    """t_0(B): the decode step."""
    decode_slope_s: float
    """dt_0/dB: the decode step's growth per sequence."""
    full_lane_s: float
    """An iteration with a full lane of prompt tokens at B."""
    rate: float
    """lambda: prompts reaching the replica a second."""
    work_s: float
    """E[s]: one prompt's prefill beyond the decode step, whole (lambda E[s] = rho)."""
    work_square_s2: float
    """E[s^2]."""
    pool: float
    """n: replicas behind the router (math.inf: unlimited)."""
    lane_busy: float | None = None
    """The share of the time an iteration carries prompt tokens, 1 - (1 - mixed share)
    t_0 / t(B): rho and the decode step of each prompt's iteration (None: rho)."""

    @property
    def prefill_share(self) -> float:
        """rho = lambda E[s]."""
        return self.rate * self.work_s

    def backlog(self) -> tuple[float, float]:
        """(P(U > 0), E[K] - 1): the chance C that prompts are queued behind a reply at its
        first token (the pool's Erlang C, rho for one lane), and given that, the prompts
        K beyond the first, Poisson of mean lambda E[W_q] / C (those reaching the lane
        while the queue waits; module docstring)."""
        rho = self.prefill_share
        if rho <= 0 or math.isinf(self.pool):
            return 0.0, 0.0
        servers = max(int(self.pool), 1)
        busy = min(max(self.lane_busy or rho, rho), PREFILL_SHARE_CAP)
        service_s = busy / self.rate  # a prompt's iteration: its work and the decode step
        scv = max(self.work_square_s2 / self.work_s**2 - 1.0, 0.0)
        mean_s = mgc_mean_wait_s(servers * self.rate, service_s, scv, servers)
        share = erlang_c(servers, servers * busy)
        if share <= 0:
            return 0.0, 0.0
        return share, self.rate * mean_s / share

    def tail_s(self) -> float:
        """The mean gap of the p99 reply: the larger of the two limits' (module
        docstring, "Pools"), never below t(B) nor above a full lane."""
        backlog = self.backlog()
        alone = self._tail_s(backlog, pooled=False)
        if self.pool == 1:
            return alone
        # the evened limit at or below the tail just below the first's root already: its
        # own root is earlier (the exceedance falls as the gap grows), and the larger is
        # the first's (one exceedance for a root). Never asked below t(B): there the
        # evened root is t(B) itself, its own first test the same exceedance
        if self._excess(max(alone * (1.0 - NOISE), self.mean_s), backlog, pooled=True) <= 0:
            return alone
        return max(alone, self._tail_s(backlog, pooled=True))

    def _tail_s(self, backlog: tuple[float, float], pooled: bool) -> float:
        """The root tau of `_excess` on [t(B), the full lane at B_T], as `BISECTIONS`
        halvings of it in its log find it (`_halved`), bracketed first by Brent's method
        (models.serving.edge_search.find_edge, on x = -tau: the test "at or below the
        tail" passes from the root up) to `TAIL_REL_TOL`."""
        low, high = self.mean_s, self._lane_cap_s(pooled)
        if high <= low:
            return low
        below = self._excess(low, backlog, pooled)
        if below <= 0:
            return low
        # "not <= 0": above the tail, and a NaN too (the conservative side, a longer gap),
        # which the assertion refuses first (checked only on that branch: free below it)
        excess = self._excess(high, backlog, pooled)
        if not excess <= 0:
            assert excess > 0, f"a NaN exceedance at the lane cap, {self}"
            return high

        def margin(x: float) -> float:  # <= 0 at or below the tail; a NaN fails, as above
            excess = self._excess(-x, backlog, pooled)
            assert not math.isnan(excess), f"a NaN exceedance at a mean gap of {-x} s, {self}"
            return self._margin(-x, excess, backlog, pooled)

        at_high = self._margin(high, excess, backlog, pooled)
        at_low = self._margin(low, below, backlog, pooled)  # a NaN's: +inf, a bisection
        passed, failed = find_edge(margin, -high, -low, at_high, at_low, rel_tol=TAIL_REL_TOL)
        return self._halved(low, high, -failed, -passed, backlog, pooled)

    def _halved(
        self,
        low: float,
        high: float,
        above: float,
        below: float,
        backlog: tuple[float, float],
        pooled: bool,
    ) -> float:
        """The last high end of `BISECTIONS` halvings of [low, high] in its log, keeping an
        exceedance above the tail at the low end and at or below it at the high end: the
        root as the halvings alone find it, given a bracket of it from Brent's method
        (`above` < `below`, evaluated: the exceedance above the tail at `above`, at or
        below at `below`). A midpoint further than `NOISE` outside the bracket takes the
        side the bracket tells (the exceedance falls as the gap grows); one nearer is
        evaluated."""
        for _ in range(BISECTIONS):
            middle = math.sqrt(low * high)
            if middle >= below * (1.0 + NOISE):
                high = middle
            elif middle <= above * (1.0 - NOISE):
                low = middle
            else:
                excess = self._excess(middle, backlog, pooled)
                if excess <= 0:
                    high = middle
                else:
                    assert excess > 0, f"a NaN exceedance at a mean gap of {middle} s, {self}"
                    low = middle
        return high

    def _feedback(self, pooled: bool) -> float:
        """The share of a slowed reply's extra life fed with arrivals and batch: 1 where
        the pool's work is evened over its lanes (or one replica), else 1/n."""
        return 1.0 if pooled else 1.0 / self.pool

    def _lane_cap_s(self, pooled: bool) -> float:
        """tau with every iteration a full lane at B_T: tau = t_L + t_0' (B_T - B),
        B_T - B = f B (tau / t - 1), solved for tau."""
        grow = self.decode_slope_s * self.batch * self._feedback(pooled)
        return (self.full_lane_s - grow) / max(1.0 - grow / self.mean_s, 1e-9)

    def _excess(self, gap_s: float, backlog: tuple[float, float], pooled: bool) -> float:
        """P(U + A(T) > T - m t_0(B_T)) - 1% at a mean gap tau, T = m tau."""
        arrived = self._arrived(gap_s, pooled)
        if arrived is None:  # no room: P(U + A > 0), 1 with any prompts
            return (1.0 if self.prefill_share > 0 else 0.0) - TAIL
        prompt = (self.work_s, self.work_square_s2)
        return exceedance(*arrived, *prompt, *backlog) - TAIL

    def _margin(
        self, gap_s: float, excess: float, backlog: tuple[float, float], pooled: bool
    ) -> float:
        """`find_edge`'s margin at a mean gap tau: the sign of its `excess` (the verdict), the
        size log(P / 1%) (`log_exceedance`), nearer linear in tau than P, which falls by
        decades over the bracket and underflows to 0 where the work's spread is nil (an
        unlimited pool's evened work: variance work_square / inf; P steps from ~1/2 to 0
        within 1e-8 of tau, and a margin of 0 - 1% leaves Brent's method nothing to
        interpolate: ~44 bisections)."""
        if not excess < 1.0 - TAIL:  # no room at all (P = 1), or a NaN: the size is moot
            return signed_margin(math.inf, excess <= 0)
        if excess > -TAIL * (1.0 - 1e-6):
            size = math.log1p(excess / TAIL)
        else:  # P below 1e-8: its log apart, finite where P underflows
            arrived = self._arrived(gap_s, pooled)
            assert arrived is not None  # room <= 0 reads 1 - 1% above, or -1% without prompts
            prompt = (self.work_s, self.work_square_s2)
            size = log_exceedance(*arrived, *prompt, *backlog) - math.log(TAIL)
        return signed_margin(size, excess <= 0)

    def _arrived(self, gap_s: float, pooled: bool) -> tuple[float, float, float, float] | None:
        """(room, count, work, work variance) of `exceedance` at a mean gap tau: the room
        T - m t_0(B_T) the reply's life leaves beside its own decode steps, and the prompts
        that arrive in its m - 1 gaps; None where there is no room (<= 0)."""
        feedback = self._feedback(pooled)
        life_s = self.iterations * gap_s
        extra_batch = feedback * self.batch * (gap_s / self.mean_s - 1.0)
        own_s = self.iterations * (self.decode_s + self.decode_slope_s * extra_batch)
        room_s = life_s - own_s
        if room_s <= 0:
            return None
        mean_life_s = self.iterations * self.mean_s
        ridden = max(1.0 - 1.0 / self.iterations, 0.0)  # the arrivals of m - 1 gaps ride
        if pooled:  # the replica's own lambda T' prompts, their work's spread 1/n
            arrivals = self.rate * life_s * ridden
            spread = self.pool
        else:  # whole prompts at lambda, the extra life fed at the 1/n share
            arrivals = self.rate * (mean_life_s + feedback * (life_s - mean_life_s)) * ridden
            spread = 1.0
        return room_s, arrivals, arrivals * self.work_s, arrivals * self.work_square_s2 / spread


def exceedance(
    room_s: float,
    count: float,
    work_s: float,
    work_var_s2: float,
    prompt_s: float,
    prompt_square_s2: float,
    backlog_share: float,
    backlog_extra: float,
) -> float:
    """P(U + A > room): A the prefill work of Poisson(`count`) prompts (mean `work_s`,
    variance `work_var_s2`), U the backlog: with probability `backlog_share` the whole
    work of K = 1 + Poisson(`backlog_extra`) prompts (each of mean `prompt_s` and second
    moment `prompt_square_s2`), else none. No prompt at all ((1 - C) e^-count): no
    work; else U + A lognormal of its mean and variance given some (module docstring)."""
    law = _some_and_z(
        room_s, count, work_s, work_var_s2, prompt_s, prompt_square_s2, backlog_share, backlog_extra
    )
    if law is None:
        return 0.0
    some, z = law
    return some * 0.5 * math.erfc(z / math.sqrt(2.0))


def log_exceedance(
    room_s: float,
    count: float,
    work_s: float,
    work_var_s2: float,
    prompt_s: float,
    prompt_square_s2: float,
    backlog_share: float,
    backlog_extra: float,
) -> float:
    """log `exceedance` (the same arguments), finite where it underflows: log P(U + A > 0)
    and the lognormal's log tail apart (by its asymptotic series past z = 20); -inf only
    where there is no prompt at all."""
    law = _some_and_z(
        room_s, count, work_s, work_var_s2, prompt_s, prompt_square_s2, backlog_share, backlog_extra
    )
    if law is None:
        return -math.inf
    some, z = law
    return math.log(some) + _log_normal_tail(z)


def _some_and_z(
    room_s: float,
    count: float,
    work_s: float,
    work_var_s2: float,
    prompt_s: float,
    prompt_square_s2: float,
    backlog_share: float,
    backlog_extra: float,
) -> tuple[float, float] | None:
    """`exceedance`'s law: (P(U + A > 0), z) with P(U + A > room) = that x P(Z > z), Z
    standard normal; None where there is no prompt at all."""
    some_a = 0.0  # P(N >= 1)
    if count > 0 and work_s > 0:
        some_a = -math.expm1(-count) if math.isfinite(count) else 1.0
    share = backlog_share if prompt_s > 0 else 0.0
    some = 1.0 - (1.0 - share) * (1.0 - some_a)  # P(U + A > 0)
    if some <= 0:
        return None
    prompts = 1.0 + backlog_extra
    backlog_s = share * prompts * prompt_s
    prompt_var_s2 = max(prompt_square_s2 - prompt_s**2, 0.0)
    backlog_second_s2 = share * (
        prompts * prompt_var_s2 + (backlog_extra + prompts**2) * prompt_s**2
    )
    arrived_s = work_s if some_a > 0 else 0.0
    arrived_second_s2 = work_var_s2 + work_s**2 if some_a > 0 else 0.0
    mean_s = (backlog_s + arrived_s) / some
    second_s2 = (backlog_second_s2 + 2 * backlog_s * arrived_s + arrived_second_s2) / some
    var_s2 = max(second_s2 - mean_s**2, (1e-9 * mean_s) ** 2)
    sigma2 = math.log1p(var_s2 / mean_s**2)
    sigma = math.sqrt(sigma2)
    return some, (math.log(room_s / mean_s) + sigma2 / 2) / sigma


def _log_normal_tail(z: float) -> float:
    """log P(Z > z), Z standard normal; past z = 20, -z^2 / 2 - log(z sqrt(2 pi)) +
    log(1 - 1/z^2 + 3/z^4 - 15/z^6) (the asymptotic series, Abramowitz and Stegun
    7.1.23: the next term 105/z^8 is 4e-9 at z = 20)."""
    if z < 20.0:
        return math.log(0.5 * math.erfc(z / math.sqrt(2.0)))
    inverse = 1.0 / (z * z)
    series = 1.0 + inverse * (-1.0 + inverse * (3.0 - 15.0 * inverse))
    return -z * z / 2 - math.log(z * math.sqrt(2.0 * math.pi)) + math.log(series)
